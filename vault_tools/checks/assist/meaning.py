"""Review assist, what the claim means against what the evidence says (source → claim):
a comparison turned round, a condition dropped, a unit changed, a negation lost or
added, an entity the source never mentions.

Each check reads the claim beside the evidence sentence it restates (reading.py)
and stays silent when it cannot tell which that is: a missed slip costs less than a
warning on a faithful note, which teaches reviewers to skip warnings.
"""

from __future__ import annotations

import functools

from vault_tools.checks.assist.cues import CONCESSIVE, cues, lowered
from vault_tools.checks.assist.number_reading import claim_numbers, evidence_numbers
from vault_tools.checks.assist.reading import (
    claim_compares,
    claim_denial,
    claim_multiplies,
    clauses,
    condition_phrase,
    distinct_names,
    evidence_conditions,
    evidence_denies,
    evidence_negation,
    name_mentioned,
    negation_en,
    ranking,
    restated_sentence,
    shared_words,
    states_a_condition,
)
from vault_tools.checks.assist.wording import (
    fold,
    fold_text,
    folded_part_of,
    has_cjk,
    occurs,
    text_words,
)
from vault_tools.checks.claim_versions import ClaimVersion, as_str
from vault_tools.checks.context import CheckContext
from vault_tools.findings import Finding, warning
from vault_tools.notes import kb as kbmod
from vault_tools.notes.note import Note


def meaning_checks(
    note: Note, version: ClaimVersion, ctx: CheckContext, evidence: str, context: str
) -> list[Finding]:
    """Every source → claim meaning warning for one claim version."""
    if not evidence:
        return []
    return [
        *_reversed_comparison(note, version, ctx, evidence),
        *_dropped_condition(note, version, evidence),
        *_changed_unit(note, version, evidence),
        *_negation(note, version, evidence),
        *_invented_entities(note, version, ctx, _source_texts(note, evidence, context)),
    ]


def _source_texts(note: Note, evidence: str, context: str) -> tuple[str, ...]:
    section = note.source.section.value if note.source and note.source.section else ""
    return (evidence, context, section)


# each entity's key with its names, the label first
Names = tuple[tuple[str, tuple[str, ...]], ...]


def entity_names(version: ClaimVersion, ctx: CheckContext) -> Names:
    """Each frame entity's label (first), with the title and aliases of the note it maps
    to, each name once (`distinct_names`)."""
    kb = ctx.kb if ctx.kb.root is not None else None
    return _entity_names(kb, tuple((e["id"], e["label"]) for _, e in version.entities))


def _entity_names(kb: kbmod.KnowledgeBase | None, entities: tuple[tuple[str, str], ...]) -> Names:
    if len({key for key, _ in entities}) == len(entities):  # each key once: most frames
        return tuple((key, _label_names(kb, key, label)) for key, label in entities)
    names: dict[str, list[str]] = {}
    for key, label in entities:
        known = names.setdefault(key, [])
        known.append(label)
        known.extend(_target_names(kb, key) if kb is not None else ())
    return tuple((key, tuple(distinct_names(known))) for key, known in names.items())


# asked by the reversed-comparison and the operator checks of V1 and each draft; each
# entity recurs note after note, where a frame's set of entities seldom does
@functools.lru_cache(maxsize=4096)
def _label_names(kb: kbmod.KnowledgeBase | None, key: str, label: str) -> tuple[str, ...]:
    """The label, then the title and aliases of the note `key` maps to, each name once.
    A title is most often the label again, or it in other case: each name of the same
    shape as another finds what that one finds, and the ranking looks each name up on
    both sides of every comparison."""
    known = [label, *(_target_names(kb, key) if kb is not None else ())]
    return tuple(distinct_names(known))


def target_names(ctx: CheckContext, target: str) -> tuple[str, ...]:
    """The title and aliases of the knowledge-base note `target` resolves to."""
    return _target_names(ctx.kb, target) if ctx.kb.root is not None else ()


@functools.lru_cache(maxsize=4096)  # the same few hundred targets, note after note
def _target_names(kb: kbmod.KnowledgeBase, target: str) -> tuple[str, ...]:
    """The title and aliases of the knowledge-base note `target` resolves to (a
    KnowledgeBase never changes once read, so it can be part of the key)."""
    resolution = kb.resolve(target)
    if resolution.status != kbmod.OK or not resolution.path:
        return ()
    title = resolution.path.rsplit("/", 1)[-1]
    return (title[:-3] if title.lower().endswith(".md") else title, *kb.aliases(resolution.path))


def claim_ranking(version: ClaimVersion, names: Names) -> frozenset[tuple[str, str]]:
    """`ranking` of the claim by `names` (entity_names): asked by the reversed-comparison
    and the operator checks, and by a draft that repeats V1, worked out once."""
    return _ranking(version.claim.value, names)


def _names_key(names: dict[str, list[str]]) -> Names:
    return tuple((k, tuple(v)) for k, v in names.items())


# V1 and the drafts share the note's evidence and (mostly) its claim and entities: each
# text is ranked once for them all
@functools.lru_cache(maxsize=16)
def _ranking(text: str, names: Names) -> frozenset[tuple[str, str]]:
    return ranking(text, dict(names))


def line_with(version: ClaimVersion, needle: str) -> int:
    """The note line of the claim's first line that says `needle` (else its first)."""
    for offset, line_text in enumerate(version.claim.value.split("\n")):
        if occurs(needle, line_text):
            return version.claim.line + offset
    return version.claim.line


def _label(names: Names, key: str) -> str:
    return dict(names)[key][0]


# --- a comparison turned round -----------------------------------------------------


def _reversed_comparison(
    note: Note, version: ClaimVersion, ctx: CheckContext, evidence: str
) -> list[Finding]:
    claim = version.claim.value
    if (
        len(version.entities) < 2
        or not (claim_compares(claim) or claim_multiplies(claim))
        or claim_denial(claim, True)
    ):
        return []  # "A 並不比 B 快" denies, it does not turn round: the negation check's
    names = entity_names(version, ctx)
    claimed = claim_ranking(version, names)
    if not claimed:
        return []
    said = _ranking(evidence, names)
    for upper, lower in sorted(claimed):
        if (lower, upper) in said and (upper, lower) not in said:
            a, b = _label(names, lower), _label(names, upper)
            return [
                warning(
                    note.path,
                    line_with(version, _label(names, upper)),
                    "assist-claim-reversed",
                    f"{version.label}the comparison is turned round: evidence: {a!r} "
                    f"above {b!r}; claim: {b!r} above {a!r}",
                )
            ]
    return []


# --- a condition dropped -----------------------------------------------------------


def _dropped_condition(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    claim = version.claim.value
    # what the claim and condition_text say first: most claims keep a condition word,
    # and the evidence's conditions (a scan of each sentence) are needed only after.
    # A claim that says the condition does not matter (即使, even if) inverts it rather
    # than drops it: assist-claim-inverted's
    if states_a_condition(claim) or CONCESSIVE in cues(claim):
        return []
    phrases = evidence_conditions(evidence)  # before condition_text's cue words: most
    if not phrases:  # evidence states no condition, and its words are read once anyway
        return []
    qualifiers = version.frame.data.get("qualifiers")
    condition = as_str(qualifiers.get("condition_text")) if isinstance(qualifiers, dict) else None
    if condition and states_a_condition(condition):
        return []  # condition_text keeps a condition
    if condition and any(_shares_a_term(p, condition) for p in phrases):
        return []  # condition_text keeps one of the evidence's conditions
    restated = restated_sentence(evidence, claim)
    if restated is None or restated[1] < 3:
        return []  # too few words in common to be sure which sentence the claim restates
    phrase = condition_phrase(restated[0])
    if phrase is None or _kept_in_chinese(phrase, claim, condition):
        return []
    return [
        warning(
            note.path,
            version.claim.line,
            "assist-claim-condition",
            f"{version.label}a condition is dropped: evidence: {phrase!r}; claim and "
            f"condition_text: none",
        )
    ]


_CONDITION_WORDS = frozenset(
    "if when whenever unless only as long provided that depending depend on based given "
    "at for under high low large small the a of".split()
)


# the size of an English condition ("for large clusters", "under heavy load") as Chinese
# says it (大型叢集, 高負載): a condition kept in the other language than the evidence's
_SIZE_ZH = {
    "high": "高",
    "higher": "高",
    "low": "低",
    "lower": "低",
    "large": "大",
    "larger": "大",
    "small": "小",
    "smaller": "小",
    "long": "長长",
    "short": "短",
    "heavy": "重大高",
    "light": "輕轻小低",
}


def _kept_in_chinese(phrase: str, claim: str, condition: str | None) -> bool:
    """Whether a Chinese claim or condition_text says the size an English condition
    names (a cue map across the two languages; any of its characters counts)."""
    words = phrase.lower().split()
    size = _SIZE_ZH.get(words[1]) if len(words) > 1 and words[0] in ("at", "for", "under") else None
    if size is None:
        return False
    texts = [t for t in (claim, condition) if t and has_cjk(t)]
    return any(ch in text for text in texts for ch in size)


def _shares_a_term(phrase: str, text: str) -> bool:
    """Whether `text` repeats most terms of the condition (k and N, batch size …)."""
    terms = set(text_words(phrase)) - _CONDITION_WORDS
    return 2 * len(terms & set(text_words(text))) > len(terms)


# --- a unit changed ----------------------------------------------------------------


def _changed_unit(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    # the claim's quantities first: most claims state none with a unit, and the
    # evidence's units are asked only for those that do
    claimed = claim_numbers(version.claim.value)[1]
    units_of = evidence_numbers(evidence)[1] if claimed else None
    if not units_of:
        return []
    findings = []
    reported: set[int] = set()
    for offset, token, value, unit in claimed:
        if offset in reported:
            continue  # one warning per line of the claim
        units = units_of.get(value)
        if not units or unit in units:
            continue
        reported.add(offset)
        findings.append(
            warning(
                note.path,
                version.claim.line + offset,
                "assist-claim-unit",
                f"{version.label}the unit of {token} changed: evidence: "
                f"{' / '.join(sorted(units))}; claim: {unit}",
            )
        )
    return findings


# --- a negation lost or added ------------------------------------------------------


def _negation(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    claim = version.claim.value
    added = claim_denial(claim, explicit=True)
    if added and CONCESSIVE in cues(claim):
        return []  # "even if not X" inverts a condition: assist-claim-inverted's
    if added:
        if has_cjk(evidence) or evidence_denies(evidence):
            return []  # the lists read English evidence
        if restated_sentence(evidence, claim) is None:
            return []
        return [_negation_warning(note, version, "none", repr(added))]
    if claim_denial(claim, explicit=False) or evidence_negation(evidence) is None:
        return []  # the claim's words first: they are read once for every check
    restated = restated_sentence(evidence, claim)
    if restated is None or has_cjk(evidence):
        return []
    for clause in clauses(restated[0]):
        word = negation_en(clause)
        if word and shared_words(clause, claim) >= 2:
            return [_negation_warning(note, version, f"{clause.strip()!r} ({word!r})", "none")]
    return []


def _negation_warning(note: Note, version: ClaimVersion, said: str, claimed: str) -> Finding:
    what = "lost" if claimed == "none" else "added"
    return warning(
        note.path,
        version.claim.line,
        "assist-claim-negation",
        f"{version.label}a negation is {what}: evidence: {said}; claim: {claimed}",
    )


# --- an entity the source never mentions --------------------------------------------


def _mentioned(names: list[str], texts: tuple[str, ...]) -> bool:
    """Whether one of `texts` names the entity under one of `names`; True when no name
    has a Latin word to look for (a Chinese name beside English evidence proves nothing)."""
    # a name written as is in an ASCII text is in it lowered too: the usual case, found
    # without lowering the texts
    for text in texts:
        if text.isascii():
            for name in names:
                if name in text:
                    return True
    joined, lows = _lowered_texts(texts)
    for name in names:
        low = _lowered_name(name)
        if low in joined if _SEPARATOR not in low else any(low in text for text in lows):
            return True  # the usual case, written as is
    seen = [name_mentioned(name, texts) for name in names]
    return any(seen) or all(s is None for s in seen)


# a name without this character is in one of the texts when it is in them joined by it:
# one substring search per name instead of one per name and text
_SEPARATOR = "\x00"


@functools.lru_cache(maxsize=64)  # an evidence serves several claims, each several entities
def _lowered_texts(texts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """`texts` lowered, joined by _SEPARATOR and one by one."""
    lows = tuple(map(lowered, texts))
    return _SEPARATOR.join(lows), lows


_lowered_name = functools.lru_cache(maxsize=4096)(lowered)  # names recur from note to note


def _invented_entities(
    note: Note, version: ClaimVersion, ctx: CheckContext, texts: tuple[str, ...]
) -> list[Finding]:
    findings = []
    claim = version.claim.value
    for _, entity in version.entities:
        label, key = entity["label"], entity["id"]
        names = target_names(ctx, key)
        if ctx.kb.root is not None and not names:
            continue  # no note to take its names from: kb-target-missing says so
        # the source naming it first: nearly every entity is, and then whether the claim
        # writes its label needs no folding of the claim
        if _mentioned([label, *names], texts):
            continue
        # a label written in the claim as is spares folding the claim
        if not folded_part_of(label, claim) and fold(label) not in fold_text(claim):
            continue  # not in the claim as written (assist-frame-label's)
        if any(has_cjk(text) for text in texts):
            return []  # Chinese evidence: the entity may be written in a way not looked for
        findings.append(
            warning(
                note.path,
                line_with(version, label),
                "assist-claim-entity",
                f"{version.label}the claim and the frame name {label!r} "
                f"({key.rsplit('/', 1)[-1]}), but the evidence and its context name it "
                f"under none of its names",
            )
        )
    return findings
