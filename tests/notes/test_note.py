"""The review-note parser: the seeds round-trip, malformed notes give code and line,
and nothing (arbitrary bytes, arbitrary text, mangled notes) makes it raise."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import (
    DEFAULT_CLAIM,
    DEFAULT_FRAME,
    IX2_NOTE,
    SEED_NOTE,
    TEMPLATE_NOTE,
    example_context,
    frame_json,
    line_of_text,
    render_drafts,
    render_note,
    single_file_codes,
)
from tests.memo_oracle import check_memo, memo_test, numbered, one_text
from vault_tools.checks.rules import check_note
from vault_tools.findings import CODES
from vault_tools.notes import note as note_module
from vault_tools.notes.note import (
    _JSON,
    Note,
    Text,
    _decoded,
    _field,
    _field_of,
    _pipe_in_wikilink,
    _text_of,
    parse_note,
    parse_text,
    split_table_row,
)
from vault_tools.notes.sections import Part

# --- the seeds, read from the flattened reading-view text ------------------------------


# the seeds the example vault's SA260324R-0125 and IX2-0328 were built from, as Obsidian's
# reading view flattens them
SEEDS = Path(__file__).resolve().parents[1] / "seeds"


def _seed_text(prefix: str) -> str:
    return next(SEEDS.glob(f"{prefix}_*.txt")).read_text(encoding="utf-8")


def _after(text: str, marker: str) -> str:
    """The line following the line that is exactly `marker`."""
    lines = text.split("\n")
    return lines[lines.index(marker) + 1]


def _json_after(text: str, marker: str) -> object:
    start = text.index(marker + "\n") + len(marker) + 1
    value, _ = json.JSONDecoder().raw_decode(text, start)
    return value


def _seed_rows(text: str) -> list[tuple[str, str, str]]:
    rows = [line for line in text.split("\n") if line.startswith("| comparison_entity_")]
    return [tuple(cell.strip() for cell in row.strip("|").split("|")) for row in rows]


# what the example vault's reviewer changed in a seed's V2 drafts (old, new)
REVIEWER_EDITS = {"000": ("token，main", "token，在 k 遠小於 context 的 N 個 token 時，main")}


def _parse(path: Path) -> tuple[Note, str]:
    raw = path.read_bytes()
    return parse_note(raw, f"03_claims/{path.name}"), raw.decode("utf-8")


@pytest.mark.parametrize("prefix,note_path", [("000", SEED_NOTE), ("001", IX2_NOTE)])
def test_seed_note_round_trips(prefix: str, note_path: Path) -> None:
    seed = _seed_text(prefix)
    note, text = _parse(note_path)
    assert note.findings == []
    assert note.claim_id == seed.split("\n", 1)[0].strip()
    assert note.property_lines["claim_id"] == 2

    claim = _after(seed, "② Atomic Claim")
    assert note.claim.text.value == claim
    assert note.claim.text.line == line_of_text(text, claim)
    mode, status_marker = _after(seed, "- Epistemic Mode:").split(" - ")
    assert status_marker == "Mapping Status:"
    assert note.claim.epistemic_mode.value == mode
    assert note.claim.epistemic_mode.line == line_of_text(text, "- Epistemic Mode:")
    assert note.claim.mapping_status.value == _after(
        seed, "ASSERTED - Mapping Status:" if mode == "ASSERTED" else f"{mode} - Mapping Status:"
    )
    assert note.claim.mapping_status.line == line_of_text(text, "- Mapping Status:")

    evidence = _after(seed, "Evidence")
    assert note.source.evidence.value == evidence
    assert note.source.evidence.line == line_of_text(text, evidence)
    assert note.source.context_after.value == _after(seed, "Context After")
    before = seed.split("Context Before\n", 1)[1].split("\nEvidence\n", 1)[0]
    assert note.source.context_before.value == before
    assert note.source.context_before.line == line_of_text(text, "### Context Before") + 1
    section = _after(seed, "- Section:").removesuffix(" - Line hint:")
    assert note.source.section.value == section
    assert note.source.section.line == line_of_text(text, "- Section:")
    assert note.source.line_hint.value == _after(seed, f"{section} - Line hint:")
    assert note.source.line_hint.line == line_of_text(text, "- Line hint:")
    assert note.source.link_text == _after(seed, "① SA Source").removeprefix("- Source: ")
    assert note.source.link.value.startswith("https://")

    frame = _json_after(seed, "③ Semantic Frame")
    assert note.frame.ok and note.frame.data == frame
    assert note.frame.line == line_of_text(text, "## ③ Semantic Frame") + 2
    assert json.loads(note.frame.text) == frame

    seed_rows = _seed_rows(seed) or [  # seed 000's table was flattened away: use the frame
        (f"comparison_entity_{i}", e["label"], f"[[{e['id']}]]")
        for i, e in enumerate(frame["entities"])
    ]
    assert [(r.role, r.label, r.target) for r in note.mapping] == seed_rows
    assert [r.line for r in note.mapping] == [
        line_of_text(text, f"| {role} |") for role, _, _ in seed_rows
    ]
    assert note.mapping_line == line_of_text(text, "## ④ Canonical Entity Mapping")

    if "V2 Atomic Claim Draft" in seed:
        drafts = note.drafts
        assert drafts.line == line_of_text(text, "## ⑤ V2 Draft")
        # the example's reviewer has since edited the V2 claim: a repair to preview
        old, new = REVIEWER_EDITS.get(prefix, ("", ""))
        assert drafts.claim.value == _after(seed, "V2 Atomic Claim Draft").replace(old, new, 1)
        assert drafts.claim.line == line_of_text(text, "### V2 Atomic Claim Draft") + 1
        assert drafts.frame.data == _json_after(seed, "V2 Semantic Frame Draft")
        assert drafts.frame.line == line_of_text(text, "### V2 Semantic Frame Draft") + 2
        assert drafts.metadata.data == _json_after(seed, "V2 Revision Metadata Draft")
        assert drafts.metadata.line == line_of_text(text, "### V2 Revision Metadata Draft") + 2
    else:
        assert note.drafts is None
    keys = [s.key for s in note.sections]
    assert keys[:4] == ["source", "claim", "frame", "mapping"] and keys[-1] == "review"


def test_ix2_keeps_its_verification_mapping_exactly() -> None:
    note, _ = _parse(IX2_NOTE)
    row = note.mapping[2]
    assert (row.label, row.target) == ("verification", "04_knowledge_base/IC design verification")


def test_seed_notes_check_clean_against_the_example_kb() -> None:
    ctx = example_context()
    for path in (SEED_NOTE, IX2_NOTE, TEMPLATE_NOTE):
        note, _ = _parse(path)
        assert check_note(note, ctx) == [], path.name


def test_crlf_bom_nfd_parse_like_the_original() -> None:
    raw = SEED_NOTE.read_bytes()
    plain = parse_note(raw, "n.md")
    crlf = parse_note(b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"), "n.md")
    assert crlf.findings == []
    assert crlf.properties == plain.properties and crlf.property_lines == plain.property_lines
    assert crlf.claim == plain.claim and crlf.mapping == plain.mapping
    assert crlf.frame.data == plain.frame.data and crlf.drafts.claim == plain.drafts.claim


def test_nfd_text_is_normalised_to_nfc() -> None:
    import unicodedata

    text = render_note(claim="Caf\u0065\u0301 claim résumé", reviewer="Zoe\u0308")
    note = parse_note(unicodedata.normalize("NFD", text).encode(), "n.md")
    assert note.findings == []
    assert note.claim.text.value == "Café claim résumé"
    assert note.properties["reviewer"] == "Zoë"


# --- malformed notes: one per code, asserting code and line ----------------------------

BASE = render_note()
WITH_DRAFTS = render_note(review_action="REQUEST_REPAIR", drafts=render_drafts())


def _replace(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _line(text: str, needle: str, occurrence: int = 1) -> int:
    return line_of_text(text, needle, occurrence)


def _malformed() -> list[tuple[str, bytes, int | None]]:
    cases: list[tuple[str, str | bytes, int]] = []

    def add(code: str, text: str | bytes, line: int) -> None:
        cases.append((code, text, line))

    add(
        "encoding",
        BASE.encode().replace(b"Deep dive", b"Deep \xc3(dive"),
        _line(BASE, "- Section:"),
    )
    text = _replace("- Line hint: 9\n", "- Line hint:\r9\n")  # Obsidian: two lines
    add("line-endings", text, _line(text, "- Line hint:"))
    add("frontmatter-unclosed", _replace("tags: [claim-review]\n---", "tags: [x]"), 1)
    text = _replace('review_comment: ""', 'review_comment: "unbalanced" quote"')
    add("yaml-syntax", text, _line(text, "review_comment"))
    add("yaml-not-mapping", _replace("---\nclaim_id", "---\n- claim_id"), 2)
    text = _replace("tags: [claim-review]", "tags: [claim-review]\nclaim_id: DV1-0002")
    add("yaml-duplicate-key", text, _line(text, "claim_id: DV1-0002"))
    text = _replace("tags: [claim-review]", "tags: &t [claim-review]\naliases: *t")
    add("yaml-alias", text, _line(text, "&t"))
    text = _replace("review_state: NEW", "review_state: DONE")
    add("properties-schema", text, _line(text, "review_state: DONE"))
    start, end = BASE.index("## ③ Semantic Frame"), BASE.index("## ④")
    add("section-missing", BASE[:start] + BASE[end:], 13)
    text = _replace(
        "## ⑤ Human Review", "## 4. Canonical Entity Mapping\n| a | b | c |\n\n## ⑤ Human Review"
    )
    add("section-duplicate", text, _line(text, "## 4. Canonical Entity Mapping"))
    text = _replace("- Line hint: 9", "- Line hint: 9a")
    add("source-field", text, _line(text, "- Line hint: 9a"))
    text = _replace(DEFAULT_CLAIM, "   ")
    add("claim-empty", text, _line(text, "## ② Atomic Claim"))
    text = _replace("- Mapping Status: COMPLETE", "- Mapping Status: ALL")
    add("claim-field", text, _line(text, "- Mapping Status: ALL"))
    text = _replace("```json\n{", "```python\n{")
    add("json-missing", text, _line(text, "## ③ Semantic Frame"))
    text = _replace("## ④", "~~~json\n{}\n~~~\n\n## ④")
    add("json-multiple", text, _line(text, "~~~json"))
    text = _replace('"label": "DSpark"', '"label": DSpark')
    add("json-syntax", text, _line(text, '"label": DSpark'))
    text = _replace('"operator": "GREATER_THAN"', '"operator": "BIGGER"')
    add("frame-schema", text, _line(text, '"operator": "BIGGER"'))
    text = _replace('"mapping_status": "COMPLETE"', '"mapping_status": "TOTAL"', WITH_DRAFTS)
    add("metadata-schema", text, _line(text, '"mapping_status": "TOTAL"'))
    text = _replace("### V2 Atomic Claim Draft\n" + DEFAULT_CLAIM + "\n", "", WITH_DRAFTS)
    add("draft-incomplete", text, _line(text, "## ⑤ V2 Draft"))
    text = _replace("|---|---|---|\n", "|---|---|---|\n| comparison_entity_9 | x | |\n")
    add("mapping-table", text, _line(text, "comparison_entity_9"))
    text = _replace("[[04_knowledge_base/DFlash]]", "[[04_knowledge_base/DSpark]]")
    add("mapping-mismatch", text, _line(text, "| comparison_entity_0 |"))
    text = _replace(
        '"id": "04_knowledge_base/DSpark"',
        '"id": "04_knowledge_base/Nope"',
        _replace("- Mapping Status: COMPLETE", "- Mapping Status: PARTIAL"),
    )
    add("kb-target-missing", text, _line(text, "04_knowledge_base/Nope"))
    text = _replace('"id": "04_knowledge_base/DSpark"', '"id": "/etc/passwd"')
    add("kb-target-escape", text, _line(text, "/etc/passwd"))
    text = _replace('"id": "04_knowledge_base/DSpark"', '"id": "03_claims/DV1-0002"')
    add("kb-target-outside-kb", text, _line(text, "03_claims/DV1-0002"))
    text = _replace('"id": "04_knowledge_base/DSpark"', '"id": "04_knowledge_base/Nope"')
    add("mapping-complete-unresolved", text, _line(text, "- Mapping Status: COMPLETE"))
    text = _replace(DEFAULT_CLAIM, DEFAULT_CLAIM[:10] + "\x00" + DEFAULT_CLAIM[10:])
    add("control-character", text, _line(text, "\x00"))
    text = _replace('"operator": "GREATER_THAN"', '"operator": ' + "7" * 5000)
    add("number-too-large", text, _line(text, "7" * 5000))
    text = _replace("review_action: APPROVE", "<<<<<<< ours\nreview_action: APPROVE\n=======\n"
                    "review_action: REJECT\n>>>>>>> theirs")  # fmt: skip
    add("git-conflict", text, _line(text, "<<<<<<< ours"))
    return [
        (code, data if isinstance(data, bytes) else data.encode(), line)
        for code, data, line in cases
    ]


MALFORMED = _malformed()


@pytest.mark.parametrize("code,raw,line", MALFORMED, ids=[c for c, _, _ in MALFORMED])
def test_malformed_note_gives_code_at_line(code: str, raw: bytes, line: int) -> None:
    note = parse_note(raw, "03_claims/bad.md")
    findings = check_note(note, example_context())
    assert (code, line) in {(f.code, f.line) for f in findings}, findings
    assert all(f.path == "03_claims/bad.md" for f in findings)


def test_malformed_table_covers_every_single_file_code() -> None:
    assert {code for code, _, _ in MALFORMED} == single_file_codes()


def test_parse_stops_at_frontmatter_without_claim_id() -> None:
    note = parse_note(b"---\ntitle: x\n---\n# Prefill\n\n## Atomic Claim\n", "kb.md")
    assert not note.is_review_note and note.sections == [] and note.findings == []


def test_json_error_line_is_mapped_into_the_note() -> None:
    frame = frame_json(DEFAULT_FRAME).replace(
        '"metric": "COMPUTE_PERFORMANCE",', '"metric": "COMPUTE_PERFORMANCE"'
    )
    text = render_note(frame=frame)
    note = parse_note(text.encode(), "n.md")
    [finding] = [f for f in note.findings if f.code == "json-syntax"]
    assert finding.line == line_of_text(text, '"operator"')
    assert "Semantic Frame" in finding.message


def test_split_table_row_keeps_pipes_in_wikilinks_and_escapes() -> None:
    assert split_table_row("| a | [[X|y]] | c |") == ["a", "[[X|y]]", "c"]
    assert split_table_row(r"| a | [[X\|y]] | c |") == ["a", "[[X|y]]", "c"]
    assert split_table_row(r"| a \| b | c |") == ["a | b", "c"]
    assert split_table_row("a | b") == ["a", "b"]


def test_deeply_nested_json_is_a_finding_not_a_crash() -> None:
    text = render_note(frame="[" * 100_000 + "]" * 100_000)
    note = parse_note(text.encode(), "n.md")
    assert note.frame is not None
    findings = check_note(note, example_context())
    assert {f.code for f in findings} <= set(CODES)
    assert any(f.code in ("json-syntax", "frame-schema") for f in findings)


# --- hypothesis: the parser never raises -----------------------------------------------

CTX = example_context()


EOF_FENCE = b"---\nclaim_id: X\n---\n## Semantic Frame\n```"
NO_BODY = b"---\nclaim_id: X\n---"


def _max_line(raw: bytes, code: str) -> int:
    note = parse_note(raw, "n.md")
    return max((f.line or 0 for f in note.findings if f.code == code), default=0)


# While the two bugs below are present, the properties further down tolerate exactly those
# cases (a line one past the end for these codes); once fixed they check them too, unedited.
_EOF_FENCE_BUG = _max_line(EOF_FENCE, "json-syntax") > EOF_FENCE.count(b"\n") + 1
_NO_BODY_BUG = _max_line(NO_BODY, "section-missing") > NO_BODY.count(b"\n") + 1


def test_unclosed_fence_on_the_last_line_points_inside_the_file() -> None:
    assert _max_line(EOF_FENCE, "json-syntax") == 5


def test_section_missing_in_a_note_without_body_points_inside_the_file() -> None:
    assert 1 <= _max_line(NO_BODY, "section-missing") <= 3


def _tolerated(finding, count: int) -> bool:
    """A known out-of-range line (see the two xfail tests above) while the bug is present."""
    if finding.line != count + 1:
        return False
    return (_EOF_FENCE_BUG and finding.code == "json-syntax") or (
        _NO_BODY_BUG and finding.code == "section-missing"
    )


def _assert_sane(raw: bytes, note: Note, with_checks: bool = False) -> None:
    assert isinstance(note, Note)
    count = raw.count(b"\n") + 1
    findings = check_note(note, CTX) if with_checks else note.findings
    for finding in findings:
        assert finding.code in CODES
        if _tolerated(finding, count):
            continue
        assert finding.line is None or 1 <= finding.line <= count, (finding, count)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_parse_never_raises_on_bytes(raw: bytes) -> None:
    _assert_sane(raw, parse_note(raw, "n.md"), with_checks=True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_parse_never_raises_on_text(text: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")
    _assert_sane(raw, parse_note(raw, "n.md"), with_checks=True)


_LINES = st.sampled_from(
    [
        "---",
        "```",
        "```json",
        "~~~",
        "## Atomic Claim",
        "## ③ Semantic Frame",
        "### V2 Semantic Frame Draft",
        "claim_id: X",
        "| a | b | c |",
        "{",
        "}",
        "- Epistemic Mode: ASSERTED",
        "&a",
        "*a",
        "key: [",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(_LINES, st.text(max_size=30)), max_size=60),
    st.sampled_from(["---\nclaim_id: X\n---\n", "", "---\nclaim_id: X\n"]),
)
def test_parse_never_raises_on_line_soup(lines: list[str], head: str) -> None:
    raw = (head + "\n".join(lines)).encode("utf-8", "surrogatepass")
    _assert_sane(raw, parse_note(raw, "n.md"), with_checks=True)


_TEMPLATES = [TEMPLATE_NOTE.read_bytes(), SEED_NOTE.read_bytes(), WITH_DRAFTS.encode()]


@st.composite
def near_valid_notes(draw: st.DrawFn) -> bytes:
    """A valid note mangled: lines deleted, duplicated, swapped; fences and bytes spliced in."""
    lines = draw(st.sampled_from(_TEMPLATES)).split(b"\n")
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["delete", "duplicate", "fence", "splice", "swap"]))
        at = draw(st.integers(0, max(len(lines) - 1, 0)))
        if op == "delete" and len(lines) > 1:
            del lines[at]
        elif op == "duplicate" and lines:
            lines.insert(at, lines[at])
        elif op == "fence":
            lines.insert(at, draw(st.sampled_from([b"```", b"```json", b"~~~~", b"````"])))
        elif op == "splice" and lines:
            cut = draw(st.integers(0, len(lines[at])))
            noise = draw(st.binary(min_size=1, max_size=8))
            lines[at] = lines[at][:cut] + noise + lines[at][cut:]
        elif op == "swap" and len(lines) > 1:
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
    return b"\n".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_valid_notes())
def test_parse_never_raises_on_near_valid_notes(raw: bytes) -> None:
    _assert_sane(raw, parse_note(raw, "n.md"), with_checks=True)


def test_parse_text_matches_parse_note() -> None:
    text = TEMPLATE_NOTE.read_text(encoding="utf-8")
    assert parse_text(text, "n.md").claim == parse_note(text.encode(), "n.md").claim


def test_claim_text_keeps_multiple_paragraphs() -> None:
    claim = "first paragraph\n\nsecond paragraph"
    note = parse_note(render_note(claim=claim).encode(), "n.md")
    assert note.claim.text.value == claim
    assert note.findings == []


def test_fields_without_space_after_dash_or_with_fullwidth_colon() -> None:
    text = _replace("- Epistemic Mode: ASSERTED", "- Epistemic Mode：ASSERTED")
    note = parse_note(text.encode(), "n.md")
    assert note.claim.epistemic_mode.value == "ASSERTED"
    assert "claim-field" not in {f.code for f in note.findings}


def test_lines_that_only_look_like_structure_stay_text() -> None:
    """Only a fence, a heading or a vt marker at the start of a line is structure."""
    claim = "\n".join(
        [
            "first line",
            "    ```json  (indented four spaces: not a fence)",
            "#hashtag is not a heading",
            "<!-- vt:preview:start -->",
            "vt's own block, left out of the claim",
            "<!-- vt:preview:end -->",
            "~~~~text",
            "## not a section inside a fence",
            "```",
            "~~~~",
            "last line",
        ]
    )
    note = parse_note(render_note(claim=claim).encode(), "n.md")
    assert note.claim.text.value == "\n".join(
        [
            "first line",
            "    ```json  (indented four spaces: not a fence)",
            "#hashtag is not a heading",
            "last line",
        ]
    )
    assert [s.key for s in note.sections if s.key in ("claim", "frame")] == ["claim", "frame"]
    assert not [f for f in note.findings if f.code.startswith("section")]


_ROW_PIECES = ["|", " ", "\t", "[[", "]]", "a", "\\|", "\\", "-", ":", "\x00", "[[x|y]]", "[", "]"]


def _split_as_first_written(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    if "[[" not in body and "\\" not in body:
        return [cell.strip() for cell in body.split("|")]
    body = body.replace("\\|", "\x00")
    body = re.sub(r"\[\[[^\]]*\]\]", lambda m: m.group().replace("|", "\x00"), body)
    return [cell.replace("\x00", "|").strip() for cell in body.split("|")]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_ROW_PIECES), max_size=10).map("".join))
def test_table_rows_split_as_the_wikilink_protecting_rule(line: str) -> None:
    assert split_table_row(line) == _split_as_first_written(line)


def _pipe_in_wikilink_as_first_written(body: str) -> bool:
    return any(
        (start := part.find("[[")) >= 0 and "|" in part[start + 2 :] for part in body.split("]")
    )


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_ROW_PIECES), max_size=12).map("".join))
def test_a_pipe_in_a_wikilink_is_found_as_by_splitting_on_brackets(body: str) -> None:
    assert _pipe_in_wikilink(body) == _pipe_in_wikilink_as_first_written(body)


# --- the memos of notes/note.py against the functions they memoize (tests/memo_oracle.py) ----

_FIELD_LINES = st.builds(
    "{}{}{}{}".format,
    st.sampled_from(["- ", "* ", " -", "-", ""]),
    st.sampled_from(["Epistemic Mode", "Mapping Status", "Line hint", "Source", "x y", "原文"]),
    st.sampled_from([": ", "：", ":", " : ", ""]),
    st.sampled_from(["ASSERTED ", "[a](b)", "", "120", "  x  "]),
)
_ROWS = st.builds(
    "|".join,
    st.lists(
        st.sampled_from([" a ", "---", ":-:", " [[K/X|x]] ", "\\", " b \\| c ", "", " [[y"]),
        max_size=5,
    ),
)
MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_field_memo": (st.tuples(_FIELD_LINES) | one_text, numbered),
    "_row_memo": (st.tuples(_ROWS) | one_text, numbered),
}


@pytest.mark.parametrize("name", memo_test(note_module, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(note_module, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)


# --- the shortcuts of notes/note.py against the plain rules they stand for ---------------

# blanks as str.strip and the regex's \s read them: ASCII, Unicode spaces, separators
_BLANKS = [" ", "\t", "\u3000", "\xa0", "\x1c", "\x85", "\u2028", "\x0b"]


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.sampled_from([*_BLANKS, "-", "*", "Mode", ":", "：", "原文", "x", ""]), max_size=7
    ).map("".join)
    | _FIELD_LINES
)
def test_a_line_passed_over_before_the_memo_is_no_field(line: str) -> None:
    assert _field_of(line) == _field(line)


def _text_of_line_by_line(parts: list[Part]) -> Text | None:
    """The rule `_text_of` stands for: each part's lines looked at one by one for the
    first that is not blank, the blank lines at the end dropped, then joined."""
    kept: list[str] = []
    first = 0
    for part in parts:
        if part.kind != "text":
            continue
        if kept:
            kept.extend(part.lines)
            continue
        for offset, line in enumerate(part.lines):
            if line.strip():
                first = part.line + offset
                kept.extend(part.lines[offset:])
                break
    if not kept:
        return None
    while not kept[-1].strip():
        kept.pop()
    return Text("\n".join(kept).strip(), first)


_TEXT_LINES = st.lists(
    st.lists(st.sampled_from([*_BLANKS, "a", "原文", " b ", "-"]), max_size=4).map("".join),
    max_size=4,
)
_PARTS = st.lists(
    st.builds(
        Part, st.sampled_from(["text", "text", "code", "heading"]), st.integers(1, 9), _TEXT_LINES
    ),
    max_size=4,
)


@settings(max_examples=1500, deadline=None)
@given(_PARTS)
def test_a_text_is_joined_as_line_by_line(parts: list[Part]) -> None:
    assert _text_of(parts) == _text_of_line_by_line(parts)


def _outcome(decode: Any, text: str) -> object:
    try:
        return ("value", decode(text))
    except (ValueError, RecursionError) as exc:
        return (type(exc), str(exc))


_JSON_PIECES = st.sampled_from(
    ["{", "}", "[", "]", ",", ":", '"a"', '"\\u0001"', "1", "-0.5", "1e999", "NaN",
     "Infinity", "true", "null", " ", "\n", "\t", "\r", "x", '"原文"', "", "\f"]
)  # fmt: skip
_JSON_TEXTS = st.lists(_JSON_PIECES, max_size=10).map("".join) | st.builds(
    "{}{}{}".format,
    st.sampled_from(["", " ", "\n  ", "\t"]),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=4),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=6,
    ).map(lambda value: json.dumps(value, ensure_ascii=False, indent=2)),
    st.sampled_from(["", "\n", " x", "\n\n", "]"]),
)


@settings(max_examples=1500, deadline=None)
@given(_JSON_TEXTS)
def test_a_block_is_decoded_as_the_decoder_s_decode_decodes_it(text: str) -> None:
    assert _outcome(_decoded, text) == _outcome(_JSON.decode, text)
