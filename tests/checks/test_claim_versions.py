"""The memo of checks/claim_versions.py against the function it memoizes: the line of
every value of a JSON block, for JSON written as the pipeline writes it (indented, one
value a line), as json.dumps writes it, and otherwise."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, texts
from vault_tools.checks import claim_versions

values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)
documents = st.builds(
    lambda value, indent, ascii_only: json.dumps(value, indent=indent, ensure_ascii=ascii_only),
    values,
    st.sampled_from([None, 2, 4, 0]),
    st.booleans(),
)
MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_value_lines": (
        st.tuples(documents | texts),
        lambda n: (json.dumps({"n": n, "entities": [{"id": str(n)}]}, indent=2),),
    ),
}


@pytest.mark.parametrize("name", memo_test(claim_versions, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    memo = getattr(claim_versions, name)
    check_memo(memo, data.draw(st.lists(args, min_size=1, max_size=6)), fill)
