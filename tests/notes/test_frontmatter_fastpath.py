"""The frontmatter fast path must read exactly what PyYAML reads, or step aside."""

from __future__ import annotations

import re

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.notes import frontmatter
from vault_tools.notes.frontmatter import simple_properties
from vault_tools.notes.value_limits import CONTROL
from vault_tools.notes.yaml_properties import PropertyLoader

KEYS = st.one_of(
    st.sampled_from(["claim_id", "review_action", "y", "on", "null", "tags", "my-key", "_k"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True),
)
TOKENS = st.sampled_from(
    [
        "true",
        "false",
        "yes",
        "No",
        "ON",
        "null",
        "~",
        "1",
        "012",
        "-3",
        "1.5",
        ".5",
        "e5",
        "0x1F",
        "2026-11-29",
        "12:30",
        "x.y",
        "a_b",
        "SA260324R-0125",
        "PENDING",
        "[]",
        "[a, b]",
        "[1, x]",
        "[yes]",
        '""',
        "''",
        '"a#b"',
        "[warm prefill, x]",
        "[no way, yes]",
        "[a  b]",
        "[a 1.5]",
        '"a\\"b"',
        "'it''s'",
        "x # c",
        "a: b",
        "[[X]]",
        '"[[X]]"',
        "!!str 1",
        "&a x",
        "*a",
        "|",
        ">-",
    ]
)
VALUES = st.one_of(TOKENS, st.text(alphabet="abcXYZ019_.-:#'\"[], ", max_size=12))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(KEYS, st.one_of(st.none(), VALUES)), min_size=1, max_size=6))
def test_fast_path_agrees_with_pyyaml(pairs: list[tuple[str, str | None]]) -> None:
    source = "\n".join(f"{key}:" if value is None else f"{key}: {value}" for key, value in pairs)
    fast = simple_properties(source)
    if fast is None:
        return  # stepped aside: the full YAML path decides
    expected = yaml.load(source, Loader=PropertyLoader)
    assert fast[0] == expected
    assert [type(v) for v in fast[0].values()] == [type(v) for v in expected.values()]
    assert list(fast[1]) == list(expected)


def test_fast_path_reads_a_typical_note() -> None:
    source = (
        "claim_id: SA260324R-0125\nreview_action: REQUEST_REPAIR\ncheck_source_claim: true\n"
        'reviewer: ""\ntags: [claim-review]'
    )
    properties, lines = simple_properties(source)
    assert properties == {
        "claim_id": "SA260324R-0125",
        "review_action": "REQUEST_REPAIR",
        "check_source_claim": True,
        "reviewer": "",
        "tags": ["claim-review"],
    }
    assert lines == {
        "claim_id": 2,
        "review_action": 3,
        "check_source_claim": 4,
        "reviewer": 5,
        "tags": 6,
    }


def test_fast_path_steps_aside_for_duplicates_and_comments() -> None:
    assert simple_properties("a: 1\na: 2") is None
    assert simple_properties("a: 1 # note") is None
    assert simple_properties("a: >-\n  folded") is None


def test_a_remembered_line_gives_each_note_its_own_list() -> None:
    first = simple_properties("tags: [claim-review, todo]\nreviewer: amy")
    assert first is not None
    first[0]["tags"].append("changed by the caller")
    again = simple_properties("reviewer: bob\ntags: [claim-review, todo]")
    assert again == (
        {"reviewer": "bob", "tags": ["claim-review", "todo"]},
        {"reviewer": 2, "tags": 3},
    )
    assert simple_properties("tags: [a]\ntags: [a]") is None  # a repeated key is not simple


@settings(max_examples=800, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "---",
                "--- ",
                "...",
                "... x",
                "----",
                "-- -",
                "a: 1",
                "",
                " ---",
                "---\t",
                "...\u3000",
                "x",
            ]
        ),
        max_size=8,
    )
)
def test_the_closing_line_is_the_first_that_strips_to_a_marker(rest: list[str]) -> None:
    from vault_tools.notes.frontmatter import _closing_line

    lines = ["---", *rest]
    expected = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    assert _closing_line(lines) == expected


# The line rule as a regex (on the line less its trailing blanks); _simple_line reads
# it by hand.
LINE_PIECES_VALUES = st.sampled_from(
    ["a", "B_1", "x-y", "v.2", "-", "0", "12", "07", "[", "]", ",", " ", "'", '"', "yes", "é"]
)
SIMPLE_LINE_RULE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?")


def simple_line_by_the_rule(line: str) -> object:
    content = line.rstrip(" \t")
    match = SIMPLE_LINE_RULE.fullmatch(content)
    if match is None or match.group(1) in frontmatter._NOT_STRINGS:
        return None
    text = match.group(2)
    if text is None:
        return (match.group(1), None) if len(content) == len(line) else None
    value = simple_value_by_the_rule(text)
    return None if value is frontmatter._NO_VALUE else (match.group(1), value)


# The value rules as regexes; _simple_value takes shortcuts (an ASCII identifier is a
# word, a one-item list is not split)
WORD_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
WORDS_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+)*")
INTEGER_RULE = re.compile(r"-?(?:0|[1-9][0-9]*)")


def simple_value_by_the_rule(text: str) -> object:
    not_strings, no_value = frontmatter._NOT_STRINGS, frontmatter._NO_VALUE
    first = text[0]
    if first == '"' or first == "'":
        inner = text[1:-1]
        if (
            len(text) >= 2
            and text[-1] == first
            and first not in inner
            and "\\" not in inner
            and not CONTROL.search(inner)
        ):
            return inner
        return no_value
    if first == "[" and text[-1] == "]":
        items = [item.strip() for item in text[1:-1].split(",")]
        if items == [""]:
            return []
        if all(WORDS_RULE.fullmatch(item) and item not in not_strings for item in items):
            return items
        return no_value
    if text == "true" or text == "false":
        return text == "true"
    if INTEGER_RULE.fullmatch(text):
        return int(text)
    if WORD_RULE.fullmatch(text) and text not in not_strings:
        return text
    return no_value


@settings(max_examples=3000, deadline=None)
@given(st.one_of(VALUES, st.lists(LINE_PIECES_VALUES, min_size=1, max_size=8).map("".join)))
def test_simple_value_follows_the_rules(text: str) -> None:
    if text:
        assert frontmatter._simple_value(text) == simple_value_by_the_rule(text)


LINE_PIECES = st.sampled_from(
    [
        "a",
        "_",
        "-",
        ":",
        " ",
        "\t",
        "x1",
        "yes",
        "null",
        "'",
        '"',
        "[",
        "]",
        ",",
        "#",
        "\r",
        "é",
        "0",
    ]
)


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.lists(LINE_PIECES, max_size=10).map("".join),
        st.tuples(KEYS, st.sampled_from([":", ": ", ":\t", ":  ", ": \t"]), VALUES).map("".join),
    ),
    st.sampled_from(["", " ", "\t", " \t "]),
)
def test_simple_line_follows_the_rule(line: str, trailing: str) -> None:
    line += trailing
    assert frontmatter._simple_line(line) == simple_line_by_the_rule(line)
