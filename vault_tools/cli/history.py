"""`vt history`: every decision on a claim, with the V1 → V2 diff of each repair."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, VtError
from vault_tools.findings import counted
from vault_tools.vocabulary import CONFLICT


def _entry_lines(entry: Any) -> list[str]:
    from vault_tools.ledger.events import superseded_ids

    ev = entry.event
    by = ev["actor"]
    if "decided_by" in ev:  # a vault that records for its reviewers
        by = f"{ev['decided_by']} (recorded by {ev['actor']})"
    lines = [f"#{ev['seq']}  {ev['ts']}  {ev['action']}  by {by}  {ev['id']}"]
    if entry.signed_with is not None:
        lines.append(f"    signed by {ev['actor']} with key {entry.signed_with}")
    elif "sig" in ev:
        lines.append("    signed, with a key that cannot be read")
    if ev.get("supersedes"):
        lines.append(f"    supersedes {', '.join(superseded_ids(ev['supersedes']))}")
    if ev.get("reverts"):
        lines.append(f"    reverts {ev['reverts']}")
    if ev.get("comment"):
        lines.append(f"    comment: {ev['comment']}")
    claim = ev.get("claim")
    if isinstance(claim, dict):
        lines.append(
            f"    claim: {claim.get('atomic_claim')}  ({claim.get('epistemic_mode')}, "
            f"{claim.get('mapping_status')})"
        )
    if entry.is_repair:
        lines += _repair_lines(entry)
    return lines


def _repair_lines(entry: Any) -> list[str]:
    from vault_tools.review.history import V1_NOT_AVAILABLE

    if entry.v1_source is None:
        return [f"    V1 → V2: {V1_NOT_AVAILABLE}"]
    lines = [f"    V1 → V2 (V1 from {entry.v1_source}):"]
    from vault_tools.review.diff import plain_change_lines

    lines += [f"      {line}" for line in plain_change_lines(entry.claim_segments, entry.changes)]
    if not entry.changes:
        lines.append("      no changes")
    return lines


@app.command()
def history(
    claim_id: Annotated[
        str, typer.Argument(help="The claim, e.g. SA260324R-0125.", show_default=False)
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every decision on a claim, oldest first.

    Who, when, action, comment, the event it superseded and the claim as it stood, with
    the V1 → V2 diff of each repair.

    Example:

        vt history DV1-0001 --vault ~/my-vault

        vt history DV1-0002 --json
    """
    from vault_tools.review.history import claim_history
    from vault_tools.store.claims import ClaimStore

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        with ClaimStore.open(settings) as store:
            store.catch_up()
            found = claim_history(settings, store, claim_id)
    except VtError as exc:
        reporter.fail(exc)
    if found is None:
        reporter.error(
            f"vt: no decision on claim {claim_id} in the ledger "
            f"({settings.ledger}); see vt ledger log"
        )
        finish(ExitCode.FINDINGS)
    if reporter.mode == JSON:
        reporter.json(found.to_json())
        finish(ExitCode.OK)
    reporter.text(
        f"{found.claim_id}: {found.status} ({found.note}), "
        f"{counted(len(found.entries), 'decision')}"
    )
    if len(found.heads) > 1:
        alike = "alike" if found.status != CONFLICT else "differently"
        reporter.text(
            f"  decided {alike} without seeing each other: "
            + "; ".join(f"{h['actor']} {h['action']} {h['id']}" for h in found.heads)
        )
    for entry in found.entries:
        for line in _entry_lines(entry):
            reporter.text(line)
    finish(ExitCode.OK)
