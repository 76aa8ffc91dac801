"""`vt export` core: the Claim Store's claims as JSONL and CSV, filtered by status."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from tests.conftest import settings_for
from tests.integrations.test_dashboard import decided_vault
from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.config import Settings
from vault_tools.errors import UsageError, VtError
from vault_tools.ledger.events import canonical
from vault_tools.store.claims import ClaimStore, edges_of
from vault_tools.store.export import FIELDS, export_claims


def store_claims(settings: Settings) -> dict[str, dict]:
    """What the store says of each claim, in the export's shape."""
    out = {}
    with ClaimStore.open(settings) as store:
        ids = [record.claim_id for record in store.claims()]
        for claim_id in ids:
            rec = store.claim(claim_id)
            assert rec is not None
            claim = rec.claim or {}
            out[claim_id] = {
                "claim_id": rec.claim_id,
                "status": rec.status,
                "event_id": rec.event_id,
                "note": rec.note,
                "atomic_claim": claim.get("atomic_claim"),
                "epistemic_mode": claim.get("epistemic_mode"),
                "mapping_status": claim.get("mapping_status"),
                "semantic_frame": claim.get("semantic_frame"),
                "entities": [
                    {"label": label, "role": role, "target": target}
                    for _k, target, role, label in edges_of(rec.claim)
                ],
            }
    return out


@pytest.fixture
def mixed(example_vault: Path) -> Settings:
    """Accepted, rejected and repaired claims by the real apply, plus REVERTED and
    CONFLICT ones from the ledger API, and a claim text with a comma, quotes and a newline."""
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    ledger = ledger_for(settings)
    tricky = v1_claim("Z-9", text='a, "quoted"\nsecond line 中文')
    (first, _) = ledger.append([decision("C-1"), decision("Z-9", claim=tricky)])
    ledger.append(
        [
            decision("C-1", "REJECT", supersedes=first["id"]),
            decision("C-1", "ACCEPT", supersedes=first["id"], comment="other branch"),
        ]
    )
    (accept,) = ledger.append([decision("R-1")])
    ledger.append([decision("R-1", "REVERT", claim=None, reverts=accept["id"])])
    return settings


def test_statuses_of_the_fixture(mixed: Settings) -> None:
    with ClaimStore.open(mixed) as store:
        store.catch_up()
        assert store.status_counts() == {
            "ACCEPTED": 2,
            "CONFLICT": 1,
            "REJECTED": 1,
            "REPAIRED": 1,
            "REVERTED": 1,
        }


def test_jsonl_round_trip(mixed: Settings) -> None:
    result = export_claims(mixed)
    assert result.format == "jsonl" and result.output is None and result.claims == 6
    text = result.data.decode("utf-8")
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 7
    objects = [json.loads(line) for line in lines[:-1]]
    assert [o["claim_id"] for o in objects] == sorted(o["claim_id"] for o in objects)
    expected = store_claims(mixed)
    assert {o["claim_id"]: o for o in objects} == expected
    for line, obj in zip(lines[:-1], objects, strict=True):
        assert line == canonical(obj) and list(obj) == sorted(FIELDS)
    repaired = next(o for o in objects if o["claim_id"] == "DV1-0003")
    assert repaired["status"] == "REPAIRED"
    assert repaired["semantic_frame"]["operator"] == "LESS_THAN"  # the V2 draft's
    assert repaired["entities"][1] == {
        "label": "TV loss",
        "role": "comparison_entity_1",
        "target": "04_knowledge_base/Total Variation Loss",
    }
    rejected = next(o for o in objects if o["claim_id"] == "DV1-0002")
    assert rejected["atomic_claim"] is None and rejected["entities"] == []
    assert "中文" in text  # raw UTF-8, not \u escapes


def test_csv_parses_back(mixed: Settings) -> None:
    data = export_claims(mixed, "csv").data
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
    assert tuple(rows[0]) == FIELDS
    expected = store_claims(mixed)
    assert [r["claim_id"] for r in rows] == sorted(expected)
    for row in rows:
        want = expected[row["claim_id"]]
        for key in FIELDS:
            if key in ("semantic_frame", "entities"):
                got = json.loads(row[key]) if row[key] else None
            else:
                got = row[key] or None
            assert got == want[key], key
    tricky = next(r for r in rows if r["claim_id"] == "Z-9")
    assert tricky["atomic_claim"] == 'a, "quoted"\nsecond line 中文'


def test_status_filter(mixed: Settings) -> None:
    def ids(*statuses: str) -> list[str]:
        data = export_claims(mixed, statuses=list(statuses)).data.decode("utf-8")
        return [json.loads(line)["claim_id"] for line in data.splitlines()]

    assert ids("ACCEPTED") == ["DV1-0001", "Z-9"]
    assert ids("accepted", "REPAIRED") == ["DV1-0001", "DV1-0003", "Z-9"]
    assert ids("CONFLICT") == ["C-1"] and ids("REVERTED") == ["R-1"]
    assert ids() == sorted(store_claims(mixed))
    assert export_claims(mixed, "csv", statuses=["REJECTED"]).data.decode().count("\r\n") == 2
    with pytest.raises(UsageError, match="unknown status APPROVED"):
        export_claims(mixed, statuses=["APPROVED"])
    with pytest.raises(UsageError, match="unknown format 'xml'"):
        export_claims(mixed, "xml")


def test_output_file_is_written_atomically(mixed: Settings, tmp_path: Path) -> None:
    out = tmp_path / "out" / "claims.csv"
    result = export_claims(mixed, "csv", out)
    assert result.output == str(out) and result.claims == 6
    assert out.read_bytes() == result.data == export_claims(mixed, "csv").data
    assert [p.name for p in out.parent.iterdir()] == ["claims.csv"]  # no temp file left
    out.write_text("old")
    export_claims(mixed, "jsonl", out, ["REJECTED"])
    assert json.loads(out.read_text(encoding="utf-8"))["claim_id"] == "DV1-0002"
    with pytest.raises(UsageError, match="is a folder"):
        export_claims(mixed, output=tmp_path)


def test_a_failed_write_leaves_the_old_file(
    mixed: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "claims.jsonl"
    out.write_bytes(b"before\n")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(VtError, match="cannot write: No space left on device"):
        export_claims(mixed, output=out)
    assert out.read_bytes() == b"before\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".claims")] == []


def test_the_store_is_caught_up_first(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    assert (
        export_claims(settings).data == b""
        and export_claims(settings, "csv").data == (",".join(FIELDS) + "\r\n").encode()
    )
    ledger_for(settings).append([decision("N-1")])  # e.g. arrived with a git pull
    assert [json.loads(x)["claim_id"] for x in export_claims(settings).data.splitlines()] == ["N-1"]
