"""The memos of checks/rules.py against the functions they memoize (the rules
themselves are tested in test_checks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text
from vault_tools.checks import rules

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "review_assist": (st.just(()), None),
    "_label_key": (one_text | st.sampled_from([("Å",), ("Å",), (" ß ",), ("SS",)]), numbered),
}


@pytest.mark.parametrize("name", memo_test(rules, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(rules, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
