"""After a pull, the post-merge hook (`vt hook refresh`) marks every note as the merged
ledger records it: real git clones, real merges through vt's drivers and hooks.

The note driver keeps ours when both sides marked a note; the refresh then names the
head that records the note's decision, as `vt apply` would, appends no event and
writes no byte of the note but vt's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import commit_all, two_clones
from tests.review.test_apply_conflicts import (
    LEDGER,
    NOTE,
    decide,
    events,
    props,
    set_props,
    vt_json,
)

pytestmark = pytest.mark.usefixtures("isolated_git")

VT_KEYS = ("review_state:", "vt_")


def merged_by_git(clone: Path) -> str:
    """The merge commit as git made it: the one before vt's refresh amended it, if it did."""
    last = git(clone, "reflog", "-1", "--format=%gs").stdout
    return "HEAD@{1}" if last.startswith("vt: ") else "HEAD"


def changed_by_refresh(clone: Path) -> list[str]:
    """The note's lines the post-merge hook changed after git committed the merge."""
    diff = git(clone, "diff", "--unified=0", merged_by_git(clone), "--", NOTE).stdout
    return [
        line[1:]
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def assert_marked_as_recorded(clone: Path, event: dict) -> None:
    """The note names `event`, only vt's bytes were rewritten, the ledger is as merged,
    and `vt status` finds no note the ledger records but the note does not say so."""
    note = props(clone)
    assert (note["review_state"], note["vt_event_id"]) == ("APPLIED", event["id"])
    assert str(note["vt_applied_at"]).replace("+00:00", "Z").replace(" ", "T") == event["ts"]
    assert all(line.startswith(VT_KEYS) for line in changed_by_refresh(clone))
    assert git(clone, "diff", "--quiet", "HEAD", "--", LEDGER, check=False).returncode == 0
    assert git(clone, "status", "--porcelain").stdout == ""  # what it rewrote is committed
    status = vt_json(clone, "status")
    assert [d for d in status["disagreements"] if d["kind"] == "unmarked"] == []
    assert status["edited_since_apply"] == []


def pull(clone: Path, source: str) -> None:
    done = git(clone, "pull", "-q", "--no-rebase", source, "main", check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_decided_differently_every_clone_marks_the_head_of_its_decision(
    tmp_path: Path,
) -> None:
    alice, bob = two_clones(tmp_path)
    accept = decide(alice, "APPROVE", "alice")  # the note said APPROVE: only vt's bytes
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    reject = decide(bob, "REJECT", "bob")
    commit_all(bob, "bob rejects DV1-0001")

    # alice takes bob's commit: his REJECT (the one side that changed review_action),
    # her own marks (both marked the note); the hook names bob's REJECT, the head that
    # records what the note now decides
    pull(alice, str(bob))
    assert props(alice)["review_action"] == "REJECT"
    assert git(alice, "show", f"{merged_by_git(alice)}:{NOTE}").stdout.count(accept["id"]) == 1
    assert_marked_as_recorded(alice, next(e for e in events(alice) if e["id"] == reject["id"]))
    assert vt_json(alice, "status")["claims"] == {"CONFLICT": 1}
    assert changed_by_refresh(alice)  # the refresh rewrote ours' marks, into the merge
    assert (
        git(alice, "rev-parse", "HEAD^2").stdout.strip()
        == git(bob, "rev-parse", "HEAD").stdout.strip()
    )

    # bob merges origin on his side (a criss-cross with alice's merge): his marks stand
    pull(bob, "origin")
    assert_marked_as_recorded(bob, next(e for e in events(bob) if e["id"] == reject["id"]))
    assert changed_by_refresh(bob) == []

    # alice settles the claim with REJECT, as herself (the note said bob's REJECT: bob's
    # decision, which her apply would not record for him); bob pulls: his note names the
    # settling event
    set_props(alice, reviewer='"alice"')
    applied = vt_json(alice, "apply", str(alice / NOTE))
    (entry,) = applied["applied"]
    commit_all(alice, "alice settles DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    before = (bob / NOTE).read_text(encoding="utf-8")
    pull(bob, "origin")
    (settle,) = [e for e in events(bob) if e["id"] == entry["id"]]
    assert sorted(settle["supersedes"]) == sorted([accept["id"], reject["id"]])
    assert_marked_as_recorded(bob, settle)
    assert vt_json(bob, "status")["claims"] == {"REJECTED": 1}
    after = (bob / NOTE).read_text(encoding="utf-8")
    user = [
        'reviewer: "alice"' if line.startswith("reviewer:") else line  # alice's edit came too
        for line in before.splitlines()
        if not line.startswith(VT_KEYS)
    ]
    assert [line for line in after.splitlines() if not line.startswith(VT_KEYS)] == user
    assert vt_json(bob, "apply", str(bob / NOTE))["applied"] == []  # nothing left to do


def test_decided_alike_the_refresh_leaves_the_notes_as_they_are(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    first = decide(alice, "APPROVE", "alice")
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    second = decide(bob, "APPROVE", "bob")
    commit_all(bob, "bob accepts DV1-0001")

    pull(bob, "origin")
    # both heads record the note's decision; bob's note names his own: nothing to write
    assert_marked_as_recorded(bob, next(e for e in events(bob) if e["id"] == second["id"]))
    assert git(bob, "status", "--porcelain").stdout == ""
    git(bob, "push", "-q", "origin", "main")
    pull(alice, "origin")
    assert_marked_as_recorded(alice, next(e for e in events(alice) if e["id"] == second["id"]))
    assert git(alice, "status", "--porcelain").stdout == ""
    assert {e["id"] for e in events(alice)} == {first["id"], second["id"]}


def test_the_commit_that_concludes_a_stopped_merge_refreshes(tmp_path: Path) -> None:
    """Git runs no post-merge hook after a merge that stopped on a conflict: the commit
    that concludes it (post-commit, a merge commit) refreshes instead, so the blocks and
    marks are fresh without waiting for the next pull."""
    alice, bob = two_clones(tmp_path)
    for clone, action in ((alice, "APPROVE"), (bob, "REJECT")):
        decide(clone, action, clone.name)
        with open(clone / NOTE, "a", encoding="utf-8") as note:  # the same line, two ways
            note.write(f"\n{clone.name}'s last word on this claim.\n")
        commit_all(clone, f"{clone.name} decides DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    stopped = git(bob, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert stopped.returncode != 0  # the user's own words differ: theirs to settle
    git(bob, "checkout", "--ours", "--", NOTE)
    git(bob, "add", NOTE)
    git(bob, "commit", "-q", "--no-edit")
    assert git(bob, "rev-parse", "-q", "--verify", "HEAD^2", check=False).returncode == 0
    # the refreshed blocks went into the merge commit, both parents kept
    refreshed = git(bob, "diff", "--name-only", merged_by_git(bob), "HEAD").stdout.splitlines()
    assert refreshed and all(p.startswith("04_knowledge_base/") for p in refreshed)
    assert git(bob, "status", "--porcelain").stdout == ""
    assert git(bob, "rev-parse", "-q", "--verify", "HEAD^2", check=False).returncode == 0
    before = {p: (bob / p).read_bytes() for p in refreshed}
    assert run_vt("hook", "refresh", vault=bob).returncode == 0  # nothing left to refresh
    assert {p: (bob / p).read_bytes() for p in refreshed} == before
    assert vt_json(bob, "status")["claims"] == {"CONFLICT": 1}
