"""Which parts of a claim a repair changed: the one answer `vt export --dataset` records
and the quality figures count (docs/dataset.md, "changed parts").

A claim is the ledger's claim object (`atomic_claim`, `epistemic_mode`, `mapping_status`,
`semantic_frame`). A part compares what a reader of the claim would call the same:
entities and numeric or temporal mentions as multisets (a reordered list says the same
thing), text after Unicode NFC (a note saved in NFD reads the same). Anything malformed
(a frame that is not an object, a list of non-strings) is compared as it stands, never
refused: the ledger's claim objects are only checked for their four keys.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from vault_tools.ledger.events import canonical

# In the order a reviewer reads a note: the sentence, its mode and mapping status, then
# the frame. `vt stats` and the dataset list changed parts in this order.
PARTS = (
    "claim_text",
    "mode",
    "mapping_status",
    "frame_type",
    "operator",
    "metric",
    "expression",
    "entities",
    "condition",
    "numbers",
    "dates",
)


def _text(value: Any) -> Any:
    return unicodedata.normalize("NFC", value) if isinstance(value, str) else value


def _bag(value: Any) -> Any:
    """A list as a sorted multiset of its items' canonical JSON; anything else as is."""
    if isinstance(value, list):
        return sorted(canonical(_normalised(item)) for item in value)
    return _normalised(value)


def _normalised(value: Any) -> Any:
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if isinstance(value, dict):
        return {_text(k): _normalised(v) for k, v in value.items()}
    return value


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def parts_of(claim: dict[str, Any] | None) -> dict[str, Any]:
    """Each part of `claim` in the form two claims are compared in (PARTS order)."""
    claim = _dict(claim)
    frame = _dict(claim.get("semantic_frame"))
    qualifiers = _dict(frame.get("qualifiers"))
    return {
        "claim_text": _text(claim.get("atomic_claim")),
        "mode": _text(claim.get("epistemic_mode")),
        "mapping_status": _text(claim.get("mapping_status")),
        "frame_type": _normalised(frame.get("frame_type")),
        "operator": _normalised(frame.get("operator")),
        "metric": _normalised(frame.get("metric")),
        "expression": _normalised(frame.get("comparison_expression")),
        "entities": _bag(frame.get("entities")),
        "condition": _normalised(qualifiers.get("condition_text")),
        "numbers": _bag(qualifiers.get("numeric_mentions")),
        "dates": _bag(qualifiers.get("temporal_mentions")),
    }


def changed_parts(v1: dict[str, Any] | None, v2: dict[str, Any] | None) -> list[str]:
    """The PARTS in which claim `v2` differs from claim `v1`, in PARTS order.

    Symmetric (changed_parts(a, b) == changed_parts(b, a)) and empty for a claim against
    itself. None stands for no claim: every part is then absent, so against a real claim
    every part it has counts as changed.
    """
    a, b = parts_of(v1), parts_of(v2)
    # compared as canonical JSON: a NaN a hand-edited line might hold equals itself there
    return [part for part in PARTS if canonical(a[part]) != canonical(b[part])]
