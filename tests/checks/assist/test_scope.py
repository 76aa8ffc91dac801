"""The memo of checks/assist/scope.py against the function it memoizes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text, pieces
from vault_tools.checks.assist import scope

names = st.lists(pieces, min_size=1, max_size=4).map(" ".join).map(lambda s: (s,))
MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_source_key": (one_text | names, numbered),
}


@pytest.mark.parametrize("name", memo_test(scope, MEMO_ARGS))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(scope, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
