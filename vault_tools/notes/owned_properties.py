"""vt's own properties set in a note's frontmatter *text*, every other byte kept.

vt owns only the frontmatter keys `review_state` and `vt_*` (docs/note-format.md). Key
order, quoting, comments, folded scalars, flow lists, CRLF, BOM and tabs are a human's,
so `set_properties` finds the top-level entries line by line, replaces only vt's, and
never re-dumps YAML.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from vault_tools.notes.lines import BOM, LINE, is_blank, line_ending, without_ending


def frontmatter_bounds(lines: list[str]) -> tuple[int, int] | None:
    """(index of the opening `---`, index of the closing `---`), or None.

    Like Obsidian: the note must start with `---` and a later line `---` closes it;
    without a closing line there is no frontmatter.
    """
    if not lines or without_ending(lines[0]).lstrip(BOM).rstrip(" \t") != "---":
        return None
    for i in range(1, len(lines)):
        if without_ending(lines[i]).rstrip(" \t") in ("---", "..."):
            return 0, i
    return None


# A top-level key: plain (no leading indicator), or single/double quoted; then `:` and
# a space, a tab or the end of the line.
_KEY_LINE = re.compile(
    r"""^(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"\[\]{},&*!|>%@`?-][^\n]*?)"""
    r"""[ \t]*:(?=[ \t]|$)"""
)


def _unquote_key(key: str) -> str:
    if key.startswith('"') and key.endswith('"') and len(key) >= 2:
        return key[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if key.startswith("'") and key.endswith("'") and len(key) >= 2:
        return key[1:-1].replace("''", "'")
    return key


class _TopLevelKey(NamedTuple):
    """A top-level frontmatter entry: lines [start, end) of the note."""

    key: str
    start: int
    end: int
    value_col: int  # where the value starts on the key line


def _scan_flow(lines: list[str], first: int, col: int, stop: int) -> int:
    """Index of the line where a quoted or flow value that starts at (first, col) closes.

    PyYAML lets quoted scalars and flow collections continue on lines at column 0, so
    without this a line such as `review_state: x` inside a human's multi-line quoted
    value would look like a key. Unclosed values run to the end of the frontmatter.
    """
    depth = 0
    quote = ""
    for li in range(first, stop):
        s = without_ending(lines[li])
        k = col if li == first else 0
        prev = " "  # a line break separates tokens
        while k < len(s):
            ch = s[k]
            if quote == '"':
                if ch == "\\":
                    k += 2
                    continue
                if ch == '"':
                    quote = ""
                    if depth == 0:
                        return li
            elif quote == "'":
                if ch == "'" and s[k + 1 : k + 2] == "'":
                    k += 2
                    continue
                if ch == "'":
                    quote = ""
                    if depth == 0:
                        return li
            elif ch in "\"'" and prev in " \t[{,:":
                quote = ch
            elif ch == "#" and prev in " \t":
                break  # a comment ends the line
            elif ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth <= 0:
                    return li
            prev = ch
            k += 1
    return stop - 1


def _is_continuation(line: str) -> bool:
    """A line that belongs to the value of the entry above it (indented, or a `- ` item)."""
    s = without_ending(line)
    return s[:1] in (" ", "\t") or s == "-" or s.startswith(("- ", "-\t"))


def _entry_end(lines: list[str], start: int, stop: int, value_col: int, first: str) -> int:
    """One past the last line of the entry whose key is on line `start` (`first`, without
    its line ending)."""
    value = first[value_col:]
    j = start + 1
    if value[:1] in ('"', "'", "[", "{"):
        j = _scan_flow(lines, start, value_col, stop) + 1
    while j < stop:
        if _is_continuation(lines[j]):
            j += 1
            continue
        if is_blank(lines[j]):
            # blank lines belong to the value only if more of it follows (block scalars)
            k = j
            while k < stop and is_blank(lines[k]):
                k += 1
            if k < stop and _is_continuation(lines[k]):
                j = k
                continue
        break
    return j


def _entries(lines: list[str], start: int, stop: int) -> Iterator[_TopLevelKey]:
    """Top-level entries of the frontmatter between lines [start, stop)."""
    i = start
    while i < stop:
        s = without_ending(lines[i])
        m = _KEY_LINE.match(s)
        if m is None:
            i += 1  # comments, blank lines, anything not a key line: the human's
            continue
        after = s[m.end() :]
        value_col = len(s) - len(after.lstrip(" \t"))
        end = _entry_end(lines, i, stop, value_col, s)
        yield _TopLevelKey(_unquote_key(m.group("key")), i, end, value_col)
        i = end


def _comment_start(s: str, col: int) -> int | None:
    """Where a trailing `# comment` starts on a single-line value, or None."""
    quote = ""
    prev = " "
    k = col
    while k < len(s):
        ch = s[k]
        if quote:
            if quote == '"' and ch == "\\":
                k += 2
                continue
            if ch == quote:
                if quote == "'" and s[k + 1 : k + 2] == "'":
                    k += 2
                    continue
                quote = ""
        elif ch in "\"'" and prev in " \t[{,:":
            quote = ch
        elif ch == "#" and prev in " \t":
            # keep the whitespace before the comment with it
            back = k
            while back > col and s[back - 1] in " \t":
                back -= 1
            return back
        prev = ch
        k += 1
    return None


def is_owned_key(key: str) -> bool:
    """docs/note-format.md: vt owns `review_state` and every `vt_*` key."""
    return key == "review_state" or (key.startswith("vt_") and len(key) > 3)


_PLAIN_VALUE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OWNED_KEY_SYNTAX = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
# Words YAML 1.1 (PyYAML) or 1.2 (Obsidian) would read as booleans or null.
_YAML_WORDS = frozenset("y n yes no true false on off null".split())


def _yaml_printable(ch: str) -> bool:
    """Characters YAML allows raw inside a double-quoted scalar on one line."""
    o = ord(ch)
    if ch in "\x85\u2028\u2029\ufeff":
        return False  # YAML line breaks / BOM: would fold or vanish
    return (
        0x20 <= o <= 0x7E
        or 0xA0 <= o <= 0xD7FF
        or 0xE000 <= o <= 0xFFFD
        or 0x10000 <= o <= 0x10FFFF
    )


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# a value made only of characters _yaml_printable takes raw, none of them escaped
_RAW_QUOTABLE = re.compile(
    r"[\x20\x21\x23-\x5b\x5d-\x7e\xa0-\u2027\u202a-\ud7ff"
    r"\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]*"
)


def render_value(value: str) -> str:
    """A YAML scalar for `value` that every YAML reader takes as that exact string.

    Plain for identifiers such as PREVIEW_READY; double-quoted, JSON-style escapes,
    otherwise (so "2026-11-29T10:00:00Z" and "sha256:…" stay strings).
    """
    if _PLAIN_VALUE.match(value) and value.lower() not in _YAML_WORDS:
        return value
    if _RAW_QUOTABLE.fullmatch(value):  # the usual case (ids, times), in one C scan
        return f'"{value}"'
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif _yaml_printable(ch):
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _check_owned(values: dict[str, str | None]) -> None:
    for key, value in values.items():
        if not is_owned_key(key) or not _OWNED_KEY_SYNTAX.match(key):
            raise ValueError(f"vt does not own the property {key!r}; not written")
        if value is not None and not isinstance(value, str):
            raise TypeError(f"property {key!r}: value must be str or None, not {type(value)}")


def set_properties(text: str, values: dict[str, str | None]) -> str:
    """`text` with the owned frontmatter keys in `values` set (None: removed).

    An existing key's line (and its continuation lines) is replaced, keeping the spacing
    after the colon and a trailing comment; a later duplicate of the key is removed; an
    absent key is appended just before the closing `---`. Nothing else changes.
    """
    _check_owned(values)
    split = _frontmatter_head(text)
    if split is None:
        raise ValueError("the note has no frontmatter; vt only writes review notes")
    lines, body = split
    eol = line_ending(text)
    close = len(lines) - 1
    seen: set[str] = set()
    out: list[str] = lines[:1]
    for entry, between in _walk(lines, 1, close):
        out.extend(between)
        if entry is None:
            continue
        chunk = lines[entry.start : entry.end]
        if entry.key in values:
            chunk = _replace_entry(chunk, entry, values[entry.key], eol, entry.key in seen)
            seen.add(entry.key)
        out.extend(chunk)
    for key, value in values.items():
        if key not in seen and value is not None:
            out.append(f"{key}: {render_value(value)}{eol}")
    out.append(lines[close])
    out.append(body)
    return "".join(out)


def _frontmatter_head(text: str) -> tuple[list[str], str] | None:
    """(the lines from the opening `---` to the closing one, as split_lines gives them;
    the text after them), or None: what frontmatter_bounds finds, without splitting
    the body of the note into lines."""
    head: list[str] = []
    for match in LINE.finditer(text):
        line = match.group()
        head.append(line)
        if len(head) == 1:
            if without_ending(line).lstrip(BOM).rstrip(" \t") != "---":
                return None
        elif without_ending(line).rstrip(" \t") in ("---", "..."):
            return head, text[match.end() :]
    return None


def _walk(
    lines: list[str], start: int, stop: int
) -> Iterator[tuple[_TopLevelKey | None, list[str]]]:
    """(entry, the non-entry lines before it); a final (None, trailing lines)."""
    pos = start
    for entry in _entries(lines, start, stop):
        yield entry, lines[pos : entry.start]
        pos = entry.end
    yield None, lines[pos:stop]


def _replace_entry(
    chunk: list[str], entry: _TopLevelKey, value: str | None, eol: str, duplicate: bool
) -> list[str]:
    if value is None or duplicate:
        return []
    first = without_ending(chunk[0])
    prefix = first[: entry.value_col]
    if not prefix.endswith((" ", "\t")):
        prefix += " "
    comment = ""
    if len(chunk) == 1:
        at = _comment_start(first, entry.value_col)
        comment = first[at:] if at is not None else ""
    ending = chunk[-1][len(without_ending(chunk[-1])) :] or eol
    return [f"{prefix}{render_value(value)}{comment}{ending}"]


def entry_chunks(text: str) -> dict[str, str]:
    """Each top-level frontmatter key -> its entry's raw lines (the first occurrence),
    byte for byte as written: what a merge copies from one side to the other without
    re-rendering anyone's value. Empty without frontmatter."""
    split = _frontmatter_head(text)
    if split is None:
        return {}
    lines = split[0]
    chunks: dict[str, str] = {}
    for entry in _entries(lines, 1, len(lines) - 1):
        chunks.setdefault(entry.key, "".join(lines[entry.start : entry.end]))
    return chunks


def with_entry_chunks(text: str, chunks: dict[str, str | None]) -> str:
    """`text` with each key's entry replaced by the raw lines in `chunks` (None: the
    entry removed; a key the text lacks: appended before the closing `---`), line
    endings made the text's own. Any key, not only vt's: the caller decides whose."""
    split = _frontmatter_head(text)
    if split is None:
        raise ValueError("the note has no frontmatter")
    lines, body = split
    eol = line_ending(text)

    def own_endings(chunk: str) -> list[str]:
        return [without_ending(line) + eol for line in LINE.findall(chunk) if line]

    close = len(lines) - 1
    seen: set[str] = set()
    out: list[str] = lines[:1]
    for entry, between in _walk(lines, 1, close):
        out.extend(between)
        if entry is None:
            continue
        if entry.key not in chunks:
            out.extend(lines[entry.start : entry.end])
        elif entry.key not in seen:
            seen.add(entry.key)
            out.extend(own_endings(chunks[entry.key] or ""))
    for key, chunk in chunks.items():
        if key not in seen and chunk is not None:
            out.extend(own_endings(chunk))
    out.append(lines[close])
    out.append(body)
    return "".join(out)
