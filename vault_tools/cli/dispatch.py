"""Which command modules a run imports (`app_for`), and the whole app for `vt --help`
(`load_all`); `vault_tools.cli` forwards its names here.

A run imports only the module of the command it names (`app_for`); `vt --help` imports
them all. Lazy imports kept where bench/bench_startup.py shows they pay > 5%: the commands'
core modules (top-level: +34% on `vt --help`), rich (+14% on a piped `vt validate` of an
empty vault) and the crash report's module (+12% there); the rest are at the top.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import typer
import typer.main

from vault_tools.cli import root  # the Typer app every command module registers itself on
from vault_tools.cli.common import run_app

# the commands and command groups in the order `vt --help` lists them: the review cycle
# first, then the Claim Store, living beside Obsidian and git, the derived outputs; the
# groups last (Typer lists groups after commands)
COMMANDS = (
    "validate",
    "draft",
    "preview",
    "apply",
    "revert",
    "demo",
    "rebuild",
    "status",
    "history",
    "watch",
    "init",
    "import",
    "report",
    "export",
    "stats",
    "ledger",
    "signers",
    "hook",
    "entities",
)
_MODULE = {"import": "import_"}  # a command whose module cannot take its name


def load(name: str) -> None:
    """Import the module of command `name`, which registers it on `root.app`."""
    # __import__, not importlib.import_module: `python -X importtime` then sees it
    __import__(f"vault_tools.cli.{_MODULE.get(name, name)}")


def load_all() -> typer.Typer:
    """The app with every command, in `COMMANDS` order whatever was loaded first."""
    for name in COMMANDS:
        load(name)
    root.app.registered_commands.sort(key=lambda c: COMMANDS.index(_command_name(c)))
    root.app.registered_groups.sort(key=lambda g: COMMANDS.index(g.name or ""))
    return root.app


def main() -> None:
    run_app(app_for(sys.argv[1:]))


def app_for(args: list[str]) -> typer.Typer:
    """The app, holding only the command (or command group) that `args` name first, when
    they name one: only that command's module is imported, and Typer builds only its
    options (about 15 ms for all of them at each start). `vt --help`, a mistyped command
    and the like get the whole app."""
    if not args or args[0] not in COMMANDS:
        return load_all()
    load(args[0])
    whole = root.app
    lean = copy.copy(whole)
    lean.registered_commands = [c for c in whole.registered_commands if _command_name(c) == args[0]]
    lean.registered_groups = [g for g in whole.registered_groups if g.name == args[0]]
    return lean


def _command_name(command: Any) -> str:
    callback = command.callback
    return str(command.name or (callback and typer.main.get_command_name(callback.__name__)))
