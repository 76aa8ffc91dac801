"""The checks one review note must pass: schemas, knowledge base, mapping consistency.

`check_note` is the single implementation used by `validate`, `preview`, `watch`
and the pre-commit hook.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from vault_tools.checks.context import CheckContext
from vault_tools.findings import Finding, error
from vault_tools.notes import kb as kbmod
from vault_tools.notes.note import JsonBlock, Note
from vault_tools.notes.positions import line_of

# the schemas check_note validates against (compiled before a pool forks)
NOTE_SCHEMAS = ("properties", "frame", "metadata")


def check_note(note: Note, ctx: CheckContext) -> list[Finding]:
    """Every finding for one parsed note (its parse findings included)."""
    findings = list(note.findings)
    if note.is_review_note:
        findings += _check_properties(note, ctx)
        findings += _check_claim_fields(note, ctx)
        if note.frame is not None and note.frame.ok:
            findings += _check_frame(note, note.frame, ctx, "Semantic Frame")
            if note.mapping_line is not None:  # a missing table is one section-missing
                findings += _check_mapping(note, ctx)
        if note.drafts is not None:
            findings += check_drafts(note, ctx)
        if ctx.assist:
            findings += review_assist()(note, ctx)
    if ctx.disabled:
        findings = [f for f in findings if f.code not in ctx.disabled]
    return findings


@cache
def review_assist() -> Callable[[Note, CheckContext], list[Finding]]:
    """The review assist's check, imported on first need: it compiles a hundred regular
    expressions at import, which the runs without it (the hook, apply, preview) never
    use. Kept once imported: an import statement costs ~1 µs at each note it runs for."""
    from vault_tools.checks.assist.run import review_findings

    return review_findings


def check_drafts(note: Note, ctx: CheckContext) -> list[Finding]:
    """Schema and knowledge-base findings for the three V2 draft blocks."""
    drafts = note.drafts
    findings: list[Finding] = []
    if drafts is None:
        return findings
    if drafts.frame is not None and drafts.frame.ok:
        findings += _check_frame(note, drafts.frame, ctx, "V2 Semantic Frame Draft")
    if drafts.metadata is not None and drafts.metadata.ok:
        for problem in ctx.schemas.check("metadata", drafts.metadata.data):
            line = line_of(drafts.metadata.text, problem.path, drafts.metadata.line)
            findings.append(
                error(
                    note.path,
                    line,
                    "metadata-schema",
                    f"V2 Revision Metadata Draft {problem.pointer}: {problem.message}",
                )
            )
    return findings


def _check_properties(note: Note, ctx: CheckContext) -> list[Finding]:
    findings = []
    for problem in ctx.schemas.check("properties", note.properties):
        key = str(problem.path[0]) if problem.path else None
        line = note.property_lines.get(key) if key else None
        findings.append(
            error(
                note.path,
                line or 1,
                "properties-schema",
                f"property {problem.pointer[1:] or '(root)'}: {problem.message}",
            )
        )
    return findings


def _check_claim_fields(note: Note, ctx: CheckContext) -> list[Finding]:
    claim = note.claim
    if claim is None:
        return []
    findings = []
    for name, value in (
        ("epistemic_mode", claim.epistemic_mode),
        ("mapping_status", claim.mapping_status),
    ):
        if value is None or not value.value:
            continue  # reported by the parser
        allowed = ctx.schemas.enum("claim", name)
        if value.value not in allowed:
            findings.append(
                error(
                    note.path,
                    value.line,
                    "claim-field",
                    f"{name} {value.value!r} is not one of {', '.join(allowed)}",
                )
            )
    return findings


def _check_frame(note: Note, block: JsonBlock, ctx: CheckContext, what: str) -> list[Finding]:
    findings = []
    for problem in ctx.schemas.check("frame", block.data):
        findings.append(
            error(
                note.path,
                line_of(block.text, problem.path, block.line),
                "frame-schema",
                f"{what} {problem.pointer}: {problem.message}",
            )
        )
    for index, entity in enumerate(_entities(block.data)):
        resolution = ctx.kb.resolve(entity["id"])
        if resolution.status != kbmod.OK:
            line = line_of(block.text, ("entities", index, "id"), block.line)
            findings.append(_target_finding(note, line, entity["id"], resolution, what))
    return findings


def _entities(frame: Any) -> list[dict[str, Any]]:
    """The frame's well-formed entities (the schema reports the malformed ones)."""
    if not isinstance(frame, dict) or not isinstance(frame.get("entities"), list):
        return []
    return [
        e
        for e in frame["entities"]
        if isinstance(e, dict) and isinstance(e.get("id"), str) and isinstance(e.get("label"), str)
    ]


def _target_finding(
    note: Note, line: int, target: str, resolution: kbmod.Resolution, what: str
) -> Finding:
    if resolution.status == kbmod.ESCAPE:
        return error(
            note.path,
            line,
            "kb-target-escape",
            f"{what}: target {target!r} leads outside the vault",
        )
    if resolution.status == kbmod.OUTSIDE_KB:
        return error(
            note.path,
            line,
            "kb-target-outside-kb",
            f"{what}: target {target!r} is {resolution.path}, not a knowledge-base note",
        )
    return error(
        note.path,
        line,
        "kb-target-missing",
        f"{what}: target {target!r} does not resolve to a note "
        f"(expected {kbmod.link_target(target)}.md)",
    )


@lru_cache(maxsize=4096)  # labels repeat from note to note
def _label_key(label: str) -> str:
    return unicodedata.normalize("NFC", label).strip().casefold()


def _check_mapping(note: Note, ctx: CheckContext) -> list[Finding]:
    """The mapping table must list exactly the frame's entities (label and target)."""
    frame = note.frame
    assert frame is not None
    entities = _entities(frame.data)
    unmatched_rows = list(note.mapping)
    findings: list[Finding] = []
    unresolved = False
    for index, entity in enumerate(entities):
        resolution = ctx.kb.resolve(entity["id"])
        unresolved = unresolved or resolution.status != kbmod.OK
        row = next(
            (
                r
                for r in unmatched_rows
                if _label_key(r.label) == _label_key(entity["label"])
                and ctx.kb.resolve(r.target).key == resolution.key
            ),
            None,
        )
        if row is not None:
            unmatched_rows.remove(row)
            continue
        line = line_of(frame.text, ("entities", index), frame.line)
        findings.append(
            error(
                note.path,
                line,
                "mapping-mismatch",
                f"frame entity {entity['label']!r} → {entity['id']} has no "
                f"matching row in the mapping table",
            )
        )
    for row in unmatched_rows:
        findings.append(
            error(
                note.path,
                row.line,
                "mapping-mismatch",
                f"mapping row {row.label!r} → {row.target} matches no entity of the Semantic Frame",
            )
        )
    status = note.claim.mapping_status if note.claim else None
    if unresolved and status is not None and status.value == "COMPLETE":
        findings.append(
            error(
                note.path,
                status.line,
                "mapping-complete-unresolved",
                "Mapping Status is COMPLETE but an entity target does not resolve",
            )
        )
    return findings
