"""`vt draft`: give review notes a V2 Draft section to edit."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode
from vault_tools.findings import counted


@app.command()
def draft(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Review notes to give a V2 Draft section.", show_default=False),
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Add the ⑤ V2 Draft section to notes, with V1 copied into the three draft blocks.

    The section goes before Human Review; a note that already has drafts is refused.
    Edit the drafts, set review_action to REQUEST_REPAIR, then run vt preview.

    Example:

        vt draft 03_claims/IX2-0328.md --vault ~/my-vault

        vt draft 03_claims/IX2-*.md --dry-run
    """
    from vault_tools.review.draft import draft_notes

    reporter = Reporter(as_json)
    settings = settings_for(vault, writes=True)
    report = draft_notes(settings, paths, dry_run)
    if reporter.mode == JSON:
        reporter.json(report.to_json())
        finish(ExitCode.FINDINGS if report.failed else ExitCode.OK)
    for result in report.notes:
        if result.failed:
            reporter.findings(result.findings)
        elif dry_run:
            reporter.text(f"{result.path}: would add the V2 Draft section (dry run):")
            reporter.text(result.section)
        else:
            reporter.text(f"{result.path}: V2 Draft section added", "green")
    drafted = sum(not n.failed for n in report.notes)
    verb = "would be drafted" if dry_run else "drafted"
    summary = f"{drafted} of {counted(len(report.notes), 'note')} {verb}"
    reporter.summary(summary, report.failed)
    finish(ExitCode.FINDINGS if report.failed else ExitCode.OK)
