"""The fingerprint of a note's V2 drafts, `vt_preview_hash`: preview records it, apply
approves a repair only while the drafts still have it, status and watch compare it.

Apart from review/claims.py, which imports the ledger: preview and watch need the
fingerprint alone, and importing the ledger costs them start-up time.
"""

from __future__ import annotations

import hashlib
import json

from vault_tools.notes.note import Note


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
