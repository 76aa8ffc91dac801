"""Review assist, how far the claim reaches against its evidence (source → claim): a
quantifier made stronger or weaker (most → 所有), a condition turned into its opposite
("only when X" → "even if not X", 即使…也), a statement given to another source
("According to A" → "根據 B").

Each check asks the claim's cue words first (cues.py, one scan for every check): most
claims hold none of these words, and then the evidence is not read at all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from vault_tools.checks.assist.cues import ATTRIBUTED, CONCESSIVE, EVERY, SOME, cues
from vault_tools.checks.assist.reading import (
    condition_phrase,
    restated_sentence,
    sentences,
)
from vault_tools.checks.assist.wording import has_cjk
from vault_tools.checks.claim_versions import ClaimVersion
from vault_tools.findings import Finding, warning
from vault_tools.notes.note import Note


def scope_checks(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    """Every quantifier, inverted-condition and attribution warning for one claim."""
    if not evidence:
        return []
    found = cues(version.claim.value)
    if not (EVERY in found or SOME in found or CONCESSIVE in found or ATTRIBUTED in found):
        return []
    return [
        *_quantifier(note, version, evidence, found),
        *_inverted_condition(note, version, evidence, found),
        *_attribution(note, version, evidence, found),
    ]


def _restated(evidence: str, claim: str) -> str | None:
    """The evidence sentence the claim restates; the only sentence of a one-sentence
    evidence when the claim shares too few words with it to tell (a Chinese claim)."""
    restated = restated_sentence(evidence, claim)
    if restated is not None:
        return restated[0]
    only = sentences(evidence)
    return only[0] if len(only) == 1 else None


# --- a quantifier made stronger or weaker ----------------------------------------------


def _quantifier(
    note: Note, version: ClaimVersion, evidence: str, found: Mapping[str, str]
) -> list[Finding]:
    every, some = found.get(EVERY), found.get(SOME)
    if bool(every) == bool(some):
        return []  # none, or both ("大多數…都"): the claim keeps a limit
    sentence = _restated(evidence, version.claim.value)
    if sentence is None or has_cjk(sentence):
        return []
    said = cues(sentence)
    if every and SOME in said and EVERY not in said:
        what, source, claimed = "stronger", said[SOME], every
    elif some and EVERY in said and SOME not in said:
        what, source, claimed = "weaker", said[EVERY], some
    else:
        return []
    return [
        warning(
            note.path,
            version.claim.line,
            "assist-claim-quantifier",
            f"{version.label}the quantifier is made {what}: evidence: {source!r}; "
            f"claim: {claimed!r}",
        )
    ]


# --- a condition turned into its opposite ------------------------------------------------


def _inverted_condition(
    note: Note, version: ClaimVersion, evidence: str, found: Mapping[str, str]
) -> list[Finding]:
    concession = found.get(CONCESSIVE)
    if concession is None:
        return []
    sentence = _restated(evidence, version.claim.value)
    if sentence is None or CONCESSIVE in cues(sentence):
        return []  # the source itself says the condition does not matter
    phrase = condition_phrase(sentence)
    if phrase is None:
        return []
    if sentence[: sentence.find(phrase)].rstrip().lower().endswith("only"):
        phrase = f"only {phrase}"  # "only when X": the restriction the claim turns round
    return [
        warning(
            note.path,
            version.claim.line,
            "assist-claim-inverted",
            f"{version.label}the condition is turned into its opposite: evidence: "
            f"{phrase!r}; claim: {concession!r}",
        )
    ]


# --- a statement given to another source ------------------------------------------------

_VERBS_EN = (
    "reports|reported|says|said|finds|found|estimates|estimated|argues|argued|"
    "concludes|concluded|notes|noted|states|stated|shows|showed|predicts|predicted"
)
# "According to A, …", "A reports that …", "a study by A found …"
_SOURCE_EN = re.compile(
    r"according\s+to\s+(?P<a>[^,;:.]{1,60})|"
    rf"(?:^|[,;:]\s*|\.\s+)(?P<b>[a-z][\w&.'\- ]{{0,60}}?)\s+(?:{_VERBS_EN})\b(?=\s+that\b|,|:)",
    re.IGNORECASE,
)
# "根據 A，…", "據 A 估計", "A 指出 …": A's Latin words are compared (a Chinese name beside
# English evidence cannot be)
_SOURCE_ZH = re.compile(
    r"(?:根據|根据|依據|依据|據|据)\s*(?P<a>[^，,。；;]{1,40}?)\s*"
    r"(?:的(?:報告|报告|研究|資料|资料|估計|估计|調查|调查|分析|說法|说法)[^，,]{0,10})?[，,]|"
    r"(?P<b>[A-Za-z][A-Za-z0-9&.'\- ]{0,60}?)\s*"
    r"(?:的(?:報告|报告|研究|調查|调查))?\s*(?:指出|報告|报告|表示|發現|发现|估計|估计|認為|认为)"
)
# words that name no one (the study, researchers), and words many names share (Institute,
# Bank): neither tells two sources apart; the second still give a name its initials
_FUNCTION = frozenset(
    "the a an this that these those its their his her our new recent latest by of in at "
    "from and for on to with it they we he she".split()
)
_NO_ONE = frozenset(
    "study studies report reports researcher researchers author authors analysis survey "
    "data paper team scientists experts evidence results result".split()
)
_SHARED = frozenset(
    "institute university college agency organization organisation department ministry "
    "center centre bureau office association society council group company corporation "
    "bank fund national international world global federal".split()
)
_NAME_WORD = re.compile(r"[A-Za-z][A-Za-z0-9&\-']*|[0-9]+")


@functools.lru_cache(maxsize=256)
def _source_key(name: str) -> frozenset[str]:
    """The words that tell a source's name apart, lowered, with its initials when it
    has several capitalised words ("International Monetary Fund" is also "imf")."""
    words = [w for w in _NAME_WORD.findall(name) if w.lower() not in _FUNCTION]
    key = {w.lower() for w in words if w.lower() not in _NO_ONE and w.lower() not in _SHARED}
    capitals = [w for w in words if w[:1].isupper() and w.lower() not in _NO_ONE]
    if len(capitals) >= 2:
        key.add("".join(w[0] for w in capitals).lower())
    return frozenset(key)


def sources_named(text: str) -> list[str]:
    """Who `text` says says it ("According to A", "A reports that", 根據 A): each name
    with a word that names someone."""
    pattern = _SOURCE_ZH if has_cjk(text) else _SOURCE_EN
    names = []
    for match in pattern.finditer(text):
        name = (match.group("a") or match.group("b") or "").strip()
        if _source_key(name):
            names.append(name)
    return names


def _same_source(a: str, b: str) -> bool:
    key_a, key_b = _source_key(a), _source_key(b)
    if key_a & key_b:
        return True
    # "the Fed" and "the Federal Reserve": a word of one the beginning of a word of the other
    words_a, words_b = _name_words(a), _name_words(b)
    return any(
        x.startswith(y) or y.startswith(x)
        for x, y in ((x, y) for x in key_a for y in words_b)
        if len(x) >= 3 and len(y) >= 3
    ) or any(x.startswith(y) for x in words_a for y in key_b if len(y) >= 3)


def _name_words(name: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _NAME_WORD.findall(name) if w.lower() not in _FUNCTION)


def _attribution(
    note: Note, version: ClaimVersion, evidence: str, found: Mapping[str, str]
) -> list[Finding]:
    if ATTRIBUTED not in found:
        return []
    claim = version.claim.value
    claimed = sources_named(claim)
    if not claimed:
        return []
    sentence = _restated(evidence, claim)
    said = sources_named(sentence) if sentence else []
    if not said:
        said = list(dict.fromkeys(sources_named(evidence)))
    if not said or len({_source_key(s) for s in said}) > 1 and sentence is None:
        return []  # no source named, or several and no telling which the claim restates
    for name in claimed:
        if any(_same_source(name, source) for source in said):
            continue
        return [
            warning(
                note.path,
                version.claim.line,
                "assist-claim-attribution",
                f"{version.label}the statement is given to another source: the evidence "
                f"attributes it to {said[0]!r}; claim: {name!r}",
            )
        ]
    return []
