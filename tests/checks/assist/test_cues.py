"""The memos of checks/assist/cues.py against the functions they memoize."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text
from vault_tools.checks.assist import cues

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_lowered_beyond_ascii": (one_text, numbered),
    "cues": (one_text, numbered),
}


@pytest.mark.parametrize("name", memo_test(cues, MEMO_ARGS))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(cues, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
