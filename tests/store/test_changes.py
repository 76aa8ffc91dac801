"""`changed_parts`: which parts of a claim a repair changed, on hand-made V1/V2 pairs, and
its symmetry and identity over generated claims."""

from __future__ import annotations

import copy
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.ledger.events import canonical
from vault_tools.store.changes import PARTS, changed_parts, parts_of


def claim(**changes: Any) -> dict[str, Any]:
    """A V1 claim like the example vault's, with `changes` applied (dotted frame keys)."""
    base: dict[str, Any] = {
        "atomic_claim": "Speculative decoding cuts latency by 2x on A100.",
        "epistemic_mode": "ASSERTED",
        "mapping_status": "COMPLETE",
        "semantic_frame": {
            "comparison_expression": "speculative decoding < plain decoding",
            "entities": [
                {"id": "04_knowledge_base/Speculative Decoding", "label": "speculative decoding"},
                {"id": "04_knowledge_base/A100", "label": "A100"},
            ],
            "frame_type": "COMPARISON",
            "metric": "LATENCY_COST",
            "operator": "LESS_THAN",
            "qualifiers": {
                "condition_text": "on A100",
                "numeric_mentions": ["2x", "100"],
                "temporal_mentions": ["2024"],
            },
        },
    }
    for key, value in changes.items():
        target = base
        *path, last = key.split("__")
        for step in path:
            target = target[step]
        target[last] = value
    return base


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, []),
        ({"atomic_claim": "Speculative decoding cuts latency by 3x on A100."}, ["claim_text"]),
        ({"epistemic_mode": "HYPOTHETICAL"}, ["mode"]),
        ({"mapping_status": "PARTIAL"}, ["mapping_status"]),
        ({"semantic_frame__operator": "APPROX_EQUAL"}, ["operator"]),
        ({"semantic_frame__metric": "THROUGHPUT"}, ["metric"]),
        ({"semantic_frame__frame_type": "RANKING"}, ["frame_type"]),
        ({"semantic_frame__comparison_expression": "x < y"}, ["expression"]),
        (
            {"semantic_frame__entities": [{"id": "04_knowledge_base/A100", "label": "A100"}]},
            ["entities"],
        ),  # fmt: skip
        ({"semantic_frame__qualifiers__condition_text": None}, ["condition"]),
        ({"semantic_frame__qualifiers__numeric_mentions": ["3x", "100"]}, ["numbers"]),
        ({"semantic_frame__qualifiers__temporal_mentions": []}, ["dates"]),
        (
            {
                "atomic_claim": "Speculative decoding may cut latency by 3x.",
                "epistemic_mode": "HYPOTHETICAL",
                "semantic_frame__qualifiers__numeric_mentions": ["3x"],
                "semantic_frame__qualifiers__condition_text": None,
            },
            ["claim_text", "mode", "condition", "numbers"],
        ),
    ],
)
def test_hand_made_pairs(changes: dict[str, Any], expected: list[str]) -> None:
    assert changed_parts(claim(), claim(**changes)) == expected


def test_reordered_lists_and_nfd_text_change_nothing() -> None:
    v1 = claim(atomic_claim="Café latency is 2x lower.")
    v2 = copy.deepcopy(v1)
    v2["atomic_claim"] = unicodedata.normalize("NFD", v1["atomic_claim"])
    assert v2["atomic_claim"] != v1["atomic_claim"]
    v2["semantic_frame"]["entities"].reverse()
    v2["semantic_frame"]["qualifiers"]["numeric_mentions"].reverse()
    assert changed_parts(v1, v2) == []


def test_a_number_twice_is_not_the_number_once() -> None:
    twice = claim(semantic_frame__qualifiers__numeric_mentions=["2x", "2x"])
    once = claim(semantic_frame__qualifiers__numeric_mentions=["2x"])
    assert changed_parts(once, twice) == ["numbers"]


def test_a_relabelled_entity_is_an_entity_change() -> None:
    v2 = claim()
    v2["semantic_frame"]["entities"][1]["label"] = "the A100"
    assert changed_parts(claim(), v2) == ["entities"]


def test_malformed_claims_are_compared_not_refused() -> None:
    broken = {"atomic_claim": 3, "semantic_frame": ["not", "a", "frame"]}
    assert changed_parts(broken, broken) == []
    assert changed_parts(None, None) == []
    assert changed_parts(claim(), None) == list(PARTS)
    nan_frame = claim(semantic_frame__operator=float("nan"))
    assert changed_parts(nan_frame, copy.deepcopy(nan_frame)) == []


# ---------------------------------------------------------------- properties

_words = st.text(alphabet="aAé\u0301 xyz2", max_size=6)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _words,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_words, inner, max_size=3),
    max_leaves=8,
)
_frames = st.fixed_dictionaries(
    {},
    optional={
        "frame_type": _json,
        "operator": st.sampled_from(["LESS_THAN", "GREATER_THAN"]) | _json,
        "metric": _json,
        "comparison_expression": _words,
        "entities": st.lists(st.fixed_dictionaries({"id": _words, "label": _words}), max_size=3)
        | _json,
        "qualifiers": st.fixed_dictionaries(
            {},
            optional={
                "condition_text": st.none() | _words,
                "numeric_mentions": st.lists(_words, max_size=3),
                "temporal_mentions": st.lists(_words, max_size=3),
            },
        )
        | _json,
    },
)
_claims = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "atomic_claim": _words,
        "epistemic_mode": st.sampled_from(["ASSERTED", "HYPOTHETICAL"]),
        "mapping_status": st.sampled_from(["COMPLETE", "PARTIAL"]),
        "semantic_frame": _frames | _json,
    },
)


@settings(max_examples=300, deadline=None)
@given(_claims, _claims)
def test_symmetric(a: dict[str, Any] | None, b: dict[str, Any] | None) -> None:
    assert changed_parts(a, b) == changed_parts(b, a)


@settings(max_examples=300, deadline=None)
@given(_claims)
def test_identity(a: dict[str, Any] | None) -> None:
    assert changed_parts(a, copy.deepcopy(a)) == []


@settings(max_examples=300, deadline=None)
@given(_claims, _claims)
def test_a_part_is_changed_exactly_when_its_value_differs(
    a: dict[str, Any] | None, b: dict[str, Any] | None
) -> None:
    changed = set(changed_parts(a, b))
    pa, pb = parts_of(a), parts_of(b)
    # as JSON values: false and 0 differ, as they do in a ledger line
    assert changed == {p for p in PARTS if canonical(pa[p]) != canonical(pb[p])}
    assert changed_parts(a, b) == [p for p in PARTS if p in changed]  # PARTS order
