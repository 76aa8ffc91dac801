"""`vt export --dataset`: a ledger from before provenance, conflicts, reverted claims, and
notes that changed, vanished or were never the vault's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from tests.conftest import REPO, copy_example_vault, run_vt, settings_for
from tests.store.test_store import decision, ledger_for
from vault_tools.config import Settings
from vault_tools.integrations.dataset import DATASET_SCHEMA
from vault_tools.notes.note import parse_note
from vault_tools.review.claim_record import claim_base, v1_claim

LEDGER = "05_ledger/decision_ledger.jsonl"
# written by vt before decisions carried provenance, assist codes or the import time
# (the example vault's three decisions by alice, as tests/integrations/test_dashboard.py
# makes them): kept as bytes, so no later change of vt can rewrite what it stands for
OLD_LEDGER = Path(__file__).parent / "data" / "ledger-before-provenance.jsonl"
DATASET = Draft202012Validator(
    json.loads((REPO / "schemas" / DATASET_SCHEMA).read_text(encoding="utf-8")),
    format_checker=FormatChecker(),
)


def export(vault: Path, out: Path) -> list[dict[str, Any]]:
    run_vt("export", "--dataset", str(out), vault=vault, check=0)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        assert not list(DATASET.iter_errors(line)), list(DATASET.iter_errors(line))
    return lines


@pytest.fixture
def old(tmp_path: Path) -> Path:
    vault = copy_example_vault(tmp_path / "vault")
    (vault / LEDGER).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(OLD_LEDGER, vault / LEDGER)
    return vault


def test_a_ledger_from_before_provenance_verifies_and_exports(old: Path, tmp_path: Path) -> None:
    events = [json.loads(line) for line in OLD_LEDGER.read_text(encoding="utf-8").splitlines()]
    assert not any({"provenance", "assist", "imported_at"} & ev.keys() for ev in events)
    run_vt("ledger", "verify", vault=old, check=0)
    standalone = subprocess.run(
        [sys.executable, str(REPO / "docs/examples/verify_ledger.py"), str(old / LEDGER)],
        capture_output=True,
        text=True,
    )
    assert standalone.returncode == 0, standalone.stdout + standalone.stderr
    lines = export(old, tmp_path / "d.jsonl")
    assert [(x["claim_id"], x["action"]) for x in lines] == [
        ("DV1-0001", "ACCEPT"),
        ("DV1-0002", "REJECT"),
        ("DV1-0003", "REPAIR"),
    ]
    for line in lines:  # an unknown run: nothing said, nothing made up
        assert line["provenance"] == dict.fromkeys(
            ["run", "model", "prompt_version", "extracted_at"]
        )
        assert line["assist"] is None and line["imported_at"] is None
        assert line["source"] is not None and line["v1"] is not None
    assert lines[2]["changed_parts"] == ["claim_text", "mapping_status", "operator", "expression",
                                         "entities"]  # fmt: skip


def test_a_new_decision_beside_old_ones_carries_the_new_fields(old: Path, tmp_path: Path) -> None:
    note = old / "03_claims" / "DV1-0004.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(
        text.replace("review_action: PENDING", "review_action: REJECT").replace(
            'reviewer: ""', 'reviewer: "alice"'
        ),
        encoding="utf-8",
    )
    run_vt("apply", str(note), vault=old, check=0)
    run_vt("ledger", "verify", vault=old, check=0)
    lines = {x["claim_id"]: x for x in export(old, tmp_path / "d.jsonl")}
    assert lines["DV1-0004"]["assist"] is not None and lines["DV1-0001"]["assist"] is None


def write_decisions(settings: Settings, vault: Path) -> dict[str, dict]:
    """Events of the example vault's claims written through the ledger API: a conflict
    (DV1-0001 accepted and rejected without seeing each other), a reverted claim
    (DV1-0002), and decisions naming a note that is gone and one outside the vault."""
    ledger = ledger_for(settings)
    notes = {
        cid: parse_note((vault / "03_claims" / f"{cid}.md").read_bytes(), f"03_claims/{cid}.md")
        for cid in ("DV1-0001", "DV1-0002")
    }
    base = {cid: claim_base(v1_claim(note)) for cid, note in notes.items()}
    (first, second) = ledger.append(
        [
            decision("DV1-0001", claim=v1_claim(notes["DV1-0001"]), base=base["DV1-0001"]),
            decision("DV1-0002", claim=v1_claim(notes["DV1-0002"]), base=base["DV1-0002"]),
        ]
    )
    ledger.append(
        [
            decision("DV1-0001", "REJECT", base=base["DV1-0001"], supersedes=first["id"]),
            decision(
                "DV1-0001",
                "REJECT",
                base=base["DV1-0001"],
                supersedes=first["id"],
                comment="the other clone",
                actor="bob",
            ),  # fmt: skip
        ]
    )
    ledger.append([decision("DV1-0002", "REVERT", claim=None, reverts=second["id"])])
    (gone, outside) = ledger.append(
        [
            decision("GONE-1", "REJECT", provenance={"run": "r7"}),
            decision("OUT-1", "REJECT", note="../outside.md"),
        ]
    )
    return {"first": first, "gone": gone, "outside": outside}


def test_conflicts_reverts_and_missing_notes(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    (tmp_path / "outside.md").write_text("---\nclaim_id: OUT-1\n---\nsecret\n", encoding="utf-8")
    write_decisions(settings_for(vault), vault)
    lines = {x["claim_id"]: x for x in export(vault, tmp_path / "d.jsonl")}
    assert sorted(lines) == ["DV1-0001", "GONE-1", "OUT-1"]  # DV1-0002 was reverted
    agreed = lines["DV1-0001"]  # two REJECTs made apart decide the same: no conflict
    assert agreed["status"] == "REJECTED" and len(agreed["heads"]) == 2
    assert agreed["event_id"] == agreed["heads"][-1] and agreed["reviewer"] == "bob"
    assert agreed["v1"] is not None and agreed["final"] is None
    assert lines["GONE-1"]["source"] is None and lines["GONE-1"]["v1"] is None
    assert lines["GONE-1"]["provenance"]["run"] == "r7"
    assert lines["OUT-1"]["source"] is None  # a ledger line never makes vt read outside


def test_a_conflict_is_one_line_naming_every_head(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    settings = settings_for(vault)
    ledger = ledger_for(settings)
    (first,) = ledger.append([decision("DV1-0001")])
    (reject, accept) = ledger.append(
        [
            decision("DV1-0001", "REJECT", supersedes=first["id"]),
            decision("DV1-0001", "ACCEPT", supersedes=first["id"], comment="again"),
        ]
    )
    (line,) = export(vault, tmp_path / "d.jsonl")
    assert line["status"] == "CONFLICT"
    assert line["heads"] == [reject["id"], accept["id"]]
    assert (line["event_id"], line["action"]) == (accept["id"], "ACCEPT")


def test_a_v1_edited_after_the_decision_is_left_out(old: Path, tmp_path: Path) -> None:
    note = old / "03_claims" / "DV1-0003.md"
    text = note.read_text(encoding="utf-8")
    head, rest = text.split("## ② Atomic Claim\n", 1)
    note.write_text(f"{head}## ② Atomic Claim\n（已修改）{rest}", encoding="utf-8")
    lines = {x["claim_id"]: x for x in export(old, tmp_path / "d.jsonl")}
    repaired = lines["DV1-0003"]
    assert repaired["v1"] is None and repaired["changed_parts"] is None
    assert repaired["v2"] is not None and repaired["source"] is not None
    shown = run_vt("export", "--dataset", str(tmp_path / "e.jsonl"), vault=old, check=0)
    assert "1 note whose V1 changed since the decision" in shown.stdout


@pytest.mark.parametrize("other", [["--format", "csv"], ["--status", "ACCEPTED"], ["-o", "x"]])
def test_dataset_takes_no_claims_export_options(old: Path, tmp_path: Path, other: list) -> None:
    done = run_vt("export", "--dataset", str(tmp_path / "d.jsonl"), *other, vault=old, check=2)
    assert "--dataset" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "d.jsonl").exists()


def test_dataset_into_a_folder_is_a_usage_error(old: Path, tmp_path: Path) -> None:
    done = run_vt("export", "--dataset", str(tmp_path), vault=old, check=2)
    assert done.stderr.count("\n") == 1 and "folder" in done.stderr
