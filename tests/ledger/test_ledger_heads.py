"""A claim's heads: `supersedes` naming several events, agreement versus CONFLICT.

The heads of a claim are its events that no later event supersedes. Decisions made without
seeing each other leave several; they agree when they decide the same thing, and only an
event that supersedes every head settles a disagreement.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.ledger.test_ledger import decision
from vault_tools.checks.schemas import Schemas
from vault_tools.ledger.append import InvalidEventError, Ledger
from vault_tools.ledger.events import event_problems, superseded_ids, supersedes_value
from vault_tools.ledger.heads import claim_states
from vault_tools.ledger.merge import merge_ledgers
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.store.claims import ClaimStore

SCHEMAS = Schemas()
LIST_MESSAGE = "supersedes must be an event id, a sorted list of two or more event ids, or null"


def ledger_in(root: Path) -> Ledger:
    return Ledger(root / "05_ledger" / "decision_ledger.jsonl", root / ".vt")


def fork(
    ledger: Ledger, first: str = "REJECT", second: str = "ACCEPT", claim_id: str = "C1"
) -> tuple[dict, ...]:
    """One ACCEPT, then two decisions that both supersede it: what a merge of two
    branches leaves (ann on one, bob on the other)."""
    (a,) = ledger.append([decision(claim_id, actor="ann")])
    b, c = ledger.append(
        [
            decision(claim_id, first, actor="ann", comment="ann's branch", supersedes=a["id"]),
            decision(claim_id, second, actor="bob", comment="bob's branch", supersedes=a["id"]),
        ]
    )
    return a, b, c


def verifies_cold_and_warm(ledger: Ledger, tmp_path: Path) -> None:
    # cold: every line parsed; warm: the prefix verified before is re-proved line by line
    # from its bytes (the seen rows are then read by position, lists included)
    state = tmp_path / "verify-state"
    shutil.rmtree(state, ignore_errors=True)
    for _ in range(2):
        result = verify_ledger(ledger.path, state)
        assert result.ok, result.problems


def test_supersedes_value_keeps_one_id_a_string() -> None:
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    assert supersedes_value([]) is None
    assert supersedes_value([b]) == b
    assert supersedes_value([b, a, b]) == [a, b]
    assert superseded_ids(None) == () and superseded_ids(a) == (a,)
    assert superseded_ids([a, b]) == (a, b)


def test_an_event_superseding_both_heads_settles_the_claim(tmp_path: Path) -> None:
    ledger = ledger_in(tmp_path)
    a, b, c = fork(ledger)
    state = claim_states(iter_events(ledger.path))["C1"]
    assert state.status == "CONFLICT" and state.contenders == [b["id"], c["id"]]
    (d,) = ledger.append(
        [decision("C1", "REJECT", actor="cy", supersedes=sorted([b["id"], c["id"]]))]
    )
    assert d["supersedes"] == sorted([b["id"], c["id"]])
    assert event_problems(d) == []
    assert SCHEMAS.check("event", d) == []
    state = claim_states(iter_events(ledger.path))["C1"]
    assert (state.status, state.contenders) == ("REJECTED", [d["id"]])
    verifies_cold_and_warm(ledger, tmp_path)
    # decided again later: a single head again, a plain id
    (e,) = ledger.append([decision("C1", actor="cy")])
    assert e["supersedes"] == d["id"]
    verifies_cold_and_warm(ledger, tmp_path)


def test_superseding_one_of_two_heads_leaves_the_claim_in_conflict(tmp_path: Path) -> None:
    ledger = ledger_in(tmp_path)
    a, b, c = fork(ledger)
    # cy saw bob's ACCEPT only, and accepts again: ann's REJECT stays a head beside it
    (d,) = ledger.append([decision("C1", "ACCEPT", actor="cy", supersedes=c["id"])])
    state = claim_states(iter_events(ledger.path))["C1"]
    assert (state.status, state.contenders) == ("CONFLICT", [b["id"], d["id"]])
    (e,) = ledger.append(
        [
            decision(
                "C1",
                "REJECT",
                actor="cy",
                comment="both seen",
                supersedes=sorted([b["id"], d["id"]]),
            )
        ]
    )
    assert claim_states(iter_events(ledger.path))["C1"].status == "REJECTED"
    verifies_cold_and_warm(ledger, tmp_path)


@pytest.mark.parametrize(("action", "status"), [("ACCEPT", "ACCEPTED"), ("REJECT", "REJECTED")])
def test_concurrent_identical_decisions_are_an_agreement(
    tmp_path: Path, action: str, status: str
) -> None:
    ledger = ledger_in(tmp_path)
    a, b, c = fork(ledger, first=action, second=action)
    state = claim_states(iter_events(ledger.path))["C1"]
    assert state.status == status and state.agreed
    assert [h["actor"] for h in state.heads] == ["ann", "bob"]
    assert state.current == (c if action == "ACCEPT" else None)
    with _store(tmp_path, ledger) as store:
        store.catch_up()
        assert store.claim("C1").status == status  # type: ignore[union-attr]
        assert [h["actor"] for h in store.heads("C1")] == ["ann", "bob"]
        assert store.conflicts() == []


def test_three_heads_one_disagreeing_is_a_conflict(tmp_path: Path) -> None:
    ledger = ledger_in(tmp_path)
    a, b, c = fork(ledger, first="ACCEPT", second="ACCEPT")
    (d,) = ledger.append([decision("C1", "REJECT", actor="cy", supersedes=a["id"])])
    state = claim_states(iter_events(ledger.path))["C1"]
    assert state.status == "CONFLICT" and len(state.heads) == 3


@pytest.mark.parametrize(
    "supersedes", ["unsorted", "one-element list", "repeated id", "not an id", "empty list"]
)
def test_malformed_lists_are_refused(tmp_path: Path, supersedes: str) -> None:
    ledger = ledger_in(tmp_path)
    a, b, c = fork(ledger)
    ids = sorted([b["id"], c["id"]])
    value = {
        "unsorted": ids[::-1],
        "one-element list": ids[:1],
        "repeated id": [ids[0]] * 2,
        "not an id": [ids[0], "b"],
        "empty list": [],
    }[supersedes]
    with pytest.raises(InvalidEventError, match=LIST_MESSAGE):
        ledger.append([decision("C1", actor="cy", supersedes=value)])
    event = dict(c, supersedes=value)
    assert LIST_MESSAGE in event_problems(event)
    if supersedes != "unsorted":  # the order is the one rule JSON Schema cannot state
        assert SCHEMAS.check("event", event) != []


def test_verify_checks_every_id_of_a_list(tmp_path: Path) -> None:
    ledger = ledger_in(tmp_path)
    a, b, c = fork(ledger)
    (other,) = ledger.append([decision("C2", actor="ann")])
    # a list naming an event of another claim: well formed, but not a head of C1
    (d,) = ledger.append([decision("C1", actor="cy", supersedes=sorted([b["id"], other["id"]]))])
    result = verify_ledger(ledger.path, tmp_path / "verify-state")
    assert not result.ok
    assert [p.message for p in result.problems] == [
        f"line 5: supersedes {other['id']}, which is not an earlier event of the same claim"
    ]


def test_merge_and_store_keep_lists(tmp_path: Path) -> None:
    ours = ledger_in(tmp_path / "ours")
    a, b, c = fork(ours)
    base = ours.path.read_bytes()
    ours.append([decision("C1", "REJECT", actor="cy", supersedes=sorted([b["id"], c["id"]]))])
    theirs = ledger_in(tmp_path / "theirs")
    theirs.path.parent.mkdir(parents=True)
    theirs.path.write_bytes(base)
    theirs.append([decision("C2", actor="bob")])
    merged = merge_ledgers(base, ours.path.read_bytes(), theirs.path.read_bytes())
    out = ledger_in(tmp_path / "merged")
    out.path.parent.mkdir(parents=True)
    out.path.write_bytes(merged)
    verifies_cold_and_warm(out, tmp_path)
    with _store(tmp_path / "merged", out) as store:
        store.catch_up()
        assert store.claim("C1").status == "REJECTED"  # type: ignore[union-attr]
        assert store.forked() == {}
        settle = [ev for ev in store.history("C1") if ev["actor"] == "cy"][0]
        assert settle["supersedes"] == sorted([b["id"], c["id"]])


def test_a_large_verify_reads_lists_too(tmp_path: Path) -> None:
    ledger = ledger_in(tmp_path)
    for i in range(80):
        a, b, c = fork(ledger, claim_id=f"K{i}")
        ledger.append(
            [decision(f"K{i}", "REJECT", actor="cy", supersedes=sorted([b["id"], c["id"]]))]
        )
    result = verify_ledger(ledger.path, tmp_path / "verify-state")
    assert (result.ok, result.events, result.problems) == (True, 320, [])


def _store(root: Path, ledger: Ledger) -> ClaimStore:
    from vault_tools.config import load_settings

    settings = load_settings(root)
    assert settings.ledger_path == ledger.path
    return ClaimStore.open(settings)
