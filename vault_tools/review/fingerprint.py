"""The fingerprint of a note's V2 drafts, `vt_preview_hash`: preview records it, apply
approves a repair only while the drafts still have it, status and watch compare it.

Apart from review/claim_record.py, which imports the ledger: preview and watch need the
fingerprint alone, and importing the ledger costs them start-up time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from vault_tools.notes.note import Note

PREVIEW_HASH = "vt_preview_hash"  # the property preview writes the fingerprint into


def preview_hash(note: Note) -> str:
    """ "sha256:" + the sha256 of the three drafts' canonical content.

    Canonical: JSON with sorted keys, no spaces, non-ASCII kept, of the draft claim text
    and the parsed draft frame and metadata (None for a block that is missing or does
    not parse). Reformatting a JSON block does not change the hash; any edit of a value
    does. Raises ValueError for a note without a V2 Draft section.
    """
    drafts = note.drafts
    if drafts is None:
        raise ValueError(f"{note.path}: the note has no V2 Draft section")
    content = {
        "atomic_claim": drafts.claim.value if drafts.claim is not None else "",
        "semantic_frame": drafts.frame.data
        if drafts.frame is not None and drafts.frame.ok
        else None,
        "metadata": drafts.metadata.data
        if drafts.metadata is not None and drafts.metadata.ok
        else None,
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def recorded_preview_hash(properties: Mapping[str, Any]) -> str | None:
    """The fingerprint the note's last preview recorded (`vt_preview_hash`) as text; None
    when it is unset or empty (no preview was recorded)."""
    value = properties.get(PREVIEW_HASH)
    return None if value is None or value == "" else str(value)


def preview_current(note: Note) -> bool:
    """Whether the preview the note records was made from its drafts as they are now: the
    one answer to "is this preview current" for apply, status, watch and the dashboard.
    False when no preview is recorded or the V2 Draft section is gone."""
    recorded = recorded_preview_hash(note.properties)
    if recorded is None or note.drafts is None:
        return False
    return recorded == preview_hash(note)
