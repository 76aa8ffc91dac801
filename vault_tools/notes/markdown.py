"""Text vt copies into the Markdown it renders (the dashboard, the preview block, the
knowledge-base claims blocks), shown literally and never live.

A label, a claim id or a draft value comes from a note, so it may hold anything: a code
span that Dataview would run (`` `$= dv.paragraph("x")` ``), raw HTML
(`<img src=x onerror=…>`), a wikilink, a tag, math, a comment, a table's `|`. Every
renderer copies such text through the functions here, and nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SPACE = re.compile(r"\s+")
# ASCII punctuation that starts CommonMark, GFM or Obsidian syntax: code spans, emphasis,
# links and wikilinks, tags and headings, math, comments, highlights, block ids, tables,
# strikethrough; a backslash escape makes each a literal character. `<`, `>` and `&`
# become entities: no renderer reads HTML (or an entity) out of those.
_SPECIAL = re.compile(r"[\\`*\[\]#$%^=~|<>&]")
# `_` only where it could open or close emphasis: not between two letters or digits
# (review_state, APPROVE_REPAIR stay as they are)
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
# at the start of a line: a list item, a numbered item, a quote, a setext underline
_LINE_START = re.compile(r"^(?:[-+](?=\s|$)|-(?=-)|\d{1,9}[.)](?=\s|$))")
# text Dataview runs when it is a whole inline code span (its default prefixes)
_DATAVIEW = re.compile(r"^\s*\$?=")
# characters a wikilink cannot show (it takes no escapes): not linked in a target,
# replaced in the shown text by look-alikes that are no syntax
_UNLINKABLE = re.compile(r"[\[\]|#^`<>]")
_SHOWN = str.maketrans(
    {"[": "_", "]": "_", "|": "_", "#": "_", "^": "_", "`": "'", "<": "\u2039", ">": "\u203a"}
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ENTITIES.get(char) or "\\" + char


def text(value: str) -> str:
    """`value` as literal inline Markdown on one line: whitespace collapsed, every
    character that could start syntax escaped, so it shows exactly as written."""
    value = _SPACE.sub(" ", value).strip()
    value = _UNDERSCORE.sub(r"\\_", _SPECIAL.sub(_escape, value))
    start = _LINE_START.match(value)
    if start:
        marker = start.group()
        value = f"{marker[:-1]}\\{marker[-1]}{value[len(marker) :]}"
    return value


# the tags of a diff's removed and added text: raw HTML and not `~~…~~` or `==…==`,
# whose delimiters take effect only beside some characters (GFM's flanking rules: not
# after a letter when the text starts with punctuation, never next to a space), while
# a tag works around any text, in Obsidian's reading view and live preview alike
DIFF_TAGS = {"delete": "del", "insert": "mark"}


def diff_line(segments: Iterable[tuple[str, str]]) -> str:
    """A text diff (segments "equal" | "delete" | "insert") as one line of inline
    Markdown: removed text in `<del>`, added text in `<mark>`, every segment escaped as
    `text` escapes (whitespace collapsed, not trimmed: a segment may start with a space),
    so that no character of the text can open syntax or a tag of its own."""
    out = []
    for kind, part in segments:
        shown = _UNDERSCORE.sub(r"\\_", _SPECIAL.sub(_escape, _SPACE.sub(" ", part)))
        tag = DIFF_TAGS.get(kind)
        out.append(f"<{tag}>{shown}</{tag}>" if tag else shown)
    line = "".join(out)
    lead = len(line) - len(line.lstrip(" "))  # a paragraph's first spaces are dropped
    start = _LINE_START.match(line[lead:])
    if start:
        end = lead + start.end()
        line = f"{line[: end - 1]}\\{line[end - 1 :]}"
    return line


def code_span(value: str) -> str:
    """`value` as an inline code span, safe inside a GFM table cell: the backtick run is
    longer than any inside, and a `|` is escaped (tables split cells before parsing code
    spans). Text that Dataview would run as a code span becomes escaped text instead."""
    if _DATAVIEW.match(value):
        return text(value)
    value = value.replace("|", "\\|")
    ticks = "`" * (max((len(run) for run in re.findall(r"`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{ticks}{pad}{value}{pad}{ticks}"


def fence_for(content: str) -> str:
    """A backtick fence longer than any run of backticks in `content` (at least 3), so no
    line of the content closes the block."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def strip_md(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def wikilink(path: str, shown: str | None = None) -> str:
    """`[[path|shown]]` (path without `.md`); plain text when Obsidian cannot link it.

    A wikilink takes no escapes, so characters it cannot show are replaced in `shown`.
    """
    target = strip_md(path)
    shown = _SPACE.sub(" ", shown if shown is not None else target.rsplit("/", 1)[-1]).strip()
    if _UNLINKABLE.search(target) or "\n" in target:
        return text(shown)
    shown = shown.translate(_SHOWN)
    return f"[[{target}|{shown}]]" if shown != target else f"[[{target}]]"
