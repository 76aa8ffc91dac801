"""How the review-assist checks read a note's wording: text folded for comparison, the
numbers it states, and whether it hedges.

Text is compared after NFKC normalisation and case folding, with punctuation and
whitespace removed and English plurals reduced ("drafters" ~ "drafter"). Chinese has
no spaces, so nothing is split into words for matching: a label "occurs" in a claim
when its folded form is a substring of the claim's folded form.

Texts come in two kinds, cached apart: labels and knowledge-base names, which recur from
note to note, and a note's own texts (its claim, an expression, its evidence), asked
about only while that note is checked (the `text_` functions).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation

# --- text folding --------------------------------------------------------------------

# The last three letters of a run of Latin letters that ends in s: what stem changes
# of a run of four or more (_stem_ending checks the letter before). A fixed width
# fails at once inside a run, where a pattern matching the whole run is tried again at
# each of its letters, and its leading class lets the regex engine skip to a letter.
_RUN_END_S = re.compile(r"[a-z]{2}s(?![a-z])")
_SKIPPED_CATEGORIES = ("P", "Z", "C")  # punctuation, separators, controls


def stem(word: str) -> str:
    """English plural → singular, crudely but identically on both sides of a comparison."""
    if len(word) <= 3:
        return word
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def fold(text: str) -> str:
    """The comparison form of `text`: NFKC, casefolded, plurals reduced, no punctuation or
    whitespace (so "KL-divergence" ~ "KL Divergence" and "（TV）loss" contains "TV loss")."""
    return (_fold_long if len(text) > _SHORT else _fold_short)(text)


def fold_text(text: str) -> str:
    """`fold` of a note's own text (its claim, an expression, its evidence): asked about
    while its note is checked, so it is kept among the few long texts, never in the
    cache of the names and labels that recur from note to note."""
    return _fold_long(text)


def _fold(text: str) -> str:
    return _drop_unkept(_RUN_END_S.sub(_stem_ending, nfkc_casefold(text)))


def _stem_ending(match: re.Match) -> str:
    """stem() of the run `match` ends, told by its last four letters (stem looks at no
    more): the run's last three letters as stem leaves them."""
    at, ending = match.start(), match.group()
    if not at or not "a" <= match.string[at - 1] <= "z":
        return ending  # a run of three letters, which stem leaves as it is
    if ending == "ses" and match.string[at - 1] == "s":
        return "s"  # -sses
    if ending == "ies":
        return "y"
    return ending if ending[1] == "s" else ending[:2]  # -ss stays, -s goes


# Two caches: labels and knowledge-base names (short, a few hundred, asked note after
# note) must not be evicted by the claims, which are unique and asked about only within
# their own note (see fold_text). A small cache for those keeps memory flat: the large
# one fills with names only, so it stops growing once a vault's names are all seen.
_SHORT = 120
_fold_short = functools.lru_cache(maxsize=4096)(_fold)
_fold_long = functools.lru_cache(maxsize=32)(_fold)


class _KeepTable(dict):
    """A str.translate table keeping the characters `keep` says yes to (each maps to
    itself) and dropping the others (None). Filled as characters are met, so translate()
    runs in C instead of a Python call per character."""

    def __init__(self, keep: Callable[[str], bool]):
        super().__init__()
        self.keep = keep

    def __missing__(self, code: int) -> int | None:
        kept = code if self.keep(chr(code)) else None
        self[code] = kept
        return kept


# folding drops punctuation, separators and controls
_KEPT = _KeepTable(lambda ch: not unicodedata.category(ch).startswith(_SKIPPED_CATEGORIES))
# Text of ASCII, CJK punctuation and the CJK ideographs (all letters, so all kept): its
# dropped characters are found by one regex, where translate() looks every character
# up in _KEPT (by its code, made an int object first)
_COMMON_SCRIPT = re.compile("[\x00-\x7f\u3000-\u303f\u4e00-\u9fff]*")
_COMMON_DROPPED_CHARACTERS = "".join(
    chr(code) for code in (*range(0x80), *range(0x3000, 0x3040)) if _KEPT[code] is None
)
_COMMON_DROPPED = re.compile(f"[{re.escape(_COMMON_DROPPED_CHARACTERS)}]")


def _drop_unkept(text: str) -> str:
    """`text.translate(_KEPT)`: the characters folding keeps."""
    if text.isascii() or not _COMMON_SCRIPT.fullmatch(text):
        return text.translate(_KEPT)  # ASCII: translate's own fast path
    return _COMMON_DROPPED.sub("", text)


def occurs(needle: str, haystack: str) -> bool:
    """Whether `needle` is said in `haystack`: as a folded substring, or (for a label of
    several Latin words, e.g. "TV loss" in "TV or Likelihood loss") word by word in order.
    `needle` is a label or a name, which recur from note to note."""
    return _occurs(needle, haystack, fold, _words)


def text_occurs(text: str, haystack: str) -> bool:
    """`occurs` for a needle that is a note's own text (see fold_text)."""
    return _occurs(text, haystack, fold_text, text_words)


def _occurs(
    needle: str,
    haystack: str,
    fold_needle: Callable[[str], str],
    needle_words: Callable[[str], tuple[str, ...]],
) -> bool:
    key = fold_needle(needle)
    if not key:
        return False
    # the usual label is written in the claim as is: then folding the claim is not needed
    if folded_part_of(needle, haystack) or key in fold_text(haystack):
        return True
    words = needle_words(needle)
    if len(words) < 2 or has_cjk(needle):
        return False
    position, found = 0, text_words(haystack)
    for word in words:
        if word not in found:  # the usual miss, without raising ValueError
            return False
        try:
            position = found.index(word, position) + 1
        except ValueError:
            return False
    return True


@functools.lru_cache(maxsize=256)  # a label is looked for in its claim by several checks
def folded_part_of(text: str, haystack: str) -> bool:
    """True when `text` is written in `haystack` where folding keeps it whole, so fold(text)
    is in fold(haystack) (False: not known, fold them). Folding splits there when the
    characters at both edges are _whole_at_edge (NFKC neither reorders across such a
    character nor composes it with the one before) and a non-letter stands on one side
    of each edge (no run of Latin letters, which stem reads as one word, spans it)."""
    at = haystack.find(text)
    if at < 0 or not text:
        return False
    end = at + len(text)
    return (at == 0 or _edge_kept(haystack[at - 1], text[0])) and (
        end == len(haystack) or _edge_kept(text[-1], haystack[end])
    )


def _edge_kept(before: str, after: str) -> bool:
    return _whole_at_edge(after) and (_not_a_letter(before) or _not_a_letter(after))


def _whole_at_edge(ch: str) -> bool:
    """ASCII, CJK ideographs, CJK punctuation (not its combining tone marks), full-width
    ASCII forms: starters that compose with nothing before them (tests/checks/assist/test_assist.py
    checks this against the Unicode database)."""
    return (
        ch.isascii()
        or "\u4e00" <= ch <= "\u9fff"
        or ("\u3000" <= ch <= "\u303f" and not "\u302a" <= ch <= "\u302f")
        or "\uff01" <= ch <= "\uff5e"
    )


@functools.lru_cache(maxsize=1024)  # asked of the few characters at the edges of labels
def _not_a_letter(ch: str) -> bool:
    """A _whole_at_edge character that folds to no Latin letter."""
    return _whole_at_edge(ch) and not nfkc(ch).casefold().isalpha()


def has_cjk(text: str) -> bool:
    return not text.isascii() and _cjk().search(text) is not None


@functools.cache  # compiled on first use: its class takes ~3 ms to build, ASCII text none
def _cjk() -> re.Pattern:
    return re.compile("[\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff\u3040-\u30ff]")


def cjk_characters(text: str) -> list[str]:
    """The characters of `text` is_cjk says yes to, in order (one scan in C)."""
    return [] if text.isascii() else _cjk().findall(text)


def is_cjk(ch: str) -> bool:
    return (
        "\u4e00" <= ch <= "\u9fff"
        or "\u3400" <= ch <= "\u4dbf"
        or "\uf900" <= ch <= "\ufaff"
        or "\u3040" <= ch <= "\u30ff"
    )


_WORD = re.compile(r"[a-z0-9]+(?:[.'][a-z0-9]+)*")


def _words(text: str) -> tuple[str, ...]:
    """Latin words and numbers of `text` (folded, stemmed); CJK is not split."""
    return (_words_long if len(text) > _SHORT else _words_short)(text)


def _split_words(text: str) -> tuple[str, ...]:
    return tuple(
        stem(word) if word[-1] == "s" else word for word in _WORD.findall(nfkc_casefold(text))
    )


_words_short = functools.lru_cache(maxsize=4096)(_split_words)  # see _fold_short
_words_long = functools.lru_cache(maxsize=32)(_split_words)


def text_words(text: str) -> tuple[str, ...]:
    """`_words` of a note's own text (see fold_text)."""
    return _words_long(text)


# --- numbers -------------------------------------------------------------------------

# a number: digits, optional thousands groups and decimals; not the digits of a name
# such as FP4, H100, R1-0528 or EAGLE-3 (a letter or digit, maybe a hyphen, right before it).
# Both start with a digit's class (`\d\d*`, the look-behinds after it and including it):
# then the regex engine skips ahead to the digits, where a pattern that starts with a
# look-behind or a repeat is tried at every position (several times slower)
_NUMBER = re.compile(r"\d(?<![A-Za-z0-9_.]\d)(?<![A-Za-z0-9]-\d)\d*(?:,\d{3})*(?:\.\d+)?")
_ANY_NUMBER = re.compile(r"\d\d*(?:,\d{3})*(?:\.\d+)?")


def ascii_digits(pattern: re.Pattern) -> re.Pattern:
    """`pattern` with [0-9] for \\d: the same matches in ASCII text (the only digits
    there), found sooner: \\d looks each character up in the Unicode database."""
    return re.compile(pattern.pattern.replace(r"\d", "[0-9]"), pattern.flags)


_NUMBER_ASCII, _ANY_NUMBER_ASCII = ascii_digits(_NUMBER), ascii_digits(_ANY_NUMBER)
_NUMBER_WORDS = {
    1: ("one", "single", "once", "一", "單", "单"),
    2: ("two", "twice", "double", "二", "兩", "两", "雙", "双"),
    3: ("three", "triple", "三"),
    4: ("four", "四"),
    5: ("five", "五"),
    6: ("six", "六"),
    7: ("seven", "七"),
    8: ("eight", "八"),
    9: ("nine", "九"),
    10: ("ten", "十"),
}


# The characters whose NFKC form holds a digit (the digits themselves, ² ① ５ …; the
# classes are checked against the Unicode database by tests/checks/assist/test_assist.py).
# No digit has a canonical decomposition or composes with what follows it, so NFKC of a
# text holds a digit exactly when one of its characters' NFKC forms does. A class of BMP characters
# alone is a bitmap, searched at a tenth of the cost of a translate() through a table;
# the astral ones are looked for only in a text that has an astral character at all.
_DIGIT_SOURCE_BMP = re.compile(
    "["
    "\u0030-\u0039\u00b2-\u00b3\u00b9\u00bc-\u00be\u0660-\u0669\u06f0-\u06f9"
    "\u07c0-\u07c9\u0966-\u096f\u09e6-\u09ef\u0a66-\u0a6f\u0ae6-\u0aef\u0b66-\u0b6f"
    "\u0be6-\u0bef\u0c66-\u0c6f\u0ce6-\u0cef\u0d66-\u0d6f\u0de6-\u0def\u0e50-\u0e59"
    "\u0ed0-\u0ed9\u0f20-\u0f29\u1040-\u1049\u1090-\u1099\u17e0-\u17e9\u1810-\u1819"
    "\u1946-\u194f\u19d0-\u19d9\u1a80-\u1a89\u1a90-\u1a99\u1b50-\u1b59\u1bb0-\u1bb9"
    "\u1c40-\u1c49\u1c50-\u1c59\u2070\u2074-\u2079\u2080-\u2089\u2150-\u215f\u2189"
    "\u2460-\u249b\u24ea\u3251-\u325f\u32b1-\u32cb\u3358-\u3370\u3378-\u3379"
    "\u339f-\u33a6\u33a8\u33af\u33e0-\u33fe\ua620-\ua629\ua8d0-\ua8d9\ua900-\ua909"
    "\ua9d0-\ua9d9\ua9f0-\ua9f9\uaa50-\uaa59\uabf0-\uabf9\uff10-\uff19"
    "]"
)
_DIGIT_SOURCE_ASTRAL = re.compile(
    "["
    "\U000104a0-\U000104a9\U00010d30-\U00010d39\U00011066-\U0001106f"
    "\U000110f0-\U000110f9\U00011136-\U0001113f\U000111d0-\U000111d9"
    "\U000112f0-\U000112f9\U00011450-\U00011459\U000114d0-\U000114d9"
    "\U00011650-\U00011659\U000116c0-\U000116c9\U00011730-\U00011739"
    "\U000118e0-\U000118e9\U00011950-\U00011959\U00011c50-\U00011c59"
    "\U00011d50-\U00011d59\U00011da0-\U00011da9\U00016a60-\U00016a69"
    "\U00016ac0-\U00016ac9\U00016b50-\U00016b59\U0001d7ce-\U0001d7ff"
    "\U0001e140-\U0001e149\U0001e2f0-\U0001e2f9\U0001e950-\U0001e959"
    "\U0001f100-\U0001f10a\U0001fbf0-\U0001fbf9"
    "]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _has_digit_source(text: str) -> bool:
    """Whether NFKC of `text` holds a digit."""
    return _DIGIT_SOURCE_BMP.search(text) is not None or (
        _ASTRAL.search(text) is not None and _DIGIT_SOURCE_ASTRAL.search(text) is not None
    )


# The longest number the review assist compares, in characters. A claim or evidence may
# hold a run of a million digits: as a Decimal its hash and int() take time quadratic in
# its length, and past the context's exponent limit normalize() raises decimal.Overflow.
# No stated quantity has a hundred digits; a longer run is no number to compare.
MAX_NUMBER_CHARACTERS = 100


@functools.lru_cache(maxsize=4096)  # notes repeat the same few hundred numbers
def number_value(token: str) -> Decimal | None:
    """The value of a number as written (`1,500.0` is 1.5E+3), or None when it is none
    the assist compares (longer than MAX_NUMBER_CHARACTERS)."""
    if len(token) > MAX_NUMBER_CHARACTERS:
        return None
    try:
        return Decimal(token.replace(",", "")).normalize()
    except InvalidOperation:
        return None


@functools.lru_cache(maxsize=64)  # the same claim + evidence is searched once per mention
def numbers_in(text: str, names_too: bool = False) -> tuple[tuple[str, Decimal], ...]:
    """The numbers written with digits in `text` (full-width digits included); a tuple,
    since every caller shares the memo's one answer."""
    if not text.isascii():  # NFKC leaves ASCII as it is
        if not _has_digit_source(text):
            return ()  # no digit, and none that NFKC would make: spare normalising
        text = nfkc(text)
    if text.isascii():
        pattern = _ANY_NUMBER_ASCII if names_too else _NUMBER_ASCII
    else:
        pattern = _ANY_NUMBER if names_too else _NUMBER
    # findall: the patterns have no group, so it gives each match's text, without a
    # match object per number
    return tuple(
        (token, value)
        for token in pattern.findall(text)
        if (value := number_value(token)) is not None
    )


@functools.lru_cache(maxsize=64)  # a note's claim and evidence, once for all its numbers
def _number_values(text: str) -> frozenset[Decimal]:
    return frozenset(value for _, value in numbers_in(text, names_too=True))


@functools.lru_cache(maxsize=256)  # an evidence paragraph is asked about the same numbers
def mentions_number(text: str, value: Decimal) -> bool:
    """Whether `text` states `value`, in digits or (for 1–10) in words."""
    if value in _number_values(text):
        return True
    if value != value.to_integral_value() or int(value) not in _NUMBER_WORDS:
        return False
    folded = nfkc_casefold(text)
    for word in _NUMBER_WORDS[int(value)]:
        if word.isascii():
            if _NUMBER_WORD_PATTERNS[word].search(folded):
                return True
        elif word in folded:
            return True
    return False


_NUMBER_WORD_PATTERNS = {
    word: re.compile(rf"\b{word}\b")
    for words in _NUMBER_WORDS.values()
    for word in words
    if word.isascii()
}


@functools.lru_cache(maxsize=64)  # a claim is folded, split into words and searched
def nfkc_casefold(text: str) -> str:
    return nfkc(text).casefold()


# The full-width forms of ASCII (！ to ～). Each one's compatibility decomposition is its
# ASCII character alone, so putting that in its place leaves the text's NFKD, hence its
# NFKC, as it was (tests/checks/assist/test_assist.py checks both). A Chinese sentence with a
# full-width comma fails normalize()'s quick check and is recomposed character by
# character, ~20 times the cost of the quick check that passes once the comma is ASCII.
_FULL_WIDTH_FORM = re.compile("[\uff01-\uff5e]")


def nfkc(text: str) -> str:
    """`unicodedata.normalize("NFKC", text)`, cheaper for text with full-width forms."""
    if text.isascii():
        return text
    return _nfkc(text)


# a note's claim is normalised by several checks (its numbers, its cue words, folding)
@functools.lru_cache(maxsize=256)
def _nfkc(text: str) -> str:
    if unicodedata.is_normalized("NFKC", text):  # a quick check, in C
        return text
    # each distinct form replaced once (a Chinese text repeats the same few, ，and ：):
    # str.replace runs in C, where sub() would call back into Python for every match
    for form in set(_FULL_WIDTH_FORM.findall(text)):
        text = text.replace(form, chr(ord(form) - 0xFEE0))
    return unicodedata.normalize("NFKC", text)


# --- hedges --------------------------------------------------------------------------

_HEDGE_EN = re.compile(
    r"\b(may|might|could|likely|unlikely|possibly|possible|perhaps|probably|"
    r"potentially|presumably|suggests?|suggested|seems?|arguably|"
    r"uncertain)\b",
    re.IGNORECASE,
)
_HEDGE_EN_LOWER = re.compile(_HEDGE_EN.pattern)
_HEDGE_ZH = (
    "可能",
    "未必",
    "或許",
    "或许",
    "也許",
    "也许",
    "恐怕",
    "大概",
    "似乎",
    "不一定",
    "推測",
    "推测",
    "或可",
    "有望",
    "可望",
    "疑似",
)
# conditional or predictive wording: a HYPOTHETICAL claim may rest on these instead of a hedge
_CONDITIONAL_EN = re.compile(
    r"\b(if|unless|assuming|would|whether|expected|expects?|"
    r"predicts?|hypothes[ie]s|hypothetical)\b",
    re.IGNORECASE,
)
_CONDITIONAL_ZH = (
    "如果",
    "若",
    "假如",
    "假設",
    "假设",
    "倘若",
    "一旦",
    "預計",
    "预计",
    "預期",
    "预期",
    "或將",
    "或将",
    "將可",
    "假定",
)


# The same searches without the leading \b, which is checked by hand (below): a pattern
# that starts with \b is tried at every position, one that starts with a word is skipped
# ahead by the regex engine to the characters that can begin a word.
_HEDGE_TAIL = re.compile(_HEDGE_EN.pattern[2:], re.IGNORECASE)
_HEDGE_TAIL_LOWER = re.compile(_HEDGE_EN.pattern[2:])
_CONDITIONAL_TAIL_LOWER = re.compile(_CONDITIONAL_EN.pattern[2:])
# outside ASCII, CJK and full-width forms, a few letters (ſ, ı, İ) match ASCII letters
# ignoring case without lowering to them: text with anything else takes the IGNORECASE path
_CASE_UNCHECKED = re.compile(
    "[^\x00-\x7f\u2000-\u206f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]"
)
_WORD_CHARACTER = re.compile(r"\w")


def _case_unchecked(text: str) -> bool:
    """Whether `text` holds a letter _CASE_UNCHECKED names (never an ASCII one)."""
    return not text.isascii() and _CASE_UNCHECKED.search(text) is not None


_HEDGE_ZH_ANY = re.compile("|".join(map(re.escape, _HEDGE_ZH)))
_CONDITIONAL_ZH_ANY = re.compile("|".join(map(re.escape, _CONDITIONAL_ZH)))


def _at_word_start(tail: re.Pattern, text: str) -> Iterator[re.Match]:
    """The matches of `\b` + `tail` in `text` (tail: a group of words, then `\b`).

    A match of tail that does not start a word lies inside one, so no match of the
    whole pattern can start within it: skipping it skips nothing.
    """
    for match in tail.finditer(text):
        start = match.start()
        if start == 0 or not _WORD_CHARACTER.match(text, start - 1):
            yield match


def hedge_in(text: str, doubt_only: bool = False) -> str | None:
    """The first hedging word of `text`, or None. "May" the month is not a hedge; with
    `doubt_only`, neither is a reporting verb that an actor of the claim does ("a small
    drafter model suggests tokens") rather than the author or the finding ("this
    suggests", "results suggest that")."""
    # a case-sensitive scan of the lowered text is several times faster than IGNORECASE
    lowered = text.lower()
    if len(lowered) != len(text):  # rare letters that lower to two characters
        lowered, pattern = text, _HEDGE_TAIL
    else:
        pattern = _HEDGE_TAIL_LOWER
    for match in _at_word_start(pattern, lowered):
        start, end = match.span()
        word = text[start:end]
        if word == "May" and re.match(r"\s+\d", text[end:]):
            continue
        if doubt_only and word.lower() in _REPORTING and not _voices_doubt(text, start, end):
            continue
        return word
    if text.isascii() or not _HEDGE_ZH_ANY.search(text):  # one scan for all the words
        return None
    return next((word for word in _HEDGE_ZH if word in text), None)


def _conditional_in(text: str) -> str | None:
    lowered = text.lower()
    if len(lowered) == len(text) and not _case_unchecked(text):
        # as for hedges, a scan of the lowered text; exact here: in these scripts a
        # letter matches a pattern letter ignoring case exactly when it lowers to it
        match = next(_at_word_start(_CONDITIONAL_TAIL_LOWER, lowered), None)
        if match:
            return text[match.start() : match.end()]
    else:
        match = _CONDITIONAL_EN.search(text)
        if match:
            return match.group()
    if text.isascii() or not _CONDITIONAL_ZH_ANY.search(text):
        return None
    return next((word for word in _CONDITIONAL_ZH if word in text), None)


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])")
# the same split when there is no Chinese sentence end: a leading character class lets the
# regex engine skip ahead, where a lookbehind is tried at every position
_LATIN_SENTENCE_END = re.compile(r"[.!?;](\s+)")


def _sentences(text: str) -> list[str]:
    """`_SENTENCE_END.split(text)`, several times faster for text without 。！？；."""
    if any(mark in text for mark in "。！？；"):
        return _SENTENCE_END.split(text)
    parts, start = [], 0
    for match in _LATIN_SENTENCE_END.finditer(text):
        parts.append(text[start : match.start(1)])
        start = match.end(1)
    parts.append(text[start:])
    return parts


def relevant_evidence(evidence: str, claim: str) -> str:
    """The evidence sentences the claim draws on (by shared words); all when unclear.

    A long evidence paragraph may hedge in one sentence while the claim restates
    another; only the sentences the claim shares words with say how sure the source is.
    """
    sentences = _worded_sentences(evidence)
    claim_words = {w for w in text_words(claim) if len(w) > 1}
    scores = [len(claim_words & words) for _, words in sentences]
    best = max(scores, default=0)
    if best < 2:
        return evidence
    kept = [
        s
        for (s, _), score in zip(sentences, scores, strict=True)
        if score >= 2 and 2 * score >= best
    ]
    return " ".join(kept)


@functools.lru_cache(maxsize=64)  # several claims are drawn from one evidence paragraph
def _worded_sentences(evidence: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The evidence's non-blank sentences, each with its set of words."""
    return tuple((s, frozenset(_words(s))) for s in _sentences(evidence) if s.strip())


# a part of every word _HEDGE_EN names ("unlikely" holds "likely")
_HEDGE_STEMS = (
    "may might could likely possib perhaps probabl potential presumabl suggest seem arguabl "
    "uncertain"
).split()
_REPORTING = frozenset(("suggest", "suggests", "suggested"))
# the subjects whose reporting verb is the source's doubt: the author and what was found
_DOUBTERS = frozenset(
    "this that it these those which we i our results result data evidence findings finding "
    "study studies analysis experiments experiment work paper authors author research "
    "measurements benchmarks numbers figures observations trend trends".split()
)
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def _voices_doubt(text: str, start: int, end: int) -> bool:
    """Whether the reporting verb at text[start:end] is the source's doubt: followed by
    "that", or said by the author or the finding (adverbs such as "strongly" skipped)."""
    if re.match(r"\s+that\b", text[end : end + 8], re.IGNORECASE):
        return True
    before = _LATIN_WORD.findall(text[max(0, start - 60) : start])
    while before and before[-1].lower().endswith("ly"):
        before.pop()
    return bool(before) and before[-1].lower() in _DOUBTERS


def doubt_in(text: str) -> str | None:
    """`hedge_in(text, doubt_only=True)`: the words that voice the source's own doubt."""
    return hedge_in(text, doubt_only=True)


# the sentences a claim draws on repeat for the claims drawn from one paragraph
evidence_hedge = functools.lru_cache(maxsize=64)(doubt_in)


def claim_evidence_doubt(evidence: str, claim: str) -> str | None:
    """`evidence_hedge` of the evidence sentences the claim draws on (relevant_evidence).
    Those sentences are worked out only for an evidence with a hedging word somewhere:
    most have none, and then no choice of its sentences has one."""
    if not _may_hedge(evidence):
        return None
    return evidence_hedge(relevant_evidence(evidence, claim))


@functools.lru_cache(maxsize=64)  # several claims are drawn from one evidence paragraph
def _may_hedge(evidence: str) -> bool:
    """Whether a hedging word occurs anywhere in `evidence`, ignoring case and word starts.
    relevant_evidence joins some of its sentences with a space; a word that hedge_in
    finds there lies within one sentence, and its end is followed by what follows it in
    the evidence (a sentence ends in its punctuation or the evidence's end), so this
    search finds it too (IGNORECASE also matches the letters that lower to ASCII, K)."""
    if evidence.isascii():  # the usual evidence: substring searches of the lowered text
        low = evidence.lower()
        found = any(stem in low for stem in _HEDGE_STEMS)
    else:
        found = _HEDGE_TAIL.search(evidence) is not None or bool(_HEDGE_ZH_ANY.search(evidence))
    return found


@functools.lru_cache(maxsize=64)
def _evidence_tone(evidence: str) -> bool | None:
    """Whether the evidence hedges or is conditional; None when it holds a letter whose
    case the fast scans do not settle alone (see hedged_or_conditional)."""
    if _case_unchecked(evidence):
        return None
    return bool(hedge_in(evidence) or _conditional_in(evidence))


def hedged_or_conditional(claim: str, evidence: str) -> bool:
    """Whether `f"{claim}\\n{evidence}"` hedges or is conditional, the evidence's own
    words judged once per evidence (several claims share one).

    Exact: no hedge or conditional word spans the newline, and what the claim's words
    see of the evidence is its leading whitespace and first character ("May 5" is the
    month); that character alone is a word only if it is one by itself in the evidence.
    Text outside ASCII, CJK and full-width forms may switch the scans to matching
    ignoring case for the whole text: then the whole text is scanned, as one.
    """
    tone = _evidence_tone(evidence)
    if tone is None or _case_unchecked(claim):
        both = f"{claim}\n{evidence}"
        return bool(hedge_in(both) or _conditional_in(both))
    if tone:
        return True
    lead = len(evidence) - len(evidence.lstrip())
    claim_side = f"{claim}\n{evidence[: lead + 1]}"
    return bool(hedge_in(claim_side) or _conditional_in(claim_side))
