"""How a note's decision stands against its claim's heads: the one comparison that apply
(to decide whether to append) and status (to report disagreements) share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from vault_tools.ledger.events import supersedes_value
from vault_tools.ledger.heads import same_decision
from vault_tools.vocabulary import REVERT

FIRST = "first"  # the claim has no event yet: the decision is its first event
AGREES = "agrees"  # every head records the note's decision: the note is marked, nothing added
REVERTED = "reverted"  # the note's applied decision was reverted, and the note is unchanged
DIFFERS = "differs"  # a new event, superseding every head


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a note's decision stands against its claim's heads (see `judge`)."""

    kind: str  # FIRST | AGREES | REVERTED | DIFFERS
    heads: tuple[dict, ...] = ()
    event: dict | None = None  # AGREES: the head the note is to name; REVERTED: the REVERT

    def supersedes(self) -> str | list[str] | None:
        """The `supersedes` of the event a FIRST or DIFFERS verdict appends: every head."""
        return supersedes_value(h["id"] for h in self.heads)


def judge(
    decision: dict[str, Any],
    heads: Sequence[dict],
    applied_id: str | None,
    event_of: Callable[[str], dict | None],
) -> Verdict:
    """The one comparison of a note's decision (`decision_content`) with its claim's
    heads (the events no later event supersedes, in ledger order), for apply and status.

    The note is the reviewer's decision: when every head records it, the claim agrees
    (concurrent identical decisions are one agreement), and the note is to name one of
    them (its own `vt_event_id` if that is a head, else the latest). Otherwise the note's
    decision is a new event that supersedes every head, whether the claim moved on since
    the note was marked (a run killed between append and mark, then a change of mind) or
    was decided differently on two branches. The one exception is a revert: a note marked
    with the decision its claim's heads revert (`applied_id`, looked up with `event_of`
    only then) is not applied again until its reviewer decides anew.
    """
    if not heads:
        return Verdict(FIRST)
    heads = tuple(heads)
    if all(same_decision(decision, h) for h in heads):
        named = next((h for h in heads if h["id"] == applied_id), heads[-1])
        return Verdict(AGREES, heads, named)
    if applied_id is not None and all(
        h["action"] == REVERT and h.get("reverts") == applied_id for h in heads
    ):
        reverted = event_of(applied_id)
        if reverted is not None and same_decision(decision, reverted):
            return Verdict(REVERTED, heads, heads[-1])
    return Verdict(DIFFERS, heads)


def describe_head(event: dict) -> str:
    """`alice REJECT sha256:…`: who decided what, in which event."""
    return f"{event['actor']} {event['action']} {event['id']}"
