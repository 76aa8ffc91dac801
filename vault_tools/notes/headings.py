"""Section headings are found by title, not by number (docs/note-format.md)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from vault_tools.notes.lines import MEMO_LINE

# a leading circled number ①–⑳, or "N." / "N)"
_LEADING_NUMBER = re.compile(r"^(?:[\u2460-\u2473]|\d+[.)])\s*")

_KNOWN = {
    "sa source": "source",
    "source": "source",
    "atomic claim": "claim",
    "semantic frame": "frame",
    "canonical entity mapping": "mapping",
    "v2 draft": "drafts",
    "human review": "review",
    "repair preview": "preview",
}


def normalise_heading_title(title: str) -> str:
    """'⑤ V2 Draft（需要修正時直接編輯）' -> 'v2 draft'."""
    title = unicodedata.normalize("NFC", title).strip()
    title = _without_trailing_parenthetical(_LEADING_NUMBER.sub("", title))
    return " ".join(title.split()).casefold()


def _without_trailing_parenthetical(title: str) -> str:
    """The title less a trailing `(…)` or `（…）` (no bracket of its kind inside) and the
    blanks before it. By hand: the regex it replaces tried every blank of a long run."""
    for opening, closing in (("(", ")"), ("（", "）")):
        if title.endswith(closing):
            start = title.rfind(opening, 0, len(title) - 1)
            if start >= 0 and closing not in title[start + 1 : -1]:
                return title[:start].rstrip()
    return title


# The block structure vt reads and writes, by CommonMark's rules, for the note parser
# and the note writer alike. A line is given without its line ending.
#
# A fence: up to 3 spaces, then 3+ backticks or tildes; the info string of a backtick
# fence holds no backtick (```a`b is a paragraph with a code span, not a fence).
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# An ATX heading: up to 3 spaces, 1-6 `#`, then a space, a tab or the end of the line;
# an optional closing run of `#` after a space or tab. As a regex (the rule
# `atx_heading` follows; tests/notes/test_headings.py checks it does, on generated lines):
#     ` {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*` fullmatched, the title being
#     group 2 less blanks at both ends.
# Read by hand, not by that regex: its lazy title tried the closing run at every
# character, the most expensive step of finding a note's sections.


def fence_open(line: str) -> tuple[str, str] | None:
    """(fence, info string) of a line opening a fenced code block, else None."""
    bare = _BARE_FENCES.get(line)
    if bare is not None:  # most fence lines of a note: no regex, no groups
        return bare
    return _fence_open(line)


def _fence_open(line: str) -> tuple[str, str] | None:
    m = _FENCE.match(line)
    if m is None:
        return None
    fence, info = m.group(1), m.group(2)
    if fence[0] == "`" and "`" in info:
        return None
    return fence, info.strip()


# the lines a note opens and closes its blocks with, their reading kept (pure, so the
# same as reading them again)
_BARE_FENCES = {run: _fence_open(run) for run in ("```", "````", "~~~", "~~~~", "```json")}


def fence_closes(line: str, fence: str) -> bool:
    """Whether `line` closes the block `fence` opened: the same character, at least as
    many, and nothing after them but blanks."""
    if line == fence:  # the usual closing line: no regex match, once per fence
        return True
    m = _FENCE.match(line)
    return bool(
        m
        and m.group(1)[0] == fence[0]
        and len(m.group(1)) >= len(fence)
        and not m.group(2).strip(" \t")
    )


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line such as `## ② Atomic Claim`, else None."""
    if line[:4].lstrip(" ")[:1] != "#":  # no `#` after <= 3 spaces: the usual line
        return None
    marks = line.lstrip(" ")
    rest = marks.lstrip("#")
    level = len(marks) - len(rest)
    if level > 6:
        return None
    if not rest:
        return level, ""
    if rest[0] != " " and rest[0] != "\t":
        return None
    # the title runs from the first non-blank to the last, less a closing run of `#`
    # that follows a blank (`## A #` is 'A'; `## A#` and `## #` keep theirs)
    title = rest.strip(" \t")
    if title[-1:] == "#":
        before = title.rstrip("#")
        if before[-1:] in (" ", "\t"):
            title = before.rstrip(" \t")
    return level, title


# the heading lines repeat from note to note (`## ② Atomic Claim`, `### Evidence`)
_atx_heading_memo = lru_cache(maxsize=4096)(atx_heading)


def heading_of(line: str) -> tuple[int, str] | None:
    """`atx_heading(line)`, each short line read once."""
    return _atx_heading_memo(line) if len(line) <= MEMO_LINE else atx_heading(line)


@lru_cache(maxsize=1024)
def section_key(title: str) -> str:
    """The key of a known section ('source', 'claim', …), else the normalised title."""
    normal = normalise_heading_title(title)
    return _KNOWN.get(normal, normal)
