"""checks/assist/number_reading.py: each reading of a text's numbers against the plain
rules it gathers (`numbers_in`, `mentions_number`, `quantities`), and its memos against
the functions they memoize."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered, one_text, texts
from vault_tools.checks.assist import number_reading
from vault_tools.checks.assist.number_reading import (
    claim_numbers,
    evidence_numbers,
    mention_values,
    quantities,
    states_number,
)
from vault_tools.checks.assist.wording import mentions_number, numbers_in

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "quantities": (one_text, numbered),
    "claim_numbers": (one_text, numbered),
    "evidence_numbers": (one_text, numbered),
    "mention_values": (one_text, numbered),
}


@pytest.mark.parametrize("name", memo_test(number_reading, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(
        getattr(number_reading, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill
    )


# what a number, a range, a unit and a name are made of, in both scripts and the forms
# NFKC and lower case change (full-width, superscripts, İ, the Kelvin sign, a ligature)
_PIECES = [
    "1",
    "5",
    "12",
    "1.5",
    "1,000",
    "1,000,000",
    "0.50",
    "０",
    "５",
    "，",
    "②",
    "²",
    " ",
    "\n",
    " to ",
    "to",
    " and ",
    "到",
    "-",
    "–",
    "~",
    ",",
    ".",
    "_",
    "tokens",
    "Tokens",
    "個新",
    "%",
    "％",
    "percent",
    "x",
    "×",
    "times",
    "倍",
    "-fold",
    "ms",
    "ｍｓ",
    "s",
    "秒",
    "GB",
    "/m",
    "H100",
    "FP",
    "v",
    "EAGLE-",
    "a",
    "提升",
    "İ",
    "\u212a",
    "ﬁ",
    "٣",
    "one",
    "two",
    "三",
]
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=14).map("".join) | texts


def _units(text: str) -> dict[Decimal, frozenset[str]]:
    found: dict[Decimal, set[str]] = {}
    for _, value, unit in quantities(text):
        found.setdefault(value, set()).add(unit)
    return {value: frozenset(units) for value, units in found.items()}


@settings(max_examples=1500, deadline=None)
@given(_TEXTS)
@example("1,000 tokens and H100 GB, 1.5 to 2 x")
@example("a1,000 ms, 2,0005 s")
@example("_-5 ms 1-2 s")
@example("ﬁ5 ms 1²3 s")
def test_the_evidence_reading_is_its_numbers_and_its_quantities(text: str) -> None:
    """The values `mentions_number` looks in, and each value's units, as the plain rules
    give them (an ASCII text's one scan included)."""
    values, units = evidence_numbers.__wrapped__(text)
    assert values == frozenset(value for _, value in numbers_in(text, names_too=True))
    assert dict(units) == _units(text)


@settings(max_examples=1500, deadline=None)
@given(_TEXTS)
@example("提升 1.5 到 2 倍\n第二行 3 ms 和 H100")
@example("４ tokens，１，０００ ms\n\nx2 s")
@example("在 1，000 ms 下，A1,000 與 B-2,000,5 相比 3 倍")
@example("ａ ① ms\n5 s")
@example("percent1,0001")
@example("t1,0001,000 ms")
@example("1,000٣1")
@example("_߁٣ 個新x٣1٣ ms")
@example("v1.5 to 2 tokens, H100-8 GB, _-3 ms, 2,0005 s, 7.5.1 x")
def test_the_claim_reading_is_each_line_s_numbers_and_quantities(text: str) -> None:
    numbers, quantified = claim_numbers.__wrapped__(text)
    lines = text.split("\n")
    assert numbers == tuple(
        (offset, token, value)
        for offset, line in enumerate(lines)
        for token, value in numbers_in(line)
    )
    # the unit check's rule: a claim without a digit (as written) has no quantity
    assert quantified == tuple(
        (offset, *quantity)
        for offset, line in enumerate(lines)
        for quantity in (quantities(line) if re.search(r"\d", text) else ())
    )


@settings(max_examples=500, deadline=None)
@given(_TEXTS, _TEXTS)
def test_a_number_is_stated_as_mentions_number_says(text: str, mention: str) -> None:
    values = evidence_numbers(text)[0]
    assert mention_values(mention) == tuple(v for _, v in numbers_in(mention, names_too=True))
    for value in [*mention_values(mention), Decimal(2), Decimal("1E+3")]:
        assert states_number(text, values, value) == mentions_number(text, value)
