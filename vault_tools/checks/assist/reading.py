"""How the review-assist checks of a claim's meaning read a sentence: which evidence
sentence a claim restates, and the words that carry a comparison's direction, a
condition, a negation or a metric, in English (the evidence) and Chinese or English (the
claim). A number's unit is read with the numbers, in number_reading.py.

Every list errs towards silence: a word that may or may not carry the meaning is counted
where counting it keeps a check quiet (a claim "keeps" a condition on any condition
word), and left out where counting it would raise a warning.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal

from vault_tools.checks.assist.cues import (
    ALIKE,
    CONDITION,
    DENY,
    DENY_SOFT,
    EFFICIENCY,
    FALL,
    FALL_SPEED,
    METRICS,
    MULTIPLE,
    RISE,
    RISE_SPEED,
    THAN,
    cues,
    lowered,
    trie_pattern,
    whole_word_pattern,
)
from vault_tools.checks.assist.wording import number_value, stem, text_words

# --- scanning lowered text ---------------------------------------------------------

# Patterns are written for NFKC-casefolded text, without IGNORECASE and without a leading
# \b or look-behind: a pattern that starts with a word lets the regex engine skip ahead
# to the characters that can begin it, where one that starts with \b is tried at every
# position (several times slower on a paragraph). `first` checks the word start instead.


def first(pattern: re.Pattern, low: str, start: int = 0, end: int | None = None) -> re.Match | None:
    """The first match of `pattern` in `low` that does not start inside a Latin word."""
    for match in pattern.finditer(low, start, len(low) if end is None else end):
        at = match.start()
        if at == 0 or not (_LATIN.match(low[at]) and _LATIN.match(low[at - 1])):
            return match
    return None


def every(pattern: re.Pattern, low: str) -> list[re.Match]:
    """`first`'s matches, all of them."""
    return [
        m
        for m in pattern.finditer(low)
        if m.start() == 0 or not (_LATIN.match(low[m.start()]) and _LATIN.match(low[m.start() - 1]))
    ]


_LATIN = re.compile(r"[a-z0-9]")


# --- the sentence a claim restates --------------------------------------------------

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=\S)|(?<=[。！？；])")
# words every English sentence shares: they say nothing about which one a claim restates
_STOPWORDS = frozenset(
    "a an the of to in on for by at as is are was were be been it its this that these "
    "those and or with from into than which who can may might will would".split()
)


# the same split where there is no 。！？；: a pattern that starts with a character class
# lets the regex engine skip ahead, where a lookbehind is tried at every position
_LATIN_SENTENCE_SPLIT = re.compile(r"[.!?;](\s+)(?=\S)")


@functools.lru_cache(maxsize=64)  # several claims are drawn from one evidence paragraph
def sentences(evidence: str) -> tuple[str, ...]:
    """The evidence's non-blank sentences (`_SENTENCE_SPLIT`'s pieces)."""
    if any(mark in evidence for mark in "。！？；"):
        pieces = _SENTENCE_SPLIT.split(evidence)
    else:
        pieces, start = [], 0
        for match in _LATIN_SENTENCE_SPLIT.finditer(evidence):
            pieces.append(evidence[start : match.start(1)])
            start = match.end(1)
        pieces.append(evidence[start:])
    return tuple(s for s in pieces if s.strip())


@functools.lru_cache(maxsize=64)  # several claims are drawn from one evidence paragraph
def evidence_sentences(evidence: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The evidence's sentences, each with its content words (folded, stemmed)."""
    return tuple((s, frozenset(text_words(s)) - _STOPWORDS) for s in sentences(evidence))


_LATIN_RUN = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=64)  # an evidence paragraph is asked about by several checks
def latin_runs(text: str) -> frozenset[str]:
    """The runs of Latin letters and digits of lowered `text` (the words text_prefixes
    stems)."""
    low = lowered(text)
    if low.isascii():  # translate() and split() run in C, without the regex's scan
        return frozenset(low.translate(_ONLY_LATIN_RUNS).split())
    return frozenset(_LATIN_RUN.findall(low))


# ASCII: the characters of _LATIN_RUN kept, every other one made a space
_ONLY_LATIN_RUNS = str.maketrans(
    {chr(c): chr(c) if chr(c).isalnum() and not chr(c).isupper() else " " for c in range(128)}
)


def claim_words(claim: str) -> frozenset[str]:
    return frozenset(text_words(claim)) - _STOPWORDS


@functools.lru_cache(maxsize=16)  # asked by the condition and the negation checks
def restated_sentence(evidence: str, claim: str, least: int = 2) -> tuple[str, int] | None:
    """The one evidence sentence the claim restates, and how many content words the two
    share: it shares the most, at least `least`, and no other sentence shares as many."""
    words = claim_words(claim)
    best, best_score, tied = None, 0, False
    for sentence, sentence_words in evidence_sentences(evidence):
        score = len(words & sentence_words)
        if score > best_score:
            best, best_score, tied = sentence, score, False
        elif score == best_score:
            tied = True
    return (best, best_score) if best is not None and best_score >= least and not tied else None


_CLAUSE_SPLIT = re.compile(r"[,;:()—]|\s(?:which|while|whereas|but|resulting in)\s")


def clauses(sentence: str) -> list[str]:
    return [c for c in _CLAUSE_SPLIT.split(sentence) if c.strip()]


def shared_words(text: str, claim: str) -> int:
    return len((frozenset(text_words(text)) - _STOPWORDS) & claim_words(claim))


# --- negation -----------------------------------------------------------------------

# "can't" … written out: a group among the words hid the letters they begin with
_CONTRACTED = "can won don doesn isn aren wasn weren didn hasn haven wouldn couldn shouldn"
_NEGATION_EN = re.compile(
    r"(?:not|no|never|cannot|without|neither|nor|none|nothing|unable|fails?\s+to|failed\s+to|"
    + "|".join(f"{word}'t" for word in _CONTRACTED.split())
    + r")\b"
)
# idioms with a negation word that deny nothing: "not only", "no matter", "no more than"
_NOT_A_NEGATION = re.compile(r"\s+(?:only|just|matter|more\s+than|less\s+than)\b")
# words that deny without a negation word: a claim may render them with 不/無/免
_IMPLICIT_NEGATION_EN = re.compile(
    r"(?:sub\w+|un\w+|in(?:efficient|sufficient|feasible|capable)\w*|impossible|"
    r"free|lacks?|lacking|absent|missing|avoid\w*|bypass\w*|prevent\w*|"
    r"rarely|hardly|barely|seldom)\b"
)
# words that limit, which a claim may render with 不超過, 無需 …: the evidence denies
# something with them, but a claim that says them keeps no "not" of the evidence
_LIMITING_EN = re.compile(r"(?:only|fewer|less|instead|rather)\b")


def negation_en(text: str) -> str | None:
    """An explicit English negation in `text` ("not", "never", "fail to" …), or None."""
    low = lowered(text)
    for match in every(_NEGATION_EN, low):
        if not _NOT_A_NEGATION.match(low, match.end()):
            return match.group()
    return None


def denies_anything_en(text: str) -> bool:
    """Whether English `text` denies anything, explicitly or by a word such as
    "suboptimal", "free", "avoid", "only" (`evidence_denies`, once per evidence)."""
    low = lowered(text)
    return (
        negation_en(low) is not None
        or first(_IMPLICIT_NEGATION_EN, low) is not None
        or first(_LIMITING_EN, low) is not None
    )


def claim_denial(claim: str, explicit: bool) -> str | None:
    """A negation in the claim (Chinese or English), or None. `explicit`: only words that
    plainly deny (不, 沒有, 無法, not …), else any word that may render a denial."""
    return cues(claim).get(DENY if explicit else DENY_SOFT)


# the words _NEGATION_EN can match ("can't" and the like hold "'t")
_NEGATION_WORDS = frozenset(
    "not no never cannot without neither nor none nothing unable fail fails failed".split()
)


# a whole word of _NEGATION_WORDS: whether one of the text's Latin runs is one, found
# by a scan that skips to the letters the words begin with
_NEGATION_WORD = whole_word_pattern(_NEGATION_WORDS)


@functools.lru_cache(maxsize=64)  # several claims are drawn from one evidence paragraph
def evidence_negation(evidence: str) -> str | None:
    low = lowered(evidence)
    if "'t" not in low and _NEGATION_WORD.search(low) is None:
        return None
    return negation_en(evidence)


evidence_denies = functools.lru_cache(maxsize=64)(denies_anything_en)


# --- conditions ---------------------------------------------------------------------

_SIZE = r"(?:high|low|large|small|higher|lower|larger|smaller|long|short|heavy|light)"
CONDITION_EN = re.compile(
    rf"(?:only\s+if|if|when|whenever|unless|as\s+long\s+as|provided\s+that|"
    rf"depending\s+on|depends\s+on|based\s+on|given\s+that|at\s+{_SIZE}\s+\w+|"
    rf"for\s+{_SIZE}\s+\w+|under\s+{_SIZE}\s+\w+)\b"
)
# the words a match of CONDITION_EN holds one of
_CONDITION_WORDS = frozenset(
    "if when whenever unless long provided depending depends based given high low large "
    "small higher lower larger smaller short heavy light".split()
)
# a whole word of _CONDITION_WORDS (see _NEGATION_WORD)
_CONDITION_WORD = whole_word_pattern(_CONDITION_WORDS)
# 在 … 下 ("at high batch sizes"): a condition the cue words cannot see
_UNDER = re.compile("在[^，。；,;]{0,30}?下")


@functools.lru_cache(maxsize=64)  # several claims are drawn from one evidence paragraph
def evidence_conditions(evidence: str) -> tuple[str, ...]:
    """The conditions the evidence's sentences state (condition_phrase of each)."""
    if _CONDITION_WORD.search(lowered(evidence)) is None:
        return ()
    if first(CONDITION_EN, lowered(evidence)) is None:
        return ()
    phrases = (condition_phrase(sentence) for sentence in sentences(evidence))
    return tuple(phrase for phrase in phrases if phrase)


def condition_phrase(sentence: str) -> str | None:
    """The first condition of an English sentence, from its word to the clause's end."""
    match = first(CONDITION_EN, lowered(sentence))
    if match is None or len(lowered(sentence)) != len(sentence):
        return None
    rest = re.split(r"[,;.]\s|[,;]|\.$", sentence[match.start() :], maxsplit=1)[0]
    rest = re.split(r"\s(?:to|and|which|that|so|while|but)\s", rest, maxsplit=1)[0]
    return " ".join(rest.split()[:8]).rstrip(".")


def states_a_condition(text: str) -> bool:
    return CONDITION in cues(text) or _UNDER.search(text) is not None


# --- comparisons --------------------------------------------------------------------

UP, DOWN = RISE, FALL
# English: a comparative that places its subject above (UP) or below (DOWN) what follows
_COMPARE_EN = re.compile(
    r"(?:(?P<up>outperform\w*|exceed\w*|surpass\w*|beats?|above|"
    r"(?:more|higher|greater|larger|better|faster)\b[^.;,]{0,40}?\bthan)|"
    r"(?P<down>underperform\w*|below|trails?|"
    r"(?:less|lower|smaller|fewer|worse|slower)\b[^.;,]{0,40}?\bthan))\b"
)
# a comparison said with a multiplier: "A reaches 3x the recall of B", "A is twice as fast
# as B", "A 的吞吐量是 B 的 3 倍" set A above B (below it when the multiple is under one).
# The English pattern starts at the multiplier's word, which the regex engine skips
# ahead to; the number before "x", "times" or "fold" is read back from there
_MULTIPLIERS = "x × times fold twice double triple thrice half".split()
_MULTIPLE_EN = re.compile(rf"({trie_pattern(_MULTIPLIERS)})\s+(?:the|as|that\s+of)(?![a-z0-9])")
_SAYS_ITS_MULTIPLE = {"twice": 2, "double": 2, "triple": 3, "thrice": 3, "half": 0}
_MULTIPLE_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "ten": 10}
_MULTIPLE_ZH = re.compile(
    r"[是為为達达只僅仅][為为到有是]?(?=[^，。；,;]{1,30}?的\s*(?:(?P<n>\d\d*(?:\.\d+)?)\s*倍|"
    r"(?P<w>[兩两二三四五六七八九十幾几數数百千]+倍|一半)))"
)


def _multiples(text: str) -> list[tuple[int, str]]:
    """(position, UP or DOWN) of each comparison of lowered `text` said with a multiplier."""
    found = []
    if "倍" in text or "一半" in text:
        for match in _MULTIPLE_ZH.finditer(text):
            number, word = match.group("n"), match.group("w")
            value = number_value(number) if number else None
            below = word == "一半" if word else value is not None and value < 1
            found.append((match.start(), DOWN if below else UP))
    for match in _MULTIPLE_EN.finditer(text):
        word, at = match.group(1), match.start()
        if at and _LATIN.match(text[at - 1]) and word in _SAYS_ITS_MULTIPLE:
            continue  # inside a word
        if word in _SAYS_ITS_MULTIPLE:
            found.append((at, DOWN if word == "half" else UP))
            continue
        multiple = _multiple_before(text, at)
        if multiple is not None:
            found.append((multiple[0], DOWN if multiple[1] < 1 else UP))
    return sorted(found)


def _multiple_before(text: str, at: int) -> tuple[int, Decimal] | None:
    """Where the number before "x", "times" or "fold" at `at` starts, and its value:
    "3.3x", "2.5 times", "3-fold", "three times"."""
    end = at
    while end and text[end - 1] in " -":
        end -= 1
    start = end
    while start and (text[start - 1].isdigit() or text[start - 1] == "."):
        start -= 1
    if start < end and text[start].isdigit():
        value = number_value(text[start:end])
    else:
        start = text.rfind(" ", 0, end) + 1
        word = _MULTIPLE_WORDS.get(text[start:end])
        value = Decimal(word) if word is not None else None
    if value is None or (start and _LATIN.match(text[start - 1])):
        return None
    return start, value


# every match of _COMPARE_EN holds one of these: a search for them (their trie, which
# the regex engine skips through a Chinese claim with) spares its scan of a claim that
# compares with 比
_COMPARE_EN_WORDS = "than outperform underperform exceed surpass beat above below trail".split()
_COMPARE_EN_WORD = re.compile(trie_pattern(_COMPARE_EN_WORDS))
# a text without one of these words sets nothing above anything
_HINTS = (
    "than outperform underperform exceed surpass beat above below trail 比 相較 相较 於 于 過 "
    "过 超越 領先 领先 不如 落後 落后".split()
)
_COMPARE_HINT = re.compile(trie_pattern(_HINTS))


def _latin_hint(text: str) -> bool:
    """`_COMPARE_HINT.search(text)` of an ASCII text (only _HINTS' Latin words can be in
    it), by substring searches in C: the pattern tries its trie at each of English's
    many t, a, e, o, s and b."""
    return (
        "than" in text
        or "outperform" in text
        or "underperform" in text
        or "exceed" in text
        or "surpass" in text
        or "beat" in text
        or "above" in text
        or "below" in text
        or "trail" in text
    )


# Chinese: 比 … 更/較 X puts the subject above when X rises, below when it falls
_UP_ZH = (
    "優於|优于|勝過|胜过|高於|高于|大於|大于|多於|多于|超過|超过|超越|領先|领先|強於|强于|"
    "更有效率|更有效|更高|更快|更好|更佳|更多|更大|更強|更强|較高|较高|較快|较快|較好|较好|"
    "較佳|较佳|較多|较多|較大|较大|更能"
)
_DOWN_ZH = (
    "低於|低于|小於|小于|少於|少于|劣於|劣于|遜於|逊于|不如|落後|落后|弱於|弱于|"
    "更低|更慢|更差|更少|更小|更弱|較低|较低|較慢|较慢|較差|较差|較少|较少|較小|较小"
)
# both lists as one trie (cues.trie_pattern), the direction looked up by the word found:
# the regex engine skips ahead to a word's first characters (a group around each list
# had it try every place) and tries one branch per character. The rule: the plain
# alternation `(?P<up>…)|(?P<down>…)` of the words above (a longer word first; no word
# of one list begins one of the other, so at each place the trie finds the same word)
_UP_WORDS_ZH = frozenset(_UP_ZH.split("|"))
_DOWN_WORDS_ZH = frozenset(_DOWN_ZH.split("|"))
_COMPARE_ZH = re.compile(trie_pattern(sorted(_UP_WORDS_ZH | _DOWN_WORDS_ZH)))
_THAN_ZH = re.compile("比|相比|相較|相较")


def comparatives(text: str) -> list[tuple[int, str]]:
    """(position, UP or DOWN) of each comparison of lowered `text` that sets a subject
    against what follows ("A outperforms B", "A 比 B 更快", "A 優於 B")."""
    multiples = _multiples(text)
    if not (_latin_hint(text) if text.isascii() else _COMPARE_HINT.search(text)):
        return multiples
    found = multiples + (
        [(m.start(), UP if m.group("up") else DOWN) for m in every(_COMPARE_EN, text)]
        if _COMPARE_EN_WORD.search(text)
        else []
    )
    if text.isascii():
        return sorted(found)
    for match in _COMPARE_ZH.finditer(text):
        direction = UP if match.group() in _UP_WORDS_ZH else DOWN
        # "A 比 B 更快": the subject stands before 比, not before 更快
        than = next(reversed(list(_THAN_ZH.finditer(text, 0, match.start()))), None)
        if than is not None and match.start() - than.end() <= 40:
            found.append((than.start(), direction))
        elif not match.group().startswith(("更", "較", "较")):
            found.append((match.start(), direction))
    return sorted(found)


def claim_directions(claim: str, speed_counts: bool) -> dict[str, str]:
    """The kinds of comparison the claim's words state, each with the first word:
    RISE (更高, 增加, more), FALL (更低, 減少, less), ALIKE (約等於, roughly). Words of
    speed (更快, faster) count only when `speed_counts` (faster is less latency)."""
    found = cues(claim)
    directions = {}
    for kind, speed in ((RISE, RISE_SPEED), (FALL, FALL_SPEED), (ALIKE, None)):
        word = found.get(kind) or (found.get(speed) if speed and speed_counts else None)
        if word:
            directions[kind] = word
    return directions


def claim_compares(claim: str) -> bool:
    """Whether the claim sets one thing against another (比, than, 優於 …)."""
    return THAN in cues(claim)


_TIMES_X = re.compile(r"[0-9]x(?![a-z0-9])")


def claim_multiplies(claim: str) -> bool:
    """Whether the claim sets one thing against another by a multiplier ("3x the recall
    of", "是 B 的 3 倍"): its cue words first (倍, twice, times), or the "3x" they cannot
    hold; most claims with a multiple say one of a quantity ("提升 1.5 到 2 倍")."""
    low = lowered(claim)
    if MULTIPLE not in cues(claim) and _TIMES_X.search(low) is None:
        return False
    if ("倍" in low or "一半" in low) and _MULTIPLE_ZH.search(low):
        return True  # _multiples keeps each of these: no need to read them all
    return bool(_multiples(low))


# --- metrics ------------------------------------------------------------------------

_EFFICIENCY_METRICS = ("COMPUTE_PERFORMANCE", "ACCEPTANCE_RATE", "THROUGHPUT", "LATENCY_COST")


def claim_metrics(claim: str) -> dict[str, str]:
    """The metrics the claim's words name, each with the first word naming it
    ("efficiency" may be compute's, the acceptance rate's, throughput's or latency's)."""
    found = cues(claim)
    metrics = {m: found[m] for m in METRICS if m in found}
    if EFFICIENCY in found:
        for metric in _EFFICIENCY_METRICS:
            metrics.setdefault(metric, found[EFFICIENCY])
    return metrics


# --- names --------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)  # names recur from note to note
def name_words(name: str) -> tuple[str, ...]:
    """The Latin words of a name, lowered and stemmed."""
    return tuple(stem(w) for w in _LATIN_RUN.findall(lowered(name)))


@functools.lru_cache(maxsize=64)  # an evidence serves the claims drawn from it
def text_prefixes(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """`text`'s Latin words (lowered, stemmed), and their first five letters (so
    "verify" and "verification", "decode" and "decoding" meet)."""
    words = frozenset(stem(w) for w in latin_runs(text))
    return words, frozenset(w[:5] for w in words if len(w) >= 5)


def name_mentioned(name: str, texts: tuple[str, ...]) -> bool | None:
    """Whether one of `texts` mentions `name` (each of its Latin words, or a word sharing
    its first five letters); None when the name has no Latin word to look for."""
    words = name_words(name)
    if not words:
        return None
    seen = [text_prefixes(text) for text in texts]
    return all(
        any((w in found) if len(w) < 5 else (w[:5] in prefixes) for found, prefixes in seen)
        for w in words
    )


def distinct_names(names: list[str]) -> list[str]:
    """`names` in order, without one of the same shape (`_name_shape`) as an earlier one
    ("kv cache" after "KV Cache", "KV-Cache" after "KV Cache"): name_position and `_named`
    find the same for the two."""
    kept: dict[object, str] = {}
    for name in names:
        kept.setdefault(_name_shape(name), name)
    return list(kept.values())


def name_position(names: list[str], text: str) -> int | None:
    """Where in lowered `text` the first of `names` (a label, a title, aliases) is
    written, ignoring case, width, hyphens and spacing, and a plural ending."""
    best = None
    for name in names:
        at = _name_at(name, text)
        if at is not None and (best is None or at < best):
            best = at
    return best


@functools.lru_cache(maxsize=4096)  # names recur from note to note
def _name_pattern(name: str) -> re.Pattern | None:
    """The pattern of a name for name_position (None: nothing to look for)."""
    key = lowered(name).strip()
    if not key:
        return None
    parts = [re.escape(p) for p in re.split(r"[\s\-_:·]+", key) if p]
    body = r"[\s\-_:·]*".join(parts)
    edge_end = r"(?:e?s)?(?![a-z0-9])" if key[-1:].isascii() and key[-1:].isalnum() else ""
    if key[:1].isascii() and key[:1].isalnum():
        # not inside a word: checked after the first letter (a look-behind over it and
        # the one before), so the regex engine skips ahead to that letter, where a
        # pattern that starts with a look-behind is tried at every position
        head = key[0]
        return re.compile(f"{head}(?<![a-z0-9]{head}){body[1:]}{edge_end}")
    return re.compile(body + edge_end)


# The same search without compiling a pattern per name: each worker of a cold run met
# the vault's names anew and compiled hundreds of patterns (~60 µs each). A name's
# parts hold no separator, so its pattern matches at a place in one way only: its first
# part, the longest run of separators, the next part, and so on; then the plural ending
# or none, not followed by a letter or digit. `_name_pattern` stays the rule (for a name
# of separators alone, which matches anywhere) and the tests hold the two to each other.
_NAME_SEPARATORS = re.compile(r"[\s\-_:·]+")
_LOWER_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


@functools.lru_cache(maxsize=4096)  # names recur from note to note
def _name_shape(name: str) -> tuple[tuple[str, ...], bool, bool] | None:
    """A name's parts (lowered), and whether its first and its last character are an
    ASCII letter or digit (then it may not start or end inside a word)."""
    key = lowered(name).strip()
    if not key:
        return None
    parts = tuple(p for p in _NAME_SEPARATORS.split(key) if p)
    edge = key[:1].isascii() and key[:1].isalnum(), key[-1:].isascii() and key[-1:].isalnum()
    return parts, *edge


def _name_at(name: str, text: str) -> int | None:
    """`_name_pattern(name).search(text)`'s start, or None."""
    shape = _name_shape(name)
    if shape is None:
        return None
    parts, edge_start, edge_end = shape
    if not parts:
        match = _name_pattern(name).search(text)  # type: ignore[union-attr]
        return match.start() if match else None
    first, rest = parts[0], parts[1:]
    at = text.find(first)
    while at >= 0:
        if not (edge_start and at and text[at - 1] in _LOWER_ALNUM):
            end = _rest_of_name(text, at + len(first), rest, len(text))
            if end >= 0 and (not edge_end or _name_ends(text, end, len(text))):
                return at
        at = text.find(first, at + 1)
    return None


def _rest_of_name(text: str, at: int, parts: tuple[str, ...], end: int) -> int:
    """Where the name's other `parts` end after `at`, each after any separators, in
    text[:end]; -1 when one is not there."""
    for part in parts:
        while at < end and (text[at] in "-_:·" or text[at].isspace()):
            at += 1
        if not text.startswith(part, at, end):
            return -1
        at += len(part)
    return at


def _name_ends(text: str, at: int, end: int) -> bool:
    """`(?:e?s)?(?![a-z0-9])` at `at` in text[:end]: a plural ending or none, then no
    letter or digit."""
    for ending in ("", "s", "es"):
        if text.startswith(ending, at, end):
            after = at + len(ending)
            if after == end or text[after] not in _LOWER_ALNUM:
                return True
    return False


def _named(names: Sequence[str], text: str, start: int, end: int) -> bool:
    """`name_position(names, text[start:end]) is not None`, searched in place: the
    bounds of str.find and startswith stand for the slice's ends (a name may start at
    `start` and end at `end` as at a text's ends)."""
    for name in names:
        shape = _name_shape(name)
        if shape is None:
            continue
        parts, edge_start, edge_end = shape
        if not parts:  # separators alone: the pattern's rule, on the slice
            if _name_at(name, text[start:end]) is not None:
                return True
            continue
        head, rest = parts[0], parts[1:]
        at = text.find(head, start, end)
        while at >= 0:
            if not (edge_start and at > start and text[at - 1] in _LOWER_ALNUM):
                stop = _rest_of_name(text, at + len(head), rest, end)
                if stop >= 0 and (not edge_end or _name_ends(text, stop, end)):
                    return True
            at = text.find(head, at + 1, end)
    return False


# --- who is above whom ----------------------------------------------------------------

# a full stop between digits (3.3 times) ends no sentence; a class first, skipped to
_PIECES = re.compile(r"[.;!?。；！？](?:(?<!\.)|(?![0-9]))\s*")


def ranking(text: str, entities: Mapping[str, Sequence[str]]) -> frozenset[tuple[str, str]]:
    """(upper, lower) for every pair of entities that a comparison of `text` sets one
    above the other: "A outperforms B", "A 比 B 更有效率", "B 不如 A" each give (A, B).

    `entities` maps an entity's key to its names. Each sentence is cut at its
    comparisons; an entity written on both sides of one is left out of it.
    """
    pairs: set[tuple[str, str]] = set()
    for piece in _PIECES.split(lowered(text)):
        marks = comparatives(piece) if piece else ()  # (a text's end leaves an empty one)
        for index, (position, direction) in enumerate(marks):
            start = marks[index - 1][0] if index else 0
            end = marks[index + 1][0] if index + 1 < len(marks) else len(piece)
            left, right = [], []  # the entities named on each side
            for key, names in entities.items():
                if _named(names, piece, start, position):
                    left.append(key)
                if _named(names, piece, position, end):
                    right.append(key)
            for a in left:
                for b in right:
                    if a not in right and b not in left:
                        pairs.add((a, b) if direction == UP else (b, a))
    return frozenset(pairs)
