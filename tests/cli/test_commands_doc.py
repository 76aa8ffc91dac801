"""docs/commands.md against the Typer app, so the command reference cannot drift.

Each command of the app has a section in docs/commands.md, and the section holds the
command's `--help` (every option, its help and its examples) between
`<!-- help: vt NAME -->` and `<!-- /help -->`, written by this module:

    python -m tests.cli.test_commands_doc      # rewrite the help blocks of docs/commands.md

The tests fail when a block differs from what the app prints, when a command has no
section, or when a section names a command the app does not have.
"""

from __future__ import annotations

import re
import sys

import click
import typer.main

from tests.conftest import REPO
from vault_tools.cli import app

PAGE = REPO / "docs" / "commands.md"
WIDTH = 88  # the help as an 88-column terminal shows it, whatever the terminal running this
BLOCK = re.compile(r"<!-- help: (vt[\w -]*?) -->\n```text\n(.*?)```\n<!-- /help -->", re.S)
HEADING = re.compile(r"^#{2,4} `(vt(?: [a-z][\w-]*)*)`$", re.M)


def command_paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every visible command and command group under `command`, depth first."""
    found = []
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            found.append((*path, name))
            found += command_paths(sub, (*path, name))
    return found


def help_text(path: tuple[str, ...]) -> str:
    """`vt PATH --help` as a terminal of WIDTH columns prints it."""
    command = typer.main.get_command(app)
    context = None
    for name in ("vt", *path):
        if context is not None:
            command = command.commands[name]  # type: ignore[attr-defined]
        context = click.Context(
            command,
            info_name=name,
            parent=context,
            terminal_width=WIDTH,
            max_content_width=WIDTH,
            **command.context_settings,
        )
    return command.get_help(context).rstrip() + "\n"


def rendered(page: str) -> str:
    """`page` with every help block as the app prints it now."""

    def block(match: re.Match[str]) -> str:
        path = tuple(match.group(1).split()[1:])
        return f"<!-- help: {match.group(1)} -->\n```text\n{help_text(path)}```\n<!-- /help -->"

    return BLOCK.sub(block, page)


COMMANDS = command_paths(typer.main.get_command(app))


def test_every_command_has_a_section_with_its_help() -> None:
    page = PAGE.read_text(encoding="utf-8")
    headings = set(HEADING.findall(page))
    blocks = [match.group(1) for match in BLOCK.finditer(page)]
    expected = ["vt", *(f"vt {' '.join(path)}" for path in COMMANDS)]
    assert len(expected) > 20 and "vt ledger verify" in expected
    assert sorted(blocks) == sorted(expected), "a help block is missing or names no command"
    assert set(expected) - {"vt"} <= headings, sorted(set(expected) - headings - {"vt"})
    assert headings <= set(expected), sorted(headings - set(expected))


def test_every_help_block_is_what_the_app_prints() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert rendered(page) == page, "run: python -m tests.cli.test_commands_doc"


def test_every_option_and_example_is_in_the_page() -> None:
    """What the blocks hold, checked from the app's side: each option and each line of
    each command's Example section."""
    page = PAGE.read_text(encoding="utf-8")
    root = typer.main.get_command(app)
    for path in [(), *COMMANDS]:
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        for param in command.params:
            for option in (*param.opts, *param.secondary_opts):
                if option.startswith("-") and not param.hidden:
                    assert option in page, f"vt {' '.join(path)}: {option} is not documented"
        for line in (command.help or "").splitlines():
            if line.strip().startswith("vt "):
                assert line.strip() in page, line


if __name__ == "__main__":
    before = PAGE.read_text(encoding="utf-8")
    after = rendered(before)
    PAGE.write_text(after, encoding="utf-8")
    sys.stdout.write(f"{PAGE.name}: {'rewritten' if after != before else 'up to date'}\n")
