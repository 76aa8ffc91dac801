"""The memos of checks/assist/wording.py against the functions they memoize."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text, texts
from vault_tools.checks.assist import wording

numbers = st.from_regex(r"[0-9０-９][0-9,.]{0,40}", fullmatch=True) | texts
values = st.sampled_from(["1", "1.0", "1.00", "10", "1E+1", "0.5", "1500", "3", "-2"]).map(
    Decimal
) | st.decimals(allow_nan=False, allow_infinity=False, places=2)  # equal values, other digits

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_fold_short": (one_text, numbered),
    "_fold_long": (one_text, numbered),
    "folded_part_of": (st.tuples(texts, texts), lambda n: (f"w{n}", f"a w{n} b")),
    "_not_a_letter": (st.tuples(st.characters()), lambda n: (chr(0x4E00 + n),)),
    "_cjk": (st.just(()), None),
    "_words_short": (one_text, numbered),
    "_words_long": (one_text, numbered),
    "number_value": (st.tuples(numbers), lambda n: (f"{n},{n:03d}.5",)),
    "numbers_in": (st.tuples(texts, st.booleans()), lambda n: (f"{n} tokens", n % 2 == 0)),
    "_number_values": (one_text, numbered),
    "mentions_number": (st.tuples(texts, values), lambda n: (f"{n} times", Decimal(n))),
    "nfkc_casefold": (one_text, numbered),
    "_nfkc": (one_text, numbered),
    "_worded_sentences": (one_text, numbered),
    "evidence_hedge": (one_text, numbered),
    "_may_hedge": (one_text, numbered),
    "_evidence_tone": (one_text, numbered),
}


@pytest.mark.parametrize("name", memo_test(wording, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(wording, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
