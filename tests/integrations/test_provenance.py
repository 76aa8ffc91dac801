"""Provenance from the pipeline to the dataset, on real files through real `vt` processes:
`vt import` keeps a record's provenance and the import time in the note, `vt apply`
copies them and the note's assist codes into each decision event, the ledger verifies
(with vt and with the standalone verifier), `vt rebuild` keeps them, and
`vt export --dataset` writes them beside the evidence, V1, V2 and the changed parts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from jsonschema import Draft202012Validator, FormatChecker

from tests.conftest import REPO, copy_example_vault, run_vt
from vault_tools.config import load_settings
from vault_tools.integrations.dataset import DATASET_SCHEMA
from vault_tools.ledger.events import is_timestamp
from vault_tools.ledger.verify import verify_ledger
from vault_tools.notes.note import parse_note
from vault_tools.review.claim_record import note_origin
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import IMPORTED_AT, PROVENANCE_PROPERTIES

LEDGER = "05_ledger/decision_ledger.jsonl"
DATASET_SCHEMA = json.loads((REPO / "schemas" / DATASET_SCHEMA).read_text(encoding="utf-8"))
DATASET = Draft202012Validator(DATASET_SCHEMA, format_checker=FormatChecker())
PROVENANCE = {
    "run": "run-2026-03-24",
    "model": "extractor-7b",
    "prompt_version": "p3.1",
    "extracted_at": "2026-03-24T09:15:00.5+08:00",
}


def records() -> list[dict[str, Any]]:
    """The README's sample records: the first with every provenance field, the second
    with only its run, and a third (the first again under another id) with none."""
    first, second = (
        json.loads(line)
        for line in (REPO / "examples" / "claims.jsonl").read_text(encoding="utf-8").splitlines()
    )
    third = {**first, "claim_id": "NOPROV-1"}
    return [{**first, "provenance": PROVENANCE}, {**second, "provenance": {"run": "run-9"}}, third]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (old, text[:400])
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def decide(note: Path, action: str) -> None:
    edit(note, "review_action: PENDING", f"review_action: {action}")
    for key in ("check_source_claim", "check_claim_frame", "check_entity_mapping",
                "check_epistemic_mode"):  # fmt: skip
        edit(note, f"{key}: false", f"{key}: true")
    edit(note, 'reviewer: ""', 'reviewer: "alice"')


def ledger_events(vault: Path) -> dict[str, dict]:
    lines = (vault / LEDGER).read_text(encoding="utf-8").splitlines()
    return {ev["claim_id"]: ev for ev in map(json.loads, lines)}


@pytest.fixture
def decided(tmp_path: Path) -> Path:
    """The example vault with the three records imported and decided by the real
    commands: the first approved, the second repaired (its text and its mode changed),
    the third rejected."""
    vault = copy_example_vault(tmp_path / "vault")
    jsonl = tmp_path / "claims.jsonl"
    jsonl.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records()), encoding="utf-8"
    )
    run_vt("import", str(jsonl), vault=vault, check=0)
    first, second, third = (vault / "03_claims" / f"{r['claim_id']}.md" for r in records())
    decide(first, "APPROVE")
    decide(third, "REJECT")
    run_vt("draft", str(second), vault=vault, check=0)
    text = second.read_text(encoding="utf-8")
    v2 = text.split("### V2 Atomic Claim Draft\n", 1)[1]
    claim_line = v2.split("\n", 1)[0]
    assert "幾乎不增加成本" in claim_line
    head, drafts = text.split("### V2 Atomic Claim Draft\n", 1)
    repaired = claim_line.replace("幾乎不增加成本", "幾乎不增加額外成本")
    drafts = drafts.replace(claim_line, repaired, 1)
    second.write_text(f"{head}### V2 Atomic Claim Draft\n{drafts}", encoding="utf-8")
    edit(second, '"epistemic_mode": "ASSERTED"', '"epistemic_mode": "HYPOTHETICAL"')
    edit(second, "review_action: PENDING", "review_action: REQUEST_REPAIR")
    run_vt("preview", str(second), vault=vault, check=0)
    edit(second, "review_action: REQUEST_REPAIR", "review_action: PENDING")
    decide(second, "APPROVE_REPAIR")
    run_vt("apply", vault=vault, check=0)
    return vault


def test_import_keeps_provenance_and_the_import_time_in_vt_properties(decided: Path) -> None:
    first, second, third = (
        parse_note((decided / "03_claims" / f"{r['claim_id']}.md").read_bytes(), "x.md")
        for r in records()
    )
    assert {k: first.properties.get(p) for k, p in PROVENANCE_PROPERTIES.items()} == PROVENANCE
    assert second.properties.get(PROVENANCE_PROPERTIES["run"]) == "run-9"
    assert PROVENANCE_PROPERTIES["model"] not in second.properties
    assert not any(p in third.properties for p in PROVENANCE_PROPERTIES.values())
    stamps = {n.properties[IMPORTED_AT] for n in (first, second, third)}
    assert len(stamps) == 1 and is_timestamp(stamps.pop())  # one import, one time
    run_vt("validate", vault=decided, check=0)


def test_each_decision_records_provenance_import_time_and_assist(decided: Path) -> None:
    events = ledger_events(decided)
    first, second, third = (events[r["claim_id"]] for r in records())
    assert (first["action"], second["action"], third["action"]) == ("ACCEPT", "REPAIR", "REJECT")
    assert first["provenance"] == PROVENANCE
    assert second["provenance"] == {"run": "run-9"}
    assert "provenance" not in third  # the note has none
    note = parse_note((decided / "03_claims" / "NOPROV-1.md").read_bytes(), "x.md")
    for ev in (first, second, third):
        assert ev["imported_at"] == note.properties[IMPORTED_AT]
        assert ev["assist"] == sorted(set(ev["assist"]))
        assert all(code.startswith("assist-") for code in ev["assist"])
    shown = json.loads(run_vt("validate", "--json", vault=decided, check=0).stdout)
    carried = {
        f["code"]
        for f in shown["findings"]
        if f["path"].endswith("NOPROV-1.md") and f["code"].startswith("assist-")
    }
    assert third["assist"] == sorted(carried)


def test_the_ledger_verifies_with_vt_and_without(decided: Path) -> None:
    run_vt("ledger", "verify", vault=decided, check=0)
    done = subprocess.run(
        [sys.executable, str(REPO / "docs/examples/verify_ledger.py"), str(decided / LEDGER)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_edited_provenance_breaks_the_id(decided: Path) -> None:
    path = decided / LEDGER
    text = path.read_text(encoding="utf-8")
    assert '"run":"run-9"' in text
    path.write_text(text.replace('"run":"run-9"', '"run":"run-8"'), encoding="utf-8")
    settings = load_settings(decided)
    report = verify_ledger(settings.ledger_path, settings.state_dir)
    assert not report.ok
    assert any("id mismatch" in p.message for p in report.problems), report.problems


def test_rebuild_keeps_them_in_the_claim_store(decided: Path) -> None:
    run_vt("rebuild", vault=decided, check=0)
    events = ledger_events(decided)
    with ClaimStore.open(load_settings(decided)) as store:
        stored = {claim_id: store.history(claim_id)[-1] for claim_id in events}
    assert stored == events
    assert stored["SA260324R-0126"]["provenance"] == PROVENANCE


def test_export_dataset_round_trip(decided: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset.jsonl"
    shown = run_vt("export", "--dataset", str(out), "--json", vault=decided, check=0)
    assert json.loads(shown.stdout)["claims"] == 5  # the three, and the example's two
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        assert not list(DATASET.iter_errors(line)), list(DATASET.iter_errors(line))
    by_id = {line["claim_id"]: line for line in lines}
    first, second, third = (by_id[r["claim_id"]] for r in records())
    assert first["provenance"] == PROVENANCE
    assert second["provenance"] == {
        "run": "run-9", "model": None, "prompt_version": None, "extracted_at": None
    }  # fmt: skip
    assert third["provenance"] == dict.fromkeys(PROVENANCE)
    assert first["v1"] == first["final"] and first["v2"] is None
    assert first["changed_parts"] == []
    assert second["changed_parts"] == ["claim_text", "mode"]
    assert second["v2"] == second["final"]
    assert "額外" in second["v2"]["atomic_claim"] and "額外" not in second["v1"]["atomic_claim"]
    assert third["final"] is None and third["v1"]["atomic_claim"] == first["v1"]["atomic_claim"]
    assert third["source"]["evidence"] == records()[2]["source"]["evidence"]
    assert {line["reviewer"] for line in (first, second, third)} == {"alice"}
    assert first["imported_at"] == second["imported_at"] is not None

    frame = pd.read_json(out, lines=True)
    assert len(frame) == 5
    assert list(frame.sort_values("claim_id")["claim_id"]) == sorted(by_id)
    assert frame.set_index("claim_id").loc["SA260324R-0126", "provenance"] == PROVENANCE


def test_a_hand_edited_provenance_is_an_error_and_never_recorded(tmp_path: Path) -> None:
    props = {
        "vt_pipeline_run": "run-1",
        "vt_pipeline_model": "",
        "vt_pipeline_extracted_at": "last Tuesday",
        "vt_imported_at": "2026-03-24",
    }
    assert note_origin(props) == {"provenance": {"run": "run-1"}}
    assert note_origin({"vt_pipeline_prompt_version": 3}) == {}  # YAML read a number
    vault = copy_example_vault(tmp_path / "vault")
    approved, rejected = (vault / "03_claims" / f"DV1-000{n}.md" for n in (1, 2))
    for note in (approved, rejected):
        edit(note, "tags: [claim-review]\n", "tags: [claim-review]\n"
             'vt_pipeline_run: "r1"\nvt_pipeline_extracted_at: "last Tuesday"\n')  # fmt: skip
    shown = run_vt("validate", str(approved), vault=vault, check=1)
    assert "properties-schema" in shown.stdout and "vt_pipeline_extracted_at" in shown.stdout
    run_vt("apply", vault=vault, check=1)  # the approval is refused for its error
    (event,) = ledger_events(vault).values()
    assert (event["claim_id"], event["action"]) == ("DV1-0002", "REJECT")
    assert event["provenance"] == {"run": "r1"}


def test_stats_count_by_the_recorded_provenance(decided: Path) -> None:
    """`vt stats` reads the provenance, import time and assist codes apply recorded."""
    stats = json.loads(run_vt("stats", "--json", vault=decided).stdout)
    runs = {row["value"]: row for row in stats["pipeline"]["by"]["run"]}
    first = runs[PROVENANCE["run"]]
    assert (first["decided"], first["accepted"]) == (1, 1)
    assert (runs["run-9"]["decided"], runs["run-9"]["repaired"]) == (1, 1)
    # the third record, and the example vault's own decisions, carry no provenance
    decided_all = sum(stats["pipeline"]["outcomes"].values())
    assert runs["unknown"]["decided"] == decided_all - 2 and runs["unknown"]["rejected"] >= 1
    models = {row["value"] for row in stats["pipeline"]["by"]["model"]}
    assert models == {PROVENANCE["model"], "unknown"}
    waits = stats["review"]["import_to_decision"]
    assert waits["claims"] == 3 and waits["median_seconds"] >= 0  # the imported three
    assert stats["assist"]["not_recorded"] == 0  # every event says what it carried
