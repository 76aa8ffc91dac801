"""What vt's output says, in one style: counts in the number their noun takes ("1 error"),
dry runs in the conditional ("would write"), metavars as `[PATHS]...` and `EVENT_ID`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import typer.main
from typer.core import TyperArgument, TyperOption

from tests.cli.test_commands_doc import COMMANDS
from tests.conftest import REPO, copy_example_vault, make_repo, run_vt
from vault_tools.cli import app
from vault_tools.findings import counted

# nouns vt counts; a count written before one of these by hand reads "1 notes"
COUNTED_NOUNS = (
    "notes|errors|warnings|events|claims|problems|decisions|entities|duplicates|targets|"
    "conflicts|findings|edges|records|files|lines|heads|previews"
)
HAND_PLURAL = re.compile(rf"^ (?:[a-z-]+ )?(?:{COUNTED_NOUNS})\b")


# --- counts -------------------------------------------------------------------------


def test_a_count_takes_the_number_of_its_noun() -> None:
    assert counted(1, "error") == "1 error"
    assert counted(0, "error") == "0 errors"
    assert counted(2, "review note") == "2 review notes"
    assert counted(3, "entity") == "3 entities"
    assert counted(1, "entity") == "1 entity"
    assert counted(2, "key") == "2 keys"
    assert counted(2, "match") == "2 matches"


def _hand_made_counts(source: str) -> list[int]:
    """Lines of `source` whose f-strings put a number before a plural noun, or "(s)"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for before, after in zip(parts, parts[1:], strict=False):
            if (
                isinstance(before, ast.FormattedValue)
                and isinstance(after, ast.Constant)
                and HAND_PLURAL.match(str(after.value))
            ):
                found.append(node.lineno)
        if any(isinstance(p, ast.Constant) and "(s)" in str(p.value) for p in parts):
            found.append(node.lineno)
    return found


def test_no_count_is_pluralised_by_hand() -> None:
    assert _hand_made_counts('n = 1\nf"{n} errors"\nf"{n} event(s)"') == [2, 3]
    assert _hand_made_counts("f\"{counted(n, 'error')} found\"") == []
    offenders = {
        str(path.relative_to(REPO)): lines
        for path in sorted((REPO / "vault_tools").rglob("*.py"))
        if (lines := _hand_made_counts(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}, "use findings.counted for these counts"


def test_one_note_with_one_error_is_said_in_the_singular(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    note = vault / "03_claims" / "DV1-0001.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("review_action: APPROVE", "review_action: MAYBE", 1), "utf-8")
    done = run_vt("validate", "03_claims/DV1-0001.md", cwd=vault)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 note checked: 1 error, " in done.stderr, done.stderr
    assert "1 notes" not in done.stderr + done.stdout and "1 errors" not in done.stderr


# --- dry runs -----------------------------------------------------------------------

WOULD = re.compile(
    r"^would (?:write|add|register|install|update|move|remove|restore|leave|run: git) "
)


def test_a_dry_run_says_what_it_would_do(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    make_repo(vault)
    planned = run_vt("init", "--dry-run", cwd=vault)
    assert planned.returncode == 0, planned.stderr
    lines = [line for line in planned.stdout.splitlines() if line.startswith("would")]
    assert len(lines) >= 5
    assert [line for line in lines if not WOULD.match(line)] == []
    assert any(line.startswith("would write vt.toml") for line in lines)
    assert not (vault / "vt.toml").exists()
    assert run_vt("init", cwd=vault).returncode == 0
    unplanned = run_vt("hook", "uninstall", "--dry-run", cwd=vault)
    assert unplanned.returncode == 0, unplanned.stderr
    lines = unplanned.stdout.splitlines()
    assert lines and [line for line in lines if not WOULD.match(line)] == []
    assert any(line.startswith("would remove the pre-commit hook") for line in lines)


# --- metavars -----------------------------------------------------------------------

# an argument or an option's value in the help: `PATHS`, `[PATHS]...`, `EVENT_ID`, `PATH`,
# or a choice of values `[jsonl|csv]`
METAVAR = re.compile(r"^(?:\[[A-Z][A-Z0-9_]*\](?:\.\.\.)?|[A-Z][A-Z0-9_]*(?:\.\.\.)?|\[[\w|-]+\])$")


def _contexts() -> list[tuple[str, click.Command, click.Context]]:
    root = typer.main.get_command(app)
    found = []
    for path in [(), *COMMANDS]:
        command = root
        context = click.Context(root, info_name="vt")
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
            context = click.Context(command, info_name=name, parent=context)
        found.append((" ".join(("vt", *path)), command, context))
    return found


def test_every_metavar_is_in_one_style() -> None:
    checked = 0
    for name, command, context in _contexts():
        for param in command.get_params(context):
            if isinstance(param, TyperArgument):
                shown = [
                    param.make_metavar(context, usage=True),  # type: ignore[call-arg]
                    param.make_metavar(context),
                ]
            elif isinstance(param, TyperOption) and not (param.is_flag or param.count):
                shown = [param.make_metavar(context)]
            else:
                continue
            for metavar in shown:
                checked += 1
                assert METAVAR.match(metavar), f"{name}: {param.name} shows {metavar!r}"
    assert checked > 40


def test_the_usage_lines_name_arguments_in_capitals() -> None:
    validate = run_vt("validate", "--help").stdout
    assert "validate [OPTIONS] [PATHS]...\n" in validate
    revert = run_vt("revert", "--help").stdout
    assert "revert [OPTIONS] EVENT_ID\n" in revert
    assert "--vault PATH" in revert and "<path>" not in revert and "{event_id}" not in revert
