"""The note writer: vt's own blocks and sections placed in a note's text, and the note
written back atomically, only if nobody saved it since vt read it (docs/note-format.md).

vt owns only the text between its markers `<!-- vt:NAME:start -->` … `<!-- vt:NAME:end -->`
and the properties `owned_properties.py` sets. Every other byte is a human's, so the
text functions here (`set_block`, `insert_section_before`) edit the note line by line.
Disk access is two calls: `read_snapshot` and `write_if_changed`, which refuses to
overwrite a note that changed since it was read (an Obsidian save must never be lost).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from vault_tools.config import MAX_NOTE_BYTES
from vault_tools.errors import RefusedError, VtError, io_failure
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.durable import exchange, fsync_folder, swap_in, write_temp
from vault_tools.infra.filestat import Signature, renamed_unchanged, stat_signature
from vault_tools.notes import headings, markers
from vault_tools.notes.headings import fence_closes, fence_open, normalise_heading_title
from vault_tools.notes.lines import (
    BOM_BYTES,
    is_blank,
    line_ending,
    split_lines,
    with_line_endings,
    without_ending,
)
from vault_tools.notes.owned_properties import frontmatter_bounds
from vault_tools.notes.vault import read_file


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line such as `## ② Atomic Claim`, else None."""
    return headings.atx_heading(without_ending(line))


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
        s = without_ending(lines[i])
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


_NAME = re.compile(rf"^{markers.NAME}$")
_marker = markers.marker


def _find_block(lines: list[str], name: str) -> tuple[int, int] | None:
    """(start marker line, end marker line) of block NAME, or None.

    Markers inside fenced code are text, not markers. A start without an end, or two
    blocks of one name, are refused rather than guessed at.
    """
    start = _body_start(lines)
    mask = code_mask(lines, start)
    found: list[tuple[str, int]] = []
    for i in range(start, len(lines)):
        read = None if mask[i] else markers.read_marker(lines[i])
        if read is not None and read[0] == name:
            found.append((read[1], i))
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
    content = with_line_endings(content, eol)
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
        if out and not is_blank(out[-1]):
            out.append(eol)
        out.extend(new)
        if not had_newline:
            # the note had no final newline: keep it that way
            out[-1] = without_ending(out[-1])
        return out
    before = lines[:at]
    if before and not is_blank(before[-1]):
        new = [eol, *new]
    if new and not is_blank(new[-1]):
        new = [*new, eol]
    return [*before, *new, *lines[at:]]


def block_names(text: str) -> list[str]:
    """The names of vt's blocks in the note (start markers outside code), in order."""
    lines = split_lines(text)
    start = _body_start(lines)
    mask = code_mask(lines, start)
    names = []
    for i in range(start, len(lines)):
        read = None if mask[i] else markers.read_marker(lines[i])
        if read is not None and read[1] == markers.START and read[0] not in names:
            names.append(read[0])
    return names


def block_content(text: str, name: str) -> str | None:
    """The text between vt's markers of block NAME, None when the note has no such block
    (RefusedError when its markers are broken)."""
    lines = split_lines(text)
    where = _find_block(lines, name)
    return None if where is None else "".join(lines[where[0] + 1 : where[1]])


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
    if after and is_blank(after[0]) and (not before or is_blank(before[-1])):
        after = after[1:]
    if not after and not lines[end].endswith("\n"):
        # the block ended a note without a final newline: so does the result, which
        # means dropping the blank lines that separated the block from the text
        while before and is_blank(before[-1]):
            before.pop()
        if before:
            before[-1] = without_ending(before[-1])
    elif not after and before and is_blank(before[-1]):
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
    signature: Signature  # filestat.stat_signature of the file the bytes were read from


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


def read_snapshot(path: Path, limit: int | None = MAX_NOTE_BYTES) -> Snapshot:
    """Read a note once: its bytes, its text and the stat signature to check writes against
    (only a regular file of at most `limit` bytes: see `read_file`)."""
    path = Path(path)
    try:
        raw, st = read_file(path, limit)  # the signature belongs to exactly the bytes read
    except OSError as exc:
        raise VtError(f"cannot read: {exc.strerror or exc}", str(path)) from None
    text, bom = decode_note(raw, path)
    return Snapshot(path, raw, text, bom, stat_signature(st))


def _unchanged_on_disk(target: Path, snapshot: Snapshot, renamed: bool = False) -> bool:
    """Whether `target` still holds the snapshot's bytes; `renamed`: vt has just moved it
    aside (see `identity.renamed_unchanged`)."""
    try:
        st = os.stat(target)
        same = (
            renamed_unchanged(st, snapshot.signature)
            if renamed
            else stat_signature(st) == snapshot.signature
        )
        if not same:
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
    if st is None or stat_signature(st) != snapshot.signature:
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
        displaced = swap_in(tmp_name, target)
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


def _check_displaced(displaced: str, target: Path, snapshot: Snapshot, data: bytes) -> None:
    """Keep the new text only if the file it displaced was still the snapshot.

    Otherwise a save landed while vt worked: its bytes are put back at `target` (unless a
    later save replaced vt's file there already) and the write is refused. A save that
    looked up the note's name before the swap but opens the file only after this check
    is beyond what the file system lets vt see.
    """
    if _unchanged_on_disk(Path(displaced), snapshot, renamed=True):
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
