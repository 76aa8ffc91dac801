"""Read a note's YAML frontmatter (Obsidian properties) strictly and safely.

Obsidian writes most properties as `key: value` lines: those are read here, without
PyYAML, when every line is unambiguous (the fast path: a hypothesis test checks it reads
exactly what PyYAML reads, or steps aside). Any other frontmatter goes to
yaml_properties.py, which reads it with PyYAML strictly.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from vault_tools.findings import Finding, error
from vault_tools.notes.lines import MEMO_LINE
from vault_tools.notes.value_limits import CONTROL, digits_limit


@dataclass(slots=True)
class FrontMatter:
    present: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # key -> 1-based note line
    body_index: int = 0  # index into the note's lines of the first body line
    end_line: int = 0  # 1-based line of the closing '---' (0 when absent)
    findings: list[Finding] = field(default_factory=list)


def may_name(raw: bytes, word: bytes) -> bool:
    """Whether a note's bytes may hold `word` as a property's name or value, told without
    parsing them: False only when they cannot. Every command that passes over the notes
    whose bytes never spell `claim_id` or `review_action` asks this. YAML spells a word
    without its bytes in one way, a double-quoted scalar's escapes (`"claim\\x5Fid"`), so
    a frontmatter holding a backslash may name anything."""
    if word in raw:
        return True
    end = raw.find(b"\n---", 3)  # the closing line, or no frontmatter to speak of
    return b"\\" in (raw if end < 0 else raw[:end])


def read(lines: list[str], path: str) -> FrontMatter:
    """Parse the frontmatter at the top of `lines` (line endings already stripped)."""
    fm = FrontMatter()
    if not lines or lines[0].rstrip() != "---":
        return fm
    fm.present = True
    try:
        close: int | None = lines.index("---", 1)
    except ValueError:
        close = None
    if close is not None and (simple := _simple_properties(lines[1:close])) is not None:
        # a simple line starts with a letter or `_`: no line before `close` can close the
        # frontmatter (`---`, `...`), so `_closing_line` need not look at each
        fm.body_index = fm.end_line = close + 1
        fm.properties, fm.lines = simple
        return fm
    close = _closing_line(lines)
    if close is None:
        fm.findings.append(
            error(
                path,
                1,
                "frontmatter-unclosed",
                "the frontmatter opened on line 1 never closes with '---'",
            )
        )
        fm.body_index = len(lines)
        return fm
    fm.body_index = close + 1
    fm.end_line = close + 1
    _load(lines[1:close], path, fm)
    return fm


def _closing_line(lines: list[str]) -> int | None:
    """The index of the line closing the frontmatter (`---` or `...`, trailing blanks
    allowed), or None. The usual bare `---` is found by list.index; only when a line
    before it might close too is each line looked at."""
    try:
        close = lines.index("---", 1)
    except ValueError:
        close = len(lines)
    if not any(
        map(str.startswith, itertools.islice(lines, 1, close), itertools.repeat(("---", "...")))
    ):
        return close if close < len(lines) else None
    return next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)


def _load(source_lines: list[str], path: str, fm: FrontMatter) -> None:
    simple = _simple_properties(source_lines)
    if simple is not None:
        fm.properties, fm.lines = simple
        return
    # imported here: PyYAML's import is about a tenth of the hook's time, and a run whose
    # notes all take the fast path (the hook's usually do) never needs it
    from vault_tools.notes import yaml_properties

    loaded = yaml_properties.load(source_lines, path)
    fm.properties, fm.lines = loaded.properties, loaded.lines
    fm.findings.extend(loaded.findings)


# Obsidian writes most properties as `key: value` lines. Those are read without
# PyYAML when every line is unambiguous; anything else takes the full YAML path.
# A simple line is `key:` or `key:` + blanks + a value, trailing blanks aside; as a regex
# on the line less its trailing blanks, ([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))? (read
# by hand below, a test checks against that regex: a regex match and its groups cost
# more than the rest of a line's reading)
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# a flow-list item may be several words (`aliases: [prefill, warm prefill]`)
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+)*")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
# plain words YAML 1.1 reads as something other than a string
_NOT_STRINGS = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL .inf .Inf .INF .nan .NaN .NAN".split()
)
_NO_VALUE = object()


def simple_properties(source: str) -> tuple[dict[str, Any], dict[str, int]] | None:
    """Properties and their lines when every line is a simple `key: value`, else None."""
    return _simple_properties(source.split("\n"))


def _simple_properties(source_lines: list[str]) -> tuple[dict[str, Any], dict[str, int]] | None:
    properties: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(source_lines, start=2):
        entry = _short_line(line) if len(line) <= MEMO_LINE else _simple_line(line)
        if entry is None or entry[0] in properties:
            return None
        key, value = entry
        properties[key] = list(value) if type(value) is tuple else value
        lines[key] = number
    return properties, lines


# Most property lines repeat from note to note (`review_action: APPROVE`, `tags: [...]`,
# `check_source_claim: true`). A short line's reading depends on its text alone (no
# integer of MEMO_LINE digits comes near Python's least limit on digits, 640), and a
# list comes out as a tuple, made a list again for each note.


@functools.lru_cache(maxsize=4096)
def _short_line(line: str) -> tuple[str, Any] | None:
    entry = _simple_line(line)
    if entry is not None and type(entry[1]) is list:
        return entry[0], tuple(entry[1])
    return entry


def _simple_line(line: str) -> tuple[str, Any] | None:
    content = line.rstrip(" \t")
    key, colon, rest = content.partition(":")  # a key holds no `:`
    # an ASCII identifier ([A-Za-z_][A-Za-z0-9_]*) is a key (and a word, in _simple_value)
    # without a regex: most keys and words are
    if (
        not colon
        or key in _NOT_STRINGS
        or not (key.isascii() and key.isidentifier() or _KEY.fullmatch(key))
    ):
        return None
    if not rest:  # `key:` is null; `key:` and blanks is for PyYAML to read
        return (key, None) if len(content) == len(line) else None
    if rest[0] != " " and rest[0] != "\t":
        return None
    value = _simple_value(rest.lstrip(" \t"))  # not empty: `content` ends in a non-blank
    if value is _NO_VALUE:
        return None
    return key, value


def _simple_value(text: str) -> Any:
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
        return _NO_VALUE
    if first == "[" and text[-1] == "]":
        inner = text[1:-1]
        if "," not in inner:  # one item (`tags: [claim-review]`): no list to build and walk
            item = inner.strip()
            if not item:
                return []
            return [item] if _WORDS.fullmatch(item) and item not in _NOT_STRINGS else _NO_VALUE
        items = [item.strip() for item in inner.split(",")]
        if items == [""]:
            return []
        if all(_WORDS.fullmatch(item) and item not in _NOT_STRINGS for item in items):
            return items
        return _NO_VALUE
    if text == "true" or text == "false":
        return text == "true"
    if first in _INTEGER_STARTS and _INTEGER.fullmatch(text):
        limit = digits_limit()
        return int(text) if not limit or len(text) <= limit else _NO_VALUE  # YAML reports it
    if (
        text.isascii() and text.isidentifier() or _WORD.fullmatch(text)
    ) and text not in _NOT_STRINGS:
        return text
    return _NO_VALUE


_INTEGER_STARTS = frozenset("-0123456789")  # what _INTEGER can match first
