"""check_note: schemas (JSON path + note line), knowledge base, mapping consistency."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.conftest import (
    DEFAULT_FRAME,
    example_context,
    frame_json,
    line_of_text,
    render_drafts,
    render_note,
    rows_for,
)
from vault_tools.checks.context import CheckContext
from vault_tools.checks.rules import check_drafts, check_note
from vault_tools.findings import Finding
from vault_tools.notes.note import parse_note

CTX = example_context()


def run(text: str, ctx: CheckContext = CTX) -> list[Finding]:
    return check_note(parse_note(text.encode("utf-8"), "03_claims/n.md"), ctx)


def pairs(findings: list[Finding]) -> set[tuple[str, int | None]]:
    return {(f.code, f.line) for f in findings}


def frame_with(**changes: object) -> dict:
    frame = copy.deepcopy(DEFAULT_FRAME)
    frame.update(changes)
    return frame


def test_template_is_clean() -> None:
    assert run(render_note()) == []


# --- mapping table vs frame entities ----------------------------------------------------


def test_entity_without_a_row() -> None:
    rows = rows_for(DEFAULT_FRAME)[:2]
    text = render_note(rows=rows)
    findings = run(text)
    entity_line = line_of_text(text, '"id": "04_knowledge_base/Autoregressive Drafter"') - 1
    assert pairs(findings) == {("mapping-mismatch", entity_line)}
    assert "sequential autoregressive drafters" in findings[0].message
    assert "no matching row" in findings[0].message


def test_row_without_an_entity() -> None:
    rows = [
        *rows_for(DEFAULT_FRAME),
        ("comparison_entity_3", "KV cache", "[[04_knowledge_base/KV Cache]]"),
    ]
    text = render_note(rows=rows)
    findings = run(text)
    assert pairs(findings) == {("mapping-mismatch", line_of_text(text, "comparison_entity_3"))}
    assert "KV cache" in findings[0].message and "matches no entity" in findings[0].message


def test_mismatch_in_both_directions_when_a_target_differs() -> None:
    rows = rows_for(DEFAULT_FRAME)
    rows[1] = ("comparison_entity_1", "DSpark", "[[04_knowledge_base/DFlash]]")
    text = render_note(rows=rows)
    assert pairs(run(text)) == {
        ("mapping-mismatch", line_of_text(text, '"id": "04_knowledge_base/DSpark"') - 1),
        ("mapping-mismatch", line_of_text(text, "| comparison_entity_1 |")),
    }


def test_a_row_matches_one_entity_only() -> None:
    rows = [*rows_for(DEFAULT_FRAME), rows_for(DEFAULT_FRAME)[0]]
    text = render_note(rows=rows)
    assert pairs(run(text)) == {("mapping-mismatch", line_of_text(text, "comparison_entity_0", 2))}


def test_rows_match_whatever_the_target_form_label_case_and_order() -> None:
    rows = [
        (
            "comparison_entity_2",
            "Sequential Autoregressive Drafters",
            "04_knowledge_base/autoregressive drafter.md",
        ),
        ("comparison_entity_0", "dflash", "[[04_knowledge_base/DFlash|DFlash drafter]]"),
        ("whatever role", "DSpark", "[[DSpark]]"),
    ]
    assert run(render_note(rows=rows)) == []


def test_roles_are_free_text() -> None:
    rows = [
        (f"role {i}", label, target) for i, (_, label, target) in enumerate(rows_for(DEFAULT_FRAME))
    ]
    assert run(render_note(rows=rows)) == []


def test_no_mapping_checks_when_the_frame_does_not_parse() -> None:
    text = render_note(frame="{ not json", rows=rows_for(DEFAULT_FRAME))
    assert {f.code for f in run(text)} == {"json-syntax"}


# --- COMPLETE with an unresolved entity -------------------------------------------------


@pytest.mark.parametrize(
    "target,code",
    [
        ("04_knowledge_base/Unknown Entity", "kb-target-missing"),
        ("04_knowledge_base/../../etc/passwd", "kb-target-escape"),
        ("03_claims/DV1-0002", "kb-target-outside-kb"),
    ],
)
def test_complete_with_an_unresolved_entity(target: str, code: str) -> None:
    frame = frame_with(entities=[DEFAULT_FRAME["entities"][0], {"id": target, "label": "x"}])
    text = render_note(frame=frame, status="COMPLETE")
    assert pairs(run(text)) == {
        (code, line_of_text(text, json.dumps(target)[1:-1])),
        ("mapping-complete-unresolved", line_of_text(text, "- Mapping Status: COMPLETE")),
    }
    partial = render_note(frame=frame, status="PARTIAL")
    assert pairs(run(partial)) == {(code, line_of_text(partial, json.dumps(target)[1:-1]))}


def test_partial_with_everything_resolved_is_fine() -> None:
    assert run(render_note(status="PARTIAL")) == []


def test_kb_finding_names_the_target_and_expected_file() -> None:
    frame = frame_with(entities=[{"id": "04_knowledge_base/Nope", "label": "nope"}])
    [finding] = run(render_note(frame=frame, status="PARTIAL"))
    assert finding.code == "kb-target-missing"
    assert "'04_knowledge_base/Nope'" in finding.message and "Nope.md" in finding.message


# --- schema errors name the JSON path and the note line ---------------------------------


@pytest.mark.parametrize(
    "change,pointer,needle",
    [
        ({"metric": "SPEED"}, "/metric", '"metric": "SPEED"'),
        ({"operator": 3}, "/operator", '"operator": 3'),
        (
            {
                "qualifiers": {
                    "condition_text": None,
                    "numeric_mentions": [1],
                    "temporal_mentions": [],
                }
            },
            "/qualifiers/numeric_mentions/0",
            "      1",
        ),
        (
            {"entities": [{"id": "04_knowledge_base/DFlash", "label": ""}]},
            "/entities/0/label",
            '"label": ""',
        ),
        ({"extra_key": True}, "/", "{"),
    ],
)
def test_frame_schema_error_names_pointer_and_line(change: dict, pointer: str, needle: str) -> None:
    frame = frame_with(**change)
    rows = [r for r in rows_for(frame) if r[1]]
    text = render_note(frame=frame, rows=rows)
    findings = [f for f in run(text) if f.code == "frame-schema"]
    assert len(findings) == 1, findings
    assert f"Semantic Frame {pointer}:" in findings[0].message
    assert findings[0].line == line_of_text(text, needle)


def test_frame_missing_key_points_at_the_object() -> None:
    frame = copy.deepcopy(DEFAULT_FRAME)
    del frame["qualifiers"]["temporal_mentions"]
    text = render_note(frame=frame)
    [finding] = run(text)
    assert finding.code == "frame-schema"
    assert "/qualifiers" in finding.message and "temporal_mentions" in finding.message
    assert finding.line == line_of_text(text, '"qualifiers"')


def test_frame_that_is_not_an_object() -> None:
    text = render_note(frame="[1, 2]", rows=[])
    findings = run(text)
    assert [(f.code, f.line) for f in findings] == [("frame-schema", line_of_text(text, "[1, 2]"))]


def test_properties_schema_names_the_property_and_its_line() -> None:
    text = render_note(review_action="MAYBE", extra_properties="vt_event_id: nothex\n")
    findings = run(text)
    assert pairs(findings) == {
        ("properties-schema", line_of_text(text, "review_action")),
        ("properties-schema", line_of_text(text, "vt_event_id")),
    }
    assert any("review_action" in f.message and "MAYBE" in f.message for f in findings)


def test_unknown_properties_are_the_users() -> None:
    assert run(render_note(extra_properties="my_own_key: [1, 2]\ncolor: red\n")) == []


def test_draft_frame_and_metadata_schema_errors_point_into_the_draft() -> None:
    frame = frame_with(operator="BIGGER")
    drafts = render_drafts(
        frame=frame, metadata={"epistemic_mode": "ASSERTED", "mapping_status": "DONE", "x": 1}
    )
    text = render_note(review_action="REQUEST_REPAIR", drafts=drafts)
    findings = run(text)
    assert pairs(findings) == {
        ("frame-schema", line_of_text(text, '"operator": "BIGGER"')),
        ("metadata-schema", line_of_text(text, '"mapping_status": "DONE"')),
        ("metadata-schema", line_of_text(text, "### V2 Revision Metadata Draft") + 2),
    }
    frame_finding = next(f for f in findings if f.code == "frame-schema")
    assert frame_finding.message.startswith("V2 Semantic Frame Draft /operator:")
    assert any("/mapping_status" in f.message for f in findings)


def test_draft_entities_are_resolved_but_not_mapped() -> None:
    frame = frame_with(entities=[{"id": "04_knowledge_base/Brand New", "label": "new"}])
    text = render_note(review_action="REQUEST_REPAIR", drafts=render_drafts(frame=frame))
    note = parse_note(text.encode(), "n.md")
    assert pairs(check_drafts(note, CTX)) == {
        ("kb-target-missing", line_of_text(text, "Brand New"))
    }
    assert pairs(check_note(note, CTX)) == {("kb-target-missing", line_of_text(text, "Brand New"))}


def test_claim_field_values_come_from_the_schema() -> None:
    text = render_note(mode="SPECULATIVE")
    [finding] = run(text)
    assert (finding.code, finding.line) == ("claim-field", line_of_text(text, "Epistemic Mode"))
    assert "ASSERTED" in finding.message and "HYPOTHETICAL" in finding.message


def test_disabled_findings_are_dropped() -> None:
    text = render_note(mode="SPECULATIVE", rows=rows_for(DEFAULT_FRAME)[:1])
    assert {f.code for f in run(text)} == {"claim-field", "mapping-mismatch"}
    quiet = CheckContext(CTX.schemas, CTX.kb, frozenset({"mapping-mismatch"}))
    assert {f.code for f in run(text, quiet)} == {"claim-field"}


def test_not_a_review_note_has_no_findings() -> None:
    assert run("---\ntitle: Prefill\n---\n# Prefill\n") == []
    assert run("# no frontmatter at all\n") == []


def test_frame_json_helper_matches_the_example() -> None:
    assert frame_json(DEFAULT_FRAME) in render_note()


def test_missing_mapping_section_is_reported_once() -> None:
    text = render_note()
    text = text[: text.index("## ④")] + text[text.index("## ⑤") :]
    assert pairs(run(text)) == {("section-missing", 13)}


def test_duplicate_key_does_not_hide_body_findings() -> None:
    text = render_note().replace("review_state: NEW", "review_state: NEW\nreview_state: NEW")
    text = text.replace('"metric"', '"metric" x')
    assert {f.code for f in run(text)} == {"yaml-duplicate-key", "json-syntax"}


# --- JSON values map back to their lines (what schema findings rely on) -----------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replaced(value: object, path: tuple, marker: str) -> object:
    if not path:
        return marker
    copy_ = copy.copy(value)
    copy_[path[0]] = _replaced(value[path[0]], path[1:], marker)  # type: ignore[index]
    return copy_


@settings(max_examples=200, deadline=None)
@given(_JSON, st.sampled_from([2, 4, "\t", None]))
def test_value_lines_match_where_json_dumps_put_each_value(value: object, indent) -> None:
    from vault_tools.notes.positions import line_of

    text = json.dumps(value, indent=indent, ensure_ascii=False)
    marker = "\u2063MARK\u2063"
    assume("\u2063" not in text)
    for path in _paths(value):
        marked = json.dumps(_replaced(value, path, marker), indent=indent, ensure_ascii=False)
        expected = next(n for n, line in enumerate(marked.split("\n"), 10) if marker in line)
        assert line_of(text, path, 10) == expected, (path, text)
