"""The memos of checks/assist/reading.py against the functions they memoize."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given, settings
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


_NAME_PIECES = ["KV", "kv", "Ｋｖ", "Cache", "cache", " ", "-", "·", "s", "中", "MoE"]
_TEXT_PIECES = ["kv cache", "kv-caches", "moe", "中", " outperforms ", "比", "更快", ". ", "x", "s"]


def _joined(pieces: list[str], max_size: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), max_size=max_size).map("".join)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(_joined(_NAME_PIECES, 4), min_size=1, max_size=5),
    st.lists(_joined(_NAME_PIECES, 4), min_size=1, max_size=5),
    _joined(_TEXT_PIECES, 10),
)
@example(["KVCache", "KV Cache"], ["MoE"], "moe outperforms kv cache")
@example(["KV Cache", "kv cache ", "KV-Cache", "kv·caches"], ["moe", "MoE"], "kv-cache比moe更快")
def test_the_distinct_names_rank_as_all_the_names(
    names_a: list[str], names_b: list[str], text: str
) -> None:
    """The plain rule: every name of each entity looked for, a label's repeats too."""
    kept_a, kept_b = reading.distinct_names(names_a), reading.distinct_names(names_b)
    assert kept_a[0] == names_a[0]  # the label stays first: the warnings name it
    assert set(kept_a) <= set(names_a)
    assert reading.ranking(text, {"a": kept_a, "b": kept_b}) == reading.ranking(
        text, {"a": names_a, "b": names_b}
    )
    for start in range(len(text) + 1):
        assert reading._named(kept_a, text, start, len(text)) == reading._named(
            names_a, text, start, len(text)
        )


# The comparison words' patterns are each list's trie; the rule is the plain alternation
# of the words in the order the module lists them. The pieces hold every word, the
# beginnings of the longer ones and the words around them, so that one word may start
# inside another, run on into a longer one, or stop one character short.
_UP, _DOWN = reading._UP_ZH.split("|"), reading._DOWN_ZH.split("|")
_PLAIN_COMPARE_ZH = re.compile(f"(?P<up>{reading._UP_ZH})|(?P<down>{reading._DOWN_ZH})")
_PLAIN_MULTIPLE_EN = re.compile(
    r"(x|×|times|fold|twice|double|triple|thrice|half)\s+(?:the|as|that\s+of)(?![a-z0-9])"
)
_PLAIN_HINT = re.compile(
    r"than|outperform|underperform|exceed|surpass|beat|above|below|trail|比|相較|相较|於|于|"
    r"過|过|超越|領先|领先|不如|落後|落后"
)
_COMPARISON_PIECES = sorted(
    {*_UP, *_DOWN, *(w[:-1] for w in _UP + _DOWN), "比", "相比", "的", "率", "a", " ", "\t"}
    | {*reading._MULTIPLIERS, *reading._HINTS, *reading._COMPARE_EN_WORDS}
    | {"the", "as", "that", " of", "3", "th", "t", "b", "e", "underperform", "beats", "z"}
)


def test_every_word_that_compares_holds_a_hint() -> None:
    """`comparatives` reads no further in a text without a hint: each word that places a
    subject on its own, and each word before a 更/較 comparative (比, 相較), must hold one,
    or a claim saying only that word ("A underperforms B", "A 相較 B 更快") compares
    nothing."""
    alone = [w for w in _UP + _DOWN if not w.startswith(("更", "較", "较"))]
    than_zh = reading._THAN_ZH.pattern.split("|")
    for word in [*reading._COMPARE_EN_WORDS, *alone, *than_zh]:
        assert reading._COMPARE_HINT.search(word), word
        if word.isascii():
            assert reading._latin_hint(word), word


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int, str | None]]:
    return [(m.start(), m.end(), m.lastgroup) for m in pattern.finditer(text)]


def _directed(text: str) -> list[tuple[int, int, str]]:
    """`_COMPARE_ZH`'s words in `text`, each with its direction as comparatives reads it."""
    return [
        (m.start(), m.end(), "up" if m.group() in reading._UP_WORDS_ZH else "down")
        for m in reading._COMPARE_ZH.finditer(text)
    ]


def test_no_word_that_compares_begins_a_word_of_the_other_direction() -> None:
    """What lets one trie stand for the two groups: at a place where a word of one list
    is written, no word of the other can be (a shorter one would begin the longer)."""
    for up in _UP:
        for down in _DOWN:
            assert not up.startswith(down) and not down.startswith(up), (up, down)


@settings(max_examples=3000, deadline=None)
@given(_joined(_COMPARISON_PIECES, 12))
@example("更有效率的 比 更有效")
@example("3x the 比 beats below 落後")
def test_the_comparison_tries_match_as_their_plain_alternations(text: str) -> None:
    assert _directed(text) == _spans(_PLAIN_COMPARE_ZH, text)
    multiples = [(m.start(), m.group(1)) for m in reading._MULTIPLE_EN.finditer(text)]
    assert multiples == [(m.start(), m.group(1)) for m in _PLAIN_MULTIPLE_EN.finditer(text)]
    hinted = _PLAIN_HINT.search(text) is not None
    assert (reading._COMPARE_HINT.search(text) is not None) == hinted
    if text.isascii():
        assert reading._latin_hint(text) == hinted
    said = any(word in text for word in reading._COMPARE_EN_WORDS)
    assert (reading._COMPARE_EN_WORD.search(text) is not None) == said


_MULTIPLE_PIECES = [
    *["是", "為", "只", "的", "的 ", "3", "3.5", "0.5", "倍", "兩倍", "一半", "，", "A", " "],
    *["3x the", "twice as", " half the", "times", "x", "B"],
]


@settings(max_examples=2000, deadline=None)
@given(_joined(_MULTIPLE_PIECES, 10))
@example("A 是 B 的 3 倍")
@example("A 的 throughput 是 B 的 0.5 倍")
def test_a_claim_multiplies_as_its_multiples_say(claim: str) -> None:
    """The rule: the claim's cue words or a "3x" let it be asked, and then it multiplies
    when `_multiples` finds a comparison said with a multiplier."""
    low = reading.lowered(claim)
    asked = reading.MULTIPLE in reading.cues(claim) or reading._TIMES_X.search(low) is not None
    assert reading.claim_multiplies(claim) == (asked and bool(reading._multiples(low)))


_PLAIN_PIECES = re.compile(r"(?:[;!?。；！？]|\.(?![0-9]))\s*")


@settings(max_examples=2000, deadline=None)
@given(_joined([".", "。", ";", "！", "?", "3", " ", "\n", "a", "中", ". 3", ".3"], 12))
def test_a_text_is_cut_into_pieces_as_the_plain_pattern_cuts_it(text: str) -> None:
    assert reading._PIECES.split(text) == _PLAIN_PIECES.split(text)


_PLAIN_NEGATION_EN = re.compile(
    r"(?:not|no|never|cannot|without|neither|nor|none|nothing|unable|fails?\s+to|"
    r"failed\s+to|(?:can|won|don|doesn|isn|aren|wasn|weren|didn|hasn|haven|wouldn|"
    r"couldn|shouldn)'t)\b"
)


@settings(max_examples=2000, deadline=None)
@given(_joined(["not", "no", "n", "can", "cannot", "'t", "won", "fail", "s", " ", "to", "e"], 10))
def test_the_negation_words_written_out_match_as_the_grouped_pattern(text: str) -> None:
    spans = [(m.span(), m.group()) for m in reading._NEGATION_EN.finditer(text)]
    assert spans == [(m.span(), m.group()) for m in _PLAIN_NEGATION_EN.finditer(text)]
