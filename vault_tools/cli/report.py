"""`vt report`: write the Review Dashboard note."""

from __future__ import annotations

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, VtError
from vault_tools.findings import counted


@app.command()
def report(
    vault: VaultOption = None, as_json: JsonOption = False, dry_run: DryRunOption = False
) -> None:
    """Write the Review Dashboard note (`Review Dashboard.md`) at the vault root.

    First what needs you (conflict markers, validation errors, refused approvals, failed
    and stale previews, claims in CONFLICT, notes edited since apply, ...), each group with
    its count and at most 20 links; a longer group is listed whole in a sub-note in
    `Review Dashboard/`. Then progress: notes by review_action and review_state, Mermaid
    charts of the queue and of the decisions per day and per reviewer, the entities with
    most accepted claims, and a small entity graph. Only the text between the vt:dashboard
    markers is vt's; a note is rewritten only when that text changes.

    Exits 1 when a file or folder of the vault could not be read (the dashboard lists
    it under Unreadable files).

    Example:

        vt report --vault ~/my-vault

        vt report --dry-run

        vt report --json
    """
    from vault_tools.integrations.dashboard_state import report as run_report

    reporter = Reporter(as_json)
    try:
        settings = settings_for(vault, writes=not dry_run)
        with reporter.progress("Reading notes") as progress:
            result = run_report(settings, dry_run, progress)
    except VtError as exc:
        reporter.fail(exc)
    # the dashboard is written all the same; the exit says some files went unread
    failed = ExitCode.FINDINGS if result.summary["unreadable"] else ExitCode.OK
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(failed)
    if dry_run:
        verb = "would write" if result.changed else "up to date, would not write"
        reporter.text(f"{verb} {result.path} (dry run, nothing written)")
        for path in result.subnotes_changed:
            reporter.text(f"would write {path}")
        if result.changed:
            reporter.text("")
            reporter.text(result.content.rstrip("\n"))
    else:
        if result.written:
            reporter.text(f"{'created' if result.created else 'updated'} {result.path}")
        else:
            reporter.text(f"{result.path} is up to date (not rewritten)")
        for path in result.subnotes_written:
            reporter.text(f"updated {path}")
    s = result.summary
    reporter.text(
        f"{counted(s['notes'], 'review note')}, {counted(s['accepted_claims'], 'accepted claim')}"
        f" on {counted(s['entities'], 'entity')}, "
        f"{counted(sum(s['findings'].values()), 'finding')}; "
        f"graph: {s['edges_shown']} of {counted(s['edges'], 'edge')} shown"
    )
    if s["unreadable"]:
        reporter.text(
            f"files or folders that could not be read: {s['unreadable']} (listed on "
            "the dashboard; see vt validate)",
            "red",
        )
    finish(failed)
