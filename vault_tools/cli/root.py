"""The root Typer app every command module registers itself on (`vt --version` too);
`vault_tools.cli` decides which command modules a run imports."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from vault_tools import __version__

# a value's type as Typer names it in a metavar (`<path>`) -> the word click would show
_TYPE_WORDS = {"str": "TEXT", "int": "INTEGER", "int range": "INTEGER", "float": "FLOAT"}
_TYPED = re.compile(r"<(\w[\w ]*)>")


class _Argument(TyperArgument):
    """An argument shown as `EVENT_ID`, or `[PATHS]...` when it may be left out: the style
    of the options' `PATH` and `TEXT` (Typer would show `{event_id}` and `[paths]...`)."""

    def make_metavar(self, ctx: typer.Context, *, usage: bool = False) -> str:  # type: ignore[override]
        shown = self.metavar or (self.name or "").upper()
        if usage and not self.required and not shown.startswith("["):
            shown = f"[{shown}]"
        return shown + ("..." if self.nargs != 1 else "")


class _Option(TyperOption):
    """An option's value shown as `PATH` or `TEXT`, not Typer's `<path>` or `<str>`."""

    def make_metavar(self, ctx: typer.Context) -> str:  # type: ignore[override]
        shown = super().make_metavar(ctx)
        return _TYPED.sub(lambda m: _TYPE_WORDS.get(m[1], m[1].upper().replace(" ", "_")), shown)


def _one_style(command: Any) -> None:
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = _Argument
        elif type(param) is TyperOption:
            param.__class__ = _Option
    for sub in getattr(command, "commands", {}).values():
        _one_style(sub)


class _Group(TyperGroup):
    """The root command: Typer builds every command's parameters before this group, and
    this group gives them one metavar style, whichever command a run loads."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _one_style(self)


app = typer.Typer(
    name="vt",
    cls=_Group,
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
