# ruff: noqa: I001  (the command modules are imported in the order `vt --help` lists them)
"""The `vt` command line: thin Typer commands over the core modules.

Each command turns its options into `Settings`, calls one core function and hands
the result to a `Reporter`. Core modules are imported inside the commands so that
`vt --help` and the pre-commit hook start fast.
"""

from __future__ import annotations

import copy

import typer
import typer.main

app = typer.Typer(
    name="vt",
    help="Validate, preview and apply claim review decisions in an Obsidian vault.\n\n"
    "Example:\n\n    vt validate --vault examples/vault",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="markdown",
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from vault_tools import __version__

        typer.echo(f"vt {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_show_version,
        is_eager=True,
        help="Print vt's version and exit.",
    ),
) -> None:
    """Validate, preview and apply claim review decisions in an Obsidian vault."""


# one module per command (or command group), named after it, registering itself on `app`
# in the order `vt --help` lists them: the review cycle first, then the Claim Store, living
# beside Obsidian and git, the derived outputs; the groups last
from vault_tools.cli import validate as _validate  # noqa: E402,F401
from vault_tools.cli import draft as _draft  # noqa: E402,F401
from vault_tools.cli import preview as _preview  # noqa: E402,F401
from vault_tools.cli import apply as _apply  # noqa: E402,F401
from vault_tools.cli import revert as _revert  # noqa: E402,F401
from vault_tools.cli import demo as _demo  # noqa: E402,F401
from vault_tools.cli import rebuild as _rebuild  # noqa: E402,F401
from vault_tools.cli import status as _status  # noqa: E402,F401
from vault_tools.cli import history as _history  # noqa: E402,F401
from vault_tools.cli import watch as _watch  # noqa: E402,F401
from vault_tools.cli import init as _init  # noqa: E402,F401
from vault_tools.cli import import_ as _import  # noqa: E402,F401
from vault_tools.cli import report as _report  # noqa: E402,F401
from vault_tools.cli import export as _export  # noqa: E402,F401
from vault_tools.cli import ledger as _ledger  # noqa: E402,F401
from vault_tools.cli import hook as _hook  # noqa: E402,F401
from vault_tools.cli import entities as _entities  # noqa: E402,F401


def main() -> None:
    import sys

    from vault_tools.cli.common import run_app

    run_app(app_for(sys.argv[1:]))


def app_for(args: list[str]) -> typer.Typer:
    """The app, holding only the command (or command group) that `args` name first, when
    they name one: Typer builds every command's options from its signature at each start,
    about 15 ms for all of them, while a run needs one. `vt --help`, a mistyped command
    and the like get the whole app."""
    if not args or args[0].startswith("-"):
        return app
    commands = [
        c
        for c in app.registered_commands
        if (c.name or c.callback and typer.main.get_command_name(c.callback.__name__)) == args[0]
    ]
    groups = [g for g in app.registered_groups if g.name == args[0]]
    if not commands and not groups:
        return app
    lean = copy.copy(app)
    lean.registered_commands, lean.registered_groups = commands, groups
    return lean
