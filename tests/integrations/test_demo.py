"""`vt demo`: the whole cycle on a copy of the bundled example vault."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import run_vt
from vault_tools.bundled import example_vault_dir
from vault_tools.integrations.demo import STEPS, run_demo
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.notes.note import parse_note


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_every_step_does_what_it_should_and_the_bundled_vault_is_untouched(tmp_path: Path) -> None:
    bundled = tree(example_vault_dir())
    seen = []
    result = run_demo(keep=True, on_step=seen.append, workdir=tmp_path)
    assert result.ok, [(s.title, s.problem) for s in result.steps if not s.ok]
    assert [s.title for s in seen] == [title for _, title, _ in STEPS]
    assert all(s.lines and s.why for s in seen)
    assert tree(example_vault_dir()) == bundled
    vault = result.kept
    assert vault is not None and vault.is_relative_to(tmp_path)
    ledger = vault / "05_ledger/decision_ledger.jsonl"
    actions = {(e["claim_id"], e["action"], e["actor"]) for e in iter_events(ledger)}
    assert ("IX2-0328", "REPAIR", "alice") in actions and ("DV1-0001", "ACCEPT", "alice") in actions
    assert verify_ledger(ledger, vault / ".vt").ok
    note = (vault / "03_claims/IX2-0328.md").read_bytes()
    props = parse_note(note, "IX2-0328.md").properties
    assert props["review_state"] == "APPLIED" and props["reviewer"] == "alice"
    repair = next(e for e in iter_events(ledger) if e["action"] == "REPAIR")
    ids = [e["id"] for e in repair["claim"]["semantic_frame"]["entities"]]
    assert "04_knowledge_base/Draft Verification" in ids
    assert "04_knowledge_base/IC design verification" not in ids
    # ready for git before the first commit: .vt/ ignored, the ledger's merge driver set
    assert ".vt/" in (vault / ".gitignore").read_text(encoding="utf-8").splitlines()
    if shutil.which("git"):
        driver = subprocess.run(
            ["git", "config", "merge.vt-ledger.driver"], cwd=vault, capture_output=True, text=True
        )
        assert "ledger merge %O %A %B" in driver.stdout
        ignored = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", ".vt"],
            cwd=vault,
            capture_output=True,
            text=True,
        )
        assert ignored.stdout.startswith("!! .vt/")


def test_without_keep_the_folder_is_removed(tmp_path: Path) -> None:
    result = run_demo(workdir=tmp_path)
    assert result.ok and result.kept is None
    assert list(tmp_path.iterdir()) == []


def test_a_failing_step_stops_the_demo(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("vault_tools.integrations.demo.RIGHT_TARGET", "04_knowledge_base/Nowhere")
    result = run_demo(workdir=tmp_path)
    assert not result.ok
    assert result.steps[-1].title == "Preview the repair" and result.steps[-1].problem
    assert len(result.steps) == 5


def test_vt_demo_process_exit_0_and_readable_steps(tmp_path: Path) -> None:
    done = run_vt("demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for number, (_, title, _) in enumerate(STEPS, 1):
        assert f"== {number}. {title} ==" in done.stdout
    assert "FAILED" not in done.stdout and "every step did what it should" in done.stdout
