"""A note's text as lines that keep their endings, so that vt's edits change only the
lines they mean to: CRLF, a missing final newline and a BOM stay as the human left them."""

from __future__ import annotations

import re

BOM = "\ufeff"  # kept out of the text vt edits, and put back when it writes the note
BOM_BYTES = BOM.encode("utf-8")

LINE = re.compile(r"[^\n]*\n|[^\n]+$")

# A vault's notes repeat most of their short lines (the properties' `key: value` lines,
# the headings, the source's and the claim's field lines, the mapping rows): the parser
# reads each line of at most this many characters once and remembers its reading; a
# longer one (a claim, an evidence paragraph, unique to its note) is read each time, so
# the memos stay small.
MEMO_LINE = 200


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept; only `\\n` ends a line (not \\x0b, \\u2028, …).

    str.splitlines() would also split on form feeds and Unicode separators, which a
    note may legitimately contain inside a line.
    """
    return LINE.findall(text)


def line_ending(text: str) -> str:
    """The note's line ending: that of its first line (`\\n` if it has none)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def without_ending(line: str) -> str:
    """A line without its ending."""
    return line.rstrip("\r\n")


def is_blank(line: str) -> bool:
    return not line.strip()


def with_line_endings(text: str, eol: str) -> str:
    """Text with every line ending converted to `eol`."""
    return text.replace("\r\n", "\n").replace("\n", eol)
