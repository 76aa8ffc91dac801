"""The pre-commit hook refuses a decided note with no event while the clone's ledger does
not verify (integrations/unrecorded.py), and lets it through when the ledger verifies.
Real git, the real hook installed by `vt init`, real commits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, make_repo, run_vt
from vault_tools.config import load_settings
from vault_tools.integrations.init import init_vault
from vault_tools.review.apply import apply_notes

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_VAULT = REPO / "examples" / "vault"
LEDGER = "05_ledger/decision_ledger.jsonl"
APPROVED = "03_claims/DV1-0001.md"  # APPROVE, reviewer alice
PENDING = "03_claims/DV1-0003.md"

pytestmark = pytest.mark.usefixtures("isolated_git")


def vault_with_events(tmp_path: Path) -> Path:
    """A committed vault whose ledger holds the example's decisions (applied by alice)."""
    vault = make_repo(tmp_path / "vault")
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vt"), dirs_exist_ok=True)
    init_vault(load_settings(vault))
    apply_notes(load_settings(vault))
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "decisions")
    return vault


def decide_pending(vault: Path) -> None:
    """A new decision in the note, as a reviewer makes it in Obsidian, not applied yet."""
    path = vault / PENDING
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("review_action: REQUEST_REPAIR", "review_action: REJECT").replace(
            "review_action: PENDING", "review_action: REJECT"
        ),
        encoding="utf-8",
    )
    git(vault, "add", PENDING)


def commit(vault: Path) -> subprocess.CompletedProcess[str]:
    return git(vault, "commit", "-qm", "a decision", check=False)


def test_a_decision_without_an_event_commits_when_the_ledger_verifies(tmp_path: Path) -> None:
    vault = vault_with_events(tmp_path)
    decide_pending(vault)
    done = commit(vault)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_blocked_clone_cannot_commit_a_decision_without_an_event(tmp_path: Path) -> None:
    vault = vault_with_events(tmp_path)
    run_vt("status", vault=vault, check=0)  # every event trusted
    ledger = vault / LEDGER
    ledger.write_bytes(b"".join(ledger.read_bytes().splitlines(keepends=True)[:-1]))
    decide_pending(vault)
    done = commit(vault)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert f"{PENDING}:" in said and "decision-unrecorded" in said
    assert "verified before is missing" in said and "run `vt ledger verify`" in said
    assert git(vault, "rev-list", "--count", "HEAD").stdout.strip() == "1"  # nothing committed


def test_an_applied_note_commits_even_from_a_blocked_clone(tmp_path: Path) -> None:
    """The check is about decisions without events: an APPLIED note carries its event."""
    vault = vault_with_events(tmp_path)
    (vault / LEDGER).write_bytes(b"<<<<<<< ours\n")
    path = vault / APPROVED
    path.write_text(path.read_text(encoding="utf-8") + "\nA reviewer's afterthought.\n")
    git(vault, "add", APPROVED)
    done = commit(vault)
    assert done.returncode == 0, done.stdout + done.stderr


def test_conflict_markers_in_the_ledger_point_at_resolve(tmp_path: Path) -> None:
    vault = vault_with_events(tmp_path)
    ledger = vault / LEDGER
    ledger.write_bytes(b"<<<<<<< ours\n" + ledger.read_bytes() + b">>>>>>> theirs\n")
    decide_pending(vault)
    said = commit(vault)
    assert said.returncode != 0
    assert "run `vt ledger resolve`" in said.stdout + said.stderr
