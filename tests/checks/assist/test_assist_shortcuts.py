"""The review assist's shortcuts for a cold run, each held to the plain rule it spares.

Each property test gives the shortcut and the rule the same random text, built from the
pieces where the two could part (separators, plural endings, letters and digits at a
name's edges, comparison words, Chinese), and asks for the same answer.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from vault_tools.checks.assist import meaning
from vault_tools.checks.assist import reading as assist_reading


def joined(pieces: list[str], max_size: int, min_size: int = 0) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), min_size=min_size, max_size=max_size).map("".join)


def _pattern_position(names: list[str], text: str) -> int | None:
    """name_position as the patterns find it: the first match of any name's pattern."""
    best = None
    for name in names:
        pattern = assist_reading._name_pattern(name)
        match = pattern.search(text) if pattern is not None else None
        if match and (best is None or match.start() < best):
            best = match.start()
    return best


_NAME_PIECES = ["kv", " ", "-", "cache", "s", "es", "a1", "中", "·", ":", "_", "\u3000", "x"]
_TEXT_PIECES = [*_NAME_PIECES, "e", "\t", "\u00a0", "ses", "kvs", "9"]


@settings(max_examples=3000, deadline=None)
@given(
    joined(["KV", "Cache", *_NAME_PIECES], min_size=1, max_size=5),
    joined(_TEXT_PIECES, max_size=12),
)
@example("KV Cache", "the kv-caches and xkv cache")
@example("-", "kv")
@example(" · ", "")
@example("kv-", "kvs kv-x")
@example("a1 ", "ba1 a1es a1s")
@example("KV", "kvesx kves")
def test_a_name_is_found_where_its_pattern_finds_it(name: str, text: str) -> None:
    assert assist_reading.name_position([name], text) == _pattern_position([name], text)


@settings(max_examples=2000, deadline=None)
@given(
    st.lists(joined(["KV", "Cache", *_NAME_PIECES], min_size=1, max_size=4), max_size=3),
    joined(_TEXT_PIECES, max_size=12),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_a_name_is_named_in_a_stretch_as_in_its_slice(
    names: list[str], text: str, start: int, end: int
) -> None:
    start, end = sorted((min(start, len(text)), min(end, len(text))))
    assert assist_reading._named(names, text, start, end) == (
        _pattern_position(names, text[start:end]) is not None
    )


def _plain_ranking(text: str, entities: dict[str, list[str]]) -> frozenset[tuple[str, str]]:
    """ranking as it was: every piece, each side sliced and searched by the patterns."""
    pairs: set[tuple[str, str]] = set()
    for piece in assist_reading._PIECES.split(assist_reading.lowered(text)):
        marks = assist_reading.comparatives(piece)
        for index, (position, direction) in enumerate(marks):
            start = marks[index - 1][0] if index else 0
            end = marks[index + 1][0] if index + 1 < len(marks) else len(piece)
            left = _plain_named_in(piece[start:position], entities)
            right = _plain_named_in(piece[position:end], entities)
            for a in left - right:
                for b in right - left:
                    pairs.add((a, b) if direction == assist_reading.UP else (b, a))
    return frozenset(pairs)


def _plain_named_in(text: str, entities: dict[str, list[str]]) -> set[str]:
    return {key for key, names in entities.items() if _pattern_position(names, text) is not None}


_RANKING_PIECES = [
    "MoE",
    "Mixture of Experts",
    "kv cache",
    "KV-Caches",
    " ",
    "比",
    "更快",
    " outperforms ",
    " is slower than ",
    " reaches 3x the recall of ",
    "的 3 倍",
    "是",
    "。",
    ". ",
    "3.3",
    ";",
    "x",
]
_ENTITIES = {"a": ["Mixture of Experts", "MoE"], "b": ["KV Cache"], "c": ["kv"]}


@settings(max_examples=2000, deadline=None)
@given(joined(_RANKING_PIECES, max_size=12))
@example("MoE outperforms KV Cache.")
@example("MoE 的 throughput 是 KV Cache 的 3.3 倍。")
def test_the_ranking_is_the_plain_ranking(text: str) -> None:
    assert assist_reading.ranking(text, _ENTITIES) == _plain_ranking(text, _ENTITIES)


@settings(max_examples=300, deadline=None)
@given(joined(_RANKING_PIECES, max_size=12))
def test_a_text_ranked_once_for_every_version_ranks_as_it_would_alone(text: str) -> None:
    names = meaning._names_key(_ENTITIES)
    first, again = meaning._ranking(text, names), meaning._ranking(text, names)
    assert first == again == assist_reading.ranking(text, _ENTITIES)


def test_no_name_pattern_is_compiled_for_a_name_with_parts() -> None:
    """The shortcut's point: a name met in a cold run costs no compiled pattern."""
    assist_reading._name_pattern.cache_clear()
    re.purge()
    assert assist_reading.name_position(["Speculative Decoding"], "speculative-decoding") == 0
    assert assist_reading._name_pattern.cache_info().currsize == 0


@settings(max_examples=3000, deadline=None)
@given(
    st.text(alphabet="kKvs e1-_:·\u3000\u00a0\x1c\u2028\t中ＫİßΣ", min_size=1, max_size=8),
    st.text(alphabet="kvs e1-_:·\u3000\u00a0\x1c\u2028\t中ｋi\u0307ßσa", max_size=16),
)
def test_any_name_is_found_where_its_pattern_finds_it(name: str, text: str) -> None:
    """Names and texts of any characters the two could read apart: every kind of Unicode
    space (the pattern's `\\s`), letters that lower to two characters, full-width forms."""
    low = assist_reading.lowered(text)
    assert assist_reading.name_position([name], low) == _pattern_position([name], low)
