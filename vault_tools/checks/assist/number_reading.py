"""Review assist, a text's numbers read once for every check that asks about them: the
claim's numbers line by line (claim.py's number check) and those with a unit (meaning.py's
changed unit), the evidence's values and each value's units (the frame's numeric
mentions, the claim's numbers, the units), a numeric mention's values.

Each reading gives what the plain rules give (wording.py's `numbers_in` and
`mentions_number`, `quantities` below), gathered into one immutable answer per text: a
check asks a set or a mapping instead of calling through a memo per number and per line,
and a claim's line or an ASCII evidence is scanned once for its numbers and its units
where the two rules scan it twice (wherever one scan could differ from them, they read
it).
tests/checks/assist/test_number_reading.py holds each reading to its plain rule.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType

from vault_tools.checks.assist.cues import lowered
from vault_tools.checks.assist.wording import (
    ascii_digits,
    mentions_number,
    number_value,
    numbers_in,
)

# --- units --------------------------------------------------------------------------

_UNITS = (
    ("tokens", r"(?:個|个)?\s*(?:新的?|額外的?|额外的?|output\s+)?tokens?\b"),
    ("%", r"%|percent\b|個百分點|个百分点|百分點|百分点|percentage\s+points?\b"),
    ("times", r"x\b|×|times\b|倍|-?fold\b"),
    ("ms", r"ms\b|milliseconds?\b|毫秒"),
    ("s", r"s\b|secs?\b|seconds?\b|秒"),
    ("GB", r"gb\b|gib\b|gigabytes?\b"),
    ("per million", r"per\s+million\b|/\s*m\b|每百萬|每百万"),
)
# `\d\d*`, not `\d+`: a pattern that starts with a character class lets the regex engine
# skip ahead to a digit, where one that starts with a repeat is tried at every position
_NUMBER = r"\d\d*(?:,\d{3})*(?:\.\d+)?"
_JOINER = r"\s*(?:to|and|or|-|–|~|到|至|和|或)\s*"
# a number, or a range or list of them (`more`), then its unit if one follows: one match
# per quantity, the unit named by `lastgroup` (its group closes after the numbers'). The
# unit's group is optional, so a quantity without one never backtracks into the numbers.
# The look-ahead holds the characters a unit can begin with: most numbers have no unit,
# and one set lookup turns them away before the units are tried one by one
_UNIT_STARTS = r"(?=[\s個个新額额ot%p百x×倍\-fm毫s秒g/每])"
_UNIT = "|".join(f"(?P<u{i}>{pattern})" for i, (_, pattern) in enumerate(_UNITS))
_QUANTITY = re.compile(
    rf"({_NUMBER}(?P<more>(?:{_JOINER}{_NUMBER})*))\s*(?:{_UNIT_STARTS}(?:{_UNIT}))?"
)
_UNIT_OF = {f"u{i}": unit for i, (unit, _) in enumerate(_UNITS)}
_NUMBER_IN = re.compile(_NUMBER)
_QUANTITY_ASCII = ascii_digits(_QUANTITY)
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# what before a number makes it part of a name (FP4, H100, R1-0528, EAGLE-3, v1.5)
_NAME_CHARACTERS = _ALNUM | {"_", "."}


def _in_a_name(low: str, at: int) -> bool:
    """Whether the quantity at `at` of lowered `low` is a name's number: a name character
    right before it, or before a hyphen right before it (a set lookup per quantity)."""
    return bool(at) and low[at - 1 if low[at - 1] != "-" else max(at - 2, 0)] in _NAME_CHARACTERS


@functools.lru_cache(maxsize=64)
def quantities(text: str) -> tuple[tuple[str, Decimal, str], ...]:
    """(number, its value, its unit) for each number of `text` followed by a unit; a range
    or list ("1.5 to 2 tokens") gives each of its numbers the unit after the last."""
    folded = lowered(text)
    found = []
    for match in (_QUANTITY_ASCII if folded.isascii() else _QUANTITY).finditer(folded):
        unit = _UNIT_OF.get(match.lastgroup or "")
        if unit is None:
            continue  # the unit check compares units only: no value for a bare number
        if _in_a_name(folded, match.start()):
            continue
        numbers = match.group(1)
        for token in _NUMBER_IN.findall(numbers) if match.group("more") else (numbers,):
            value = number_value(token)
            if value is not None:
                found.append((token, value, unit))
    return tuple(found)


# --- the readings -------------------------------------------------------------------

_DIGIT = re.compile(r"\d")  # every quantity begins with one

# (line offset, number as written, its value) of each number of a claim's line
ClaimNumber = tuple[int, str, Decimal]
# (line offset, number as written, its value, its unit) of each number with a unit
ClaimQuantity = tuple[int, str, Decimal, str]


@functools.lru_cache(maxsize=64)  # a claim is asked by the number check and the unit check
def claim_numbers(claim: str) -> tuple[tuple[ClaimNumber, ...], tuple[ClaimQuantity, ...]]:
    """The claim's numbers line by line (`numbers_in` of each line), and those with a
    unit (`quantities` of each line)."""
    numbers: list[ClaimNumber] = []
    quantified: list[ClaimQuantity] = []
    digits: bool | None = None
    for offset, line in enumerate(claim.split("\n")):
        if _read_line(line, offset, numbers, quantified):
            continue
        numbers += [(offset, token, value) for token, value in numbers_in(line)]
        # a claim without a digit has no quantity (NFKC's ① or ５ count as numbers, not
        # as quantities: the unit check reads the claim as it is written); a line that
        # _read_line reads holds the digits of its lower case, and needs no such test
        if digits is None:
            digits = _DIGIT.search(claim) is not None
        if digits:
            quantified += [(offset, *quantity) for quantity in quantities(line)]
    return tuple(numbers), tuple(quantified)


_COMMA_IN_NUMBER = re.compile(r"\d，\d")


def _read_line(
    line: str, offset: int, numbers: list[ClaimNumber], quantified: list[ClaimQuantity]
) -> bool:
    """A line's `numbers_in` and `quantities` from the quantities' one scan of its lower
    case, added to `numbers` and `quantified`; False (nothing added) for a line where
    that scan would not meet `numbers_in`'s numbers.

    `numbers_in` reads the NFKC form, the quantities the lower case (NFKC only where a
    full-width letter or digit is). They meet when NFKC changes no more than a
    full-width comma (a Chinese sentence's ，), one that no number runs on across: then
    each holds the same digits in the same places, and lower case keeps a character's
    class (a letter stays a letter, a non-ASCII one non-ASCII)."""
    low = lowered(line)
    if not line.isascii():
        plain = line.replace("，", ",") if "，" in line else line
        if not unicodedata.is_normalized("NFKC", plain):
            return False
        if plain is not line and _COMMA_IN_NUMBER.search(line) is not None:
            return False  # 1，000: one number in NFKC, two in the lower case
    stated: list[ClaimNumber] = []
    units: list[ClaimQuantity] = []
    for match in (_QUANTITY_ASCII if low.isascii() else _QUANTITY).finditer(low):
        at = match.start()
        unit = _UNIT_OF.get(match.lastgroup or "")
        if unit is not None and _in_a_name(low, at):
            unit = None  # a name's number: no quantity
        if match.group("more"):
            tokens = [(m.group(), m.start()) for m in _NUMBER_IN.finditer(low, at, match.end(1))]
        else:
            tokens = [(match.group(1), at)]
        for token, start in tokens:
            # numbers_in's rule for a name's number: a name character right before it, or
            # a hyphen right after a letter or digit
            if start and (
                low[start - 1] in _NAME_CHARACTERS
                or (low[start - 1] == "-" and start > 1 and low[start - 2] in _ALNUM)
            ):
                if "," in token or not token.isascii():
                    # numbers_in's scan goes on inside it, and meets a number again after
                    # a thousands comma (A1,000: 000) or a digit it takes for no name's (٣)
                    return False
                value = None if unit is None else number_value(token)
            elif (value := number_value(token)) is not None:
                stated.append((offset, token, value))
            if unit is not None and value is not None:
                units.append((offset, token, value, unit))
    numbers += stated
    quantified += units
    return True


@functools.lru_cache(maxsize=64)  # an evidence serves V1 and its drafts, and every mention
def evidence_numbers(
    evidence: str,
) -> tuple[frozenset[Decimal], Mapping[Decimal, frozenset[str]]]:
    """Every value the evidence writes with digits (names' numbers too, as
    `mentions_number` reads them: `numbers_in(evidence, names_too=True)`), and each
    value's units where a unit follows it (`quantities(evidence)`)."""
    units: dict[Decimal, set[str]] = {}
    if not evidence.isascii():
        values = frozenset(value for _, value in numbers_in(evidence, names_too=True))
        for _, value, unit in quantities(evidence):
            units.setdefault(value, set()).add(unit)
        return values, MappingProxyType({v: frozenset(u) for v, u in units.items()})
    # ASCII: its lower case holds its digits where it does, and NFKC leaves it as it is,
    # so the quantities' one scan meets every number `numbers_in` finds (a range's
    # joiners and a unit hold no digit): one scan for the values and the units
    found: set[Decimal] = set()
    low = evidence.lower()
    for match in _QUANTITY_ASCII.finditer(low):
        following = _UNIT_OF.get(match.lastgroup or "")
        numbers = match.group(1)
        tokens = _NUMBER_IN.findall(numbers) if match.group("more") else (numbers,)
        if following is not None and _in_a_name(low, match.start()):
            following = None  # a name's number (H100 GB): a value, with no unit
        for token in tokens:
            number = number_value(token)
            if number is not None:
                found.add(number)
                if following is not None:
                    units.setdefault(number, set()).add(following)
    return frozenset(found), MappingProxyType({v: frozenset(u) for v, u in units.items()})


@functools.lru_cache(maxsize=1024)  # a vault's frames repeat a few hundred mentions
def mention_values(mention: str) -> tuple[Decimal, ...]:
    """The values a numeric mention writes with digits (names' numbers too)."""
    return tuple(value for _, value in numbers_in(mention, names_too=True))


def states_number(text: str, values: frozenset[Decimal], value: Decimal) -> bool:
    """`mentions_number(text, value)`, where `values` are the text's own
    (`evidence_numbers(text)[0]`): most numbers are found there without the memo."""
    return value in values or mentions_number(text, value)
