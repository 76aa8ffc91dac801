"""`vt export --dataset FILE`: every decided claim as one JSON line, for training and
judging the extraction pipeline (docs/dataset.md, schemas/dataset-record.schema.json).

A line joins the claim's decision event (from the Claim Store, caught up with the
ledger) with its review note: the evidence and its context, V1, the final version, the
decision and its checklist, which parts a repair changed (store/changes.py), the assist
codes and the provenance the event recorded, the reviewer and the time. The ledger says
what was decided; the note gives only what the ledger does not hold (the source text),
and its V1 only when it hashes to the event's `base`, so a line never pairs a decision
with a claim text it was not made on.

It lives beside the other tools (integrations/) because it reads what three layers own:
the store's events, the note's source (importer.record_of) and its V1 (review/).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from vault_tools.config import Settings
from vault_tools.errors import UsageError
from vault_tools.infra.boundary import is_inside
from vault_tools.infra.textfiles import write_atomic
from vault_tools.integrations.importer import record_of
from vault_tools.ledger.events import PROVENANCE_KEYS, canonical
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import is_note_path, read_file
from vault_tools.review.claim_record import claim_base, v1_claim
from vault_tools.store.changes import changed_parts
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import ACCEPT, CHECK_KEYS, REJECT, REPAIR, REVERTED

DECISIONS = (ACCEPT, REJECT, REPAIR)
DATASET_SCHEMA = "dataset-record.schema.json"  # in schemas/, beside the schemas vt reads
SOURCE_KEYS = (
    "link",
    "link_text",
    "section",
    "line_hint",
    "context_before",
    "evidence",
    "context_after",
)


@dataclass(slots=True)
class DatasetResult:
    claims: int  # lines written
    output: str
    without_note: int  # lines whose note could not be read: no source, V1 only if ACCEPT
    v1_changed: int  # lines whose note's V1 is not the one decided: V1 left out

    def to_json(self) -> dict[str, Any]:
        return {
            "claims": self.claims,
            "format": "dataset",
            "output": self.output,
            "without_note": self.without_note,
            "v1_changed": self.v1_changed,
        }


def decision_of(heads: list[dict], history: Callable[[], list[dict]]) -> dict | None:
    """The decision a claim's line describes: its latest head that is a decision
    (ACCEPT, REJECT, REPAIR). When every head is a REVERT of an event another head had
    superseded, the latest decision of its `history()` that no event reverts. None:
    nothing decided."""
    for ev in reversed(heads):
        if ev["action"] in DECISIONS:
            return ev
    events = history()
    reverted = {ev.get("reverts") for ev in events}
    for ev in reversed(events):
        if ev["action"] in DECISIONS and ev["id"] not in reverted:
            return ev
    return None


def _note_of(settings: Settings, relative: str) -> Note | None:
    """The review note an event names, parsed; None when it is gone, unreadable, no
    review note, or a path that is no note of this vault (a ledger line is data)."""
    if not is_note_path(relative) or not is_inside(settings.vault, relative):
        return None
    try:
        raw, _ = read_file(settings.vault / relative, settings.max_note_bytes)
    except OSError:
        return None
    note = parse_note(raw, relative)
    return note if note.is_review_note else None


def dataset_record(ev: dict, status: str, heads: list[dict], note: Note | None) -> dict[str, Any]:
    """One line of the dataset: the decision `ev` of a claim whose status is `status` and
    whose heads are `heads`, with what its note (None: unreadable) adds."""
    action = ev["action"]
    v1: dict[str, Any] | None = None
    if action == ACCEPT:
        v1 = ev["claim"]  # the ledger holds the V1 an approval decided
    elif note is not None:
        candidate = v1_claim(note)
        v1 = candidate if claim_base(candidate) == ev["base"] else None
    v2 = ev["claim"] if action == REPAIR else None
    final = ev["claim"] if action in (ACCEPT, REPAIR) else None
    source = None
    if note is not None:
        found = record_of(note)["source"]
        source = {key: found.get(key) for key in SOURCE_KEYS}
    changed: list[str] | None = []
    if action == REPAIR:
        changed = changed_parts(v1, v2) if v1 is not None else None
    provenance = ev.get("provenance") or {}
    checks = ev["checks"]
    return {
        "claim_id": ev["claim_id"],
        "status": status,
        "heads": [h["id"] for h in heads],
        "event_id": ev["id"],
        "action": action,
        "decided_at": ev["ts"],
        "reviewer": ev.get("decided_by") or ev["actor"],
        "actor": ev["actor"],
        "checks": {key: checks.get(key) for key in CHECK_KEYS},
        "comment": ev["comment"],
        "note": ev["note"],
        "source": source,
        "v1": v1,
        "v2": v2,
        "final": final,
        "changed_parts": changed,
        "assist": ev.get("assist"),
        "provenance": {key: provenance.get(key) for key in PROVENANCE_KEYS},
        "imported_at": ev.get("imported_at"),
    }


def dataset_records(settings: Settings, store: ClaimStore) -> Iterator[dict[str, Any]]:
    """The dataset's lines from a caught-up store, sorted by claim_id; REVERTED claims
    (nothing decided is in force) have none."""
    for rec in store.claims():
        if rec.status == REVERTED:
            continue
        heads = store.heads(rec.claim_id)
        ev = decision_of(heads, partial(store.history, rec.claim_id))
        if ev is None:
            continue
        yield dataset_record(ev, rec.status, heads, _note_of(settings, ev["note"]))


def export_dataset(settings: Settings, output: Path) -> DatasetResult:
    """Catch the Claim Store up with the ledger, then write the dataset to `output`
    atomically (JSON Lines: one canonical JSON object a line, UTF-8)."""
    if output.is_dir():
        raise UsageError("is a folder; give a file to write", str(output))
    lines: list[str] = []
    without_note = v1_changed = 0
    with ClaimStore.open(settings) as store:
        store.catch_up()
        for record in dataset_records(settings, store):
            lines.append(canonical(record) + "\n")
            without_note += record["source"] is None
            v1_changed += record["source"] is not None and record["v1"] is None
    # where the user asked, in or out of the vault; an IOFailure names the file
    write_atomic(output, "".join(lines).encode("utf-8"), root=None)
    return DatasetResult(len(lines), str(output), without_note, v1_changed)
