"""`vt validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli import app
from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.errors import ExitCode


@app.command()
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Notes to check (default: every review note of the vault).",
        show_default=False)] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check review notes against the schemas and the knowledge base.

    Example:

        vt validate --vault examples/vault

        vt validate 03_claims/SA260324R-0125.md --json
    """
    from vault_tools.report import Reporter
    from vault_tools.validate import validate as run_validate

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    with reporter.progress("Validating notes") as progress:
        result = run_validate(settings, paths or None, progress)
    if reporter.mode == "json":
        reporter.json(result.to_json())
    else:
        if reporter.mode == "plain":
            reporter.plain_text(result.plain())  # pre-rendered: one write for them all
        else:
            reporter.findings(result.findings)
        summary = (f"{result.notes} notes checked: {result.errors} errors, "
                   f"{result.warnings} warnings")
        if reporter.mode == "rich":
            style = "bold red" if result.errors else "bold green"
            reporter.text(("\n" if result.findings else "") + summary, style)
        else:
            reporter.error(summary)
    finish(ExitCode.FINDINGS if result.errors else ExitCode.OK)
