"""`vt rebuild`, `vt status`, `vt history` through the Typer app: output, JSON, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import run_vt
from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.cli import app
from vault_tools.config import load_settings
from vault_tools.store.claims import ClaimStore


def vt(*args: str):
    return CliRunner().invoke(app, list(args), env={"VT_VAULT": ""})


@pytest.mark.parametrize("command", ["rebuild", "status", "history"])
def test_help_has_an_example(command: str) -> None:
    result = vt(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout and f"vt {command} " in result.stdout


def test_status_plain_and_json(example_vault: Path) -> None:
    ledger = ledger_for(load_settings(example_vault))
    (first,) = ledger.append([decision("DV1-0004")])
    ledger.append(
        [
            decision("DV1-0004", "REJECT", supersedes=first["id"]),
            decision("DV1-0004", "ACCEPT", supersedes=first["id"], comment="b"),
        ]
    )
    result = vt("status", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "6 review notes" in out
    assert "  by review_action: APPROVE 1, PENDING 2, REJECT 1, REQUEST_REPAIR 2" in out
    assert "  by review_state:  NEW 6" in out
    assert "claims in the ledger: CONFLICT 1" in out
    assert "claims in CONFLICT (decided differently without seeing each other):" in out
    assert "  DV1-0004 (03_claims/DV1-0004.md):" in out
    assert (
        "    to settle: resolve the note, set review_action to the final decision (reviewer: "
        "yourself) and run vt apply" in out
    )
    assert f"ledger head: seq 3, {ledger.head().hash}" in out
    payload = json.loads(vt("status", "--vault", str(example_vault), "--json").stdout)
    assert payload["notes"] == 6 and payload["claims"] == {"CONFLICT": 1}
    assert payload["by_state"] == {"NEW": 6}
    (conflict,) = payload["conflicts"]
    reject, accept = conflict["heads"]
    assert (conflict["claim_id"], reject["action"], accept["action"]) == (
        "DV1-0004",
        "REJECT",
        "ACCEPT",
    )
    assert conflict["unseen"] == [reject["id"]]
    assert f"    ann REJECT {reject['id']} (not seen by the latest decision)" in out
    assert f"    ann ACCEPT {accept['id']} (latest)" in out
    assert {"stale_previews", "edited_since_apply", "disagreements", "ledger_head"} <= set(payload)


def test_status_catches_up_after_the_ledger_grew(example_vault: Path) -> None:
    ledger = ledger_for(load_settings(example_vault))
    ledger.append([decision("DV1-0001")])
    assert json.loads(vt("status", "--vault", str(example_vault), "--json").stdout)["claims"] == {
        "ACCEPTED": 1
    }
    ledger.append([decision("DV1-0001", "REJECT")])  # e.g. arrived with a git pull
    assert json.loads(vt("status", "--vault", str(example_vault), "--json").stdout)["claims"] == {
        "REJECTED": 1
    }


def test_status_of_a_broken_ledger_exits_3(example_vault: Path) -> None:
    ledger = ledger_for(load_settings(example_vault))
    ledger.append([decision("DV1-0001"), decision("DV1-0002")])
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    ledger.path.write_bytes(lines[1] + lines[0])
    result = vt("status", "--vault", str(example_vault))
    assert result.exit_code == 3
    assert "jsonl:1: the ledger changed since it was verified (" in result.stderr
    assert result.stderr.rstrip().endswith("; run `vt ledger verify`")


def test_history_plain_json_and_unknown_claim(example_vault: Path) -> None:
    ledger = ledger_for(load_settings(example_vault))
    v2 = v1_claim("DV1-0001", text="修正後")
    accept, _ = ledger.append(
        [
            decision("DV1-0001", claim=v1_claim("DV1-0001"), comment="ok"),
            decision("DV1-0001", "REPAIR", claim=v2, actor="bob"),
        ]
    )
    result = vt("history", "DV1-0001", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "DV1-0001: REPAIRED (03_claims/DV1-0001.md), 2 decisions"
    assert lines[1].startswith("#1  ") and "  ACCEPT  by ann  sha256:" in lines[1]
    assert "    comment: ok" in lines
    assert any(line.startswith("#2  ") and "REPAIR  by bob" in line for line in lines)
    assert any(line.startswith("    supersedes sha256:") for line in lines)
    # the REPAIR was based on the V1 the ACCEPT recorded (same base)
    assert f"    V1 → V2 (V1 from event {accept['id']}):" in lines
    assert any(line.startswith("      claim: [-") and "{+修正後+}" in line for line in lines)
    payload = json.loads(vt("history", "DV1-0001", "--vault", str(example_vault), "--json").stdout)
    assert [e["action"] for e in payload["events"]] == ["ACCEPT", "REPAIR"]
    assert payload["events"][1]["claim"] == v2
    unknown = vt("history", "NOPE", "--vault", str(example_vault))
    assert unknown.exit_code == 1
    assert "no decision on claim NOPE in the ledger" in unknown.stderr


def test_history_without_a_ledger(example_vault: Path) -> None:
    result = vt("history", "DV1-0001", "--vault", str(example_vault), "--json")
    assert result.exit_code == 1 and result.stdout == ""


def test_rebuild_plain_json_and_kb_blocks(example_vault: Path) -> None:
    settings = load_settings(example_vault)
    ledger_for(settings).append([decision("SA260324R-0125"), decision("DV1-0002", "REJECT")])
    result = vt("rebuild", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    assert "claim store rebuilt from the ledger: 2 events, 2 claims" in result.stdout
    assert "2 knowledge-base notes updated" in result.stdout
    assert "<!-- vt:claims:start -->" in (
        example_vault / "04_knowledge_base" / "Prefill.md"
    ).read_text(encoding="utf-8")
    with ClaimStore.open(settings) as store:
        before = store.dump()
    payload = json.loads(vt("rebuild", "--vault", str(example_vault), "--json").stdout)
    assert payload["events"] == 2 and payload["claims"] == 2
    assert payload["kb_notes_written"] == [] and payload["kb_problems"] == []
    with ClaimStore.open(settings) as store:
        assert store.dump() == before


def test_rebuild_as_a_process(example_vault: Path) -> None:
    ledger_for(load_settings(example_vault)).append([decision("DV1-0001")])
    result = run_vt("rebuild", "--json", vault=example_vault)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["events"] == 1
