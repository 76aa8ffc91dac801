"""The review fields read one way by every command: a `review_action` left empty asks for
nothing valid in vt validate, vt apply, vt status, vt report and vt watch alike (it is
never taken for PENDING, which a reviewer writes out)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import copy_example_vault
from vault_tools.vocabulary import NEW, PENDING, REVIEW_ACTIONS, review_action, review_state

NOTE = "03_claims/DV1-0001.md"  # APPROVE in the example vault


def vt(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VT_")}
    return subprocess.run(
        [sys.executable, "-m", "vault_tools", *args, "--vault", str(vault)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


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
    validate = vt(unset_vault, "validate", "--json")
    assert validate.returncode == 1
    findings = json.loads(validate.stdout)["findings"]
    assert any(f["path"] == NOTE and f["severity"] == "error" for f in findings)

    apply = vt(unset_vault, "apply", "--json")
    assert apply.returncode == 1, apply.stdout + apply.stderr
    [refused] = [r for r in json.loads(apply.stdout)["refused"] if r["path"] == NOTE]
    assert "review_action is unset" in refused["reason"]

    status = vt(unset_vault, "status", "--json")
    assert status.returncode == 1, status.stderr
    report = json.loads(status.stdout)
    assert {"path": NOTE, "claim_id": "DV1-0001", "review_action": ""} in report["unknown_actions"]

    dashboard = vt(unset_vault, "report", "--dry-run", "--json")
    assert dashboard.returncode == 0, dashboard.stderr
    counted = json.loads(dashboard.stdout)["by_action"]
    assert counted.get("") == 1 and counted.get(PENDING, 0) == report["by_action"].get(PENDING, 0)
    assert report["by_action"].get("") == 1


def test_the_watcher_counts_an_empty_action_as_unset(unset_vault: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VT_")}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "vault_tools", "watch", str(unset_vault), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert watcher.stdout is not None
    try:
        ready = json.loads(watcher.stdout.readline())
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.communicate(timeout=60)
    assert ready["event"] == "ready"
    assert ready["by_action"].get("(unset)") == 1
    status = json.loads(vt(unset_vault, "status", "--json").stdout)
    assert ready["by_action"].get(PENDING, 0) == status["by_action"].get(PENDING, 0)
