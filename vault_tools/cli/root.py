"""The root Typer app every command module registers itself on (`vt --version` too);
`vault_tools.cli` decides which command modules a run imports."""

from __future__ import annotations

import typer

from vault_tools import __version__

app = typer.Typer(
    name="vt",
    help="Validate, preview and apply claim review decisions in an Obsidian vault.\n\n"
    "Example:\n\n    vt validate --vault ~/my-vault",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    # click's plain help: Typer's rich help imports rich.markdown (markdown-it) and
    # rich.traceback whatever the mode, ~2x the start-up of an empty-vault validate
    rich_markup_mode=None,
    add_completion=True,  # Typer's: --install-completion / --show-completion
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
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
