"""Phase 3 of apply (docs/workflow.md): mark a note APPLIED once its event is durable.

The one rewrite apply makes of a note, and only of the bytes apply decided on: a note
edited meanwhile is left alone (its reviewer's edit wins, and the next run sees it).
"""

from __future__ import annotations

import hashlib

from vault_tools.config import Settings
from vault_tools.errors import IOFailure, RefusedError, VtError
from vault_tools.ledger.crash import crash_point
from vault_tools.notes import writer
from vault_tools.notes.note import parse_note
from vault_tools.notes.owned_properties import set_properties
from vault_tools.vocabulary import APPLIED


def mark_note(
    settings: Settings,
    path: str,
    digest: str,
    signature: tuple[int, int, int],
    event_id: str,
    ts: str,
) -> str | IOFailure | None:
    """Set review_state APPLIED, vt_event_id and vt_applied_at on a note that still has
    the bytes apply decided on. None when done; otherwise why the note was not marked
    (the IOFailure itself when the system failed the write)."""
    try:
        snapshot = writer.read_snapshot(settings.vault / path, settings.max_note_bytes)
    except VtError as exc:
        return f"cannot read: {exc.message}"
    if snapshot.signature != signature or hashlib.sha256(snapshot.raw).hexdigest() != digest:
        if _marked_as(snapshot.raw, path, event_id):
            return None  # another vt run (applying the same note) marked it meanwhile
        return "changed on disk since vt read it; not marked APPLIED"
    text = set_properties(
        snapshot.text, {"review_state": APPLIED, "vt_event_id": event_id, "vt_applied_at": ts}
    )
    try:
        # the folder is fsynced once for the whole batch (apply's _mark_all): group commit
        writer.write_if_changed(snapshot, text, sync_folder=False, root=settings.vault)
        crash_point("after-mark")
    except RefusedError as exc:
        try:
            if _marked_as(
                writer.read_snapshot(snapshot.path, settings.max_note_bytes).raw, path, event_id
            ):
                return None  # a concurrent run wrote the same marks first
        except VtError:
            pass
        return exc.message
    except IOFailure as exc:
        return exc
    except VtError as exc:
        return exc.message
    return None


def _marked_as(raw: bytes, path: str, event_id: str) -> bool:
    props = parse_note(raw, path).properties
    return props.get("review_state") == APPLIED and props.get("vt_event_id") == event_id
