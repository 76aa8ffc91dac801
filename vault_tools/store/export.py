"""`vt export`: the Claim Store's current claims as JSONL or CSV (docs/json-output.md).

One record per claim, sorted by `claim_id`: its status, the latest event, the review note,
and the claim in force (the ACCEPT/REPAIR event's claim; empty for a rejected or reverted
claim), with the entities of its semantic frame. JSONL lines are canonical JSON (sorted
keys, no spaces, raw UTF-8), like the ledger's; CSV has a header row and JSON-encodes the
two structured columns. The export goes to stdout, or atomically to a file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tools.config import Settings
from vault_tools.errors import UsageError
from vault_tools.infra.textfiles import write_atomic
from vault_tools.ledger.events import canonical
from vault_tools.store.claims import ClaimRecord, ClaimStore, edges_of
from vault_tools.vocabulary import STATUSES

FORMATS = ("jsonl", "csv")
FIELDS = (
    "claim_id",
    "status",
    "event_id",
    "note",
    "atomic_claim",
    "epistemic_mode",
    "mapping_status",
    "semantic_frame",
    "entities",
)
_JSON_COLUMNS = ("semantic_frame", "entities")  # JSON-encoded in CSV


@dataclass(slots=True)
class ExportResult:
    claims: int
    format: str
    output: str | None  # the file written, as given; None for stdout
    data: bytes

    def to_json(self) -> dict[str, Any]:
        return {"claims": self.claims, "format": self.format, "output": self.output}


def check_statuses(statuses: Iterable[str] | None) -> list[str]:
    """The statuses asked for, upper-cased; UsageError for one the store never holds."""
    wanted = sorted({s.strip().upper() for s in statuses or ()})
    unknown = [s for s in wanted if s not in STATUSES]
    if unknown:
        raise UsageError(f"unknown status {', '.join(unknown)}; one of {', '.join(STATUSES)}")
    return wanted


def claim_records(store: ClaimStore, statuses: Iterable[str] = ()) -> list[ClaimRecord]:
    """Every claim of a caught-up store (only those with one of `statuses`, if given)."""
    return store.claims(statuses)


def record(rec: ClaimRecord) -> dict[str, Any]:
    """One exported claim: FIELDS, None where the claim has no version in force."""
    claim = rec.claim if isinstance(rec.claim, dict) else {}
    entities = [
        {"label": label, "role": role, "target": target}
        for _key, target, role, label in edges_of(rec.claim)
    ]
    return {
        "claim_id": rec.claim_id,
        "status": rec.status,
        "event_id": rec.event_id,
        "note": rec.note,
        "atomic_claim": claim.get("atomic_claim"),
        "epistemic_mode": claim.get("epistemic_mode"),
        "mapping_status": claim.get("mapping_status"),
        "semantic_frame": claim.get("semantic_frame"),
        "entities": entities,
    }


def render_jsonl(records: Iterable[dict[str, Any]]) -> str:
    return "".join(canonical(r) + "\n" for r in records)


def render_csv(records: Iterable[dict[str, Any]]) -> str:
    """RFC 4180 CSV (CRLF rows, as the csv module writes), header first; None is empty."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    for rec in records:
        row = {k: ("" if rec[k] is None else rec[k]) for k in FIELDS}
        for column in _JSON_COLUMNS:
            if rec[column] is not None:
                row[column] = canonical(rec[column])
        writer.writerow(row)
    return out.getvalue()


def export_claims(
    settings: Settings,
    fmt: str = "jsonl",
    output: Path | None = None,
    statuses: Iterable[str] | None = None,
) -> ExportResult:
    """Catch the Claim Store up with the ledger, then export its claims.

    With `output` the bytes are written there atomically (temp file, fsync, rename);
    without, the caller prints `result.data`.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    wanted = check_statuses(statuses)
    with ClaimStore.open(settings) as store:
        store.catch_up()
        records = [record(r) for r in claim_records(store, wanted)]
    text = render_jsonl(records) if fmt == "jsonl" else render_csv(records)
    data = text.encode("utf-8")
    if output is not None:
        if output.is_dir():
            raise UsageError("is a folder; give a file to write", str(output))
        # where the user asked, in or out of the vault; an IOFailure names the file
        write_atomic(output, data, root=None)
    return ExportResult(len(records), fmt, str(output) if output is not None else None, data)
