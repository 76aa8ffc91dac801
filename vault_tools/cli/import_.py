"""`vt import`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode
from vault_tools.findings import counted


@app.command("import")
def import_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="Pipeline records, one JSON object per line "
            "(schema: pipeline-record.schema.json).",
            show_default=False,
        ),
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Render pipeline records into new review notes in 03_claims/ (never overwriting).

    Invalid records are reported as FILE:LINE: message and not imported (exit 1); a
    record whose note already exists is skipped and reported.

    Example:

        vt import examples/claims.jsonl --vault ~/my-vault --dry-run
    """
    from vault_tools.integrations.importer import import_records

    reporter = Reporter(as_json)
    report = import_records(settings_for(vault, writes=True), file, dry_run)
    if reporter.mode == JSON:
        reporter.json(report.to_json())
    else:
        for line in report.error_lines():
            reporter.error(line)
        verb = "would create" if dry_run else "created"
        for item in report.created:
            reporter.text(f"{verb} {item.path}")
        for item in report.skipped:
            reporter.text(f"skipped {item.path}: {item.message}", "yellow")
        reporter.text(
            f"{verb} {counted(len(report.created), 'note')}, {len(report.skipped)} skipped, "
            f"{counted(len(report.errors), 'invalid record')}"
        )
    finish(ExitCode.FINDINGS if report.errors else ExitCode.OK)
