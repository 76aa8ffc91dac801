# ruff: noqa: I001  (the command modules are imported in the order `vt --help` lists them)
"""The `vt` command line: thin Typer commands over the core modules.

Each command turns its options into `Settings`, calls one core function and hands
the result to a `Reporter`. Core modules are imported inside the commands so that
`vt --help` and the pre-commit hook start fast.
"""

from __future__ import annotations

import typer

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
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                 help="Print vt's version and exit."),
) -> None:
    """Validate, preview and apply claim review decisions in an Obsidian vault."""


# command modules register themselves on `app`, in the order `vt --help` lists them:
# the review cycle first, then the ledger, living beside Obsidian and git, the rest
from vault_tools.cli import validate as _validate  # noqa: E402,F401
from vault_tools.cli import preview as _preview  # noqa: E402,F401
from vault_tools.cli import apply as _apply  # noqa: E402,F401
from vault_tools.cli import store as _store  # noqa: E402,F401
from vault_tools.cli import ledger as _ledger  # noqa: E402,F401
from vault_tools.cli import ledger_merge as _ledger_merge  # noqa: E402,F401
from vault_tools.cli import watch as _watch  # noqa: E402,F401
from vault_tools.cli import init as _init  # noqa: E402,F401
from vault_tools.cli import hook as _hook  # noqa: E402,F401
from vault_tools.cli import entities as _entities  # noqa: E402,F401
from vault_tools.cli import importer as _importer  # noqa: E402,F401
from vault_tools.cli import dashboard as _dashboard  # noqa: E402,F401


def main() -> None:
    from vault_tools.cli.common import run_app

    run_app(app)
