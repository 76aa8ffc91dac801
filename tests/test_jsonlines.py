"""The line-by-line fast path of jsonlines must map exactly what the token scan maps."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.jsonlines import _pretty_lines, _scan, line_of, value_lines

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(alphabet=st.sampled_from(list('ab "\\:{}[],\n中')), max_size=6),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet=st.sampled_from(list('ab "\\:{中')), max_size=4), inner,
                      max_size=4),
    max_leaves=25,
)


def _token_map(text: str) -> dict:
    mapped: dict = {}
    for path, line in _scan(text):
        mapped.setdefault(path, line)
    return mapped


@settings(max_examples=400, deadline=None)
@given(JSON, st.sampled_from([None, 1, 2, 4]), st.booleans())
def test_fast_path_agrees_with_the_token_scan(value, indent, ascii_only) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    fast = _pretty_lines(text)
    if fast is not None:
        assert fast == _token_map(text)
    assert value_lines.__wrapped__(text) == _token_map(text)


def test_line_of_finds_values_and_falls_back_to_the_nearest_ancestor() -> None:
    text = '{\n  "entities": [\n    {"id": "a",\n     "label": "b"}\n  ],\n  "x": 1\n}'
    assert line_of(text, ("entities", 0, "label"), 10) == 13
    assert line_of(text, ("x",), 10) == 15
    assert line_of(text, ("entities", 5, "id"), 10) == 11
    assert line_of(text, ("nowhere",), 10) == 10
