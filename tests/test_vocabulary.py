"""The review vocabulary has one spelling, shared by every module and the schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vault_tools.vocabulary import (
    CHECK_KEYS,
    CONFLICT_MARKERS,
    LEDGER_ACTION_OF,
    LEDGER_ACTIONS,
    REVIEW_ACTIONS,
    REVIEW_STATES,
    STATUS_BY_ACTION,
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
    assert tuple(props["action"]["enum"]) == LEDGER_ACTIONS
    assert tuple(props["checks"]["properties"]) == CHECK_KEYS
    note = json.loads((ROOT / "schemas" / "note-properties.schema.json").read_text())
    assert tuple(note["$defs"]["review_action"]["enum"]) == REVIEW_ACTIONS
    assert tuple(note["$defs"]["review_state"]["enum"]) == REVIEW_STATES
    assert set(CHECK_KEYS) <= set(note["properties"])
