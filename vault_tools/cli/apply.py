"""`vt apply`, `vt revert` and `vt demo`: thin commands over their use cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from vault_tools.cli import app
from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.errors import ExitCode


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
) -> None:
    """Apply bridge: turn approved decisions into Decision Ledger events.

    APPROVE appends an ACCEPT event carrying the V1 claim, REJECT a REJECT event, and
    APPROVE_REPAIR a REPAIR event carrying the V2 drafts (only while vt_preview_hash
    still matches them). Approvals need every required check_* property true. Then each
    note gets review_state: APPLIED, vt_event_id and vt_applied_at, and the Claim Store
    and knowledge-base blocks are brought up to date. Running it again appends nothing.
    Exit 1 when a decision was refused.

    Example:

        vt apply --vault examples/vault

        vt apply 03_claims/DV1-0001.md --dry-run

        vt apply --json
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.review.apply import apply_notes

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    with reporter.progress("Applying decisions") as progress:
        report = apply_notes(settings, paths or None, dry_run, progress)
    if reporter.mode == "json":
        reporter.json(report.to_json())
    else:
        show_apply(reporter, report)
    show_torn(reporter, settings, report.torn)
    if report.refresh_error is not None:
        reporter.error(f"vt: {report.refresh_error}")
        finish(report.refresh_error.exit_code)
    if report.io_error is not None:
        finish(report.io_error.exit_code)  # said in the refusals above: the note, the error
    finish(ExitCode.FINDINGS if report.failed else ExitCode.OK)


def show_apply(reporter: Any, report: Any) -> None:
    """The human rendering of an ApplyReport (also used by vt demo)."""
    if report.dry_run:
        for event in report.events:
            reporter.text("would append: " + json.dumps(event, ensure_ascii=False, sort_keys=True))
    for item in report.applied:
        if report.dry_run:
            verb = "would append"
        else:
            verb = "appended" if item.new else "completed (event already in the ledger)"
            if item.settled:
                verb += f" (supersedes {item.settled} concurrent heads: settled)"
        reporter.text(
            f"{item.path} ({item.claim_id}): {item.action} {verb}, seq {item.seq}, {item.id}",
            "green",
        )
    for item in report.skipped:
        reporter.text(f"{item.path} ({item.claim_id}): skipped: {item.reason}", "dim")
    for item in report.refused:
        claim = f" ({item.claim_id})" if item.claim_id else ""
        reporter.error(f"{item.path}{claim}: refused: {item.reason}")
    new = sum(a.new for a in report.applied)
    if report.dry_run:
        summary = f"dry run: {new} events would be appended; nothing written"
    else:
        summary = (
            f"{new} events appended, {len(report.applied) - new} notes completed, "
            f"{len(report.skipped)} skipped, {len(report.refused)} refused"
        )
    if report.refresh is not None:
        show_refresh(reporter, report.refresh)
    if reporter.mode == "rich":
        reporter.text(summary, "bold red" if report.failed else "bold green")
    else:
        reporter.error(summary)


def show_torn(reporter: Any, settings: Any, torn: Any) -> None:
    """A torn last line the run moved aside (ledger.TornInfo), said on stderr."""
    if torn is not None:
        reporter.error(
            f"vt: {settings.ledger}: " + torn.message().replace(f"{settings.vault}/", "")
        )


def show_refresh(reporter: Any, refreshed: Any) -> None:
    """What the Claim Store refresh did (store.RefreshResult)."""
    written = list(refreshed.kb_notes_written)
    reporter.text(
        f"claim store: {refreshed.catch_up.new_events} new events projected; "
        f"{len(written)} knowledge-base notes updated",
        "dim",
    )
    for problem in getattr(refreshed, "kb_problems", []):
        reporter.error(f"vt: {problem}")


@app.command()
def revert(
    event_id: Annotated[
        str,
        typer.Argument(
            help="The id of the event to revert (sha256:…, as vt ledger log shows it).",
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
    it. An unknown id, a REVERT, or an event already reverted is refused (exit 1).

    Example:

        vt revert sha256:3f5a… --comment "accepted by mistake"

        vt ledger log --claim DV1-0001    (to find the id)
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.review.revert import revert_event

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    result = revert_event(settings, event_id, comment, dry_run)
    if reporter.mode == "json":
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


@app.command()
def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the demo vault and print its path.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run the whole review cycle on a copy of the bundled example vault.

    validate → draft → edit a draft → preview → approve → apply → status →
    ledger verify → history, in a temporary folder, printing each step. Nothing outside
    that folder is touched. Exit 0 when every step did what it should.

    Example:

        vt demo

        vt demo --keep
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.integrations.demo import run_demo

    reporter = Reporter(as_json)
    show = None if reporter.mode == "json" else (lambda step: _show_step(reporter, step))
    result = run_demo(keep=keep, on_step=show)
    if reporter.mode == "json":
        reporter.json(result.to_json())
    else:
        verdict = "every step did what it should" if result.ok else "a step failed"
        reporter.text("", "")
        reporter.text(f"Demo finished: {verdict}.", "bold green" if result.ok else "bold red")
        if result.kept is not None:
            reporter.text(f"The demo vault is kept at {result.kept}")
    finish(ExitCode.OK if result.ok else ExitCode.FINDINGS)


def _show_step(reporter: Any, step: Any) -> None:
    if reporter.mode == "rich":
        reporter.text("")
        reporter.text(f"{step.number}. {step.title}", "bold cyan")
        reporter.text(step.why, "italic")
        for line in step.lines:
            reporter.text(f"   {line}")
        reporter.text(
            "   ✓ ok" if step.ok else f"   ✗ {step.problem}", "green" if step.ok else "bold red"
        )
        return
    reporter.text("")
    reporter.text(f"== {step.number}. {step.title} ==")
    reporter.text(step.why)
    for line in step.lines:
        reporter.text(f"   {line}")
    reporter.text("   ok" if step.ok else f"   FAILED: {step.problem}")
