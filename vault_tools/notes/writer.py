"""The format-preserving, atomic note writer (docs/note-format.md).

vt owns only the frontmatter keys `review_state` and `vt_*`, and the text between its
own markers `<!-- vt:NAME:start -->` … `<!-- vt:NAME:end -->`. Every other byte of a
note — key order, quoting, comments, folded scalars, flow lists, CRLF, BOM, tabs, the
trailing newline or its absence — is a human's, so the functions here edit the note as
*text*, line by line, and never re-dump YAML.

Text functions are pure (`set_properties`, `set_block`, `insert_section_before`).
Disk access is two calls: `read_snapshot` and `write_if_changed`, which refuses to
overwrite a note that changed since it was read (an Obsidian save must never be lost).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from vault_tools.config import MAX_NOTE_BYTES
from vault_tools.errors import RefusedError, VtError, io_failure
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.durable import TMP_SUFFIX, exchange, fsync_folder, write_temp
from vault_tools.notes import headings
from vault_tools.notes.headings import fence_closes, fence_open, normalise_heading_title
from vault_tools.notes.vault import read_file

BOM = "\ufeff"
BOM_BYTES = BOM.encode("utf-8")

# ---------------------------------------------------------------------------
# lines and line endings


_LINE = re.compile(r"[^\n]*\n|[^\n]+$")


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept; only `\\n` ends a line (not \\x0b, \\u2028, …).

    str.splitlines() would also split on form feeds and Unicode separators, which a
    note may legitimately contain inside a line.
    """
    return _LINE.findall(text)


def line_ending(text: str) -> str:
    """The note's line ending: that of its first line (`\\n` if it has none)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def _content(line: str) -> str:
    """A line without its ending."""
    return line.rstrip("\r\n")


def _is_blank(line: str) -> bool:
    return not line.strip()


def _to_eol(text: str, eol: str) -> str:
    """Text with every line ending converted to `eol`."""
    return text.replace("\r\n", "\n").replace("\n", eol)


# ---------------------------------------------------------------------------
# frontmatter


def frontmatter_bounds(lines: list[str]) -> tuple[int, int] | None:
    """(index of the opening `---`, index of the closing `---`), or None.

    Like Obsidian: the note must start with `---` and a later line `---` closes it;
    without a closing line there is no frontmatter.
    """
    if not lines or _content(lines[0]).lstrip(BOM).rstrip(" \t") != "---":
        return None
    for i in range(1, len(lines)):
        if _content(lines[i]).rstrip(" \t") in ("---", "..."):
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


class _Entry(NamedTuple):
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
        s = _content(lines[li])
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
    s = _content(line)
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
        if _is_blank(lines[j]):
            # blank lines belong to the value only if more of it follows (block scalars)
            k = j
            while k < stop and _is_blank(lines[k]):
                k += 1
            if k < stop and _is_continuation(lines[k]):
                j = k
                continue
        break
    return j


def _entries(lines: list[str], start: int, stop: int) -> Iterator[_Entry]:
    """Top-level entries of the frontmatter between lines [start, stop)."""
    i = start
    while i < stop:
        s = _content(lines[i])
        m = _KEY_LINE.match(s)
        if m is None:
            i += 1  # comments, blank lines, anything not a key line: the human's
            continue
        after = s[m.end() :]
        value_col = len(s) - len(after.lstrip(" \t"))
        end = _entry_end(lines, i, stop, value_col, s)
        yield _Entry(_unquote_key(m.group("key")), i, end, value_col)
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
    for match in _LINE.finditer(text):
        line = match.group()
        head.append(line)
        if len(head) == 1:
            if _content(line).lstrip(BOM).rstrip(" \t") != "---":
                return None
        elif _content(line).rstrip(" \t") in ("---", "..."):
            return head, text[match.end() :]
    return None


def _walk(lines: list[str], start: int, stop: int) -> Iterator[tuple[_Entry | None, list[str]]]:
    """(entry, the non-entry lines before it); a final (None, trailing lines)."""
    pos = start
    for entry in _entries(lines, start, stop):
        yield entry, lines[pos : entry.start]
        pos = entry.end
    yield None, lines[pos:stop]


def _replace_entry(
    chunk: list[str], entry: _Entry, value: str | None, eol: str, duplicate: bool
) -> list[str]:
    if value is None or duplicate:
        return []
    first = _content(chunk[0])
    prefix = first[: entry.value_col]
    if not prefix.endswith((" ", "\t")):
        prefix += " "
    comment = ""
    if len(chunk) == 1:
        at = _comment_start(first, entry.value_col)
        comment = first[at:] if at is not None else ""
    ending = chunk[-1][len(_content(chunk[-1])) :] or eol
    return [f"{prefix}{render_value(value)}{comment}{ending}"]


# ---------------------------------------------------------------------------
# headings, fences and vt's managed blocks


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line such as `## ② Atomic Claim`, else None."""
    return headings.atx_heading(_content(line))


def heading_matches(line: str, title: str) -> bool:
    """Whether `line` is a level-2 heading whose title matches `title` (docs/note-format.md)."""
    heading = atx_heading(line)
    if heading is None or heading[0] != 2:
        return False
    return normalise_heading_title(heading[1]) == normalise_heading_title(title)


def code_mask(lines: list[str], start: int = 0) -> list[bool]:
    """For each line, whether it is part of a fenced code block (fence lines included).

    CommonMark rules: ``` or ~~~ (3+) with at most 3 spaces of indentation; the block
    closes at a fence of the same character at least as long; an unclosed fence runs to
    the end. Lines before `start` (the frontmatter) are never code.
    """
    mask = [False] * len(lines)
    fence = ""
    for i in range(start, len(lines)):
        s = _content(lines[i])
        if fence:
            mask[i] = True
            if fence_closes(s, fence):
                fence = ""
        elif opened := fence_open(s):
            mask[i] = True
            fence = opened[0]
    return mask


def _body_start(lines: list[str]) -> int:
    bounds = frontmatter_bounds(lines)
    return 0 if bounds is None else bounds[1] + 1


def find_heading(text: str, title: str) -> int | None:
    """0-based index of the first level-2 heading matching `title`, outside code."""
    lines = split_lines(text)
    start = _body_start(lines)
    mask = code_mask(lines, start)
    for i in range(start, len(lines)):
        if not mask[i] and heading_matches(lines[i], title):
            return i
    return None


_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _marker(name: str, which: str) -> str:
    return f"<!-- vt:{name}:{which} -->"


def _find_block(lines: list[str], name: str) -> tuple[int, int] | None:
    """(start marker line, end marker line) of block NAME, or None.

    Markers inside fenced code are text, not markers. A start without an end, or two
    blocks of one name, are refused rather than guessed at.
    """
    pattern = re.compile(rf"^ {{0,3}}<!--[ \t]*vt:{re.escape(name)}:(start|end)[ \t]*-->[ \t]*$")
    start = _body_start(lines)
    mask = code_mask(lines, start)
    found: list[tuple[str, int]] = []
    for i in range(start, len(lines)):
        m = None if mask[i] else pattern.match(_content(lines[i]))
        if m:
            found.append((m.group(1), i))
    if not found:
        return None
    kinds = [kind for kind, _ in found]
    if kinds != ["start", "end"]:
        raise RefusedError(
            f"the vt:{name} markers are broken (expected one start and one end marker); "
            "not rewritten",
            line=_first_bad_marker(kinds, found) + 1,
        )
    return found[0][1], found[1][1]


def _first_bad_marker(kinds: list[str], found: list[tuple[str, int]]) -> int:
    """Line index of the first marker that breaks the start/end pairing."""
    expected = ["start", "end"]
    for k, (kind, line) in enumerate(found):
        if k >= 2 or kind != expected[k]:
            return line
    return found[-1][1]  # a lone start marker


def _normalised_content(content: str, eol: str) -> str:
    content = _to_eol(content, eol)
    if content and not content.endswith(eol):
        content += eol
    return content


def _insert_paragraph(lines: list[str], at: int | None, new: list[str], eol: str) -> list[str]:
    """`new` lines inserted as a paragraph of their own before line `at` (None: at the end)."""
    if at is None:
        out = list(lines)
        had_newline = not out or out[-1].endswith("\n")
        if out and not had_newline:
            out[-1] += eol
        if out and not _is_blank(out[-1]):
            out.append(eol)
        out.extend(new)
        if not had_newline:
            # the note had no final newline: keep it that way
            out[-1] = _content(out[-1])
        return out
    before = lines[:at]
    if before and not _is_blank(before[-1]):
        new = [eol, *new]
    if new and not _is_blank(new[-1]):
        new = [*new, eol]
    return [*before, *new, *lines[at:]]


def set_block(
    text: str, name: str, content: str | None, *, before_heading: str | None = None
) -> str:
    """`text` with vt's block NAME holding `content` (None: the block is removed).

    An existing block keeps its place; a new one becomes a paragraph before the first
    level-2 heading matching `before_heading`, else at the end of the note.
    """
    if not _NAME.match(name):
        raise ValueError(f"bad vt block name {name!r}")
    lines = split_lines(text)
    eol = line_ending(text)
    where = _find_block(lines, name)
    if where is not None:
        start, end = where
        if content is None:
            return "".join(_drop_block(lines, start, end))
        new_content = _normalised_content(content, eol)
        inner = split_lines(new_content)
        return "".join([*lines[: start + 1], *inner, *lines[end:]])
    if content is None:
        return text
    block = _marker(name, "start") + eol + _normalised_content(content, eol)
    block += _marker(name, "end") + eol
    at = find_heading(text, before_heading) if before_heading is not None else None
    return "".join(_insert_paragraph(lines, at, split_lines(block), eol))


def _drop_block(lines: list[str], start: int, end: int) -> list[str]:
    """Lines without the block [start, end]; a blank line it leaves doubled is dropped."""
    before, after = lines[:start], lines[end + 1 :]
    if after and _is_blank(after[0]) and (not before or _is_blank(before[-1])):
        after = after[1:]
    if not after and not lines[end].endswith("\n"):
        # the block ended a note without a final newline: so does the result, which
        # means dropping the blank lines that separated the block from the text
        while before and _is_blank(before[-1]):
            before.pop()
        if before:
            before[-1] = _content(before[-1])
    elif not after and before and _is_blank(before[-1]):
        before.pop()  # the separator before a block at the end of the note
    return [*before, *after]


def insert_section_before(text: str, heading_title: str, section_text: str) -> str:
    """`text` with `section_text` (formatted, LF endings) inserted as a new section
    before the level-2 heading matching `heading_title`, else at the end of the note."""
    eol = line_ending(text)
    section = _normalised_content(section_text, eol)
    lines = split_lines(text)
    at = find_heading(text, heading_title)
    return "".join(_insert_paragraph(lines, at, split_lines(section), eol))


# ---------------------------------------------------------------------------
# reading and writing on disk


@dataclass(frozen=True)
class Snapshot:
    """A note as vt read it: the bytes, the text (BOM removed) and the file's identity."""

    path: Path
    raw: bytes
    text: str
    bom: bool
    signature: tuple[int, int, int]  # (st_mtime_ns, st_size, st_ino)


def decode_note(raw: bytes, path: Path | str | None = None) -> tuple[str, bool]:
    """(text without BOM, whether there was a BOM); not UTF-8 is a VtError with the line."""
    bom = raw.startswith(BOM_BYTES)
    body = raw[len(BOM_BYTES) :] if bom else raw
    try:
        return body.decode("utf-8"), bom
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise VtError(
            f"not valid UTF-8 (byte {exc.start + 1})", str(path) if path else None, line
        ) from None


def encode_note(text: str, bom: bool) -> bytes:
    """The bytes of a note: UTF-8, with the BOM restored if it had one."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"text cannot be encoded as UTF-8: {exc.reason}") from None
    return BOM_BYTES + data if bom else data


def _signature(st: os.stat_result) -> tuple[int, int, int]:
    return st.st_mtime_ns, st.st_size, st.st_ino


def read_snapshot(path: Path, limit: int | None = MAX_NOTE_BYTES) -> Snapshot:
    """Read a note once: its bytes, its text and the stat signature to check writes against
    (only a regular file of at most `limit` bytes: see `read_file`)."""
    path = Path(path)
    try:
        raw, st = read_file(path, limit)  # the signature belongs to exactly the bytes read
    except OSError as exc:
        raise VtError(f"cannot read: {exc.strerror or exc}", str(path)) from None
    text, bom = decode_note(raw, path)
    return Snapshot(path, raw, text, bom, _signature(st))


def _unchanged_on_disk(target: Path, snapshot: Snapshot) -> bool:
    try:
        st = os.stat(target)
        if _signature(st) != snapshot.signature:
            return False
        return read_file(target, len(snapshot.raw))[0] == snapshot.raw
    except OSError:
        return False  # vanished or unreadable: certainly not what we read


def write_if_changed(
    snapshot: Snapshot, new_text: str, *, sync_folder: bool = True, root: Path | None = None
) -> bool:
    """Write `new_text` over the note atomically; False (nothing written) if identical.

    Refuses with RefusedError when the note changed on disk since `snapshot` was read.
    A symlinked note is written through the link (the link stays a link).
    `sync_folder=False` leaves the folder's fsync (which makes the rename durable) to a
    caller writing many notes, who then calls `sync_folders` once per folder.
    `root`: the vault; a note leading outside it is refused with BoundaryError before
    anything is written (None only for a file of no vault).
    """
    if root is not None:
        writable_path(root, snapshot.path)
    data = encode_note(new_text, snapshot.bom)
    if data == snapshot.raw:
        # never touch an unchanged note: watchers (Obsidian) would see a modification
        return False
    # a symlinked note is replaced at its target; a symlinked folder needs no resolving
    path = snapshot.path
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        st = os.stat(target)
    except OSError:
        st = None
    # the stat signature here; the bytes themselves are compared before the rename below
    if st is None or _signature(st) != snapshot.signature:
        raise RefusedError(CHANGED_ON_DISK, str(snapshot.path))
    try:
        tmp_name = write_temp(target, data, stat.S_IMODE(st.st_mode))
    except OSError as exc:
        raise io_failure(exc, snapshot.path) from exc
    try:
        # The slow part (writing + fsync of the temp file) is done; check once more right
        # before swapping it in (most concurrent saves are caught here, cheaply).
        if not _unchanged_on_disk(target, snapshot):
            raise RefusedError(CHANGED_ON_DISK, str(snapshot.path))
        displaced = _swap_in(tmp_name, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, FileNotFoundError):
            raise RefusedError(CHANGED_ON_DISK, str(snapshot.path)) from None  # vanished
        if isinstance(exc, OSError):
            raise io_failure(exc, snapshot.path) from exc
        raise
    try:
        if sync_folder:
            _fsync_dir(target.parent, snapshot.path)
    finally:
        # after the folder's fsync: a save that had found the note's name just before the
        # swap (and was still opening the file) has had time to land in the displaced file
        if displaced is not None:
            _check_displaced(displaced, target, snapshot, data)
    return True


CHANGED_ON_DISK = "changed on disk since vt read it; not overwritten"


def _swap_in(tmp_name: str, target: Path) -> str | None:
    """Put the file `tmp_name` at `target`; the name now holding the file it displaced
    (None on a file system with neither, where the displaced file is gone).

    POSIX has no compare-and-swap rename: a save landing between the last check and the
    rename would be overwritten. So the displaced file is kept, to be checked after the
    rename. Where the system can swap two names in one step, whatever `target` held at
    that instant ends up at `tmp_name`, even a save renamed into place a moment before.
    Elsewhere the current file is hard-linked to a side name first, which keeps a save
    written into it in place (as Obsidian saves); only a save renamed into place between
    the link and the rename is lost there.
    """
    if exchange(tmp_name, target):
        return tmp_name
    side = f"{tmp_name[: -len(TMP_SUFFIX)]}-displaced{TMP_SUFFIX}"
    try:
        os.link(target, side)
    except FileNotFoundError:
        raise
    except OSError:  # no hard links here (FAT, some network file systems): as before
        os.replace(tmp_name, target)
        return None
    try:
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(side)
        raise
    return side


def _check_displaced(displaced: str, target: Path, snapshot: Snapshot, data: bytes) -> None:
    """Keep the new text only if the file it displaced was still the snapshot.

    Otherwise a save landed while vt worked: its bytes are put back at `target` (unless a
    later save replaced vt's file there already) and the write is refused. A save that
    looked up the note's name before the swap but opens the file only after this check
    is beyond what the file system lets vt see.
    """
    if _unchanged_on_disk(Path(displaced), snapshot):
        with contextlib.suppress(OSError):
            os.unlink(displaced)
        return
    try:
        if _holds(target, data):
            # vt's file is still in place and unchanged: swap the user's save back
            if exchange(displaced, target):
                if not _holds(displaced, data):
                    # a save landed on vt's file just before the swap: newer, so it wins
                    exchange(displaced, target)
                os.unlink(displaced)
            else:
                os.replace(displaced, target)
        else:
            os.unlink(displaced)  # a later save is in place already; this one is older
    except OSError as exc:
        raise io_failure(
            exc,
            snapshot.path,
            "saved in another program while vt wrote it, and putting that save back failed",
        ) from exc
    raise RefusedError(
        "saved in another program (Obsidian?) while vt wrote it; that save "
        "is kept and vt's change was not written",
        str(snapshot.path),
    )


def _holds(path: str | Path, data: bytes) -> bool:
    try:  # never blocks on a FIFO put in its place; a larger file is no match anyway
        return read_file(path, len(data))[0] == data
    except OSError:
        return False


def sync_folders(paths: Iterable[Path]) -> None:
    """fsync each distinct folder of `paths` once (after writes with sync_folder=False)."""
    for folder in sorted({Path(os.path.realpath(p)).parent for p in paths}):
        _fsync_dir(folder, folder)


def _fsync_dir(folder: Path, shown: Path) -> None:
    """Make the rename durable. A failure is reported: the new content is in place but
    may not survive a crash."""
    try:
        fsync_folder(folder)
    except OSError as exc:
        raise io_failure(exc, shown, "written, but syncing its folder failed") from exc
