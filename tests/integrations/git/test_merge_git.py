"""The ledger across clones with real git: the merge driver, CONFLICT on one claim, and
`vt ledger resolve` after merges made without the driver (conflict markers, merge=union)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git
from vault_tools.config import load_settings
from vault_tools.integrations.git import hook
from vault_tools.integrations.init import init_vault
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.heads import claim_statuses
from vault_tools.ledger.merge import merge_ledgers
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.apply import apply_notes
from vault_tools.store.claims import ClaimStore
from vault_tools.store.refresh import refresh

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_VAULT = REPO / "examples" / "vault"
LEDGER = "05_ledger/decision_ledger.jsonl"


pytestmark = pytest.mark.usefixtures("isolated_git")


def configure(root: Path, name: str) -> None:
    git(root, "config", "user.name", name)
    git(root, "config", "user.email", f"{name}@example.org")


def seed_origin(tmp_path: Path) -> None:
    """tmp_path/origin.git (bare), holding the example vault after `vt init`."""
    seed = tmp_path / "seed"
    shutil.copytree(EXAMPLE_VAULT, seed, ignore=shutil.ignore_patterns(".vt"))
    git(seed, "init", "-q", "-b", "main")
    configure(seed, "seed")
    init_vault(load_settings(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "vault")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")


def two_clones(tmp_path: Path, driver: bool = True) -> tuple[Path, Path]:
    """origin (bare) holding the example vault after `vt init`, and two clones of it."""
    seed_origin(tmp_path)
    clones = []
    for name in ("alice", "bob"):
        git(tmp_path, "clone", "-q", "origin.git", name)
        clone = tmp_path / name
        configure(clone, name)
        if driver:
            hook.install(load_settings(clone))
        clones.append(clone)
    return clones[0], clones[1]


def decision(claim_id: str, action: str, actor: str) -> dict:
    return {
        "action": action,
        "actor": actor,
        "base": "sha256:" + "cd" * 32,
        "checks": {"check_source_claim": True},
        "claim": None,
        "claim_id": claim_id,
        "comment": "",
        "note": f"03_claims/{claim_id}.md",
        "preview": None,
    }


def append(clone: Path, *decisions: dict) -> list[str]:
    settings = load_settings(clone)
    return [ev["id"] for ev in Ledger(settings.ledger_path, settings.state_dir).append(decisions)]


def set_line(clone: Path, note: str, key: str, value: str) -> None:
    path = clone / "03_claims" / note
    text = path.read_text(encoding="utf-8")
    start = text.index(f"{key}: ")
    end = text.index("\n", start)
    path.write_text(text[:start] + f"{key}: {value}" + text[end:], encoding="utf-8")


def sign_as_me(clone: Path, note: str) -> None:
    """The note's reviewer set to the clone's own user, as a reviewer deciding writes it:
    a clone's vt apply records only its own user's decisions."""
    me = git(clone, "config", "user.name").stdout.strip()
    set_line(clone, note, "reviewer", f'"{me}"')


def set_action(clone: Path, note: str, action: str) -> None:
    """A decision made in the clone's Obsidian: the action, and its reviewer."""
    set_line(clone, note, "review_action", action)
    sign_as_me(clone, note)


def apply(clone: Path, note: str) -> str:
    sign_as_me(clone, note)
    report = apply_notes(load_settings(clone), [clone / "03_claims" / note])
    assert len(report.applied) == 1, (report.refused, report.skipped)
    return report.applied[0].id


def commit_all(clone: Path, message: str) -> None:
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", message)  # through vt's pre-commit hook


def pull_merge(clone: Path) -> subprocess.CompletedProcess[str]:
    """Pull with a merge left uncommitted, then commit it: vt's hook checks the merge."""
    done = git(clone, "pull", "-q", "--no-rebase", "--no-commit", "origin", "main", check=False)
    if done.returncode == 0 and (clone / ".git" / "MERGE_HEAD").exists():
        git(clone, "commit", "-q", "--no-edit")
    return done


def event_ids(clone: Path) -> list[str]:
    return [ev["id"] for ev in iter_events(clone / LEDGER)]


def statuses(clone: Path) -> dict[str, str]:
    settings = load_settings(clone)
    refresh(settings)
    with ClaimStore.open(settings) as store:
        return {
            cid: store.claim(cid).status
            for cid in claim_statuses(iter_events(settings.ledger_path))
        }


def test_two_reviewers_on_different_claims_merge_both_ways(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    # round 1: alice pushes first, bob merges, alice fast-forwards
    a1 = apply(alice, "DV1-0001.md")  # APPROVE → ACCEPT
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    b1 = apply(bob, "DV1-0002.md")  # REJECT
    commit_all(bob, "bob rejects DV1-0002")
    assert pull_merge(bob).returncode == 0
    assert "<<<<<<<" not in (bob / LEDGER).read_text()
    git(bob, "push", "-q", "origin", "main")
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    # round 2: bob pushes first, alice merges, bob fast-forwards
    set_action(alice, "DV1-0004.md", "REJECT")
    a2 = apply(alice, "DV1-0004.md")
    commit_all(alice, "alice rejects DV1-0004")
    set_action(bob, "IX2-0328.md", "REJECT")
    b2 = apply(bob, "IX2-0328.md")
    commit_all(bob, "bob rejects IX2-0328")
    git(bob, "push", "-q", "origin", "main")
    assert pull_merge(alice).returncode == 0
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "--no-rebase", "origin", "main")

    for clone in (alice, bob):
        ids = event_ids(clone)
        assert sorted(ids) == sorted([a1, b1, a2, b2])  # none lost, none duplicated
        settings = load_settings(clone)
        result = verify_ledger(settings.ledger_path, settings.state_dir)
        assert result.ok, result.problems
        assert result.events == 4
    assert event_ids(alice) == event_ids(bob)
    expected = {
        "DV1-0001": "ACCEPTED",
        "DV1-0002": "REJECTED",
        "DV1-0004": "REJECTED",
        "IX2-0328": "REJECTED",
    }
    assert statuses(alice) == statuses(bob) == expected


def test_different_decisions_on_one_claim_conflict_until_a_new_decision(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    append(alice, decision("DV1-0004", "REJECT", "alice"))
    commit_all(alice, "alice")
    git(alice, "push", "-q", "origin", "main")
    claim = {
        "atomic_claim": "x",
        "epistemic_mode": "ASSERTED",
        "mapping_status": "FULL",
        "semantic_frame": {},
    }
    append(bob, dict(decision("DV1-0004", "ACCEPT", "bob"), claim=claim))
    commit_all(bob, "bob")
    assert pull_merge(bob).returncode == 0
    assert claim_statuses(iter_events(bob / LEDGER)) == {"DV1-0004": "CONFLICT"}
    assert statuses(bob) == {"DV1-0004": "CONFLICT"}
    git(bob, "push", "-q", "origin", "main")
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    assert statuses(alice) == {"DV1-0004": "CONFLICT"}
    # a decision made after the merge, superseding both heads, settles it
    heads = sorted(ev["id"] for ev in iter_events(alice / LEDGER))
    append(alice, dict(decision("DV1-0004", "REJECT", "carol"), supersedes=heads))
    assert claim_statuses(iter_events(alice / LEDGER)) == {"DV1-0004": "REJECTED"}
    assert statuses(alice) == {"DV1-0004": "REJECTED"}
    commit_all(alice, "carol settles it")


def _diverge(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    alice, bob = two_clones(tmp_path, driver=False)
    ids = append(
        alice, decision("DV1-0001", "REJECT", "alice"), decision("DV1-0002", "REJECT", "alice")
    )
    git(alice, "add", "-A")
    git(alice, "commit", "-qm", "alice")
    git(alice, "push", "-q", "origin", "main")
    # one event both sides hold (copied by hand): it must come out once
    shared = (alice / LEDGER).read_bytes().splitlines(keepends=True)[0]
    (bob / LEDGER).parent.mkdir(parents=True, exist_ok=True)
    (bob / LEDGER).write_bytes(shared)
    ids += append(bob, decision("DV1-0003", "REJECT", "bob"))
    git(bob, "add", "-A")
    git(bob, "commit", "-qm", "bob")
    git(bob, "fetch", "-q", "origin")
    return alice, bob, ids


def _driver_result(bob: Path) -> bytes:
    base = git(bob, "merge-base", "HEAD", "origin/main").stdout.strip()
    base_ledger = git(bob, "show", f"{base}:{LEDGER}", check=False).stdout.encode()
    return merge_ledgers(
        base_ledger,
        git(bob, "show", f"HEAD:{LEDGER}").stdout.encode(),
        git(bob, "show", f"origin/main:{LEDGER}").stdout.encode(),
    )


def test_resolve_after_a_merge_with_conflict_markers(tmp_path: Path) -> None:
    alice, bob, ids = _diverge(tmp_path)
    expected = _driver_result(bob)
    done = git(bob, "merge", "-q", "--no-commit", "origin/main", check=False)
    assert done.returncode != 0
    assert b"<<<<<<<" in (bob / LEDGER).read_bytes()
    hook.install(load_settings(bob))  # the hook now guards the merge commit
    git(bob, "add", LEDGER)
    refused = git(bob, "commit", "-q", "--no-edit", check=False)
    assert refused.returncode == 1 and "ledger-conflict-markers" in refused.stderr
    result = hook.resolve_file(load_settings(bob))
    assert result.changed and result.kept == 3  # the shared event once
    assert (bob / LEDGER).read_bytes() == expected
    assert sorted(event_ids(bob)) == sorted(ids)
    git(bob, "add", LEDGER)
    git(bob, "commit", "-q", "--no-edit")
    settings = load_settings(bob)
    assert verify_ledger(settings.ledger_path, settings.state_dir).ok
    again = hook.resolve_file(settings)
    assert not again.changed and again.kept == 3


def test_resolve_after_a_union_merge(tmp_path: Path) -> None:
    alice, bob, ids = _diverge(tmp_path)
    expected = _driver_result(bob)
    (bob / ".git" / "info").mkdir(exist_ok=True)
    (bob / ".git" / "info" / "attributes").write_text(f"{LEDGER} merge=union\n")
    git(bob, "merge", "-q", "--no-edit", "origin/main")  # committed as is, chain broken
    settings = load_settings(bob)
    assert not verify_ledger(settings.ledger_path, tmp_path / "scratch-state").ok
    hook.install(settings)
    result = hook.resolve_file(settings)
    assert result.changed and result.kept == 3
    assert (bob / LEDGER).read_bytes() == expected
    # re-chaining a ledger HEAD committed broken is the fix, and the hook lets it through
    git(bob, "add", LEDGER)
    git(bob, "commit", "-qm", "resolve the ledger")
    assert sorted(event_ids(bob)) == sorted(ids)


def test_the_driver_refuses_a_tampered_side(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    append(alice, decision("DV1-0001", "REJECT", "alice"))
    commit_all(alice, "alice")
    git(alice, "push", "-q", "origin", "main")
    append(bob, decision("DV1-0002", "REJECT", "bob"))
    path = bob / LEDGER
    path.write_bytes(path.read_bytes().replace(b'"actor":"bob"', b'"actor":"eve"'))
    git(bob, "add", "-A")
    git(bob, "commit", "-q", "--no-verify", "-m", "tampered")
    done = git(bob, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode != 0
    assert "vt ledger merge: ours:1: ours line 1: hash mismatch" in done.stderr
    assert (bob / ".git" / "MERGE_HEAD").exists()  # a conflict, nothing merged silently
