"""`vt validate`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, FindingStream, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode
from vault_tools.findings import counted


@app.command()
def validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Notes to check (default: every review note of the vault).", show_default=False
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check review notes against the schemas and the knowledge base.

    Findings are written as each note is checked, by path; a whole-vault run lists
    the claim-id-duplicate findings last.

    Example:

        vt validate --vault ~/my-vault

        vt validate 03_claims/SA260324R-0125.md --json
    """
    from vault_tools.checks.validate import validate_into

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    stream = FindingStream(reporter)
    try:
        with reporter.progress("Validating notes") as progress:
            result = validate_into(settings, stream, paths or None, progress)
    except BaseException as exc:  # the error goes on to stderr and its exit code
        stream.abort(exc)
        raise
    if result.cache_failure is not None:  # said once; the check itself went on
        shown = result.cache_failure.replace(f"{settings.vault}{os.sep}", "", 1)
        reporter.error(f"vt: warning: {shown}; the check went on without it")
    if reporter.mode == JSON:
        stream.close({"notes": result.notes, "errors": result.errors, "warnings": result.warnings})
    else:
        reporter.summary(
            f"{counted(result.notes, 'note')} checked: {counted(result.errors, 'error')}, "
            f"{counted(result.warnings, 'warning')}",
            failed=bool(result.errors),
            gap=stream.any,
        )
    finish(ExitCode.FINDINGS if result.errors else ExitCode.OK)
