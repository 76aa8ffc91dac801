"""`vt hook run` as git runs it on every commit: without Typer, whose import and
command building were a fifth of the hook's run (docs/performance.md).

`__main__` hands `hook run ARGS` here first. Only the forms a hook or the pre-commit
framework writes are read here: `[--vault PATH | --vault=PATH] [--json] [FILE ...]`.
Anything else (`--help`, `--`, an option vt does not know, `--vault` without a value)
is left to the Typer command in cli/hook.py, so help and usage errors are those of
every command. Both run `check_and_report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.running import finish, run_guarded, settings_for
from vault_tools.errors import ExitCode
from vault_tools.findings import counted
from vault_tools.integrations.git.hook import run as run_hook


class HookArgs(NamedTuple):
    vault: Path | None
    as_json: bool
    files: list[Path]


def parse(args: Sequence[str]) -> HookArgs | None:
    """The arguments after `hook run`, or None when Typer should read them."""
    vault: Path | None = None
    as_json = False
    files: list[Path] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--json":
            as_json = True
        elif arg == "--vault":
            value = next(rest, None)
            if value is None or value.startswith("-"):
                return None  # Typer says what is wrong, or takes it as a value as it does
            vault = Path(value)
        elif arg.startswith("--vault="):
            vault = Path(arg.removeprefix("--vault="))
        elif arg.startswith("-"):
            return None
        else:
            files.append(Path(arg))
    return HookArgs(vault, as_json, files)


def main(args: Sequence[str]) -> None:
    """Run `vt hook run ARGS` and exit, or return when Typer should read `args`."""
    parsed = parse(args)
    if parsed is not None:
        run_guarded(lambda: finish(check_and_report(*parsed)))


def check_and_report(vault: Path | None, as_json: bool, files: Sequence[Path]) -> ExitCode:
    """Check the staged notes and ledger (or `files`), print what was found; the exit code."""
    reporter = Reporter(as_json)
    report = run_hook(settings_for(vault), files=files)
    if reporter.mode == JSON:
        reporter.json_line(report.to_json())
    else:
        for finding in report.findings:  # errors only: the hook refuses on errors
            reporter.error(finding.plain())
        if report.errors:
            reporter.error(
                f"vt hook: {counted(report.errors, 'error')} in the files given (see `vt validate`)"
                if files
                else f"vt hook: commit refused: {counted(report.errors, 'error')} in the staged "
                "notes or ledger (fix them and stage again; see `vt validate`)"
            )
    return ExitCode.FINDINGS if report.errors else ExitCode.OK
