"""`vt ledger audit` with real git histories: each way of shortening, reordering or
rewriting the ledger in a commit is named (commit, author, line) in a fresh clone, exit
3; honest histories, merges made by the driver and merges resolved later audit clean."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, git, make_repo, run_vt
from vault_tools.config import load_settings
from vault_tools.integrations.git import hook
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.merge import _rechain
from vault_tools.ledger.reader import iter_events

sys.path.insert(0, str(REPO / "bench"))
from bench_audit import build_history  # noqa: E402 - the benchmark's own history builder

LEDGER = "05_ledger/decision_ledger.jsonl"

pytestmark = pytest.mark.usefixtures("isolated_git")


def decision(claim_id: str, actor: str = "alice", comment: str = "") -> dict:
    return {
        "action": "REJECT",
        "actor": actor,
        "base": "sha256:" + "ab" * 32,
        "checks": {"check_source_claim": True},
        "claim": None,
        "claim_id": claim_id,
        "comment": comment,
        "note": f"03_claims/{claim_id}.md",
        "preview": None,
    }


def as_user(root: Path, name: str) -> None:
    git(root, "config", "user.name", name)
    git(root, "config", "user.email", f"{name}@example.org")


def origin_with_clones(tmp_path: Path, *names: str) -> list[Path]:
    """A bare origin holding a vault (vt.toml, hook and merge driver), and a clone of it
    for each name, with the hook and driver installed."""
    seed = make_repo(tmp_path / "seed")
    (seed / "vt.toml").write_text("")
    (seed / ".gitignore").write_text(".vt/\n")  # derived state, never committed
    (seed / "03_claims").mkdir()
    (seed / "03_claims" / ".keep").write_text("")
    hook.install(load_settings(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "vault")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")
    clones = []
    for name in names:
        git(tmp_path, "clone", "-q", "origin.git", name)
        as_user(tmp_path / name, name)
        hook.install(load_settings(tmp_path / name))
        clones.append(tmp_path / name)
    return clones


def append(clone: Path, *decisions: dict, message: str = "decisions") -> str:
    """Append the decisions as vt does, commit them (the hook runs) and push."""
    settings = load_settings(clone)
    Ledger(settings.ledger_path, settings.state_dir).append(list(decisions))
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", message)
    return git(clone, "rev-parse", "HEAD").stdout.strip()


def commit_ledger(clone: Path, data: bytes, message: str = "tidy the ledger") -> str:
    """Write the ledger's bytes and commit them past the hook, as a hostile or careless
    committer can (`--no-verify`); the clone's `.vt/` forgets what it trusted."""
    shutil.rmtree(clone / ".vt", ignore_errors=True)
    (clone / LEDGER).write_bytes(data)
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", message, "--no-verify")
    return git(clone, "rev-parse", "HEAD").stdout.strip()


def fresh_clone(tmp_path: Path, name: str = "fresh") -> Path:
    git(tmp_path, "clone", "-q", "origin.git", name)
    return tmp_path / name


def audit(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_vt("ledger", "audit", *args, vault=vault)


def events_of(clone: Path) -> list[dict]:
    return list(iter_events(clone / LEDGER))


def assert_named(done: subprocess.CompletedProcess[str], sha: str, who: str, line: int | None,
                 words: str) -> None:  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    where = f"{LEDGER}:{line}" if line else LEDGER
    expected = f"{where}: commit {sha[:12]} ({who} <{who}@example.org>): "
    lines = [x for x in done.stderr.splitlines() if x.startswith(expected)]
    assert lines and words in lines[0], done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- honest histories


def test_an_honest_history_with_merges_audits_clean_in_a_fresh_clone(tmp_path: Path) -> None:
    alice, bob = origin_with_clones(tmp_path, "alice", "bob")
    append(alice, decision("C-1"))
    git(alice, "push", "-q", "origin", "main")
    append(bob, decision("C-2", "bob"))
    append(alice, decision("C-3"))
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")  # the driver merges
    append(bob, decision("C-4", "bob"))
    git(bob, "push", "-q", "origin", "main")
    fresh = fresh_clone(tmp_path)
    done = audit(fresh, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["problems"] == [] and report["unresolved"] == []
    assert report["events"] == 4 and report["commits"] >= 5  # the merge included
    assert report["tip"] == git(fresh, "rev-parse", "HEAD").stdout.strip()
    plain = audit(fresh)
    assert plain.returncode == 0 and "ledger history ok: " in plain.stdout


def test_a_history_of_1000_commits_audits_clean(tmp_path: Path) -> None:
    origin = build_history(tmp_path / "origin", 1000, merge_every=10)
    git(tmp_path, "clone", "-q", str(origin), "fresh")
    fresh = tmp_path / "fresh"
    (fresh / "vt.toml").write_text("")
    start = time.perf_counter()
    done = audit(fresh, "--json")
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # 1,000 commits on main (99 of them merges), and a side commit for each merge
    assert report["ok"] and report["commits"] == 1099 and report["events"] == 1000
    assert elapsed < 20, elapsed


def test_conflict_markers_committed_then_resolved_are_no_breach(tmp_path: Path) -> None:
    """A teammate without the merge driver commits a ledger with conflict markers (vt's
    docs allow it: nothing is lost); a later commit resolves it. Not a rewrite."""
    alice, bob = origin_with_clones(tmp_path, "alice", "bob")
    append(alice, decision("C-1"))
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "origin", "main")
    append(alice, decision("C-2"))
    git(alice, "push", "-q", "origin", "main")
    append(bob, decision("C-3", "bob"))
    git(bob, "config", "--remove-section", "merge.vt-ledger")  # a clone without the driver
    git(bob, "config", "core.hooksPath", str(tmp_path / "no-hooks"))  # nor vt's hooks
    git(bob, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", check=False)
    assert b"<<<<<<<" in (bob / LEDGER).read_bytes()
    git(bob, "add", "-A")
    git(bob, "commit", "-qm", "merge as is", "--no-verify")
    marked = git(bob, "rev-parse", "HEAD").stdout.strip()
    resolved = run_vt("ledger", "resolve", vault=bob)
    assert resolved.returncode == 0, resolved.stderr
    git(bob, "add", "-A")
    git(bob, "commit", "-qm", "resolve the ledger")
    git(bob, "push", "-q", "origin", "main")
    done = audit(fresh_clone(tmp_path), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["unresolved"] == [marked] and report["events"] == 3


# ---------------------------------------------------------------- attacks, in a fresh clone


def test_a_commit_that_shortens_the_ledger_is_named(tmp_path: Path) -> None:
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"), decision("C-2"), decision("C-3"))
    as_user(alice, "mallory")
    first, _, third = events_of(alice)
    bad = commit_ledger(alice, _rechain([first, third]))  # a valid chain, one event short
    append(alice, decision("C-4"))  # and honest work on top
    git(alice, "push", "-q", "origin", "main")
    fresh = fresh_clone(tmp_path)
    verify = run_vt("ledger", "verify", vault=fresh)
    assert verify.returncode == 0  # the shortened ledger verifies on its own
    assert_named(audit(fresh), bad, "mallory", 2, "line 2 of the ledger of parent")
    assert "is deleted; the ledger is append-only" in audit(fresh).stderr


def test_a_commit_that_deletes_the_last_lines_is_named(tmp_path: Path) -> None:
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"), decision("C-2"))
    as_user(alice, "mallory")
    data = (alice / LEDGER).read_bytes()
    bad = commit_ledger(alice, data[: data.index(b"\n") + 1])
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", 2, "is deleted")


def test_a_line_cut_out_without_rechaining_is_named(tmp_path: Path) -> None:
    """Every line left is a sound event, as in a ledger merged without the driver, but one
    of the parent's events is gone."""
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"), decision("C-2"), decision("C-3"))
    as_user(alice, "mallory")
    lines = (alice / LEDGER).read_bytes().splitlines(keepends=True)
    bad = commit_ledger(alice, lines[0] + lines[2])
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", 2, "is deleted")


def test_a_rewritten_decision_is_named(tmp_path: Path) -> None:
    """An event's decision changed and every hash and id recomputed: a valid chain."""
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"), decision("C-2"), decision("C-3"))
    as_user(alice, "mallory")
    events = events_of(alice)
    events[1] = dict(events[1], comment="accepted after all")
    from vault_tools.ledger.events import decision_id

    events[1]["id"] = decision_id(events[1])
    bad = commit_ledger(alice, _rechain(events))
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", 2, "is changed")


def test_a_reordered_ledger_is_named(tmp_path: Path) -> None:
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"), decision("C-2"), decision("C-3"))
    as_user(alice, "mallory")
    a, b, c = events_of(alice)
    bad = commit_ledger(alice, _rechain([a, c, b]))
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", 2, "append-only")


def test_a_tampered_line_is_named(tmp_path: Path) -> None:
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"))
    as_user(alice, "mallory")
    settings = load_settings(alice)
    Ledger(settings.ledger_path, settings.state_dir).append([decision("C-2")])
    lines = (alice / LEDGER).read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"actor":"alice"', b'"actor":"bob"')  # no hash recomputed
    bad = commit_ledger(alice, b"".join(lines))
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", 2, "hash mismatch")


def test_a_deleted_ledger_is_named(tmp_path: Path) -> None:
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"))
    as_user(alice, "mallory")
    git(alice, "rm", "-q", LEDGER)
    git(alice, "commit", "-qm", "no more ledger", "--no-verify")
    bad = git(alice, "rev-parse", "HEAD").stdout.strip()
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", None, "deleted in this commit")


def test_a_merge_that_drops_the_other_side_is_named(tmp_path: Path) -> None:
    alice, bob = origin_with_clones(tmp_path, "alice", "bob")
    append(alice, decision("C-1"))
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "origin", "main")
    append(bob, decision("C-2", "bob"))
    git(bob, "push", "-q", "origin", "main")
    append(alice, decision("C-3"))
    as_user(alice, "mallory")
    git(alice, "fetch", "-q", "origin")
    # ours, whole: bob's decision is gone from the merged ledger
    git(alice, "merge", "-q", "--no-verify", "-s", "ours", "--no-edit", "origin/main")
    bad = git(alice, "rev-parse", "HEAD").stdout.strip()
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", None, "drops 1 event")


def test_a_merge_that_reorders_one_side_is_named(tmp_path: Path) -> None:
    alice, bob = origin_with_clones(tmp_path, "alice", "bob")
    append(bob, decision("C-9", "bob"))
    git(bob, "push", "-q", "origin", "main")
    append(alice, decision("C-1"), decision("C-2"))
    as_user(alice, "mallory")
    git(alice, "fetch", "-q", "origin")
    git(alice, "merge", "-q", "--no-verify", "--no-commit", "origin/main")
    one, two = events_of(alice)[:2]
    theirs = [e for e in events_of(alice) if e["claim_id"] == "C-9"]
    (alice / LEDGER).write_bytes(_rechain([two, one, *theirs]))
    git(alice, "add", "-A")
    git(alice, "commit", "-qm", "merge", "--no-verify")
    bad = git(alice, "rev-parse", "HEAD").stdout.strip()
    git(alice, "push", "-q", "origin", "main")
    assert_named(audit(fresh_clone(tmp_path)), bad, "mallory", 1, "a merge keeps each side")


def test_reset_soft_and_a_force_push_are_refused_where_the_old_tip_is_known(
    tmp_path: Path,
) -> None:
    """`git reset --soft` and a re-commit of a shortened ledger pass the hook (the new
    commit only appends to its parent), and the pushed history is consistent by itself;
    any clone, or CI, that knows the old tip names the rewrite."""
    alice, carol = origin_with_clones(tmp_path, "alice", "carol")
    append(alice, decision("C-1"))
    append(alice, decision("C-2"))
    git(alice, "push", "-q", "origin", "main")
    git(alice, "push", "-q", "origin", "main:audited")  # e.g. what CI audited last
    git(carol, "pull", "-q", "origin", "main")  # carol saw C-2
    as_user(alice, "mallory")
    git(alice, "reset", "-q", "--soft", "HEAD~1")
    (alice / LEDGER).write_bytes(git(alice, "show", f"HEAD:{LEDGER}").stdout.encode())
    settings = load_settings(alice)
    Ledger(settings.ledger_path, settings.state_dir / "other").append([decision("C-5")])
    git(alice, "add", "-A")
    git(alice, "commit", "-qm", "redo")  # the hook lets it through: an append to HEAD
    bad = git(alice, "rev-parse", "HEAD").stdout.strip()
    git(alice, "push", "-q", "--force", "origin", "main")
    # another clone that saw the old tip, after a fetch
    git(carol, "fetch", "-q", "origin")
    assert_named(audit(carol, "origin/main", "--since", "main"), bad, "mallory", None,
                 "the history was rewritten")  # fmt: skip
    # a fresh clone, given the tip audited before
    fresh = fresh_clone(tmp_path)
    git(fresh, "fetch", "-q", "origin", "audited:refs/remotes/origin/audited")
    assert_named(audit(fresh, "--since", "origin/audited"), bad, "mallory", None,
                 "(a force-push?)")  # fmt: skip


def test_since_checks_only_the_commits_after_it(tmp_path: Path) -> None:
    (alice,) = origin_with_clones(tmp_path, "alice")
    append(alice, decision("C-1"), decision("C-2"))
    as_user(alice, "mallory")
    first, second = events_of(alice)
    bad = commit_ledger(alice, _rechain([second]))
    as_user(alice, "alice")
    append(alice, decision("C-3"))
    append(alice, decision("C-4"))
    full = audit(alice)
    assert_named(full, bad, "mallory", 1, "is deleted")
    recent = audit(alice, "--since", "HEAD~1", "--json")
    assert recent.returncode == 0, recent.stderr
    report = json.loads(recent.stdout)
    assert report["commits"] == 1 and report["since"] is not None


def test_outside_git_and_an_unknown_commit_are_usage_errors(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "vt.toml").write_text("")
    done = audit(plain)
    assert done.returncode == 2 and "not inside a git repository" in done.stderr
    (alice,) = origin_with_clones(tmp_path, "alice")
    done = audit(alice, "--since", "no-such-branch")
    assert done.returncode == 2 and "'no-such-branch' is not a commit" in done.stderr
    assert "Traceback" not in done.stderr
