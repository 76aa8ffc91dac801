"""One reading of a note's block structure (CommonMark's fences and ATX headings) for
the note parser and the note writer: they must find the same sections."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import render_note
from tests.memo_oracle import check_memo, memo_test, numbered, one_text
from vault_tools.notes import headings as headings_module
from vault_tools.notes import writer
from vault_tools.notes.headings import atx_heading, fence_closes, fence_open
from vault_tools.notes.lines import split_lines
from vault_tools.notes.note import parse_text
from vault_tools.notes.owned_properties import frontmatter_bounds


def writer_sections(text: str) -> list[tuple[int, str]]:
    """(1-based line, title) of each level-2 heading the writer sees outside code."""
    lines = split_lines(text)
    bounds = frontmatter_bounds(lines)
    start = 0 if bounds is None else bounds[1] + 1
    mask = writer.code_mask(lines, start)
    found = []
    for i in range(start, len(lines)):
        heading = writer.atx_heading(lines[i])
        if not mask[i] and heading is not None and heading[0] == 2:
            found.append((i + 1, heading[1]))
    return found


def parser_sections(text: str) -> list[tuple[int, str]]:
    return [(s.line, s.title) for s in parse_text(text, "n.md").sections]


def test_a_backtick_fence_info_string_cannot_hold_a_backtick() -> None:
    assert fence_open("```a`b") is None
    assert fence_open("~~~a`b") == ("~~~", "a`b")
    assert fence_open("```json") == ("```", "json")
    note = render_note()
    marker = "## ③ Semantic Frame"
    assert marker in note
    text = note.replace(marker, "```a`b is a code span, not a fence\n\n" + marker, 1)
    parsed = parse_text(text, "03_claims/DV1-0001.md")
    assert [f for f in parsed.findings if f.code == "section-missing"] == []
    assert parser_sections(text) == writer_sections(text)


def test_a_tab_after_the_hashes_makes_a_heading() -> None:
    assert atx_heading("##\t⑥ Human Review") == (2, "⑥ Human Review")
    note = render_note()
    assert "## ⑤ Human Review" in note
    text = note.replace("## ⑤ Human Review", "##\t⑤ Human Review", 1)
    parsed = parse_text(text, "03_claims/DV1-0001.md")
    assert parsed.section("review") is not None
    assert [f for f in parsed.findings if f.code == "section-missing"] == []
    assert writer.find_heading(text, "Human Review") is not None
    assert parser_sections(text) == writer_sections(text)


def test_a_closing_fence_takes_nothing_but_blanks_after_it() -> None:
    assert fence_closes("```", "```") and fence_closes("  ````  \t", "```")
    assert not fence_closes("``` `", "```")
    assert not fence_closes("```x", "```")
    assert not fence_closes("~~~", "```")
    assert not fence_closes("``", "```")
    assert not fence_closes("    ```", "```")


LINES = st.sampled_from(
    [
        "## A",
        "##\tB",
        "   ## C",
        "    ## D",
        "##E",
        "## F ##",
        "## G#",
        "##",
        "### H",
        "# I",
        "####### J",
        " ## ⑥ Human Review",
        "```",
        "```json",
        "```a`b",
        "``` `",
        "````",
        "~~~",
        "~~~ a`b",
        "~~~~",
        "   ```",
        "    ```",
        "text",
        "",
        "`",
        "<!-- vt:x:start -->",
        "#tag",
        "\t## K",
    ]
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(LINES, max_size=14), st.booleans())
def test_reader_and_writer_find_the_same_sections(lines: list[str], crlf: bool) -> None:
    end = "\r\n" if crlf else "\n"
    text = end.join(["---", "claim_id: X", "---", *lines]) + end
    assert parser_sections(text) == writer_sections(text)


# The ATX rule as the regex headings.py documents; atx_heading reads lines by hand.
ATX_RULE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")


def atx_by_the_rule(line: str) -> tuple[int, str] | None:
    m = ATX_RULE.fullmatch(line)
    return None if m is None else (len(m.group(1)), (m.group(2) or "").strip(" \t"))


HEADING_TEXT = st.text(alphabet=" \t#a①\r\u3000\x0b", max_size=14)


@settings(max_examples=3000, deadline=None)
@given(st.one_of(HEADING_TEXT, st.builds(lambda a, b: a + b, LINES, HEADING_TEXT)))
def test_atx_heading_follows_the_rule(line: str) -> None:
    assert atx_heading(line) == atx_by_the_rule(line)


def test_atx_heading_closing_runs() -> None:
    for line in ("## A #", "## A#", "## #", "## ##", "##  ##  ", "## A ## x", "## A\t##\t", "#"):
        assert atx_heading(line) == atx_by_the_rule(line), line
    assert atx_heading("## A ##") == (2, "A")
    assert atx_heading("## A#") == (2, "A#")


# --- the memos of notes/headings.py against the functions they memoize (tests/memo_oracle.py) ----

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "section_key": (
        one_text
        | st.sampled_from([("Evidence",), ("② Atomic Claim",), ("V2 Atomic Claim Draft",)]),
        numbered,
    ),
    "_atx_heading_memo": (
        one_text
        | st.tuples(
            st.builds("".join, st.lists(st.sampled_from([" ", "#", "\t", "A", "①"]), max_size=9))
        )
        | st.sampled_from([("## ② Atomic Claim",), ("### Evidence ##",), ("####### x",)]),
        numbered,
    ),
}


@pytest.mark.parametrize("name", memo_test(headings_module, MEMO_ARGS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(
        getattr(headings_module, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill
    )
