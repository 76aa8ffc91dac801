"""`vt status`: the review queue at a glance."""

from __future__ import annotations

from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, VtError
from vault_tools.findings import counted
from vault_tools.vocabulary import REVIEW_ACTIONS


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


@app.command()
def status(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """The review queue at a glance.

    Notes by review_action and review_state, previews gone stale, notes applied but
    edited since, notes whose decision the ledger does not record yet, claims in
    CONFLICT with their heads, the ledger head.

    Example:

        vt status --vault ~/my-vault

        vt status --json
    """
    from vault_tools.review.status import status as run_status
    from vault_tools.store.claims import ClaimStore

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        with ClaimStore.open(settings) as store, reporter.progress("Reading notes") as progress:
            store.catch_up()
            report = run_status(settings, store, progress)
    except VtError as exc:
        reporter.fail(exc)
    failed = (
        ExitCode.FINDINGS
        if report.unreadable or report.unknown_actions or report.git_conflicts
        else ExitCode.OK
    )
    if reporter.mode == JSON:
        reporter.json(report.to_json())
        finish(failed)
    reporter.text(counted(report.notes, "review note"))
    reporter.text(f"  by review_action: {_counts(report.by_action)}")
    reporter.text(f"  by review_state:  {_counts(report.by_state)}")
    reporter.text(f"claims in the ledger: {_counts(report.claims)}")
    if report.unknown_actions:
        reporter.text(
            f"unknown review_action (one of {', '.join(REVIEW_ACTIONS)}; "
            "vt validate names the line):",
            "red",
        )
        for item in report.unknown_actions:
            reporter.text(f"  {item['path']} ({item['claim_id']}, {item['review_action']})")
    if report.stale_previews:
        reporter.text(
            "previews gone stale (drafts changed since vt preview; set "
            "REQUEST_REPAIR and run vt preview):",
            "yellow",
        )
        for item in report.stale_previews:
            reporter.text(f"  {item['path']} ({item['claim_id']}, {item['review_action']})")
    if report.edited_since_apply:
        reporter.text("applied, but edited since (see below for who records it):", "yellow")
        for item in report.edited_since_apply:
            reporter.text(f"  {item['path']} ({item['claim_id']}): {item['reason']}")
    from vault_tools.review.status import OTHERS  # imported with the core by now

    yours = [d for d in report.disagreements if d["kind"] != OTHERS]
    theirs = [d for d in report.disagreements if d["kind"] == OTHERS]
    if yours:
        reporter.text("notes the ledger disagrees with (each says what to do):", "yellow")
        for item in yours:
            reporter.text(f"  {item['path']} ({item['claim_id']}): {item['reason']}")
    if theirs:
        reporter.text("teammates' decisions, not recorded yet (their own vt apply does):", "dim")
        for item in theirs:
            reporter.text(f"  {item['path']} ({item['claim_id']}): {item['reason']}")
    if report.conflicts:
        reporter.text("claims in CONFLICT (decided differently without seeing each other):", "red")
        for item in report.conflicts:
            reporter.text(f"  {item['claim_id']} ({item['note']}):")
            for head in item["heads"]:
                seen = (
                    " (not seen by the latest decision)"
                    if head["id"] in item["unseen"]
                    else " (latest)"
                )
                reporter.text(f"    {head['actor']} {head['action']} {head['id']}{seen}")
            reporter.text(f"    to settle: {item['settle']}")
    head = report.ledger_head
    reporter.text(f"ledger head: seq {head['seq']}, {head['hash']}")
    if report.git_conflicts:
        reporter.text("notes left with git conflict markers (resolve them, then vt apply):", "red")
        for finding in report.git_conflicts:
            reporter.text(f"  {finding.plain()}")
    if report.unreadable:
        reporter.text("not read (each may be a review note; see vt validate):", "red")
        for finding in report.unreadable:
            reporter.text(f"  {finding.plain()}")
    finish(failed)
