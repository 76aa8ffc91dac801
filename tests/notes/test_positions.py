"""The line-by-line fast path of positions must map exactly what the token scan maps."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text, texts
from vault_tools.notes import positions as positions_module
from vault_tools.notes.positions import (
    _one_value_a_line,
    _value_positions,
    line_of,
    member_line,
    value_lines,
)

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from(list('ab "\\:{}[],\n中')), max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(alphabet=st.sampled_from(list('ab "\\:{中')), max_size=4), inner, max_size=4
        )
    ),
    max_leaves=25,
)


def _token_map(text: str) -> dict:
    mapped: dict = {}
    for path, line in _value_positions(text):
        mapped.setdefault(path, line)
    return mapped


@settings(max_examples=400, deadline=None)
@given(JSON, st.sampled_from([None, 1, 2, 4]), st.booleans())
def test_fast_path_agrees_with_the_token_scan(value, indent, ascii_only) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    fast = _one_value_a_line(text)
    if fast is not None:
        assert fast == _token_map(text)
    assert value_lines.__wrapped__(text) == _token_map(text)


def test_line_of_finds_values_and_falls_back_to_the_nearest_ancestor() -> None:
    text = '{\n  "entities": [\n    {"id": "a",\n     "label": "b"}\n  ],\n  "x": 1\n}'
    assert line_of(text, ("entities", 0, "label"), 10) == 13
    assert line_of(text, ("x",), 10) == 15
    assert line_of(text, ("entities", 5, "id"), 10) == 11
    assert line_of(text, ("nowhere",), 10) == 10


def _members(value: object, path: tuple = ()) -> list[tuple[tuple, str]]:
    """(path, value) of every string member of every object in `value`."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str):
                found.append(((*path, key), item))
            found += _members(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _members(item, (*path, index))
    return found


LAYOUTS = [
    lambda v: json.dumps(v, indent=2, ensure_ascii=False),
    lambda v: json.dumps(v, indent=4, ensure_ascii=True),
    lambda v: json.dumps(v, ensure_ascii=False),
    lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False),
    lambda v: json.dumps(v, indent=1, separators=(",", " : "), ensure_ascii=False),
    lambda v: json.dumps(v, indent=2, ensure_ascii=False).replace('": ', '":\n  ', 1),
]


@settings(max_examples=400, deadline=None)
@given(JSON, st.sampled_from(range(len(LAYOUTS))))
@example({": ": None, "": ""}, 5)  # a layout that is not JSON any more: not asked
def test_member_search_is_right_or_declines(value, layout) -> None:
    """Whatever the layout, the cheap search gives the line the full map gives, or None."""
    text = LAYOUTS[layout](value)
    try:  # the last layout may break a string that holds '": ' (callers parse first)
        assume(json.loads(text) == value)
    except ValueError:
        assume(False)
    mapped = value_lines.__wrapped__(text)
    for path, item in _members(value):
        line = member_line(text, path[-1], item)
        assert line is None or line == mapped[path], (path, item)


def test_member_search_finds_the_labels_of_a_pipeline_frame() -> None:
    frame = {
        "entities": [
            {"id": "04_knowledge_base/A", "label": "draft token"},
            {"id": "04_knowledge_base/B", "label": "主模型"},
        ],
        "qualifiers": {"condition_text": "k << N"},
    }
    text = json.dumps(frame, indent=2, ensure_ascii=False)
    assert member_line(text, "label", "draft token") == 5
    assert member_line(text, "label", "主模型") == 9
    assert member_line(text, "label", "draft") is None  # a prefix is not the value
    twice = json.dumps({"a": {"label": "x"}, "b": {"label": "x"}}, indent=2)
    assert member_line(twice, "label", "x") is None  # which one: the full map decides


# --- the memos of notes/positions.py against the functions they memoize (tests/memo_oracle.py) ----

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "value_lines": (st.tuples(texts), numbered),
    "_key_spacing": (one_text, numbered),
    "_spelled_as_dumped": (st.tuples(texts, texts), lambda n: (f'{{"k{n}": 1}}', f"k{n}")),
}


@pytest.mark.parametrize("name", memo_test(positions_module, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(
        getattr(positions_module, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill
    )
