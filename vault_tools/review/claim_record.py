"""What a review note claims and decides, in the form the ledger records it.

The V1 claim and the V2 drafts' claim as dicts of the ledger's claim keys, the hash that
names a V1 claim (an event's `base`), the decision a `review_action` makes, and where the
claim came from (`note_origin`). Apply
records these, status compares them with the ledger and history finds a REPAIR's V1 by
them: one definition for all three.
"""

from __future__ import annotations

import hashlib
from typing import Any

from vault_tools.ledger.events import CLAIM_KEYS, canonical, is_timestamp, provenance_problems
from vault_tools.notes.note import Note
from vault_tools.review.fingerprint import recorded_preview_hash
from vault_tools.vocabulary import (
    ACCEPT,
    IMPORTED_AT,
    LEDGER_ACTION_OF,
    PROVENANCE_PROPERTIES,
    REPAIR,
)


def claim_base(claim: dict) -> str:
    """ "sha256:" + sha256 of the canonical JSON of a claim dict (the V1 claim: `base`)."""
    return "sha256:" + hashlib.sha256(canonical(claim).encode("utf-8")).hexdigest()


def v1_claim(note: Note) -> dict[str, Any]:
    """The note's V1 claim; a part that is missing or does not parse is None."""
    claim, frame = note.claim, note.frame
    return {
        "atomic_claim": claim.text.value if claim is not None else None,
        "epistemic_mode": claim.epistemic_mode.value
        if claim is not None and claim.epistemic_mode is not None
        else None,
        "mapping_status": claim.mapping_status.value
        if claim is not None and claim.mapping_status is not None
        else None,
        "semantic_frame": frame.data if frame is not None and frame.ok else None,
    }


def v2_claim(note: Note) -> dict[str, Any] | None:
    """The claim of the V2 drafts (None without a V2 Draft section)."""
    drafts = note.drafts
    if drafts is None:
        return None
    meta = drafts.metadata.data if drafts.metadata is not None and drafts.metadata.ok else None
    meta = meta if isinstance(meta, dict) else {}
    return {
        "atomic_claim": drafts.claim.value if drafts.claim is not None else None,
        "epistemic_mode": meta.get("epistemic_mode"),
        "mapping_status": meta.get("mapping_status"),
        "semantic_frame": drafts.frame.data
        if drafts.frame is not None and drafts.frame.ok
        else None,
    }


def claim_complete(claim: dict[str, Any] | None) -> bool:
    """Whether every part of `claim` parsed: a frame object and text for the rest."""
    return (
        claim is not None
        and isinstance(claim.get("semantic_frame"), dict)
        and all(isinstance(claim.get(k), str) for k in CLAIM_KEYS if k != "semantic_frame")
    )


def decision_content(note: Note, review_action: str) -> dict[str, Any] | None:
    """What the note's `review_action` decides, in the fields `same_decision` compares:
    the ledger action, the claim (V1 for ACCEPT, the V2 drafts for REPAIR) and the
    approved preview. None for an action that decides nothing (PENDING, REQUEST_REPAIR)."""
    action = LEDGER_ACTION_OF.get(review_action)
    if action is None:
        return None
    claim, preview = None, None
    if action == ACCEPT:
        claim = v1_claim(note)
    elif action == REPAIR:
        claim = v2_claim(note)
        stated = recorded_preview_hash(note.properties)
        preview = stated if claim is not None else None
    return {"action": action, "claim": claim, "preview": preview}


def note_origin(properties: dict[str, Any]) -> dict[str, Any]:
    """What a decision event copies from its note about where the claim came from: the
    `provenance` object of its `vt_pipeline_*` properties and its `imported_at`, each
    only when the note has it. A value the ledger would refuse (a hand-edited
    `vt_pipeline_extracted_at` that is no date-time) is left out, not recorded."""
    provenance = {
        key: value
        for key, name in PROVENANCE_PROPERTIES.items()
        if isinstance(value := properties.get(name), str) and not provenance_problems({key: value})
    }
    origin: dict[str, Any] = {"provenance": provenance} if provenance else {}
    imported_at = properties.get(IMPORTED_AT)
    if is_timestamp(imported_at):
        origin["imported_at"] = imported_at
    return origin
