"""vt's block markers, the one place they are spelt and read.

vt owns the text between `<!-- vt:NAME:start -->` and `<!-- vt:NAME:end -->`
(docs/note-format.md). vt writes them in that form; it reads a marker as CommonMark lays
out an HTML comment line: up to 3 spaces before it, any blanks inside `<!--` and `-->`
(`<!--vt:preview:start-->` is the same marker), blanks after it, a CR before the line's
end. The note parser, the writer and the watcher all read markers through here, so no
two of them can disagree about a line.
"""

from __future__ import annotations

import re

START = "start"
END = "end"
# a block's name: what follows `vt:`
NAME = r"[a-z0-9][a-z0-9_-]*"
_LINE = re.compile(rf" {{0,3}}<!--[ \t]*vt:({NAME}):(start|end)[ \t]*-->[ \t]*\r?\n?")
# what a line must start with to be a marker at all (after up to 3 spaces), cheap to test
OPENING = "<!--"


def marker(name: str, which: str) -> str:
    """The marker line vt writes (without a line ending): `<!-- vt:NAME:start -->`."""
    return f"<!-- vt:{name}:{which} -->"


def read_marker(line: str) -> tuple[str, str] | None:
    """(name, START or END) of a marker line (with or without its line ending), else
    None."""
    if OPENING not in line[:7]:  # the usual line: not even an HTML comment
        return None
    m = _LINE.fullmatch(line)
    return (m.group(1), m.group(2)) if m else None


def has_start(raw: bytes, name: str) -> bool:
    """Whether the note's bytes hold a line that is the start marker of block `name`
    (wherever it stands: the caller only needs to know whether vt's block is there)."""
    needle = f"vt:{name}:{START}".encode()
    position = raw.find(needle)
    while position >= 0:
        line_start = raw.rfind(b"\n", 0, position) + 1
        line_end = raw.find(b"\n", position)
        line = raw[line_start : len(raw) if line_end < 0 else line_end]
        if read_marker(line.decode("utf-8", "replace")) == (name, START):
            return True
        position = raw.find(needle, position + 1)
    return False
