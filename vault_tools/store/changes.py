"""Which parts of a claim a repair changed, V1 → V2: one answer for `vt stats` and the
dataset export.

A claim is the dict a ledger event records (`atomic_claim`, `epistemic_mode`,
`mapping_status`, `semantic_frame`); a part that is missing or does not parse is None on
either side and compares like any other value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vault_tools.ledger.events import canonical

PARTS = (
    "claim_text",
    "operator",
    "metric",
    "entities",
    "condition",
    "numbers",
    "mode",
    "mapping_status",
)


def _frame(claim: dict | None) -> dict:
    frame = claim.get("semantic_frame") if isinstance(claim, dict) else None
    return frame if isinstance(frame, dict) else {}


def _qualifier(claim: dict | None, key: str) -> Any:
    qualifiers = _frame(claim).get("qualifiers")
    return qualifiers.get(key) if isinstance(qualifiers, dict) else None


def _field(claim: dict | None, key: str) -> Any:
    return claim.get(key) if isinstance(claim, dict) else None


def _entities(claim: dict | None) -> Any:
    entities = _frame(claim).get("entities")
    if not isinstance(entities, list):
        return entities
    # the same entities listed in another order are the same mapping
    return sorted(canonical(e) for e in entities)


_READERS: dict[str, Callable[[dict | None], Any]] = {
    "claim_text": lambda c: _field(c, "atomic_claim"),
    "operator": lambda c: _frame(c).get("operator"),
    "metric": lambda c: _frame(c).get("metric"),
    "entities": _entities,
    "condition": lambda c: _qualifier(c, "condition_text"),
    "numbers": lambda c: _qualifier(c, "numeric_mentions"),
    "mode": lambda c: _field(c, "epistemic_mode"),
    "mapping_status": lambda c: _field(c, "mapping_status"),
}


def changed_parts(v1: dict | None, v2: dict | None) -> list[str]:
    """The parts (of PARTS, in that order) whose value differs between V1 and V2."""
    return [part for part in PARTS if _READERS[part](v1) != _READERS[part](v2)]
