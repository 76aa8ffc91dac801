"""The memo of checks/file_checks.py against the function it memoizes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test
from vault_tools.checks import file_checks

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_note_checks": (st.just(()), None),
}


@pytest.mark.parametrize("name", memo_test(file_checks, MEMO_ARGS))
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(file_checks, name), data.draw(st.lists(args, min_size=1, max_size=2)), fill)
