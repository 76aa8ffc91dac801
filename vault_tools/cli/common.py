"""What every command shares: the --vault and --json options, settings, exit codes."""

from __future__ import annotations

import codecs
import gc
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from vault_tools.config import Settings, load_settings
from vault_tools.errors import ExitCode, VtError

VaultOption = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        help="Vault folder (default: $VT_VAULT, else the nearest ancestor "
        "holding .obsidian/ or vt.toml).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Show what would happen; write nothing.")
]


def settings_for(vault: Path | None, *, new_vault: bool = False) -> Settings:
    """The settings of the vault; what is doubtful about the vault (see
    `config.vault_warnings`) is said on stderr first, so stdout stays the command's."""
    settings = load_settings(vault, new_vault=new_vault)
    for warning in settings.warnings:
        sys.stderr.write(f"vt: warning: {warning}\n")
    return settings


def finish(code: int | ExitCode) -> NoReturn:
    raise typer.Exit(int(code))


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


def run_app(app: typer.Typer) -> None:
    """Run the CLI; VtErrors become one `path:line: message` line and their exit code.

    Usage errors are Typer's own (exit 2); SystemExit passes through untouched. Anything
    else is `crash.unhandled`'s: an I/O error (exit 4) or a bug with a crash report (exit 5).
    """
    utf8_output()
    try:
        app()
    except VtError as exc:
        sys.stderr.write(f"vt: {exc}\n")
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
