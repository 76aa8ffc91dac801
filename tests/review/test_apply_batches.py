"""`vt apply` decides, appends and fsyncs BATCH notes at a time: the result must not
depend on the batch size, and a kill between two batches must lose no decision."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import settings_for
from tests.review.test_apply_reliability import LEDGER, assert_consistent, decision_vault
from vault_tools.ledger import append as ledger_append
from vault_tools.ledger import faults
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.notes.note import parse_note
from vault_tools.review import apply as apply_mod
from vault_tools.review.apply import apply_notes
from vault_tools.store.claims import ClaimStore

NOTES = 40


def vault_state(vault: Path) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
    """Every file of the vault but vt's state (notes, KB blocks, ledger), and the rows
    of every table of the Claim Store."""
    files = {
        str(path.relative_to(vault)): path.read_bytes()
        for path in sorted(vault.rglob("*"))
        if path.is_file() and ".vt" not in path.relative_to(vault).parts
    }
    with ClaimStore.open(settings_for(vault)) as store:
        return files, store.dump()


def two_applies(template: Path, vault: Path) -> tuple[dict[str, bytes], dict[str, list[tuple]]]:
    """A fresh copy of `template` at `vault`: apply a third of its notes, then all."""
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(template, vault)
    first = sorted((vault / "03_claims").glob("*.md"))[: NOTES // 3]
    assert not apply_notes(settings_for(vault), first).refused
    report = apply_notes(settings_for(vault))
    assert not report.refused and len(report.applied) == NOTES - len(first)
    return vault_state(vault)


@pytest.mark.parametrize("batch", [1, 7])
def test_batches_append_exactly_what_one_batch_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    # the clock is the only thing that differs between two runs: held still, the runs
    # must write the same bytes everywhere
    monkeypatch.setattr(ledger_append, "utc_now", lambda: "2026-12-02T07:00:00Z")
    template = decision_vault(tmp_path / "template", NOTES)
    monkeypatch.setattr(apply_mod, "BATCH", 10 * NOTES)
    whole_files, whole_store = two_applies(template, tmp_path / "vault")
    monkeypatch.setattr(apply_mod, "BATCH", batch)
    files, store = two_applies(template, tmp_path / "vault")
    assert files.keys() == whole_files.keys()
    assert [k for k in files if files[k] != whole_files[k]] == []  # ledger, notes, KB blocks
    assert store == whole_store
    assert len(store["events"]) == NOTES and len(store["claims"]) == NOTES
    assert verify_ledger(tmp_path / "vault" / LEDGER, tmp_path / "vault" / ".vt").ok


def test_a_kill_between_batches_loses_no_decision(tmp_path: Path) -> None:
    vault = decision_vault(tmp_path, 30)
    env = {**os.environ, faults.CRASH_ENV: "after-write"}  # after the first batch
    small_batches = (
        "import vault_tools.review.apply as a; a.BATCH = 4; "
        "from vault_tools.__main__ import main; main()"
    )
    killed = subprocess.run(
        [sys.executable, "-c", small_batches, "apply", "--vault", str(vault), "--json"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert len(list(iter_events(vault / LEDGER))) == 4  # the first batch is durable
    assert verify_ledger(vault / LEDGER, vault / ".vt").ok
    notes = sorted((vault / "03_claims").glob("*.md"))
    assert not any(
        parse_note(p.read_bytes(), p.name).properties.get("review_state") == "APPLIED"
        for p in notes
    )
    env.pop(faults.CRASH_ENV)
    done = subprocess.run(
        [sys.executable, "-c", small_batches, "apply", "--vault", str(vault), "--json"],
        capture_output=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    # the killed run's four events are completed, not appended again; the rest is new
    assert [a["new"] for a in report["applied"]].count(False) == 4
    assert len(report["applied"]) == 30 and report["refused"] == []
    by_claim = assert_consistent(vault)
    assert sorted(len(events) for events in by_claim.values()) == [1] * 30
