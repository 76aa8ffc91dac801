"""A claim's state from its events: its status, its latest event, and its heads (the
events no later event supersedes; several after decisions made without seeing each
other)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vault_tools.ledger.events import superseded_ids
from vault_tools.vocabulary import (
    ACCEPT,
    CONFLICT,
    POLICY,
    REJECT,
    REJECTED,
    REPAIR,
    REVERTED,
    STATUS_BY_ACTION,
)

DECISION_KEYS = ("action", "claim", "preview", "reverts")


def same_decision(a: dict, b: dict) -> bool:
    """Do two decisions (events, or a note's decision) decide the same thing? What was
    decided counts: who decided, when, the comment and the checklist do not."""
    return all(a.get(k) == b.get(k) for k in DECISION_KEYS)


@dataclass(slots=True)
class ClaimState:
    """A claim's current status computed from its events in ledger order."""

    claim_id: str
    status: str  # ACCEPTED | REPAIRED | REJECTED | REVERTED | CONFLICT
    latest: dict  # its latest event (by seq)
    current: dict | None  # the ACCEPT/REPAIR event whose claim is in force, if any
    # the events no later event supersedes, in ledger order: one, or several after
    # decisions made without seeing each other (on two branches, in two clones)
    heads: list[dict]
    events: int = 0
    decided: str = ""  # the status the events give, a disagreement of the heads aside

    @property
    def contenders(self) -> list[str]:
        """The heads' ids."""
        return [h["id"] for h in self.heads]

    @property
    def agreed(self) -> bool:
        """One head, or several that decide the same thing."""
        first = self.heads[0]
        return all(same_decision(first, h) for h in self.heads[1:])


def _apply_event(state: ClaimState | None, ev: dict) -> ClaimState:
    if state is None:
        state = ClaimState(ev["claim_id"], "", ev, None, [])
    superseded = superseded_ids(ev["supersedes"])
    # the event settles the heads it names; a head it did not see stays one beside it
    state.heads = [h for h in state.heads if h["id"] not in superseded]
    state.heads.append(ev)
    state.latest, state.events = ev, state.events + 1
    action = ev["action"]
    if action in (ACCEPT, REPAIR):
        state.current, state.decided = ev, STATUS_BY_ACTION[action]
    elif action == REJECT:
        state.current, state.decided = None, REJECTED
    elif ev.get("reverts") in superseded or (
        state.current is not None and ev.get("reverts") == state.current["id"]
    ):
        state.current, state.decided = None, REVERTED
    else:
        state.decided = state.decided or REVERTED  # reverting a superseded event
    state.status = state.decided if len(state.heads) == 1 or state.agreed else CONFLICT
    return state


def claim_states(events: Iterable[dict]) -> dict[str, ClaimState]:
    """Per-claim state from events in ledger (seq) order. Pure; streams its input."""
    states: dict[str, ClaimState] = {}
    for ev in events:
        if ev["action"] != POLICY:  # the signing policy: no claim's event
            states[ev["claim_id"]] = _apply_event(states.get(ev["claim_id"]), ev)
    return states


def claim_statuses(events: Iterable[dict]) -> dict[str, str]:
    return {cid: st.status for cid, st in claim_states(events).items()}
