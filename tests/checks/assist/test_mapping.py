"""The memo of checks/assist/mapping.py against the function it memoizes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.checks.assist.kbs import kb_calls
from tests.memo_oracle import check_memo, memo_test
from vault_tools.checks.assist import mapping
from vault_tools.notes.kb import KnowledgeBase


def memo_args(
    kbs: list[KnowledgeBase],
) -> dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]]:
    return {"_folded_names": (kb_calls(kbs), lambda n: (kbs[0], f"filler {n}.md"))}


@pytest.mark.parametrize("name", memo_test(mapping, memo_args([])))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(
    kbs: list[KnowledgeBase], name: str, data: st.DataObject
) -> None:
    args, fill = memo_args(kbs)[name]
    check_memo(getattr(mapping, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
