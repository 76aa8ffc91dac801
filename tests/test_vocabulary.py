"""The review vocabulary has one spelling, shared by every module and the schemas."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from vault_tools.vocabulary import (
    CHECK_KEYS,
    CONFLICT_MARKERS,
    LEDGER_ACTION_OF,
    LEDGER_ACTIONS,
    POLICY,
    REVIEW_ACTIONS,
    REVIEW_STATES,
    STATUS_BY_ACTION,
    STATUSES,
    conflict_marker,
)

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "vault_tools").rglob("*.py"))


@pytest.mark.parametrize(
    ("line", "marker"),
    [
        (b"<<<<<<< HEAD", b"<<<<<<<"),
        (b"<<<<<<<", b"<<<<<<<"),
        (b"||||||| base\r", b"|||||||"),
        (b"=======", b"======="),
        (b"=======\r", b"======="),
        (b">>>>>>> theirs\n", b">>>>>>>"),
        (b"========", None),
        (b"<<<<<<<<", None),
        (b"======x", None),
        (b'{"id": "======="}', None),
        (b"", None),
    ],
)
def test_conflict_marker(line: bytes, marker: bytes | None) -> None:
    assert conflict_marker(line) == marker


def test_no_module_spells_a_marker_or_check_list_of_its_own() -> None:
    vocabulary = ROOT / "vault_tools" / "vocabulary.py"
    for path in SOURCES:
        if path == vocabulary:
            continue
        text = path.read_text(encoding="utf-8")
        for marker in CONFLICT_MARKERS:
            assert f'b"{marker.decode()}' not in text, (path, marker)
        # a tuple literal of check keys is a second copy of the list
        assert not re.search(r'\(\s*"check_source_claim",', text), path


def test_review_actions_map_onto_ledger_actions() -> None:
    assert set(LEDGER_ACTION_OF) <= set(REVIEW_ACTIONS)
    assert set(LEDGER_ACTION_OF.values()) <= set(LEDGER_ACTIONS)
    assert set(STATUS_BY_ACTION) == set(LEDGER_ACTIONS)


def test_schemas_agree_with_the_vocabulary() -> None:
    event = json.loads((ROOT / "schemas" / "ledger-event.schema.json").read_text())
    props = event["properties"]
    assert tuple(props["action"]["enum"]) == (*LEDGER_ACTIONS, POLICY)
    assert tuple(props["checks"]["properties"]) == CHECK_KEYS
    note = json.loads((ROOT / "schemas" / "note-properties.schema.json").read_text())
    assert tuple(note["$defs"]["review_action"]["enum"]) == REVIEW_ACTIONS
    assert tuple(note["$defs"]["review_state"]["enum"]) == REVIEW_STATES
    assert set(CHECK_KEYS) <= set(note["properties"])


def _literals(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module, docstrings left out (they describe, not spell)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


# word -> its home: the one module that may spell it as a literal
WORDS = {
    **{word: "vocabulary.py" for word in (*REVIEW_ACTIONS, *REVIEW_STATES)},
    **{word: "vocabulary.py" for word in (*LEDGER_ACTIONS, *STATUSES)},
}
# a vt block marker spelt out (`<!-- vt:…`, `<!--vt:…`): its home is notes/markers.py
MARKER_LITERAL = re.compile(r"<!--\s*vt:")


def _spelt_outside_home(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        for line, value in _literals(path):
            home = WORDS.get(value)
            if home is not None and relative != home:
                found.append(f"{relative}:{line}: {value}")
            if MARKER_LITERAL.search(value) and relative != "notes/markers.py":
                found.append(f"{relative}:{line}: {value!r}")
    return found


def test_no_review_word_or_vt_marker_is_spelt_outside_its_home(tmp_path: Path) -> None:
    # the check itself finds what it is for
    planted = tmp_path / "planted.py"
    planted.write_text('"""APPROVE in a docstring is prose."""\nA = "APPROVE"\nB = b"x"\n'
                       'M = f"<!--vt:{name}:start-->"\n', encoding="utf-8")  # fmt: skip
    assert _spelt_outside_home(tmp_path) == ["planted.py:2: APPROVE", "planted.py:4: '<!--vt:'"]
    assert _spelt_outside_home(ROOT / "vault_tools") == []
