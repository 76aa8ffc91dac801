"""The review fields read one way by every command: a `review_action` left empty asks for
nothing valid in vt validate, vt apply, vt status, vt report and vt watch alike (it is
never taken for PENDING, which a reviewer writes out)."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import copy_example_vault, run_vt, start_vt
from vault_tools.vocabulary import NEW, PENDING, REVIEW_ACTIONS, review_action, review_state

NOTE = "03_claims/DV1-0001.md"  # APPROVE in the example vault


def test_the_fields_and_their_defaults() -> None:
    assert review_action({}) == "" and review_action({"review_action": None}) == ""
    assert review_action({"review_action": ""}) == ""
    assert review_action({"review_action": PENDING}) == PENDING
    assert "" not in REVIEW_ACTIONS
    assert review_state({}) == NEW and review_state({"review_state": ""}) == NEW
    assert review_state({"review_state": "APPLIED"}) == "APPLIED"


@pytest.fixture(params=['""', "", "''"], ids=["quoted", "bare", "single-quoted"])
def unset_vault(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    vault = copy_example_vault(tmp_path / "vault")
    note = vault / NOTE
    text = note.read_text(encoding="utf-8")
    changed = text.replace("review_action: APPROVE\n", f"review_action: {request.param}\n", 1)
    assert changed != text
    note.write_text(changed, encoding="utf-8")
    return vault


def test_every_command_reads_an_empty_action_alike(unset_vault: Path) -> None:
    validate = run_vt("validate", "--json", vault=unset_vault)
    assert validate.returncode == 1
    findings = json.loads(validate.stdout)["findings"]
    assert any(f["path"] == NOTE and f["severity"] == "error" for f in findings)

    apply = run_vt("apply", "--json", vault=unset_vault)
    assert apply.returncode == 1, apply.stdout + apply.stderr
    [refused] = [r for r in json.loads(apply.stdout)["refused"] if r["path"] == NOTE]
    assert "review_action is unset" in refused["reason"]

    status = run_vt("status", "--json", vault=unset_vault)
    assert status.returncode == 1, status.stderr
    report = json.loads(status.stdout)
    assert {"path": NOTE, "claim_id": "DV1-0001", "review_action": ""} in report["unknown_actions"]

    dashboard = run_vt("report", "--dry-run", "--json", vault=unset_vault)
    assert dashboard.returncode == 0, dashboard.stderr
    counted = json.loads(dashboard.stdout)["by_action"]
    assert counted.get("") == 1 and counted.get(PENDING, 0) == report["by_action"].get(PENDING, 0)
    assert report["by_action"].get("") == 1


def test_the_watcher_counts_an_empty_action_as_unset(unset_vault: Path) -> None:
    watcher = start_vt(
        "watch",
        str(unset_vault),
        "--json",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watcher.stdout is not None
    try:
        ready = json.loads(watcher.stdout.readline())
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.communicate(timeout=60)
    assert ready["event"] == "ready"
    assert ready["by_action"].get("(unset)") == 1
    status = json.loads(run_vt("status", "--json", vault=unset_vault).stdout)
    assert ready["by_action"].get(PENDING, 0) == status["by_action"].get(PENDING, 0)
