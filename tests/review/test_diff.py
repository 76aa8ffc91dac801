"""V1 → V2 changes: the claim's word (CJK: character) diff, JSON-pointer diff of frame and
metadata."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.review.diff import (
    Change,
    claim_change,
    diff_text_lines,
    escape_pointer_token,
    json_changes,
    repair_changes,
    text_diff,
    tokens,
)

FRAME = {
    "comparison_expression": "一次 warm prefill（k 個新 token）的 latency cost 約等於一次 decode",
    "entities": [
        {"id": "04_knowledge_base/Prefill", "label": "prefill"},
        {"id": "04_knowledge_base/Decode", "label": "decode"},
    ],
    "frame_type": "COMPARISON",
    "metric": "LATENCY_COST",
    "operator": "APPROX_EQUAL",
    "qualifiers": {
        "condition_text": "用於驗證 draft token",
        "numeric_mentions": ["1", "k"],
        "temporal_mentions": [],
    },
}


def v2(**edits: Any) -> dict:
    frame = copy.deepcopy(FRAME)
    frame.update(edits)
    return frame


def test_operator_change_is_one_replace() -> None:
    changes = json_changes(FRAME, v2(operator="LESS_THAN"), "frame")
    assert changes == [Change("frame", "replace", "/operator", "APPROX_EQUAL", "LESS_THAN")]
    assert changes[0].to_json() == {
        "field": "frame",
        "op": "replace",
        "pointer": "/operator",
        "old": "APPROX_EQUAL",
        "new": "LESS_THAN",
    }


def test_added_entity_is_an_add_at_its_new_index() -> None:
    entity = {"id": "04_knowledge_base/LPU", "label": "LPU"}
    new = v2(entities=[*FRAME["entities"], entity])
    assert json_changes(FRAME, new, "frame") == [
        Change("frame", "add", "/entities/2", None, entity)
    ]


def test_reordered_entities_are_not_a_change() -> None:
    new = v2(entities=list(reversed(FRAME["entities"])))
    assert json_changes(FRAME, new, "frame") == []


def test_changed_label_is_reported_under_the_new_index() -> None:
    entities = [
        {"id": "04_knowledge_base/Decode", "label": "decode step"},
        {"id": "04_knowledge_base/Prefill", "label": "prefill"},
    ]
    assert json_changes(FRAME, v2(entities=entities), "frame") == [
        Change("frame", "replace", "/entities/0/label", "decode", "decode step")
    ]


@pytest.mark.parametrize(
    "entity",
    [
        {"id": "04_knowledge_base/Decode Step", "label": "decode"},  # another target
        {"id": "04_knowledge_base/Decode Step", "label": "decode step"},  # and a label
    ],
)
def test_an_entity_given_another_target_in_its_place_is_one_replace(entity: dict) -> None:
    new = v2(entities=[FRAME["entities"][0], entity])
    assert json_changes(FRAME, new, "frame") == [
        Change("frame", "replace", "/entities/1", FRAME["entities"][1], entity)
    ]


def test_an_entity_moved_and_another_removed_stay_an_add_and_a_remove() -> None:
    entity = {"id": "04_knowledge_base/LPU", "label": "LPU"}
    new = v2(entities=[FRAME["entities"][1], FRAME["entities"][0], entity])
    new["entities"].pop(1)  # Decode, LPU: Prefill (index 0) gone, LPU added at index 1
    assert json_changes(FRAME, new, "frame") == [
        Change("frame", "add", "/entities/1", None, entity),
        Change("frame", "remove", "/entities/0", FRAME["entities"][0], None),
    ]


def test_removed_entity_uses_its_old_index() -> None:
    new = v2(entities=[FRAME["entities"][1]])
    assert json_changes(FRAME, new, "frame") == [
        Change("frame", "remove", "/entities/0", FRAME["entities"][0], None)
    ]


def test_duplicate_ids_fall_back_to_index_comparison() -> None:
    old = [{"id": "a", "v": 1}, {"id": "a", "v": 2}]
    new = [{"id": "a", "v": 2}, {"id": "a", "v": 1}]
    assert [c.pointer for c in json_changes(old, new, "frame")] == ["/0/v", "/1/v"]


def test_nested_qualifiers() -> None:
    qualifiers = {
        "condition_text": "用於驗證 draft token",
        "numeric_mentions": ["1", "2"],
        "temporal_mentions": ["2026"],
    }
    changes = json_changes(FRAME, v2(qualifiers=qualifiers), "frame")
    assert changes == [
        Change("frame", "replace", "/qualifiers/numeric_mentions/1", "k", "2"),
        Change("frame", "add", "/qualifiers/temporal_mentions/0", None, "2026"),
    ]


def test_keys_are_escaped_per_rfc6901() -> None:
    assert escape_pointer_token("a/b~c") == "a~1b~0c"
    assert escape_pointer_token("~1") == "~01"
    changes = json_changes({"a/b": 1, "m~n": {"x": 1}}, {"a/b": 2, "m~n": {}}, "metadata")
    assert [c.pointer for c in changes] == ["/a~1b", "/m~0n/x"]
    assert [c.op for c in changes] == ["replace", "remove"]


def test_type_changes_are_replaces() -> None:
    old = {"a": 1, "b": [1], "c": True, "d": "1", "e": None, "f": 1}
    new = {"a": "1", "b": {"0": 1}, "c": 1, "d": 1, "e": False, "f": 1.0}
    changes = json_changes(old, new, "metadata")
    assert [(c.pointer, c.op, c.old, c.new) for c in changes] == [
        ("/a", "replace", 1, "1"),
        ("/b", "replace", [1], {"0": 1}),
        ("/c", "replace", True, 1),
        ("/d", "replace", "1", 1),
        ("/e", "replace", None, False),
        ("/f", "replace", 1, 1.0),
    ]


def test_whole_value_replace_has_empty_pointer() -> None:
    assert json_changes([1], {"a": 1}, "frame") == [Change("frame", "replace", "", [1], {"a": 1})]
    assert json_changes(FRAME, copy.deepcopy(FRAME), "frame") == []


def test_shorter_list_removes_from_the_end_last_first() -> None:
    changes = json_changes([1, 2, 3, 4], [1, 5], "frame")
    assert [(c.op, c.pointer) for c in changes] == [
        ("replace", "/1"),
        ("remove", "/3"),
        ("remove", "/2"),
    ]


def test_chinese_text_is_compared_character_by_character() -> None:
    old = "其 latency cost 約等於一次 decode step。"
    new = "其 latency cost 小於一次 decode step。"
    assert text_diff(old, new) == [
        ("equal", "其 latency cost "),
        ("delete", "約等"),
        ("insert", "小"),
        ("equal", "於一次 decode step。"),
    ]


def test_latin_text_is_compared_word_by_word() -> None:
    # "latency" → "latent" is one word replaced, not "c" → "t" and a dropped "y"
    assert text_diff("the latency cost", "the latent cost") == [
        ("equal", "the "),
        ("delete", "latency"),
        ("insert", "latent"),
        ("equal", " cost"),
    ]
    # words replaced side by side are one deletion and one insertion
    assert text_diff("the quick brown fox", "the slow red fox") == [
        ("equal", "the "),
        ("delete", "quick brown"),
        ("insert", "slow red"),
        ("equal", " fox"),
    ]
    # two insertions apart stay apart
    assert text_diff("a b c", "a x b y c") == [
        ("equal", "a"),
        ("insert", " x"),
        ("equal", " b "),
        ("insert", "y "),
        ("equal", "c"),
    ]


def test_mixed_text_takes_words_for_latin_runs_and_characters_for_cjk() -> None:
    assert tokens("以 KL-divergence 訓練，acceptance rate 低") == [
        "以", " ", "KL", "-", "divergence", " ", "訓", "練", "，", "acceptance", " ", "rate",
        " ", "低",
    ]  # fmt: skip
    old = "Total Variation（TV）loss 更能最大化 acceptance rate。"
    new = "Total Variation（TV）或 Likelihood loss 等新方法更能最大化 acceptance rates。"
    assert text_diff(old, new) == [
        ("equal", "Total Variation（TV）"),
        ("insert", "或 Likelihood "),
        ("equal", "loss "),
        ("insert", "等新方法"),
        ("equal", "更能最大化 acceptance "),
        ("delete", "rate"),
        ("insert", "rates"),
        ("equal", "。"),
    ]


def test_text_diff_edges() -> None:
    assert text_diff("", "") == []
    assert text_diff("同", "同") == [("equal", "同")]
    assert text_diff("", "新增") == [("insert", "新增")]
    assert text_diff("刪除", "") == [("delete", "刪除")]


def test_claim_change() -> None:
    assert claim_change("同", "同") is None
    assert claim_change("舊", "新") == Change("claim", "replace", "", "舊", "新")


def test_repair_changes_in_display_order() -> None:
    changes = repair_changes("舊", "新", FRAME, v2(operator="LESS_THAN"), {"m": "A"}, {"m": "B"})
    assert [(c.field, c.pointer) for c in changes] == [
        ("claim", ""),
        ("frame", "/operator"),
        ("metadata", "/m"),
    ]


def test_diff_text_lines() -> None:
    assert diff_text_lines("舊的\n第二行", "新的") == "- 舊的\n- 第二行\n+ 新的\n"
    assert diff_text_lines("a\r\n\r\nb", "") == "- a\n-\n- b\n"
    # a claim line holding a fence cannot close the block: every line starts with - or +
    body = diff_text_lines("```", "~~~")
    assert all(line[0] in "-+" for line in body.splitlines())


# ---------------------------------------------------------------------------
# properties


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_changes(doc: Any, changes: list[Change]) -> Any:
    """A minimal RFC 6902 applier, test-only: the changes in order."""
    doc = copy.deepcopy(doc)
    for change in changes:
        if change.pointer == "":
            assert change.op == "replace"
            doc = copy.deepcopy(change.new)
            continue
        *parents, last = [_unescape(t) for t in change.pointer.split("/")[1:]]
        target = doc
        for token in parents:
            target = target[int(token)] if isinstance(target, list) else target[token]
        if isinstance(target, list):
            index = int(last)
            if change.op == "add":
                target.insert(index, copy.deepcopy(change.new))
            elif change.op == "remove":
                assert target[index] == change.old
                del target[index]
            else:
                target[index] = copy.deepcopy(change.new)
        elif change.op == "remove":
            assert target[last] == change.old
            del target[last]
        else:
            assert change.op == "add" or target[last] == change.old
            target[last] = copy.deepcopy(change.new)
    return doc


# Keys that need escaping are likely; no "id" keys, so lists compare by index.
keys = st.text(alphabet="ab~/ 中", max_size=4)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(alphabet="ab中~/", max_size=3)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(keys.filter(lambda k: k != "id"), children, max_size=4)
    ),
    max_leaves=20,
)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


@settings(max_examples=300)
@given(json_values, json_values)
def test_applying_the_changes_to_old_gives_new(old: Any, new: Any) -> None:
    changes = json_changes(old, new, "frame")
    assert _json(apply_changes(old, changes)) == _json(new)
    assert (changes == []) == (_json(old) == _json(new))


# CJK and Latin letters, digits, spaces and line breaks, and every character that is
# Markdown or Obsidian syntax
claim_text = st.text(
    alphabet=st.sampled_from(list("為了驗證約等於小，。（）abcXY 19\n\t*_~=|[]#<>&`$%^\\-+.!")),
    max_size=40,
) | st.text(max_size=20)


@settings(max_examples=400)
@given(claim_text, claim_text)
def test_text_diff_segments_rebuild_both_sides(old: str, new: str) -> None:
    segments = text_diff(old, new)
    assert "".join(t for kind, t in segments if kind in ("equal", "delete")) == old
    assert "".join(t for kind, t in segments if kind in ("equal", "insert")) == new
    assert all(t for _, t in segments)
    # merged: never two segments of one kind side by side
    assert all(a[0] != b[0] for a, b in zip(segments, segments[1:], strict=False))
    # a deletion comes before its insertion, never after
    pairs = zip(segments, segments[1:], strict=False)
    assert all((a[0], b[0]) != ("insert", "delete") for a, b in pairs)
