"""The memo of store/claims.py against the function it memoizes (the Claim Store itself
is tested in test_store.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, texts
from vault_tools.store import claims

targets = (
    st.sampled_from(
        [
            "[[04_knowledge_base/KL Divergence]]",
            "KL Divergence|KL",
            "04_knowledge_base/KV Cache.md",
            "  x  ",
        ]
    )
    | texts
)
MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_target_key": (st.tuples(targets), numbered),
}


@pytest.mark.parametrize("name", memo_test(claims, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(claims, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
