"""`vt apply`: the Apply bridge, approved decisions into the Decision Ledger."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter, show_refresh, show_torn
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode
from vault_tools.findings import counted

if TYPE_CHECKING:
    from vault_tools.review.apply import ApplyReport


@app.command()
def apply(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Notes to apply (default: every review note of the vault).", show_default=False
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="List every skipped note with its reason (by default a vault run counts "
            "them in one line). Example: vt apply -v",
        ),
    ] = False,
    record_lost: Annotated[
        bool,
        typer.Option(
            "--record-lost",
            help="Record again the decision of a note marked APPLIED whose event the "
            "ledger does not hold (lost, or never in this clone's ledger), with the ts the "
            "note keeps. Without it such a note is refused. See docs/exit-codes.md.",
        ),
    ] = False,
) -> None:
    """Apply bridge: turn approved decisions into Decision Ledger events.

    APPROVE appends an ACCEPT event carrying the V1 claim, REJECT a REJECT event, and
    APPROVE_REPAIR a REPAIR event carrying the V2 drafts (only while vt_preview_hash
    still matches them). Approvals need every required check_* property true. Then each
    note gets review_state: APPLIED, vt_event_id and vt_applied_at, and the Claim Store
    and knowledge-base blocks are brought up to date. Running it again appends nothing.
    Every event names whoever runs vt apply as its actor (docs/workflow.md): a note whose
    reviewer names a teammate is listed, not recorded; their own vt apply records it.
    Exit 1 when a decision was refused. Notes skipped (already applied, PENDING, …) are
    counted in one line, or listed one by one with -v or when notes are named.

    Example:

        vt apply --vault ~/my-vault

        vt apply -v

        vt apply 03_claims/DV1-0001.md --dry-run

        vt apply --json
    """
    from vault_tools.review.apply import apply_notes

    reporter = Reporter(as_json)
    settings = settings_for(vault, writes=True)
    with reporter.progress("Applying decisions") as progress:
        report = apply_notes(settings, paths or None, dry_run, progress, record_lost)
    if reporter.mode == JSON:
        reporter.json_streamed(report.json_items())
    else:
        show_apply(reporter, report, list_skipped=verbose or bool(paths))
    show_torn(reporter, settings, report.torn)
    if report.refresh_error is not None:
        reporter.error(f"vt: {report.refresh_error}")
        finish(report.refresh_error.exit_code)
    if report.io_error is not None:
        finish(report.io_error.exit_code)  # said in the refusals above: the note, the error
    finish(ExitCode.FINDINGS if report.failed else ExitCode.OK)


def show_apply(reporter: Reporter, report: ApplyReport, list_skipped: bool = True) -> None:
    """The human rendering of an ApplyReport; skipped notes listed, or counted in one line."""
    if report.dry_run:
        for event in report.events:
            reporter.text("would append: " + json.dumps(event, ensure_ascii=False, sort_keys=True))
    for item in report.applied:
        if report.dry_run:
            verb = "would append"
        else:
            verb = "appended" if item.new else "completed (event already in the ledger)"
            if item.settled:
                verb += f" (supersedes {counted(item.settled, 'concurrent head')}: settled)"
        reporter.text(
            f"{item.path} ({item.claim_id}): {item.action} {verb}, seq {item.seq}, {item.id}",
            "green",
        )
    if list_skipped:
        for entry in report.skipped:
            reporter.text(f"{entry.path} ({entry.claim_id}): skipped: {entry.reason}", "dim")
    elif report.skipped:
        reporter.text(_skipped_line(report), "dim")
    for entry in report.others:
        reporter.text(f"{entry.path} ({entry.claim_id}): not recorded: {entry.reason}", "yellow")
    for entry in report.refused:
        claim = f" ({entry.claim_id})" if entry.claim_id else ""
        reporter.error(f"{entry.path}{claim}: refused: {entry.reason}")
    new = sum(a.new for a in report.applied)
    if report.dry_run:
        summary = f"dry run: would append {counted(new, 'event')}; nothing written"
    else:
        summary = _summary(report, new)
    if report.refresh is not None:
        show_refresh(reporter, report.refresh)
    reporter.summary(summary, report.failed)


def _summary(report: ApplyReport, new: int) -> str:
    """What the run did, counted as the user sees it: events, then notes marked APPLIED
    (an event already in the ledger, from a run that stopped before marking, is named)."""
    marked = sum(a.marked for a in report.applied)
    earlier = len(report.applied) - new
    from_before = f" ({earlier} of them for events already in the ledger)" if earlier else ""
    others = f", {len(report.others)} left for their reviewers" if report.others else ""
    return (
        f"{counted(new, 'event')} appended, {counted(marked, 'note')} marked APPLIED{from_before}, "
        f"{len(report.skipped)} skipped, {len(report.refused)} refused{others}"
    )


_EVENT_ID = re.compile(r"sha256:[0-9a-f]{64}")


def _skipped_line(report: ApplyReport) -> str:
    """`skipped 115 notes: 113 already applied, 2 preview, then set APPROVE_REPAIR (vt
    apply -v lists them)`: the reasons without their event ids, most frequent first."""
    kinds = Counter(
        _EVENT_ID.sub("…", entry.reason).split(": …")[0].split(";")[0] for entry in report.skipped
    )
    reasons = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
    return f"skipped {counted(len(report.skipped), 'note')}: {reasons} (vt apply -v lists them)"
