"""How a note's body divides: its level-2 sections, and within a section the runs of
text, the fenced code blocks and the deeper headings (vt's own blocks left out).

Only a few lines can be structure (a fence, a heading, a vt marker); `marked_lines`
finds them in the whole text at once, and the functions here jump from one to the
next instead of looking at every line.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

from vault_tools.notes import markers
from vault_tools.notes.headings import fence_closes, fence_open, heading_of, section_key


@dataclass(slots=True)
class Section:
    """A level-2 section of a note: its heading and the range of lines under it."""

    key: str  # normalised title: "source", "claim", "frame", … or the raw normalised title
    title: str
    line: int  # heading line (1-based)
    start: int  # index of the first body line in `lines`
    end: int  # index one past the last body line


@dataclass(slots=True)
class Body:
    """The note's lines, and which of them can be structure (see `marked_lines`)."""

    lines: list[str]
    marks: list[int]
    # the heading read from each marked line (None: no heading), as `level2_sections`
    # read them, so that `parts_of` reads no line twice; _UNREAD for those it skipped
    # (inside fenced code)
    headings: list[tuple[int, str] | None] = field(default_factory=list)


# The only lines that can be structure: a fence (``` or ~~~ after up to 3 spaces), a
# heading, a vt block marker. A regex finds them in the whole text at once (searching
# from the newline before them is several times faster than a MULTILINE `^`, which is
# tried at every character); the parsers then jump from one to the next instead of
# looking at every line.
_MARKED = re.compile(rf"\n {{0,3}}(?:```|~~~|#|{markers.OPENING})")
_FIRST_MARKED = re.compile(rf" {{0,3}}(?:```|~~~|#|{markers.OPENING})")


# a marked line whose heading is not read yet (compared by identity: no heading has level 0)
_UNREAD: tuple[int, str] = (0, "")


def marked_lines(text: str, start: int) -> list[int]:
    """The indexes (from `start` on) of the lines that can be structure, in order."""
    marks = [0] if _FIRST_MARKED.match(text) and start == 0 else []
    index, position = 0, 0
    for match in _MARKED.finditer(text):
        line_start = match.start() + 1
        index += text.count("\n", position, line_start)
        position = line_start
        if index >= start:
            marks.append(index)
    return marks


def level2_sections(body: Body) -> list[Section]:
    """Level-2 headings outside fenced code."""
    lines = body.lines
    sections: list[Section] = []
    fence: str | None = None
    headings: list[tuple[int, str] | None] = [_UNREAD] * len(body.marks)
    body.headings = headings
    for k, index in enumerate(body.marks):  # all from `start` on
        line = lines[index]
        if fence:
            if fence_closes(line, fence):
                fence = None
            continue
        first = line[:1]
        if first == "#" and line[1:2] == " ":
            # a level-1 heading (`# ` opens no other line): its title, the note's own
            # title as a rule and so a line no memo has seen, is read by `parts_of` if
            # a section holds it
            continue
        # a line that starts with its fence or marker is no heading
        headings[k] = heading = heading_of(line) if first == "#" or first == " " else None
        if heading is not None:
            if heading[0] == 2:
                if sections:
                    sections[-1].end = index
                title = heading[1]
                sections.append(
                    Section(section_key(title), title, index + 1, index + 1, len(lines))
                )
        elif opened := fence_open(line):
            fence = opened[0]
    return sections


@dataclass(slots=True)
class Part:
    """A stretch of lines inside a section: plain text lines, or a fenced block."""

    kind: str  # "text" | "code" | "heading"
    line: int  # 1-based line of the first line
    lines: list[str]
    info: str = ""  # a code block's info string; a heading's title


def parts_of(body: Body, section: Section) -> list[Part]:
    """The section's text runs, fenced blocks and headings; vt's own blocks left out."""
    lines, marks, headings = body.lines, body.marks, body.headings
    parts: list[Part] = []
    end = section.end
    run = section.start  # the first line not yet in a part
    k = bisect_left(marks, run)
    # only the marked lines are looked at; the lines between them join the text run
    while k < len(marks) and (index := marks[k]) < end:
        line = lines[index]
        heading = headings[k] if k < len(headings) else _UNREAD
        if heading is _UNREAD:
            heading = heading_of(line)
        if heading is not None:  # never a fence nor a vt marker
            if index > run:
                _add_text(parts, run, lines[run:index])
            parts.append(Part("heading", index + 1, [], heading[1]))
            run, k = index + 1, k + 1
        elif opened := fence_open(line):
            close, k = _fence_end(body, k, end, opened[0])
            info = opened[1].split(maxsplit=1)
            if index > run:
                _add_text(parts, run, lines[run:index])
            parts.append(
                Part("code", index + 1, lines[index + 1 : close], info[0].lower() if info else "")
            )
            run = close + 1
        elif (read := markers.read_marker(line)) is not None and read[1] == markers.START:
            if index > run:
                _add_text(parts, run, lines[run:index])
            close, k = _vt_block_end(body, k, end)
            run = close + 1  # not part of what the reviewer wrote
        else:
            k += 1
    if end > run:
        _add_text(parts, run, lines[run:end])
    return parts


def _add_text(parts: list[Part], index: int, lines: list[str]) -> None:
    """Add text lines, the first at `index`, to the text part before them or as one."""
    if parts and parts[-1].kind == "text":
        parts[-1].lines.extend(lines)  # after one of vt's blocks, the text goes on
    else:
        parts.append(Part("text", index + 1, lines))


def _vt_block_end(body: Body, k: int, limit: int) -> tuple[int, int]:
    """The index of the end marker of the vt block opened at marks[k], and the position
    in marks of the first mark after it."""
    marks = body.marks
    for j in range(k + 1, len(marks)):  # not a slice of marks: a copy per block is quadratic
        index = marks[j]
        if index >= limit:
            return limit - 1, j  # the block runs on into the next section
        read = markers.read_marker(body.lines[index])
        if read is not None and read[1] == markers.END:
            return index, j + 1
    return limit - 1, len(marks)


def _fence_end(body: Body, k: int, limit: int, marker: str) -> tuple[int, int]:
    """The index of the line closing the fence opened at marks[k], and the position in
    marks of the first mark after it."""
    marks = body.marks
    for j in range(k + 1, len(marks)):  # not a slice of marks: a copy per fence is quadratic
        index = marks[j]
        if index >= limit:
            return limit, j  # unclosed: the block runs to the end of the section
        if fence_closes(body.lines[index], marker):
            return index, j + 1
    return limit, len(marks)


def subsections(parts: list[Part]) -> dict[str, tuple[int, list[Part]]]:
    """Group parts under their level-3 (or deeper) headings, keyed by normalised title."""
    groups: dict[str, tuple[int, list[Part]]] = {"": (0, [])}
    current = ""
    for part in parts:
        if part.kind == "heading":
            current = section_key(part.info)
            groups.setdefault(current, (part.line, []))
            continue
        groups[current][1].append(part)
    return groups
