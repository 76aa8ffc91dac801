"""After any pull `git status` is clean and the next pull is never refused: the post-merge
and post-commit hooks commit what the refresh rewrote (into the merge this pull made, or
in a commit of their own after a fast-forward that brought stale blocks), never a
user's uncommitted edit. Real clones through a bare origin, real hooks and drivers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import git
from tests.integrations.git.test_merge_git import EXAMPLE_VAULT, commit_all, configure, two_clones
from tests.review.test_apply_conflicts import LEDGER, NOTE, events, props, vt_json
from vault_tools.config import load_settings
from vault_tools.integrations.git.pullcommit import SUBJECT
from vault_tools.integrations.init import init_vault

pytestmark = pytest.mark.usefixtures("isolated_git")

NOTES = ("DV1-0001", "DV1-0002", "DV1-0004", "IX2-0328")


def pull(clone: Path) -> None:
    """A pull as a reviewer makes it; it is never refused, and leaves nothing behind."""
    done = git(clone, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(clone, "status", "--porcelain").stdout == ""


def decide(clone: Path, claim_id: str, action: str, comment: str | None = None) -> None:
    """Edit the note as its reviewer (every check ticked) and run a plain `vt apply`."""
    path = clone / "03_claims" / f"{claim_id}.md"
    me = git(clone, "config", "user.name").stdout.strip()  # the clone's reviewer
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("review_action:"):
            lines[i] = f"review_action: {action}"
        elif line.startswith("reviewer:"):
            lines[i] = f'reviewer: "{me}"'
        elif line.startswith("check_"):
            lines[i] = line.split(":")[0] + ": true"
        elif line.startswith("review_comment:") and comment is not None:
            lines[i] = f'review_comment: "{comment}"'
    path.write_text("\n".join(lines), encoding="utf-8")
    assert vt_json(clone, "apply", str(path))["refused"] == []


def push(clone: Path) -> None:
    """Push; a rejected push is pulled (a merge) and pushed again."""
    if git(clone, "push", "-q", "origin", "main", check=False).returncode != 0:
        pull(clone)
        git(clone, "push", "-q", "origin", "main")


def parents(clone: Path, rev: str = "HEAD") -> list[str]:
    return git(clone, "log", "-1", "--format=%P", rev).stdout.split()


def head(clone: Path) -> str:
    return git(clone, "rev-parse", "HEAD").stdout.strip()


def test_a_merging_pull_commits_the_refresh_into_its_merge(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    decide(alice, "DV1-0001", "APPROVE")
    commit_all(alice, "alice accepts DV1-0001")
    push(alice)
    decide(bob, "DV1-0001", "REJECT")
    commit_all(bob, "bob rejects DV1-0001")
    ours = head(bob)

    pull(bob)  # a merge: the refresh rewrote blocks and marks, and they went into it
    assert parents(bob) == [ours, git(bob, "rev-parse", "FETCH_HEAD").stdout.strip()]
    amended = git(bob, "reflog", "-1", "--format=%gs").stdout
    assert amended.startswith("vt: "), amended
    changed = git(bob, "diff", "--name-only", "HEAD@{1}", "HEAD").stdout.splitlines()
    assert changed and all(p.startswith("04_knowledge_base/") or p == NOTE for p in changed)
    # the amend carries vt's bytes only: the marks of the note, the knowledge-base blocks
    diff = git(bob, "diff", "--unified=0", "HEAD@{1}", "HEAD", "--", NOTE).stdout
    lines = [x[1:] for x in diff.splitlines() if x[:1] in "+-" and x[1:3] not in ("++", "--")]
    assert all(x.startswith(("review_state:", "vt_")) for x in lines), lines
    assert vt_json(bob, "status")["claims"] == {"CONFLICT": 1}
    push(bob)

    # alice fast-forwards to bob's merge: it is consistent, nothing is rewritten
    before = head(alice)
    pull(alice)
    assert head(alice) == head(bob) != before
    assert git(alice, "log", "-1", "--format=%s").stdout.strip() != SUBJECT


def test_rounds_of_three_clones_leave_every_pull_clean(tmp_path: Path) -> None:
    """Three reviewers deciding at once and reversing each other's decisions, each
    round pulling and pushing: no pull is refused, `git status` is empty after each,
    and a clone that fast-forwards to a teammate's commit has nothing to rewrite."""
    alice, bob = two_clones(tmp_path)
    git(tmp_path, "clone", "-q", "origin.git", "carol")
    carol = tmp_path / "carol"
    git(carol, "config", "user.name", "carol")
    git(carol, "config", "user.email", "carol@example.org")
    assert vt_json(carol, "init")["changes"]
    team = [alice, bob, carol]
    for round_ in range(3):
        for clone in team:
            pull(clone)
        for i, clone in enumerate(team):  # each on another note: merges, no conflict
            claim_id = NOTES[(round_ + i) % len(NOTES)]  # next round: a teammate's note
            decide(clone, claim_id, ["APPROVE", "REJECT"][(round_ + i) % 2])
            commit_all(clone, f"{clone.name}: {claim_id} in round {round_}")
        for clone in team:
            push(clone)  # all but the first pull a merge, then push
    for clone in team:
        pull(clone)
        assert head(clone) == head(team[0])
        subjects = git(clone, "log", "--format=%s").stdout.splitlines()
        assert SUBJECT not in subjects  # every pushed commit was consistent already
    ids = {e["id"] for e in events(alice)}
    assert all({e["id"] for e in events(clone)} == ids for clone in team)


def test_a_fast_forward_to_stale_blocks_is_refreshed_in_a_commit_of_its_own(
    tmp_path: Path,
) -> None:
    """A teammate without vt's hooks commits a decision and not the blocks it changes:
    the clone that fast-forwards to it commits the refresh on its own."""
    alice, bob = two_clones(tmp_path)
    decide(alice, "DV1-0001", "APPROVE")
    git(alice, "add", "--", LEDGER, NOTE)  # the knowledge-base blocks left out
    git(alice, "commit", "-qm", "alice accepts DV1-0001")
    assert git(alice, "status", "--porcelain").stdout  # the blocks she did not commit
    git(alice, "push", "-q", "origin", "main")
    pushed = git(alice, "rev-parse", "HEAD").stdout.strip()

    pull(bob)
    assert git(bob, "log", "-1", "--format=%s").stdout.strip() == SUBJECT
    assert parents(bob) == [pushed]
    refreshed = git(bob, "diff", "--name-only", "HEAD^", "HEAD").stdout.splitlines()
    assert refreshed and all(p.startswith("04_knowledge_base/") for p in refreshed)
    # the same bytes alice's apply wrote: the refresh is a function of ledger and notes
    for path in refreshed:
        assert (bob / path).read_bytes() == (alice / path).read_bytes()
    git(bob, "push", "-q", "origin", "main")
    git(alice, "checkout", "-q", "--", ".")  # alice drops her uncommitted blocks
    pull(alice)  # a fast-forward to bob's refresh: nothing left to do
    assert head(alice) == head(bob)


def test_a_users_uncommitted_edit_is_never_committed(tmp_path: Path) -> None:
    """Bob's decision reaches alice's ledger (with his note left out); alice has an
    uncommitted edit in the note it marks. The refresh marks it, in the working tree
    only: her edit stays hers to commit, the rest of the refresh goes into the merge."""
    alice, bob = two_clones(tmp_path)
    decide(bob, "DV1-0001", "APPROVE")  # what alice's note asks for too
    git(bob, "add", "--", LEDGER)
    git(bob, "commit", "-qm", "the ledger alone")
    git(bob, "push", "-q", "origin", "main")
    (alice / "notes.md").write_text("alice's own file\n", encoding="utf-8")
    commit_all(alice, "something else")
    with open(alice / NOTE, "a", encoding="utf-8") as note:
        note.write("\nalice's afterthought, not committed yet.\n")

    done = git(alice, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stderr
    assert git(alice, "status", "--porcelain").stdout == f" M {NOTE}\n"
    assert "afterthought" not in git(alice, "show", f"HEAD:{NOTE}").stdout
    assert "afterthought" in (alice / NOTE).read_text(encoding="utf-8")
    assert props(alice)["review_state"] == "APPLIED"  # marked, beside her edit
    assert len(parents(alice)) == 2
    assert "not committed" in done.stderr


def test_reviewers_who_agree_merge_over_git(tmp_path: Path) -> None:
    """Two APPROVEs with different reviewers and comments: the pull merges without a
    conflict, the merging clone's lines stand, and the ledger keeps both events."""
    alice, bob = two_clones(tmp_path)
    decide(alice, "DV1-0002", "APPROVE", "the source checks out")
    commit_all(alice, "alice accepts DV1-0002")
    push(alice)
    decide(bob, "DV1-0002", "APPROVE", "fine")
    commit_all(bob, "bob accepts DV1-0002")
    pull(bob)
    note = (bob / "03_claims" / "DV1-0002.md").read_text(encoding="utf-8")
    assert "<<<<<<<" not in note and 'reviewer: "bob"' in note and '"fine"' in note
    mine = [e for e in events(bob) if e["claim_id"] == "DV1-0002"]
    assert sorted(e["comment"] for e in mine) == ["fine", "the source checks out"]
    assert vt_json(bob, "status")["claims"] == {"ACCEPTED": 1}  # an agreement, no CONFLICT


def test_a_vault_in_a_subfolder_of_the_repository(tmp_path: Path) -> None:
    """The refreshed files are committed by their repository paths, and a file outside
    the vault that the user left uncommitted stays theirs."""
    seed = tmp_path / "seed"
    shutil.copytree(EXAMPLE_VAULT, seed / "vault", ignore=shutil.ignore_patterns(".vt"))
    (seed / "README.md").write_text("the team's vault\n", encoding="utf-8")
    git(seed, "init", "-q", "-b", "main")
    configure(seed, "seed")
    init_vault(load_settings(seed / "vault"))
    commit_all(seed, "vault")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")
    alice, bob = (tmp_path / name for name in ("alice", "bob"))
    for clone in (alice, bob):
        git(tmp_path, "clone", "-q", "origin.git", clone.name)
        configure(clone, clone.name)
        init_vault(load_settings(clone / "vault"))
    decide(alice / "vault", "DV1-0001", "APPROVE")
    commit_all(alice, "alice accepts DV1-0001")
    push(alice)
    decide(bob / "vault", "DV1-0001", "REJECT")
    commit_all(bob, "bob rejects DV1-0001")
    (bob / "README.md").write_text("the team's vault, and bob's notes\n", encoding="utf-8")

    done = git(bob, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stderr
    assert git(bob, "status", "--porcelain").stdout == " M README.md\n"
    changed = git(bob, "diff", "--name-only", "HEAD@{1}", "HEAD").stdout.splitlines()
    assert changed and all(p.startswith("vault/04_knowledge_base/") for p in changed)


def test_a_rebasing_pull_leaves_git_clean(tmp_path: Path) -> None:
    """`git pull --rebase`: no refresh while the upstream is checked out mid-rebase (its
    ledger lacks our events), one after it (post-rewrite), committed on its own if the
    replayed commits carry stale blocks; the next rebasing pull is never refused."""
    alice, bob = two_clones(tmp_path)
    # first the same claim decided two ways (bob's replayed commit carries blocks and
    # marks of a ledger without alice's event: stale), then two claims apart
    for a_note, b_note, stale in (("DV1-0001", "DV1-0001", True), ("DV1-0004", "IX2-0328", False)):
        decide(alice, a_note, "APPROVE")
        commit_all(alice, f"alice accepts {a_note}")
        push(alice)
        decide(bob, b_note, "REJECT")
        commit_all(bob, f"bob rejects {b_note}")
        done = git(bob, "pull", "--rebase", "origin", "main", check=False)
        assert done.returncode == 0, done.stderr
        assert "changed since it was verified" not in done.stderr  # nothing ran mid-rebase
        assert git(bob, "status", "--porcelain").stdout == ""
        assert len(parents(bob)) == 1  # rebased: no merge commit
        subjects = git(bob, "log", "-2", "--format=%s").stdout.splitlines()
        mine = f"bob rejects {b_note}"
        expected = [SUBJECT, mine] if stale else [mine, f"alice accepts {a_note}"]
        assert subjects == expected
        git(bob, "push", "-q", "origin", "main")
        pull(alice)  # a fast-forward to bob's commits: consistent, nothing to rewrite
        assert head(alice) == head(bob)
    assert vt_json(bob, "status")["claims"].get("CONFLICT") == 1  # DV1-0001: two heads
