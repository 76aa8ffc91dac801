"""The memos of checks/assist/cues.py against the functions they memoize."""

from __future__ import annotations

import re
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


_WORD = st.text(alphabet="abno1", min_size=1, max_size=4)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(_WORD, min_size=1, max_size=5),
    st.lists(_WORD | st.sampled_from([" ", "-", "中", "'", "é", "A"]), max_size=12).map("".join),
)
def test_a_whole_word_pattern_matches_the_runs_that_are_its_words(
    words: list[str], text: str
) -> None:
    """The rule: the runs of letters and digits of the text that are one of the words
    (a word inside a longer run, or at its start or end, is none)."""
    pattern = cues.whole_word_pattern(words)
    runs = [(m.span(), m.group()) for m in re.finditer("[a-z0-9]+", text)]
    assert [m.span() for m in pattern.finditer(text)] == [s for s, run in runs if run in words]
