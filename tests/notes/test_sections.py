"""How a note's body divides into sections and parts: `parts_of` walks only the marked
lines and takes the headings `level2_sections` read; it must cut every section as a
walk that reads each line from the start of the section does."""

from __future__ import annotations

from bisect import bisect_left

from hypothesis import example, given, settings
from hypothesis import strategies as st

from vault_tools.notes.headings import atx_heading, fence_closes, fence_open
from vault_tools.notes.markers import END, START, read_marker
from vault_tools.notes.sections import (
    Body,
    Part,
    level2_sections,
    marked_lines,
    parts_of,
)


def parts_as_first_written(body: Body, section_start: int, end: int) -> list[Part]:
    """The walk parts_of replaced: from each line, to the next marked line; every marked
    line read again."""
    lines, marks = body.lines, body.marks
    parts: list[Part] = []

    def add_text(index: int, text: list[str]) -> None:
        if parts and parts[-1].kind == "text":
            parts[-1].lines.extend(text)
        else:
            parts.append(Part("text", index + 1, text))

    def block_end(k: int, closes: object) -> int:
        for j in range(k + 1, len(marks)):
            if marks[j] >= end:
                break
            if closes(lines[marks[j]]):  # type: ignore[operator]
                return marks[j]
        return -1

    index = section_start
    k = bisect_left(marks, index)
    while index < end:
        while k < len(marks) and marks[k] < index:
            k += 1
        upto = marks[k] if k < len(marks) and marks[k] < end else end
        if upto > index:
            add_text(index, lines[index:upto])
            index = upto
            continue
        line = lines[index]
        if (heading := atx_heading(line)) is not None:
            parts.append(Part("heading", index + 1, [], heading[1]))
            index += 1
        elif opened := fence_open(line):
            close = block_end(k, lambda s: fence_closes(s, opened[0]))
            close = end if close < 0 else close
            info = opened[1].split(maxsplit=1)
            parts.append(
                Part("code", index + 1, lines[index + 1 : close], info[0].lower() if info else "")
            )
            index = close + 1
        elif (read := read_marker(line)) is not None and read[1] == START:
            close = block_end(k, lambda s: (r := read_marker(s)) is not None and r[1] == END)
            index = (end - 1 if close < 0 else close) + 1
        else:
            add_text(index, [line])
            index += 1
    return parts


BODY_LINES = st.sampled_from(
    [
        "## A",
        "## B",
        "##\tC",
        "### Evidence",
        "#### deeper",
        "# top",
        "```",
        "```json",
        "````",
        "~~~",
        "```a`b",
        "   ```",
        "    ```",
        "<!-- vt:preview:start -->",
        "<!-- vt:preview:end -->",
        "<!--vt:preview:start-->",
        "  <!-- vt:preview:end -->",
        "<!-- a comment -->",
        "<!-- vt:x -->",
        "#tag",
        "text",
        "",
        "- Epistemic Mode: X",
        '  "key": 1',
    ]
)


# whole blocks too, so that a section often holds text, a vt block, then text again
BODY_CHUNKS = st.one_of(
    BODY_LINES.map(lambda line: [line]),
    st.sampled_from(
        [
            ["## A", "text"],
            ["text", "<!-- vt:preview:start -->", "## inside", "<!-- vt:preview:end -->", "more"],
            ["<!-- vt:preview:start -->", "```", "<!-- vt:preview:end -->", "after"],
            ["```json", '  "k": 1', "```"],
            ["~~~", "## in code", "~~~", "text"],
            ["### Evidence", "text", ""],
        ]
    ),
)


@settings(max_examples=2000, deadline=None)
@given(st.lists(BODY_CHUNKS, max_size=12).map(lambda chunks: sum(chunks, [])), st.integers(0, 3))
@example(["## A", "text", "<!-- vt:preview:start -->", "x", "<!-- vt:preview:end -->", "text"], 0)
def test_parts_of_cuts_sections_as_a_walk_from_every_line(lines: list[str], start: int) -> None:
    start = min(start, len(lines))
    body = Body(lines, marked_lines("\n".join(lines), start))
    sections = level2_sections(body)  # keeps the headings it read, for parts_of
    for section in sections:
        expected = parts_as_first_written(body, section.start, section.end)
        assert parts_of(body, section) == expected
        # and without the headings kept (a Body whose sections were never found)
        fresh = Body(lines, body.marks)
        assert parts_of(fresh, section) == expected
