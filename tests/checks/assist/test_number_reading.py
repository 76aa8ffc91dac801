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
from vault_tools.checks.assist.cues import lowered
from vault_tools.checks.assist.number_reading import (
    claim_numbers,
    evidence_numbers,
    mention_values,
    quantities,
    states_number,
)
from vault_tools.checks.assist.wording import (
    ascii_digits,
    mentions_number,
    number_value,
    numbers_in,
)

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


_QUANTITY_PIECES = [
    "1",
    "5",
    "1.5",
    "2",
    "1,000",
    "０",
    "５",
    "②",
    "²",
    " ",
    "\n",
    " to ",
    "到",
    "-",
    "~",
    "tokens",
    "Tokens",
    "個新",
    "%",
    "％",
    "percent",
    "個百分點",
    "x",
    "×",
    "times",
    "倍",
    "-fold",
    "ms",
    "ｍｓ",
    "毫秒",
    "s",
    "sec",
    "秒",
    "GB",
    "gib",
    "per million",
    "/m",
    "每百萬",
    "H100",
    "FP",
    "v",
    "EAGLE-",
    "a",
    ".",
    "提升",
    "faster",
    "İ",
    "K",
    "s\u0301",
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_QUANTITY_PIECES), max_size=10).map("".join))
@example("提升 1.5 到 2 倍")
@example("by 1.5 to 2 tokens")
@example("５ｍｓ and H100 2-fold")
def test_the_look_ahead_before_the_units_never_turns_one_away(text: str) -> None:
    """The quantity pattern with the set of characters a unit begins with, against the
    same pattern without it: the same matches, the same unit."""
    without = re.compile(number_reading._QUANTITY.pattern.replace(number_reading._UNIT_STARTS, ""))
    assert without.pattern != number_reading._QUANTITY.pattern
    folded = lowered(text)
    for fast, full in ((number_reading._QUANTITY, without), (number_reading._QUANTITY_ASCII, None)):
        if full is None:
            if not folded.isascii():
                continue
            full = ascii_digits(without)
        spans = [(m.span(), m.lastgroup, m.group(1)) for m in fast.finditer(folded)]
        assert spans == [(m.span(), m.lastgroup, m.group(1)) for m in full.finditer(folded)]


def test_the_quantities_of_both_languages_keep_their_units() -> None:
    value = number_value
    assert number_reading.quantities("提升 1.5 到 2 倍") == (
        ("1.5", value("1.5"), "times"),
        ("2", value("2"), "times"),
    )
    assert number_reading.quantities("by ５ ｍｓ, H100 at 3 GB") == (
        ("5", value("5"), "ms"),
        ("3", value("3"), "GB"),
    )
    assert number_reading.quantities("H100 and 2 drafts, 5 layers") == ()


def test_a_number_after_a_name_character_is_part_of_the_name() -> None:
    """The set lookup before a quantity, against the pattern it replaced."""
    name_before = re.compile(r"[a-z0-9_.]|[a-z0-9]-")
    alphabet = ["", "a", "Z", "_", ".", "-", " ", "中", "é", "x-", "--", "-a", "K"]
    for first in alphabet:
        for second in alphabet:
            text = f"{first}{second}5 ms"
            low = text.lower()
            at = len(low) - 4
            named = bool(at) and bool(
                name_before.match(low, at - 1 if low[at - 1] != "-" else max(at - 2, 0))
            )
            expected = () if named else (("5", number_value("5"), "ms"),)
            assert number_reading.quantities.__wrapped__(text) == expected, text


# what a number, a range, a unit and a name are made of, in both scripts and the forms
# NFKC and lower case change: the quantity pattern's pieces, and more numbers and joiners,
# a full-width comma, the Kelvin sign, a ligature, a name's digit beyond ASCII
_PIECES = [
    *_QUANTITY_PIECES,
    *("12", "1,000,000", "0.50", "，", "to", " and ", "–", ",", "_", "\u212a", "ﬁ", "٣"),
    *("one", "two", "三"),
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
