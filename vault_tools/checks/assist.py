"""Review assist: the mistakes a careful reviewer would catch, as `warning` findings.

A reviewer confirms four things per note (source → claim, claim → frame, the entity
mapping, the epistemic mode). Each check looks for one kind of slip in one of them:
the mapping in assist_mapping.py, the others in assist_claim.py, both reading text as
wording.py folds it. They are heuristics, tuned for precision: when in doubt a check
stays silent, because a warning on every note teaches reviewers to ignore warnings.

`review_findings(note, ctx)` is the entry point; `check_note` calls it for review notes.
"""

from __future__ import annotations

from vault_tools.checks.assist_claim import claim_number_checks, frame_checks, mode_checks
from vault_tools.checks.assist_mapping import mapping_checks
from vault_tools.checks.claim_versions import ClaimVersion, claim_versions
from vault_tools.checks.context import CheckContext
from vault_tools.findings import Finding
from vault_tools.notes.note import Note


def review_findings(note: Note, ctx: CheckContext) -> list[Finding]:
    """Every review-assist warning for one parsed review note (V1 and V2 drafts)."""
    if not note.is_review_note:
        return []
    findings: list[Finding] = []
    for version in claim_versions(note):
        findings += _check_version(note, version, ctx)
    return findings


def _check_version(note: Note, version: ClaimVersion, ctx: CheckContext) -> list[Finding]:
    source = note.source
    evidence = source.evidence.value if source and source.evidence else ""
    context = (
        " ".join(t.value for t in (source.context_before, source.context_after) if t is not None)
        if source
        else ""
    )
    return [
        *mapping_checks(note, version, ctx, evidence, context),
        *frame_checks(note, version, evidence),
        *claim_number_checks(note, version, evidence),
        *mode_checks(note, version, evidence),
    ]
