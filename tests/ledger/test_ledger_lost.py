"""The one rule for a ledger that lost events (ledger/lost.py), and its ways out: real
vaults, real git, real `vt` processes.

- restored from git: exit 3 naming what was verified; `vt ledger verify` lists the lost
  events; `vt ledger forget` accepts the loss;
- a deliberate fresh start: the ledger deleted, then `vt ledger forget`;
- a clone (or a `.vt/` deleted) whose ledger lacks an event a note names: `vt apply`
  refuses the note, `vt apply --record-lost` records its decision again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import git, isolate_git, make_repo, run_vt, settings_for
from vault_tools.review.apply import apply_notes

LEDGER = "05_ledger/decision_ledger.jsonl"
ACCEPTED = "03_claims/DV1-0001.md"  # APPROVE in the example vault: applied as an ACCEPT


def ledger_ids(vault: Path) -> list[str]:
    return [json.loads(line)["id"] for line in (vault / LEDGER).read_bytes().splitlines()]


@pytest.fixture()
def vault(example_vault: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The example vault in git: two decisions applied and committed, then one revert
    applied after the commit (so the committed ledger lacks it)."""
    isolate_git(monkeypatch, tmp_path)
    make_repo(example_vault)
    (example_vault / ".gitignore").write_text(f".vt/\n{LEDGER}.lock\n")  # as `vt init` does
    report = apply_notes(settings_for(example_vault))
    assert len(report.applied) == 2 and not report.refused
    git(example_vault, "add", "-A")
    git(example_vault, "commit", "-q", "-m", "two decisions")
    accepted = next(a.id for a in report.applied if a.path == ACCEPTED)
    done = run_vt("revert", accepted, vault=example_vault)
    assert done.returncode == 0, done.stderr
    assert len(ledger_ids(example_vault)) == 3
    return example_vault


def test_a_ledger_restored_from_git_is_refused_naming_what_was_verified(vault: Path) -> None:
    reverted = ledger_ids(vault)[2]
    git(vault, "checkout", "--", LEDGER)  # the committed, older ledger: the revert is gone
    for args in (("status",), ("export",), ("ledger", "log"), ("apply",)):
        done = run_vt(*args, vault=vault)
        assert done.returncode == 3, (args, done.stderr)
        said = [line for line in done.stderr.splitlines() if line.startswith("vt: ")]
        assert said == [
            f"vt: {LEDGER}:3: the ledger holds 2 events, but 3 were verified before: "
            "1 lost (restored from an older copy?) (get the file back from git, or "
            "accept the loss with `vt ledger forget`); run `vt ledger verify` to list them"
        ], (args, done.stderr)
    listed = run_vt("ledger", "verify", vault=vault)
    assert listed.returncode == 3
    assert f"event {reverted} verified before is missing" in listed.stdout + listed.stderr


def test_forget_accepts_the_loss_listing_what_it_forgets(vault: Path) -> None:
    reverted = ledger_ids(vault)[2]
    git(vault, "checkout", "--", LEDGER)
    before = (vault / LEDGER).read_bytes()
    dry = run_vt("ledger", "forget", "--dry-run", "--json", vault=vault)
    assert dry.returncode == 0, dry.stderr
    assert [e["id"] for e in json.loads(dry.stdout)["forgotten"]] == [reverted]
    assert run_vt("status", vault=vault).returncode == 3  # a dry run changed nothing
    done = run_vt("ledger", "forget", vault=vault)
    assert done.returncode == 0, done.stderr
    assert f"forgot: {reverted}" in done.stdout
    assert "1 lost event forgotten; the 2 events it holds are verified as they stand" in (
        done.stdout
    )
    assert (vault / LEDGER).read_bytes() == before  # the ledger itself is never changed
    status = run_vt("status", "--json", vault=vault)
    assert status.returncode == 0, status.stderr
    assert run_vt("ledger", "verify", vault=vault).returncode == 0
    # the note of the reverted claim still names the ACCEPT, which the ledger holds
    assert run_vt("apply", vault=vault).returncode == 0


def test_forget_refuses_a_ledger_that_does_not_verify_by_itself(vault: Path) -> None:
    lines = (vault / LEDGER).read_bytes().splitlines(keepends=True)
    (vault / LEDGER).write_bytes(lines[0] + lines[1].replace(b"alice", b"mallory"))
    done = run_vt("ledger", "forget", vault=vault)
    assert done.returncode == 3, done.stderr
    assert f"{LEDGER}:2: the ledger does not verify by itself" in done.stderr
    assert run_vt("status", vault=vault).returncode == 3  # nothing forgotten


def test_a_fresh_start_is_the_ledger_deleted_then_forget(vault: Path) -> None:
    (vault / LEDGER).unlink()
    assert run_vt("apply", vault=vault).returncode == 3
    assert not (vault / LEDGER).exists()
    done = run_vt("ledger", "forget", vault=vault)
    assert done.returncode == 0, done.stderr
    assert "3 lost events forgotten; the 0 events it holds" in done.stdout
    assert not (vault / LEDGER).exists()  # forget creates no ledger
    assert run_vt("status", vault=vault).returncode == 0
    # the notes still say APPLIED for events the new ledger does not hold: refused
    applied = run_vt("apply", vault=vault)
    assert applied.returncode == 1, applied.stderr
    assert "an event the ledger does not hold" in applied.stderr
    assert (vault / LEDGER).read_bytes() == b""


@pytest.mark.parametrize("clone", [False, True])
def test_a_note_applied_for_an_event_the_ledger_lacks_is_never_decided_again(
    vault: Path, tmp_path: Path, clone: bool
) -> None:
    """The reported case: ledger and `.vt/` deleted (or a clone of a commit whose ledger
    lacks the events), and a reverted claim came back ACCEPTED from its note."""
    if clone:
        git(vault, "add", "-A")
        git(vault, "commit", "-q", "-m", "the revert")
        git(vault, "rm", "-q", LEDGER)
        git(vault, "commit", "-q", "-m", "the ledger dropped by mistake")
        target = tmp_path / "clone"
        git(tmp_path, "clone", "-q", str(vault), str(target))
    else:
        (vault / LEDGER).unlink()
        shutil.rmtree(vault / ".vt")
        target = vault
    notes = {p: p.read_bytes() for p in sorted((target / "03_claims").glob("*.md"))}
    done = run_vt("apply", vault=target)
    assert done.returncode == 1, (done.stdout, done.stderr)
    refused = [line for line in done.stderr.splitlines() if "): refused: " in line]
    assert len(refused) == 2 and all("`vt apply --record-lost`" in r for r in refused)
    assert {p: p.read_bytes() for p in notes} == notes
    status = run_vt("status", "--json", vault=target)
    assert "ACCEPTED" not in json.dumps(json.loads(status.stdout).get("claims", {}))
    again = run_vt("apply", "--record-lost", vault=target)
    assert again.returncode == 0, again.stderr
    assert len(ledger_ids(target)) == 2
    assert run_vt("ledger", "verify", vault=target).returncode == 0


def test_ledger_log_names_the_line_of_a_bad_event(vault: Path) -> None:
    lines = (vault / LEDGER).read_bytes().splitlines(keepends=True)
    lines[1] = b"{not json\n"
    (vault / LEDGER).write_bytes(b"".join(lines))
    done = run_vt("ledger", "log", vault=vault)
    assert done.returncode == 3
    assert done.stderr.startswith(f"vt: {LEDGER}:2: "), done.stderr
    assert ":0:" not in done.stderr and "line 0" not in done.stderr
