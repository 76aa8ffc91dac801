"""`judge`: a note's decision against its claim's heads, the one rule of apply and status."""

from __future__ import annotations

from vault_tools.review.verdict import AGREES, DIFFERS, FIRST, REVERTED, judge

ACCEPT = {"action": "ACCEPT", "claim": {"atomic_claim": "x"}, "preview": None}
REJECT = {"action": "REJECT", "claim": None, "preview": None}


def event(n: int, decision: dict, **extra: object) -> dict:
    return {**decision, "id": f"sha256:{n:064x}", "actor": f"r{n}", **extra}


def no_lookup(event_id: str) -> dict | None:
    raise AssertionError(f"looked up {event_id} without need")


def test_no_event_yet_is_a_first_decision() -> None:
    verdict = judge(ACCEPT, [], None, no_lookup)
    assert verdict.kind == FIRST and verdict.supersedes() is None


def test_the_latest_event_recording_the_decision_agrees() -> None:
    a = event(1, ACCEPT)
    verdict = judge(ACCEPT, [a], None, no_lookup)
    assert (verdict.kind, verdict.event) == (AGREES, a)


def test_a_change_of_mind_after_a_crash_differs_from_the_latest_event() -> None:
    # the note names its old ACCEPT; the crashed run appended REJECT; the note says ACCEPT
    a, r = event(1, ACCEPT), event(2, REJECT, supersedes=event(1, ACCEPT)["id"])
    verdict = judge(ACCEPT, [r], a["id"], no_lookup)
    assert verdict.kind == DIFFERS and verdict.supersedes() == r["id"]


def test_concurrent_alike_heads_agree_and_the_note_keeps_its_own() -> None:
    a1, a2 = event(1, ACCEPT), event(2, ACCEPT)
    assert judge(ACCEPT, [a1, a2], a1["id"], no_lookup).event == a1
    assert judge(ACCEPT, [a1, a2], None, no_lookup).event == a2  # else the latest


def test_a_decision_equal_to_one_of_two_heads_still_differs() -> None:
    a, r = event(1, ACCEPT), event(2, REJECT)
    for decision in (ACCEPT, REJECT):
        verdict = judge(decision, [a, r], a["id"], no_lookup)
        assert verdict.kind == DIFFERS
        assert verdict.supersedes() == sorted([a["id"], r["id"]])


def test_a_reverted_decision_is_not_applied_again_until_the_note_changes() -> None:
    a = event(1, ACCEPT)
    revert = event(2, {"action": "REVERT", "claim": None, "preview": None}, reverts=a["id"])
    found = {a["id"]: a}
    verdict = judge(ACCEPT, [revert], a["id"], found.get)
    assert (verdict.kind, verdict.event) == (REVERTED, revert)
    assert judge(REJECT, [revert], a["id"], found.get).kind == DIFFERS
    # a note that does not name the reverted event decides anew
    assert judge(ACCEPT, [revert], None, no_lookup).kind == DIFFERS
