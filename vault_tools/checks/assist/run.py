"""Review assist: the mistakes a careful reviewer would catch, as `warning` findings.

A reviewer confirms four things per note (source → claim, claim → frame, the entity
mapping, the epistemic mode). Each check looks for one kind of slip in one of them:
the mapping in mapping.py, the claim's numbers, wording and tone in
claim.py, what the claim means against its evidence in meaning.py, how far it
reaches (quantifier, a condition's sense, who says it) in scope.py, the
frame's operator and metric in terms.py; all read text as wording.py folds it, and a
text's numbers as number_reading.py reads them once for the checks that ask.
They are heuristics, tuned for precision: when in doubt a check stays silent, because a
warning on every note teaches reviewers to ignore warnings.

`review_findings(note, ctx)` is the entry point; `check_note` calls it for review notes.
A note's `assist_ignore` property (the reviewer's, never vt's) lists the codes it silences.
"""

from __future__ import annotations

from vault_tools.checks.assist.claim import claim_number_checks, frame_checks, mode_checks
from vault_tools.checks.assist.mapping import mapping_checks
from vault_tools.checks.assist.meaning import meaning_checks
from vault_tools.checks.assist.scope import scope_checks
from vault_tools.checks.assist.terms import term_checks
from vault_tools.checks.claim_versions import ClaimVersion, claim_versions
from vault_tools.checks.context import CheckContext
from vault_tools.findings import Finding
from vault_tools.notes.note import Note, Text
from vault_tools.vocabulary import ASSIST_IGNORE


def review_findings(note: Note, ctx: CheckContext) -> list[Finding]:
    """Every review-assist warning for one parsed review note (V1 and V2 drafts)."""
    if not note.is_review_note:
        return []
    findings: list[Finding] = []
    for version in claim_versions(note):
        findings += _check_version(note, version, ctx)
    ignored = ignored_codes(note.properties.get(ASSIST_IGNORE))
    return [f for f in findings if f.code not in ignored] if ignored else findings


def ignored_codes(value: object) -> frozenset[str]:
    """The codes an `assist_ignore` value lists (the properties schema holds it to a list
    of review-assist codes; anything else silences nothing)."""
    if isinstance(value, list):
        return frozenset(v.strip() for v in value if isinstance(v, str))
    return frozenset()


def _check_version(note: Note, version: ClaimVersion, ctx: CheckContext) -> list[Finding]:
    source = note.source
    evidence = source.evidence.value if source and source.evidence else ""
    context = _context(source.context_before, source.context_after) if source else ""
    return [
        *mapping_checks(note, version, ctx, evidence, context),
        *frame_checks(note, version, evidence),
        *claim_number_checks(note, version, evidence),
        *mode_checks(note, version, evidence),
        *meaning_checks(note, version, ctx, evidence, context),
        *scope_checks(note, version, evidence),
        *term_checks(note, version, ctx),
    ]


def _context(before: Text | None, after: Text | None) -> str:
    """The context before and after the evidence, joined by a space (each only if there)."""
    if before is None:
        return after.value if after is not None else ""
    return before.value if after is None else f"{before.value} {after.value}"
