"""`vt apply` on a claim decided on two branches, with real git clones and real merges.

Decided differently, the claim is in CONFLICT after the merge; the reviewer resolves the
note the normal git way, sets review_action and runs `vt apply`: one new event by this
reviewer supersedes both heads and settles the claim, in every clone after push and pull.
Decided alike, the merge is an agreement: the decision, with both reviewers in history.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import commit_all, two_clones
from vault_tools.ledger.reader import iter_events
from vault_tools.notes.note import parse_note

REPO = Path(__file__).resolve().parents[2]
NOTE = "03_claims/DV1-0001.md"  # APPROVE, every check true, reviewer alice
LEDGER = "05_ledger/decision_ledger.jsonl"

pytestmark = pytest.mark.usefixtures("isolated_git")


def vt_json(clone: Path, *args: str, check: bool = True) -> dict:
    done = run_vt(*args, "--json", vault=clone)
    assert done.returncode == 0 or not check, done.stderr
    return json.loads(done.stdout)


def set_props(clone: Path, **values: str) -> None:
    """Edit frontmatter lines by hand, as a reviewer in Obsidian would."""
    path = clone / NOTE
    lines = path.read_text(encoding="utf-8").split("\n")
    for key, value in values.items():
        i = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
        lines[i] = f"{key}: {value}"
    path.write_text("\n".join(lines), encoding="utf-8")


def decide(clone: Path, action: str, reviewer: str) -> dict:
    set_props(clone, review_action=action, reviewer=f'"{reviewer}"')
    applied = vt_json(clone, "apply", str(clone / NOTE))
    (entry,) = applied["applied"]
    assert entry["new"]
    return entry


def events(clone: Path) -> list[dict]:
    return list(iter_events(clone / LEDGER))


def props(clone: Path) -> dict:
    return parse_note((clone / NOTE).read_bytes(), NOTE).properties


@pytest.mark.parametrize(
    ("side", "final"), [("--theirs", "APPROVE"), ("--ours", "REJECT"), (None, "APPROVE")]
)
def test_a_claim_decided_differently_is_settled_by_deciding_again(
    tmp_path: Path, side: str | None, final: str
) -> None:
    """`side` None: only bob's note bytes changed (alice's APPROVE was the note's own
    action already), so the note merges cleanly to bob's REJECT; otherwise both reviewers
    also wrote a comment, a real conflict in the note that git leaves to the reviewer."""
    alice, bob = two_clones(tmp_path)
    if side is not None:
        set_props(alice, review_comment='"fine by me"')
    accept = decide(alice, "APPROVE", "alice")
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    if side is not None:
        set_props(bob, review_comment='"secondary source"')
    reject = decide(bob, "REJECT", "bob")
    commit_all(bob, "bob rejects DV1-0001")

    pulled = git(bob, "pull", "--no-rebase", "origin", "main", check=False)
    if side is None:
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
        assert props(bob)["review_action"] == "REJECT"  # the one side that changed it
    else:
        assert pulled.returncode != 0
        assert f"CONFLICT (content): Merge conflict in {NOTE}" in pulled.stdout
        assert "<<<<<<<" in (bob / NOTE).read_text()
    assert "<<<<<<<" not in (bob / LEDGER).read_text()
    status = vt_json(bob, "status", check=side is None)
    assert status["claims"] == {"CONFLICT": 1}
    (conflict,) = status["conflicts"]
    assert [(h["actor"], h["action"], h["id"]) for h in conflict["heads"]] == [
        ("bob", "REJECT", reject["id"]),
        ("alice", "ACCEPT", accept["id"]),
    ]
    assert conflict["unseen"] == [reject["id"]]
    assert conflict["settle"].startswith("resolve the note, set review_action")
    text = run_vt("status", vault=bob).stdout
    assert f"    bob REJECT {reject['id']} (not seen by the latest decision)" in text
    assert f"    alice ACCEPT {accept['id']} (latest)" in text

    # the normal git way: take one side of the note, then decide
    if side is not None:
        git(bob, "checkout", side, "--", NOTE)
    set_props(bob, review_action=final, reviewer='"bob"')
    git(bob, "add", NOTE)
    (entry,) = vt_json(bob, "status")["disagreements"]
    assert (entry["kind"], [h["id"] for h in entry["heads"]]) == (
        "differs",
        [reject["id"], accept["id"]],
    )
    assert "the claim is in CONFLICT between bob REJECT" in entry["reason"]

    done = run_vt("apply", str(bob / NOTE), vault=bob)
    assert done.returncode == 0, done.stderr
    *_, settle = events(bob)
    action = {"APPROVE": "ACCEPT", "REJECT": "REJECT"}[final]
    assert (
        f"{NOTE} (DV1-0001): {action} appended (supersedes 2 concurrent heads: settled), "
        f"seq 3, {settle['id']}"
    ) in done.stdout
    last = settle
    assert (last["action"], last["actor"]) == (action, "bob")
    assert last["supersedes"] == sorted([accept["id"], reject["id"]])
    assert props(bob)["vt_event_id"] == settle["id"] and props(bob)["review_state"] == "APPLIED"
    settled = {"APPROVE": "ACCEPTED", "REJECT": "REJECTED"}[final]
    for clone in (bob,):
        status = vt_json(clone, "status")
        assert status["claims"] == {settled: 1}
        assert status["conflicts"] == [] and status["disagreements"] == []
    assert vt_json(bob, "apply", str(bob / NOTE))["applied"] == []  # settled: nothing more to do
    assert run_vt("ledger", "verify", vault=bob).returncode == 0

    commit_all(bob, "bob settles DV1-0001")  # the merge commit, through vt's hook
    git(bob, "push", "-q", "origin", "main")
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    assert [ev["id"] for ev in events(alice)] == [ev["id"] for ev in events(bob)]
    status = vt_json(alice, "status")
    assert status["claims"] == {settled: 1}
    assert status["conflicts"] == [] and status["disagreements"] == []
    assert run_vt("ledger", "verify", vault=alice).returncode == 0
    history = vt_json(alice, "history", "DV1-0001")
    assert history["status"] == settled
    assert [h["id"] for h in history["heads"]] == [settle["id"]]
    assert [e["actor"] for e in history["events"]] == ["bob", "alice", "bob"]


def test_a_claim_decided_alike_on_two_branches_is_an_agreement(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    first = decide(alice, "APPROVE", "alice")
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    second = decide(bob, "APPROVE", "bob")
    assert second["id"] != first["id"]  # another reviewer, another event
    commit_all(bob, "bob accepts DV1-0001")

    pulled = git(bob, "pull", "--no-rebase", "origin", "main", check=False)
    # the note differs in vt's bytes and bob's reviewer only: the note driver merges it
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "<<<<<<<" not in (bob / NOTE).read_text()
    status = vt_json(bob, "status")
    assert status["claims"] == {"ACCEPTED": 1}
    assert status["conflicts"] == [] and status["disagreements"] == []
    applied = vt_json(bob, "apply", str(bob / NOTE))
    assert applied["applied"] == [] and applied["skipped"][0]["reason"].startswith(
        "already applied"
    )
    assert len(events(bob)) == 2
    history = vt_json(bob, "history", "DV1-0001")
    assert history["status"] == "ACCEPTED"
    assert [(h["actor"], h["action"]) for h in history["heads"]] == [
        ("bob", "ACCEPT"),
        ("alice", "ACCEPT"),
    ]
    text = run_vt("history", "DV1-0001", vault=bob).stdout
    assert "DV1-0001: ACCEPTED" in text
    assert "decided alike without seeing each other: bob ACCEPT" in text
    assert run_vt("ledger", "verify", vault=bob).returncode == 0
    # the other side of the note names the other head: just as settled
    git(bob, "push", "-q", "origin", "main")
    git(alice, "pull", "-q", "--no-rebase", "origin", "main")
    assert props(alice)["vt_event_id"] == second["id"]
    status = vt_json(alice, "status")
    assert status["claims"] == {"ACCEPTED": 1} and status["disagreements"] == []
