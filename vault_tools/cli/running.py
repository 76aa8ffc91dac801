"""How a command runs, without Typer: its settings, its exit, and what it raised as one
line and an exit code (docs/exit-codes.md). `run_app` runs the Typer app through
`run_guarded`; so does `vt hook run`'s lean path (cli/hook_run.py), which git runs on
every commit and which never imports Typer."""

from __future__ import annotations

import codecs
import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from vault_tools.cli.printable import printable
from vault_tools.config import Settings, load_settings
from vault_tools.errors import ExitCode, VtError


def settings_for(
    vault: Path | None, *, new_vault: bool = False, writes: bool = False, setting_up: bool = False
) -> Settings:
    """The settings of the vault; what is doubtful about the vault (see
    `config.vault_warnings`) is said on stderr first, so stdout stays the command's.
    `writes`: the command writes to the vault, so a doubtful folder is refused. So is a
    clone that lacks the git set-up its vault expects (`clonesetup`) said, except for the
    commands that set it up (`setting_up`: `vt init`, `vt hook install`, …)."""
    settings = load_settings(vault, new_vault=new_vault, writes=writes)
    warnings = list(settings.warnings)
    if not (new_vault or setting_up):
        from vault_tools.integrations.git.clonesetup import missing_setup

        missing = missing_setup(settings.vault)
        warnings += [missing] if missing else []
    for warning in warnings:
        sys.stderr.write(printable(f"vt: warning: {warning}\n"))
    return settings


def finish(code: int | ExitCode) -> NoReturn:
    """End the command with `code`. SystemExit, not typer.Exit: inside a Typer command
    Click lets it through to the same exit, and the lean path has no Typer."""
    raise SystemExit(int(code))


def utf8_output() -> None:
    """Write stdout and stderr in UTF-8 when they are piped: on Windows a pipe gets the
    ANSI code page (cp1252 …), which cannot encode a CJK claim (a crash, exit 5), and
    JSON is UTF-8 by its RFC. A terminal keeps its own encoding (Windows' console is
    UTF-8 to Python already), and never fails on a character it lacks."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue  # replaced (a test's capture): not ours to change
        if codecs.lookup(encoding).name == "utf-8":
            continue
        if stream.isatty():
            stream.reconfigure(errors="replace")
        else:
            stream.reconfigure(encoding="utf-8")


def run_guarded(command: Callable[[], object]) -> None:
    """Run a command; VtErrors become one `path:line: message` line and their exit code.

    SystemExit passes through untouched. Anything else is `crash.unhandled`'s: an I/O
    error (exit 4) or a bug with a crash report (exit 5).
    """
    utf8_output()
    try:
        command()
    except VtError as exc:
        sys.stderr.write(printable(f"vt: {exc}") + "\n")
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        sys.stderr.write("vt: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback
        from vault_tools.cli.crash import unhandled

        sys.exit(unhandled(exc, ["vt", *sys.argv[1:]]))
    finally:
        # The command is done and has closed what it wrote. What is still alive goes with
        # the process; frozen, it is skipped by the collections the interpreter runs as it
        # exits, which otherwise walk every object (~10 ms after a 10k-note validate).
        gc.freeze()
