"""changed_parts: which parts a repair changed, on hand-made V1 / V2 pairs."""

from __future__ import annotations

import copy

from vault_tools.store.changes import PARTS, changed_parts

V1 = {
    "atomic_claim": "A 比 B 更快",
    "epistemic_mode": "ASSERTED",
    "mapping_status": "COMPLETE",
    "semantic_frame": {
        "entities": [
            {"id": "04_knowledge_base/A", "label": "A"},
            {"id": "04_knowledge_base/B", "label": "B"},
        ],
        "metric": "LATENCY_COST",
        "operator": "LESS_THAN",
        "qualifiers": {"condition_text": "at batch size 1", "numeric_mentions": ["1"]},
    },
}


def edited(**changes: object) -> dict:
    v2 = copy.deepcopy(V1)
    for path, value in changes.items():
        *outer, last = path.split("__")
        target = v2
        for key in outer:
            target = target[key]
        target[last] = value
    return v2


def test_the_same_claim_changes_nothing() -> None:
    assert changed_parts(V1, copy.deepcopy(V1)) == []


def test_each_part_is_named_alone() -> None:
    cases = {
        "claim_text": edited(atomic_claim="A 比 B 慢"),
        "operator": edited(semantic_frame__operator="GREATER_THAN"),
        "metric": edited(semantic_frame__metric="THROUGHPUT"),
        "entities": edited(semantic_frame__entities=[{"id": "04_knowledge_base/C", "label": "C"}]),
        "condition": edited(semantic_frame__qualifiers__condition_text="always"),
        "numbers": edited(semantic_frame__qualifiers__numeric_mentions=["2"]),
        "mode": edited(epistemic_mode="HYPOTHETICAL"),
        "mapping_status": edited(mapping_status="PARTIAL"),
    }
    assert list(cases) == list(PARTS)
    for part, v2 in cases.items():
        assert changed_parts(V1, v2) == [part], part


def test_entities_in_another_order_are_the_same_mapping() -> None:
    v2 = edited(semantic_frame__entities=list(reversed(V1["semantic_frame"]["entities"])))
    assert changed_parts(V1, v2) == []


def test_several_parts_come_in_the_order_of_parts() -> None:
    v2 = edited(
        mapping_status="PARTIAL", atomic_claim="B 比 A 更快", semantic_frame__operator="EQUAL"
    )
    assert changed_parts(V1, v2) == ["claim_text", "operator", "mapping_status"]


def test_a_part_that_did_not_parse_differs_from_one_that_did() -> None:
    v2 = dict(V1, semantic_frame=None)
    assert changed_parts(V1, v2) == ["operator", "metric", "entities", "condition", "numbers"]
    assert changed_parts(None, None) == []
    assert changed_parts(v2, v2) == []
