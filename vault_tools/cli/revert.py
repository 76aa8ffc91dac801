"""`vt revert`: undo a decision with a compensating REVERT event."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter, show_refresh, show_torn
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode


@app.command()
def revert(
    event_id: Annotated[
        str,
        typer.Argument(
            help="The id of the event to revert (sha256:…, as vt ledger log shows it), or "
            "the start of it that no other id shares (4 hex digits or more, sha256: optional).",
            show_default=False,
        ),
    ],
    comment: Annotated[str, typer.Option("--comment", help="Why it is reverted.")] = "",
    vault: VaultOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Revert a decision: append a compensating REVERT event.

    Nothing is rewritten: the reverted event stays in the ledger and the REVERT names
    it. An unknown id, a REVERT, or an event already reverted is refused (exit 1); a
    prefix that several ids start with is a usage error listing them (exit 2).

    Example:

        vt revert sha256:3f5a… --comment "accepted by mistake"

        vt ledger log --claim DV1-0001    # to find the id
    """
    from vault_tools.review.revert import revert_event

    reporter = Reporter(as_json)
    settings = settings_for(vault, writes=True)
    result = revert_event(settings, event_id, comment, dry_run)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
    else:
        ev = result.event
        if dry_run:
            reporter.text("would append: " + json.dumps(ev, ensure_ascii=False, sort_keys=True))
        verb = "would revert" if dry_run else "reverted"
        reporter.text(
            f"{ev['claim_id']}: {verb} {result.reverted['action']} "
            f"{result.reverted['id']} with REVERT seq {ev['seq']}, {ev['id']}",
            "green",
        )
        if result.refresh is not None:
            show_refresh(reporter, result.refresh)
    show_torn(reporter, settings, result.torn)
    if result.refresh_error is not None:
        reporter.error(f"vt: {result.refresh_error}")
        finish(result.refresh_error.exit_code)
    finish(ExitCode.OK)
