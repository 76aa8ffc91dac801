"""Review assist, the claim's wording: does the frame say what the claim says (claim →
frame), does the evidence state the claim's numbers (source → claim), and does the
epistemic mode keep the source's tone?
"""

from __future__ import annotations

import re
from decimal import Decimal

from vault_tools.checks.assist.number_reading import (
    claim_numbers,
    evidence_numbers,
    mention_values,
    states_number,
)
from vault_tools.checks.assist.wording import (
    cjk_characters,
    claim_evidence_doubt,
    fold_text,
    folded_part_of,
    has_cjk,
    hedged_or_conditional,
    mentions_number,
    nfkc,
    nfkc_casefold,
    number_value,
    occurs,
    text_occurs,
    text_words,
)
from vault_tools.checks.claim_versions import ClaimVersion, as_str, block_line
from vault_tools.findings import Finding, warning
from vault_tools.notes.note import Note

# --- claim → frame ---------------------------------------------------------------------


def frame_checks(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    findings = []
    frame, claim = version.frame, version.claim.value
    for index, entity in version.entities:
        if not occurs(entity["label"], claim):
            line = block_line(frame, ("entities", index, "label"), entity["label"])
            findings.append(
                warning(
                    note.path,
                    line,
                    "assist-frame-label",
                    f"{version.label}entity label {entity['label']!r} does not "
                    f"occur in the claim text",
                )
            )
    expression = frame.data.get("comparison_expression")
    if isinstance(expression, str) and expression.strip():
        missing = _missing_from(expression, claim)
        if missing:
            line = block_line(frame, ("comparison_expression",), expression)
            findings.append(
                warning(
                    note.path,
                    line,
                    "assist-frame-expression",
                    f"{version.label}comparison_expression says "
                    f"{', '.join(repr(m) for m in missing)}, which the claim "
                    f"text does not",
                )
            )
    findings += _numeric_mention_checks(note, version, evidence)
    return findings


# common Chinese function characters: a paraphrase adds and drops these freely
_FUNCTION_HAN = frozenset(
    "的之與与和及以於于在是了或而其對对上中等也為为將将被由從从把則则就都個个一這这那此並并且但比更"
)


def _missing_from(expression: str, claim: str) -> list[str]:
    """What the comparison expression says that the claim does not.

    Latin words and numbers (entities, quantities) must all be in the claim. Chinese is
    paraphrased freely (高於 for 比…更), so its characters count only when most of them,
    and at least six, are absent: then the expression states something else.
    """
    if folded_part_of(expression, claim):
        return []  # (an expression copied from the claim is not folded)
    missing = _missing_words(expression, claim)
    # a claim that says the expression (folded) misses nothing of it either; folding
    # the two is needed only when the words miss something, which they seldom do
    if missing and text_occurs(expression, claim):
        return []
    return missing


def _missing_words(expression: str, claim: str) -> list[str]:
    """The Latin words and numbers of the expression the claim lacks, and its Chinese
    characters when most of them are absent (see _missing_from)."""
    latin = set(text_words(claim))
    missing = [
        w
        for w in dict.fromkeys(text_words(expression))
        if w not in latin and not _number_word_match(w, claim)
    ]
    han = [ch for ch in cjk_characters(nfkc(expression)) if ch not in _FUNCTION_HAN]
    absent = [ch for ch in han if ch not in claim]
    if len(absent) >= 6 and 2 * len(absent) > len(han):
        missing.append("".join(dict.fromkeys(absent)))
    return missing


def _number_word_match(word: str, text: str) -> bool:
    value = number_value(word) if word[:1].isdigit() else None
    return value is not None and mentions_number(text, value)


def _numeric_mention_checks(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    qualifiers = version.frame.data.get("qualifiers")
    mentions = qualifiers.get("numeric_mentions") if isinstance(qualifiers, dict) else None
    if not isinstance(mentions, list):
        return []
    findings = []
    claim = version.claim.value
    said = evidence_numbers(evidence)[0]
    for index, mention in enumerate(mentions):
        if (
            not isinstance(mention, str)
            or not mention.strip()
            or _mention_found(mention, claim, evidence, said)
        ):
            continue
        line = block_line(version.frame, ("qualifiers", "numeric_mentions", index))
        findings.append(
            warning(
                note.path,
                line,
                "assist-frame-number",
                f"{version.label}numeric mention {mention!r} occurs in neither "
                f"the claim nor the evidence",
            )
        )
    return findings


def _mention_found(mention: str, claim: str, evidence: str, said: frozenset[Decimal]) -> bool:
    """Whether the mention occurs in the claim and evidence (as one text, a line apart);
    `said` is the evidence's values (`evidence_numbers`)."""
    values = mention_values(mention)
    if values:
        # a number (or number word) never spans the newline, and NFKC and casefolding of
        # the two joined are those of each. The evidence first: its numbers are read
        # once for all the claims drawn from it, and it is where a mention comes from
        # mentions_number(evidence, value) holds for each of the evidence's own values
        return said.issuperset(values) or all(
            states_number(evidence, said, value) or mentions_number(claim, value)
            for value in values
        )
    # NFKC and casefolding of the two joined by the newline are those of each joined by
    # it, and fold drops the newline: each side is worked on alone, the evidence's once
    claim_folded, evidence_folded = nfkc_casefold(claim), nfkc_casefold(evidence)
    key = nfkc(mention).casefold().strip()
    if has_cjk(key):  # Chinese runs on across the newline: look in the two as one
        return fold_text(key) in fold_text(claim_folded) + fold_text(evidence_folded)
    # a symbol such as k or N: a whole token, not a letter inside a word
    token = re.compile(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])")
    if "\n" in key:
        return token.search(f"{claim_folded}\n{evidence_folded}") is not None
    return token.search(evidence_folded) is not None or token.search(claim_folded) is not None


# --- source → claim --------------------------------------------------------------------


def claim_number_checks(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    if not evidence:
        return []
    numbers = claim_numbers(version.claim.value)[0]
    if not numbers:
        return []
    findings = []
    said = evidence_numbers(evidence)[0]
    reported: set[Decimal] = set()
    for offset, token, value in numbers:
        if value in reported or states_number(evidence, said, value):
            continue
        reported.add(value)
        findings.append(
            warning(
                note.path,
                version.claim.line + offset,
                "assist-claim-number",
                f"{version.label}the claim's number {token} is not in the evidence",
            )
        )
    return findings


# --- epistemic mode --------------------------------------------------------------------

_NO_CANONICAL = re.compile(
    r"(沒有|没有|無|无|缺少|缺乏|尚無|尚无|不存在|\bno\b|\bwithout\b|"
    r"\blacks?\b|\bmissing\b)\s*(an?\s+)?canonical",
    re.IGNORECASE,
)


_CANONICAL = re.compile("canonical", re.IGNORECASE)  # every _NO_CANONICAL match holds it


def mode_checks(note: Note, version: ClaimVersion, evidence: str) -> list[Finding]:
    findings = []
    claim = version.claim.value
    if version.mode == "ASSERTED" and evidence:
        hedge = claim_evidence_doubt(evidence, claim)
        if hedge:
            findings.append(
                warning(
                    note.path,
                    version.mode_line,
                    "assist-mode-hedged",
                    f"{version.label}the evidence hedges ({hedge!r}) but the "
                    f"claim is ASSERTED; HYPOTHETICAL keeps the source's tone",
                )
            )
    elif version.mode == "HYPOTHETICAL" and not hedged_or_conditional(claim, evidence):
        findings.append(
            warning(
                note.path,
                version.mode_line,
                "assist-mode-unhedged",
                f"{version.label}the claim is HYPOTHETICAL, but neither it "
                f"nor the evidence hedges; ASSERTED may be meant",
            )
        )
    condition = None
    qualifiers = version.frame.data.get("qualifiers")
    if isinstance(qualifiers, dict):
        condition = as_str(qualifiers.get("condition_text"))
    if (
        version.status == "COMPLETE"
        and condition
        and _CANONICAL.search(condition)  # a literal, found faster than the whole pattern
        and _NO_CANONICAL.search(condition)
    ):
        findings.append(
            warning(
                note.path,
                version.status_line,
                "assist-mapping-complete",
                f"{version.label}Mapping Status is COMPLETE, but the condition "
                f"text says an entity has no canonical entry; PARTIAL is meant",
            )
        )
    return findings
