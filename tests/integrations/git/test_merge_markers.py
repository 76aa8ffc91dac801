"""A teammate without vt's merge driver, with real clones: their pull leaves conflict
markers in the ledger, they commit and push them, and the clones with the driver must
still keep every event (the driver and `vt ledger resolve` read both sides of the
markers), a ledger with committed markers is repaired, and an event id never comes back
with another `ts`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import (
    LEDGER,
    commit_all,
    configure,
    seed_origin,
    set_action,
)
from tests.review.test_apply_conflicts import events
from vault_tools.config import load_settings
from vault_tools.integrations.git import hook
from vault_tools.integrations.git.pullcommit import SUBJECT
from vault_tools.integrations.init import init_vault
from vault_tools.ledger.events import canonical, line_hash
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.apply import apply_notes

pytestmark = pytest.mark.usefixtures("isolated_git")


def team(tmp_path: Path, names: tuple[str, ...], without_driver: tuple[str, ...]) -> list[Path]:
    """origin (bare) holding the example vault after `vt init`, and one clone per name;
    `vt init` runs in each clone but those in `without_driver`."""
    seed_origin(tmp_path)
    clones = []
    for name in names:
        git(tmp_path, "clone", "-q", "origin.git", name)
        clone = tmp_path / name
        configure(clone, name)
        if name not in without_driver:
            init_vault(load_settings(clone))
        clones.append(clone)
    return clones


def decide(clone: Path, note: str, action: str) -> dict:
    set_action(clone, note, action)
    report = apply_notes(load_settings(clone), [clone / "03_claims" / note])
    (applied,) = report.applied
    return next(ev for ev in events(clone) if ev["id"] == applied.id)


def stamps(clone: Path) -> dict[str, str]:
    return {ev["id"]: ev["ts"] for ev in events(clone)}


def verifies(clone: Path) -> bool:
    settings = load_settings(clone)
    return verify_ledger(settings.ledger_path, settings.state_dir).ok


def carol_pushes_markers(alice: Path, carol: Path) -> tuple[dict, dict]:
    """alice pushes a decision; carol, without the driver, decides another claim, pulls
    (markers in the ledger), commits the markers as they are and pushes them."""
    accept = decide(alice, "DV1-0001.md", "APPROVE")
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    reject = decide(carol, "DV1-0002.md", "REJECT")
    commit_all(carol, "carol rejects DV1-0002")
    pulled = git(carol, "pull", "--no-rebase", "origin", "main", check=False)
    assert pulled.returncode != 0 and f"Merge conflict in {LEDGER}" in pulled.stdout
    assert b"<<<<<<<" in (carol / LEDGER).read_bytes()
    commit_all(carol, "merge")  # no hook in carol's clone: the markers are committed
    git(carol, "push", "-q", "origin", "main")
    return accept, reject


def test_the_driver_reads_both_sides_of_committed_markers(tmp_path: Path) -> None:
    alice, bob, carol = team(tmp_path, ("alice", "bob", "carol"), without_driver=("carol",))
    accept, reject = carol_pushes_markers(alice, carol)
    # carol's own clone: the markers are named, and resolve repairs them
    done = run_vt("ledger", "verify", vault=carol)
    assert done.returncode == 3 and "conflict marker" in done.stdout + done.stderr

    # bob, with the driver, decided meanwhile and pulls carol's merge: nothing is lost
    later = decide(bob, "DV1-0004.md", "REJECT")
    commit_all(bob, "bob rejects DV1-0004")
    pulled = git(bob, "pull", "--no-rebase", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert b"<<<<<<<" not in (bob / LEDGER).read_bytes()
    assert set(stamps(bob)) == {accept["id"], reject["id"], later["id"]}
    assert stamps(bob)[reject["id"]] == reject["ts"]  # carol's event, its own ts
    assert verifies(bob)
    git(bob, "push", "-q", "origin", "main")

    # carol pulls the repaired ledger: her clone trusted her event, and still does
    git(carol, "pull", "-q", "--no-rebase", "origin", "main")
    assert stamps(carol) == stamps(bob)
    assert verifies(carol)
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    assert events(alice) == events(bob) and verifies(alice)


def test_resolve_reads_the_side_git_left_out_of_the_working_file(tmp_path: Path) -> None:
    alice, carol = team(tmp_path, ("alice", "carol"), without_driver=("carol",))
    accept, reject = carol_pushes_markers(alice, carol)
    later = decide(alice, "DV1-0004.md", "REJECT")
    commit_all(alice, "alice rejects DV1-0004")
    # a driver that refuses (as an older vt did on a side with markers): git leaves
    # alice's own ledger in the working file, marked conflicted
    git(alice, "config", f"merge.{hook.DRIVER}.driver", "false")
    pulled = git(alice, "pull", "--no-rebase", "origin", "main", check=False)
    assert pulled.returncode != 0
    assert b"<<<<<<<" not in (alice / LEDGER).read_bytes()
    assert reject["id"] not in stamps(alice)
    refused = git(alice, "commit", "-q", "--no-edit", "-a", check=False)
    assert refused.returncode != 0 and "drops 1 event of parent 2" in refused.stderr

    done = run_vt("ledger", "resolve", vault=alice)
    assert done.returncode == 0, done.stderr
    assert "nothing to resolve" not in done.stdout
    assert set(stamps(alice)) == {accept["id"], reject["id"], later["id"]}
    assert stamps(alice)[reject["id"]] == reject["ts"]
    commit_all(alice, "merge")  # through vt's hook: every event of both parents kept
    assert verifies(alice)
    git(alice, "push", "-q", "origin", "main")
    git(carol, "pull", "-q", "--no-rebase", "origin", "main")
    assert verifies(carol) and stamps(carol) == stamps(alice)


def test_a_lost_event_comes_back_with_its_own_ts(tmp_path: Path) -> None:
    alice, carol = team(tmp_path, ("alice", "carol"), without_driver=())
    reject = decide(carol, "DV1-0002.md", "REJECT")
    # as if applied long ago: a new ts now would differ (the ledger line and the note
    # both say when; the line re-hashed, its id unchanged)
    reject = dict(reject, ts="2020-01-01T00:00:00Z")
    reject["hash"] = line_hash(reject)
    (carol / LEDGER).write_text(canonical(reject) + "\n", encoding="utf-8")
    note = carol / "03_claims" / "DV1-0002.md"
    text = note.read_text(encoding="utf-8")
    start = text.index("vt_applied_at: ")
    end = text.index("\n", start)
    note.write_text(text[:start] + 'vt_applied_at: "2020-01-01T00:00:00Z"' + text[end:])
    shutil.rmtree(carol / ".vt")
    commit_all(carol, "carol rejects DV1-0002")
    git(carol, "push", "-q", "origin", "main")
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    # the ledger loses carol's event (as a merge by an older vt could), the note keeps it
    (alice / LEDGER).write_bytes(b"")
    commit_all_unchecked = git(alice, "commit", "-q", "--no-verify", "-am", "lost", check=False)
    assert commit_all_unchecked.returncode == 0
    # a clone whose memory never saw the event (its post-merge refresh did): only the
    # note knows it now
    shutil.rmtree(alice / ".vt")
    assert reject["id"] not in stamps(alice)
    # the note is carol's decision: alice's apply does not record it in carol's name
    report = apply_notes(load_settings(alice), [alice / "03_claims" / "DV1-0002.md"])
    assert not report.applied and [o.claim_id for o in report.others] == ["DV1-0002"]
    assert stamps(alice) == {}
    # carol herself (here, at alice's machine): the note alone is not taken at its word,
    # refused until asked for explicitly, then recorded again with its own ts
    configure(alice, "carol")
    refused = apply_notes(load_settings(alice), [alice / "03_claims" / "DV1-0002.md"])
    assert not refused.applied and "--record-lost" in refused.refused[0].reason
    assert reject["id"] not in stamps(alice)
    report = apply_notes(
        load_settings(alice), [alice / "03_claims" / "DV1-0002.md"], record_lost=True
    )
    (again,) = report.applied
    assert again.new and again.id == reject["id"] and again.ts == reject["ts"]
    assert stamps(alice) == {reject["id"]: reject["ts"]}


def test_a_fast_forward_to_committed_markers_is_repaired_by_the_post_merge_hook(
    tmp_path: Path,
) -> None:
    alice, bob, carol = team(tmp_path, ("alice", "bob", "carol"), without_driver=("carol",))
    accept, reject = carol_pushes_markers(alice, carol)
    pulled = git(bob, "pull", "--no-rebase", "origin", "main", check=False)  # fast-forward
    assert pulled.returncode == 0, pulled.stderr
    assert "came with conflict markers: repaired, 2 events kept" in pulled.stdout + pulled.stderr
    assert b"<<<<<<<" not in (bob / LEDGER).read_bytes()
    assert stamps(bob) == {accept["id"]: accept["ts"], reject["id"]: reject["ts"]}
    # the repair is committed by the hook, after the fast-forward: git status is clean
    assert git(bob, "status", "--porcelain").stdout == ""
    assert git(bob, "log", "-1", "--format=%s").stdout.strip() == SUBJECT
    assert LEDGER in git(bob, "diff", "--name-only", "HEAD^", "HEAD").stdout.splitlines()
    assert verifies(bob)
