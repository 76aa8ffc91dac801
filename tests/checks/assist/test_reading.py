"""The memos of checks/assist/reading.py against the functions they memoize."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text, texts
from vault_tools.checks.assist import reading

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "sentences": (one_text, numbered),
    "evidence_sentences": (one_text, numbered),
    "latin_runs": (one_text, numbered),
    "restated_sentence": (
        st.tuples(texts, texts) | st.tuples(texts, texts, st.integers(0, 3)),
        lambda n: (f"a b{n}. c d{n}.", f"b{n} c"),
    ),
    "evidence_negation": (one_text, numbered),
    "evidence_denies": (one_text, numbered),
    "evidence_conditions": (one_text, numbered),
    "quantities": (one_text, numbered),
    "name_words": (one_text, numbered),
    "text_prefixes": (one_text, numbered),
    "_name_pattern": (one_text, numbered),
    "_name_shape": (one_text, numbered),
}


@pytest.mark.parametrize("name", memo_test(reading, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(reading, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
