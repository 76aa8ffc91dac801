"""`vt history CLAIM_ID`: every decision on a claim, oldest first, from the Claim Store.

Each entry says who decided what and when, with the comment, the event(s) it superseded
and the claim as it stood (the claim of an ACCEPT or REPAIR). The claim's heads (the
events no later one supersedes) are listed too: several after decisions made without
seeing each other, alike (an agreement) or not (a CONFLICT). A REPAIR also gets its V1 → V2
diff. The V1 it was based on is found through the event's `base` (`claims.claim_base` of
the V1 claim): first among the claim's earlier ACCEPT/REPAIR events, then in the review
note as it stands now; when neither matches, the V1 is not available.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vault_tools.config import Settings
from vault_tools.ledger.signatures import signing_key_of
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import read_file
from vault_tools.review.claim_record import claim_base, v1_claim
from vault_tools.review.diff import Change, repair_changes, text_diff
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import ACCEPT, REPAIR

V1_NOT_AVAILABLE = "V1 not available"


@dataclass(slots=True)
class HistoryEntry:
    event: dict
    v1_source: str | None = None  # "event sha256:…" | "note 03_claims/….md" | None
    changes: list[Change] = field(default_factory=list)
    claim_segments: list[tuple[str, str]] = field(default_factory=list)
    # the fingerprint of the key that signed it (the gate verified the signature against
    # the allowed signers for the actor before the store served it); None: unsigned
    signed_with: str | None = None

    @property
    def is_repair(self) -> bool:
        return self.event["action"] == REPAIR

    def to_json(self) -> dict[str, Any]:
        ev = self.event
        out = {
            k: ev.get(k)
            for k in (
                "seq",
                "id",
                "actor",
                "ts",
                "action",
                "comment",
                "supersedes",
                "reverts",
                "note",
                "claim",
            )
        }
        out["decided_by"] = ev.get("decided_by") or ev["actor"]  # who decided; actor recorded
        out["signed_with"] = self.signed_with
        if self.is_repair:
            out["v1"] = self.v1_source
            out["changes"] = [c.to_json() for c in self.changes] if self.v1_source else None
        return out


@dataclass(slots=True)
class ClaimHistory:
    claim_id: str
    status: str
    note: str
    entries: list[HistoryEntry] = field(default_factory=list)
    heads: list[dict] = field(default_factory=list)  # ledger order

    def to_json(self) -> dict[str, Any]:
        return {
            "claim_id": self.claim_id,
            "status": self.status,
            "note": self.note,
            "heads": [{k: h[k] for k in ("id", "action", "actor")} for h in self.heads],
            "events": [e.to_json() for e in self.entries],
        }


def _metadata(claim: dict) -> dict[str, Any]:
    return {
        "epistemic_mode": claim.get("epistemic_mode"),
        "mapping_status": claim.get("mapping_status"),
    }


def _changes(v1: dict, v2: dict) -> list[Change]:
    return repair_changes(
        v1.get("atomic_claim") or "",
        v2.get("atomic_claim") or "",
        v1.get("semantic_frame"),
        v2.get("semantic_frame"),
        _metadata(v1),
        _metadata(v2),
    )


class _NoteV1:
    """The review notes' current V1 claims, each note read at most once."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.claims: dict[str, dict | None] = {}

    def get(self, relative: str) -> dict | None:
        if relative not in self.claims:
            self.claims[relative] = self._read(relative)
        return self.claims[relative]

    def _read(self, relative: str) -> dict | None:
        path = self.settings.vault / relative
        try:
            note: Note = parse_note(read_file(path, self.settings.max_note_bytes)[0], relative)
        except OSError:
            return None
        return v1_claim(note) if note.is_review_note else None


def _find_v1(event: dict, earlier: list[dict], notes: _NoteV1) -> tuple[dict, str] | None:
    base = event.get("base")
    for ev in reversed(earlier):
        claim = ev.get("claim")
        if ev["action"] == ACCEPT and ev.get("base") == base and claim is not None:
            return claim, f"event {ev['id']}"
        if claim is not None and claim_base(claim) == base:
            return claim, f"event {ev['id']}"
    current = notes.get(event["note"])
    if current is not None and claim_base(current) == base:
        return current, f"note {event['note']}"
    return None


def claim_history(settings: Settings, store: ClaimStore, claim_id: str) -> ClaimHistory | None:
    """The claim's decisions from a caught-up store; None for a claim never decided."""
    record = store.claim(claim_id)
    if record is None:
        return None
    events = store.history(claim_id)
    notes = _NoteV1(settings)
    result = ClaimHistory(claim_id, record.status, record.note, heads=store.heads(claim_id))
    for i, ev in enumerate(events):
        entry = HistoryEntry(ev, signed_with=signing_key_of(ev["sig"]) if "sig" in ev else None)
        if entry.is_repair and isinstance(ev.get("claim"), dict):
            found = _find_v1(ev, events[:i], notes)
            if found is not None:
                v1, entry.v1_source = found
                entry.changes = _changes(v1, ev["claim"])
                old, new = v1.get("atomic_claim") or "", ev["claim"].get("atomic_claim") or ""
                entry.claim_segments = text_diff(old, new) if old != new else []
        result.entries.append(entry)
    return result
