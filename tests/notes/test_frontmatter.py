"""Frontmatter (Obsidian properties): strict, safe YAML with the line of every key."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test, numbered
from vault_tools.findings import CODES
from vault_tools.notes import frontmatter
from vault_tools.notes.note import parse_note


def read(text: str) -> frontmatter.FrontMatter:
    return frontmatter.read(text.split("\n"), "03_claims/n.md")


def codes(fm: frontmatter.FrontMatter) -> list[tuple[str, int | None]]:
    return [(f.code, f.line) for f in fm.findings]


def test_seed_style_properties_and_their_lines() -> None:
    fm = read(
        "---\nclaim_id: SA260324R-0125\nreview_action: REQUEST_REPAIR\n"
        'reviewer: ""\ntags: [claim-review]\n---\n# body'
    )
    assert fm.present and fm.findings == []
    assert fm.properties == {
        "claim_id": "SA260324R-0125",
        "review_action": "REQUEST_REPAIR",
        "reviewer": "",
        "tags": ["claim-review"],
    }
    assert fm.lines == {"claim_id": 2, "review_action": 3, "reviewer": 4, "tags": 5}
    assert (fm.end_line, fm.body_index) == (6, 6)


def test_comments_folded_scalars_flow_lists_and_block_lists() -> None:
    fm = read(
        "---\n# a comment\nclaim_id: 'X-1'  # trailing\nreview_comment: >-\n"
        "  folded\n  text\nnotes: |\n  kept\n  lines\ntags: [a, \"b\", 'c']\n"
        "aliases:\n  - one\n  - two\n---\n"
    )
    assert fm.findings == []
    assert fm.properties["claim_id"] == "X-1"
    assert fm.properties["review_comment"] == "folded text"
    assert fm.properties["notes"] == "kept\nlines\n"
    assert fm.properties["tags"] == ["a", "b", "c"]
    assert fm.properties["aliases"] == ["one", "two"]
    assert fm.lines["claim_id"] == 3 and fm.lines["tags"] == 10 and fm.lines["aliases"] == 11


def test_dates_stay_strings_so_properties_round_trip_as_json() -> None:
    fm = read("---\ncreated: 2026-11-29\nwhen: 2026-11-29T10:00:00Z\n---")
    assert fm.properties == {"created": "2026-11-29", "when": "2026-11-29T10:00:00Z"}
    json.dumps(fm.properties)


@pytest.mark.parametrize(
    "value",
    [
        "!!binary aGVsbG8=",
        "!!set {a, b}",
        "!!timestamp 2026-11-29",
        "!!str 12",
        "!!python/object:os.system ls",
    ],
)
def test_explicit_tags_give_json_values_or_a_finding(value: str) -> None:
    fm = read(f"---\nclaim_id: X\nextra: {value}\n---")
    if fm.findings:
        assert {f.code for f in fm.findings} <= {"yaml-syntax"}
        assert fm.findings[0].line == 3
    else:
        json.dumps(fm.properties, allow_nan=False)


def test_no_frontmatter() -> None:
    fm = read("# just a heading\n---\n")
    assert not fm.present and fm.properties == {} and fm.body_index == 0 and fm.findings == []


def test_empty_frontmatter_is_no_properties() -> None:
    for text in ("---\n---\nbody", "---\n\n---\nbody", "---\n# only a comment\n---\n"):
        fm = read(text)
        assert fm.present and fm.properties == {} and fm.findings == [], text


def test_closing_with_dots_or_trailing_spaces() -> None:
    assert read("---\na: 1\n...\nbody").properties == {"a": 1}
    fm = read("--- \na: 1\n---  \nbody")
    assert fm.properties == {"a": 1} and fm.body_index == 3


def test_only_the_first_closing_line_ends_the_frontmatter() -> None:
    fm = read("---\na: 1\n---\nbody\n---\nb: 2\n---")
    assert fm.properties == {"a": 1} and fm.end_line == 3


def test_unclosed() -> None:
    fm = read("---\nclaim_id: X\nreview_action: APPROVE\n# body")
    assert codes(fm) == [("frontmatter-unclosed", 1)]
    assert fm.properties == {} and fm.body_index == 4


@pytest.mark.parametrize(
    "text,line",
    [
        ("---\nclaim_id: X\nreviewer: a: b\n---", 3),
        ("---\nclaim_id: X\ntags: [a, b\nreviewer: x\n---", 4),
        ("---\nclaim_id: X\n\ttags: x\n---", 3),
        ('---\nclaim_id: X\nreview_comment: "open\n---', 3),
        ("---\nclaim_id: X\n? [a, b]\n: c\n---", 3),
    ],
)
def test_syntax_errors_name_their_line(text: str, line: int) -> None:
    fm = read(text)
    assert [f.code for f in fm.findings] == ["yaml-syntax"]
    assert fm.findings[0].line in (line, line + 1)  # where the scanner noticed it
    assert fm.findings[0].message.startswith("invalid YAML")


@pytest.mark.parametrize(
    "text,line",
    [
        ("---\n- claim_id: X\n- review_action: APPROVE\n---", 2),
        ("---\n[claim_id, X]\n---", 2),
        ("---\njust a sentence\n---", 2),
        ("---\n\n42\n---", 3),
    ],
)
def test_not_a_mapping(text: str, line: int) -> None:
    fm = read(text)
    assert codes(fm) == [("yaml-not-mapping", line)]
    assert fm.properties == {}


def test_duplicate_keys_top_level_and_nested() -> None:
    fm = read("---\nclaim_id: X\nreview_action: APPROVE\nreview_action: REJECT\n---")
    assert codes(fm) == [("yaml-duplicate-key", 4)]
    assert "first on line 3" in fm.findings[0].message
    nested = read("---\nclaim_id: X\nmeta:\n  a: 1\n  a: 2\n---")
    assert codes(nested) == [("yaml-duplicate-key", 5)]
    in_list = read("---\nclaim_id: X\nitems:\n  - {a: 1, a: 2}\n---")
    assert codes(in_list) == [("yaml-duplicate-key", 4)]


def test_anchors_and_aliases_are_refused_before_expansion() -> None:
    bomb = ["---", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
    for index, prev in enumerate("abcdefgh"):
        name = "bcdefghi"[index]
        bomb.append(f"{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]")
    fm = read("\n".join([*bomb, "---"]))
    assert codes(fm) == [("yaml-alias", 2)]
    assert codes(read("---\nclaim_id: X\nr: &who alice\nc: *who\n---")) == [("yaml-alias", 3)]


def test_anchor_and_star_characters_inside_strings_are_fine() -> None:
    fm = read('---\nreview_comment: "a*b & c"\nnote: plain * and & text\n---')
    assert fm.findings == []
    assert fm.properties["review_comment"] == "a*b & c"


def test_string_keys_and_lines_agree() -> None:
    fm = read('---\nclaim_id: X\n"quoted key": 1\n---')
    assert set(fm.properties) == set(fm.lines) == {"claim_id", "quoted key"}


def test_non_string_keys_are_kept_as_written() -> None:
    fm = read("---\n1: one\ntrue: two\nnull: three\n---")
    assert fm.properties == {"1": "one", "true": "two", "null": "three"}
    assert set(fm.lines) == set(fm.properties)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from(list("ab:-[]{}&*!|>'\"# \t\n?,.0")), max_size=20),
        max_size=12,
    )
)
def test_never_raises_and_lines_stay_inside_the_frontmatter(lines: list[str]) -> None:
    body = [line for chunk in lines for line in chunk.split("\n")]
    body = [line for line in body if line.rstrip() not in ("---", "...")]
    fm = frontmatter.read(["---", *body, "---"], "n.md")
    for finding in fm.findings:
        assert finding.code in CODES
        assert 1 <= finding.line <= len(body) + 2
    for line in fm.lines.values():
        assert 2 <= line <= len(body) + 1


@pytest.mark.parametrize(
    "line,key",
    [
        ('reviewer: "al\x00ice"', "reviewer"),  # raw, quoted: the fast path steps aside
        ("reviewer: al\x07ice", "reviewer"),  # raw, plain
        ('reviewer: "al\\0ice"', "reviewer"),  # a YAML escape
        ('tags: ["a\\x1b[31m"]', "tags"),  # in a list
        ('meta: {"k\\u0001": 1}', "meta"),  # in a mapping's key
    ],
)
def test_a_control_character_is_a_finding_on_its_line(line: str, key: str) -> None:
    fm = read(f"---\nclaim_id: X-1\n{line}\n---\n")
    assert codes(fm) == [("control-character", 3)]
    assert f"property '{key}'" in fm.findings[0].message
    assert fm.properties["claim_id"] == "X-1"  # still a review note, and its finding stays


def test_tab_and_carriage_return_are_no_control_characters() -> None:
    fm = read('---\nclaim_id: X-1\nreview_comment: "a\\tb\\rc"\nreviewer: "x\ty"\n---\n')
    assert fm.findings == []


@pytest.mark.parametrize(
    "value", ["9" * 5000, "-" + "9" * 4301, "0x" + "f" * 5000, ".inf", "-.inf", ".nan", "1.0e+999"]
)
def test_a_number_no_json_carries_is_a_finding_on_its_line(value: str) -> None:
    fm = read(f"---\nclaim_id: X-1\nreview_comment: ok\ncount: {value}\n---\n")
    assert codes(fm) == [("number-too-large", 4)]
    assert "count" not in fm.properties and fm.properties["claim_id"] == "X-1"
    json.dumps(fm.properties, allow_nan=False)  # what is left is JSON


QUOTE_OPENED = "the quote opened on this line never closes"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # PyYAML gives up two lines later, at the next property's empty quotes
        ('---\nclaim_id: X\nreviewer: "alice\nreview_comment: ""\ntags: [a]\n---\n', 3),
        ("---\nclaim_id: X\nreviewer: 'alice\nreview_comment: 'it''s'\n---\n", 3),
        ('---\nclaim_id: X\ntags: "a\n---\n', 3),  # at the end of the frontmatter
        ('---\nclaim_id: X\nreviewer: "al\\"ice\nb: 1\n---\n', 3),  # an escaped quote
    ],
)
def test_an_unclosed_quote_is_reported_where_it_opens(text: str, line: int) -> None:
    fm = read(text)
    assert codes(fm) == [("yaml-syntax", line)]
    assert QUOTE_OPENED in fm.findings[0].message


def test_a_quoted_value_over_indented_lines_is_not_an_unclosed_quote() -> None:
    assert read('---\nclaim_id: X\nreviewer: "line one\n  line two"\n---\n').findings == []
    # a later error is reported where YAML finds it, not at the quote
    fm = read('---\nclaim_id: X\nreviewer: "line one\n  line two"\ntags: [a\n---\n')
    assert codes(fm) == [("yaml-syntax", 6)] and QUOTE_OPENED not in fm.findings[0].message


# --- may_name: the byte search before parsing, against parsing -------------------------
#
# The commands that survey many notes pass over those whose bytes never spell
# `claim_id` (or `review_action`, or `REQUEST_REPAIR`) without parsing them. The plain
# rule is the parse: a note whose properties name the word, as a key or a value, must
# never be passed over. Frontmatters spelling the words every way YAML can: plainly,
# quoted, through a double-quoted scalar's escapes (\x, \u, \U, an escaped line break),
# in a flow mapping; with or without the words elsewhere in the note.

WORDS = ["claim_id", "review_action", "REQUEST_REPAIR"]


def _escaped(word: str, how: int) -> str:
    """`word` as a double-quoted YAML scalar spelled without its own bytes."""
    at = how % len(word)
    code = ord(word[at])
    escape = [f"\\x{code:02X}", f"\\u{code:04x}", f"\\U{code:08X}"][how % 3]
    if how % 4 == 3 and at:  # an escaped line break between two of its characters
        return f'"{word[:at]}\\\n  {word[at:]}"'
    return f'"{word[:at]}{escape}{word[at + 1 :]}"'


@st.composite
def spelled(draw: st.DrawFn, word: str) -> str:
    kind = draw(st.sampled_from(["plain", "single", "double", "escaped"]))
    if kind == "plain":
        return word
    if kind == "single":
        return f"'{word}'"
    if kind == "double":
        return f'"{word}"'
    return _escaped(word, draw(st.integers(0, 40)))


@st.composite
def notes_naming(draw: st.DrawFn) -> bytes:
    key = draw(spelled("claim_id") | st.sampled_from(["id", "title"]))
    action = draw(spelled("REQUEST_REPAIR") | st.sampled_from(["PENDING", "APPROVE"]))
    action_key = draw(spelled("review_action") | st.just("state"))
    lines = [f"{key}: DV1-0001", f"{action_key}: {action}"]
    if draw(st.booleans()):
        lines = [f"{{{key}: DV1-0001, {action_key}: {action}}}"]  # a flow mapping
    body = draw(st.sampled_from(["# a note\n", "# a note\nreview_action is claim_id\n"]))
    return ("---\n" + "\n".join(lines) + "\n---\n" + body).encode()


@settings(max_examples=300, deadline=None)
@given(raw=notes_naming())
def test_a_note_whose_properties_name_a_word_is_never_passed_over(raw: bytes) -> None:
    note = parse_note(raw, "03_claims/n.md")
    for word in WORDS:
        named = word in note.properties or word in map(str, note.properties.values())
        if named:
            assert frontmatter.may_name(raw, word.encode()), (word, raw)


def test_the_escapes_spell_the_words_as_yaml_reads_them() -> None:
    """What the property relies on: each escaped spelling parses to the word itself."""
    for word in WORDS:
        for how in range(12):
            raw = f"---\nk: {_escaped(word, how)}\n---\n".encode()
            assert word.encode() not in raw
            assert parse_note(raw, "n.md").properties == {"k": word}, raw


# property lines of the shapes notes hold, and any short text
_LINES = st.one_of(
    st.builds(
        "{}: {}".format,
        st.sampled_from(["tags", "review_action", "n", "check_source_claim", "y"]),
        st.sampled_from(["[a, b]", "[]", "true", "APPROVE", '"mark.t"', "''", "12", "x # c"]),
    ),
    st.text(alphabet="ab:[], \t\"'#-1", max_size=16),
)

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_short_line": (st.tuples(_LINES), numbered),
}


@pytest.mark.parametrize("name", memo_test(frontmatter, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(frontmatter, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=6))
def test_remembered_lines_read_as_each_line_read_anew(lines: list[str]) -> None:
    expected: dict[str, Any] | None = {}
    for line in lines:
        entry = frontmatter._simple_line(line)
        if expected is None or entry is None or entry[0] in expected:
            expected = None
        else:
            expected[entry[0]] = entry[1]
    for _ in range(2):  # the second time from the memo
        found = frontmatter.simple_properties("\n".join(lines))
        assert (found[0] if found is not None else None) == expected
        assert found is None or all(type(v) is not tuple for v in found[0].values())


def test_a_long_line_is_read_under_the_digit_limit_of_the_moment() -> None:
    # a line past MEMO_LINE may hold an integer near Python's limit on digits, which a
    # program can lower: such a line is never remembered
    line = "size: " + "1" * 700
    assert len(line) > frontmatter.MEMO_LINE
    first = frontmatter.simple_properties(line)
    assert first is not None and first[0]["size"] == int("1" * 700)
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        assert frontmatter.simple_properties(line) is None  # for PyYAML's reading to refuse
    finally:
        sys.set_int_max_str_digits(limit)


def read_closing_first(lines: list[str], path: str) -> frontmatter.FrontMatter:
    """The rule `read`'s shortcut stands for: the closing line found first, by looking at
    each line before the first bare `---`, then the lines before it loaded."""
    fm = frontmatter.FrontMatter()
    if not lines or lines[0].rstrip() != "---":
        return fm
    fm.present = True
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if close is None:
        return frontmatter.read(lines, path)  # unclosed: no shortcut to hold to anything
    fm.body_index = fm.end_line = close + 1
    frontmatter._load(lines[1:close], path, fm)
    return fm


_HEAD_LINES = st.sampled_from(
    ["---", "--- ", "...", "... ", "----", "---x", "claim_id: A-1", "tags: [a, b]", "x: 'y'",
     "key:", "- item", "a: b: c", "claim_id: A-1", "", " k: v", "_k: 1", "k: no"]
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(_HEAD_LINES, max_size=8))
def test_the_frontmatter_read_without_looking_for_an_earlier_close_is_the_same(
    body: list[str],
) -> None:
    lines = ["---", *body, "# body"]
    fm, plain = frontmatter.read(lines, "n.md"), read_closing_first(lines, "n.md")
    assert (fm.present, fm.properties, fm.lines, fm.body_index, fm.end_line) == (
        plain.present,
        plain.properties,
        plain.lines,
        plain.body_index,
        plain.end_line,
    )
    assert [(f.code, f.line, f.message) for f in fm.findings] == [
        (f.code, f.line, f.message) for f in plain.findings
    ]
