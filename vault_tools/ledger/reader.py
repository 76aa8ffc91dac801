"""Reading the ledger file: its head, a torn last line, its lines and events, and the
log (docs/ledger.md). A line is complete only with its final '\\n'."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import BinaryIO

from vault_tools.errors import IntegrityError
from vault_tools.infra.osfiles import open_fd, read_at
from vault_tools.ledger.events import GENESIS, is_sha, load_json

_BLOCK = 1 << 16


def lock_path(ledger: Path) -> Path:
    """The ledger's lock file: every appender holds it, `vt ledger verify` shares it."""
    return Path(str(ledger) + ".lock")


def torn_path(ledger: Path) -> Path:
    """Where a torn last line is moved aside."""
    return Path(str(ledger) + ".torn")


def open_ledger(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """The one way vt opens the ledger file: a descriptor on a regular file.

    Anything else at the ledger's path (a folder, a FIFO, a device) is IntegrityError
    naming it: the ledger is not there as a file, and no command may read a folder as
    an empty ledger or wait on a FIFO. FileNotFoundError passes through: what a missing
    ledger means is each caller's rule."""
    try:
        fd = open_fd(path, flags, mode, nonblocking=True)
    except (IsADirectoryError, NotADirectoryError):
        raise _not_a_file(path) from None
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    raise _not_a_file(path)


def _not_a_file(path: Path | str) -> IntegrityError:
    return IntegrityError(
        "the ledger is not a regular file (a folder, FIFO or device is in its place); "
        "move it away and restore the ledger file (`git checkout -- <ledger>`)",
        os.fspath(path),
    )


def open_ledger_binary(path: Path | str) -> BinaryIO:
    """`open_ledger` as a buffered binary file object, for reading line by line."""
    return os.fdopen(open_ledger(path), "rb")


@dataclass(frozen=True, slots=True)
class Tip:
    """The last complete line of the ledger: its seq and hash, and the file size it ends at."""

    seq: int = 0
    hash: str = GENESIS
    size: int = 0


@dataclass(frozen=True, slots=True)
class TornInfo:
    """A torn last line: moved aside by the lock holder, or found by `vt ledger verify`
    (which writes nothing, so it says what the next append will do)."""

    offset: int  # where the torn bytes started in the ledger
    length: int
    backup: str  # the `.torn` file they were (or will be) appended to
    moved: bool = True

    def message(self) -> str:
        what = f"torn last line ({self.length} bytes at offset {self.offset}, an interrupted write)"
        if self.moved:
            return f"{what} moved to {self.backup}"
        return f"{what}; the next `vt apply` or `vt revert` moves it to {self.backup}"


def _line_start(fd: int, end: int) -> int:
    """Offset of the first byte of the line whose last byte is at `end - 1`."""
    pos = end - 1  # skip the line's own final byte
    while pos > 0:
        start = max(0, pos - _BLOCK)
        chunk = read_at(fd, pos - start, start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def parse_line(raw: bytes, line: int | Callable[[], int], path: str) -> dict:
    """The event of one line. `line` is its number, or what counts it: a line read
    backwards is numbered only when it is bad, so a good read never counts lines."""
    try:
        obj = load_json(raw)
    except ValueError as exc:
        n = line() if callable(line) else line
        raise IntegrityError(f"not valid JSON ({exc}); run `vt ledger verify`", path, n) from None
    if not isinstance(obj, dict):
        n = line() if callable(line) else line
        raise IntegrityError("not a JSON object; run `vt ledger verify`", path, n)
    return obj


def _number_at(fd: int, start: int) -> Callable[[], int]:
    """What counts the number of the line that starts at byte `start` of `fd`."""
    return lambda: count_lines(fd, 0, start) + 1


def _head_of(fd: int, size: int, path: str) -> Tip:
    """Tip from the last complete line, read backwards (the file must end in '\\n')."""
    if size == 0:
        return Tip()
    start = _line_start(fd, size)
    event = parse_line(read_at(fd, size - start, start), _number_at(fd, start), path)
    seq, hash_ = event.get("seq"), event.get("hash")
    if type(seq) is not int or not is_sha(hash_):
        n = count_lines(fd, 0, start) + 1
        raise IntegrityError("the last line has no seq or hash; run `vt ledger verify`", path, n)
    return Tip(seq, hash_, size)


def recover_torn(fd: int, path: Path) -> TornInfo | None:
    """Move a last line without final '\\n' (a crash mid-write) to `<ledger>.torn`.

    The bytes are appended to the backup (one fragment per line) and fsynced before the
    ledger is truncated, so they are never lost.
    """
    size = os.fstat(fd).st_size
    if size == 0 or read_at(fd, 1, size - 1) == b"\n":
        return None
    start = _line_start(fd, size + 1) if size else 0  # +1: the last byte is not a '\n'
    torn = read_at(fd, size - start, start)
    backup = Path(str(path) + ".torn")
    with open(backup, "ab") as out:
        out.write(torn + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.ftruncate(fd, start)
    os.fsync(fd)
    return TornInfo(start, len(torn), str(backup))


def iter_lines(path: Path | str, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """(end offset, raw line with its '\\n') for every complete line from byte `start`."""
    try:
        handle = open_ledger_binary(path)
    except FileNotFoundError:
        return
    with handle:
        handle.seek(start)
        offset = start
        for raw in handle:
            if not raw.endswith(b"\n"):
                return  # a torn tail is not an event
            offset += len(raw)
            yield offset, raw


def iter_events(path: Path | str, start: int = 0) -> Iterator[dict]:
    """Every event, oldest first, streamed. A line that is not JSON raises IntegrityError
    naming it by its number in the file (counted only then, when `start` is not 0)."""
    for n, (end, raw) in enumerate(iter_lines(path, start), 1):
        yield parse_line(raw, n if not start else partial(_line_at, path, end - len(raw)),
                          str(path))  # fmt: skip


def _line_at(path: Path | str, offset: int) -> int:
    """The number of the line starting at byte `offset` of the ledger at `path`."""
    fd = open_ledger(path)
    try:
        return count_lines(fd, 0, offset) + 1
    finally:
        os.close(fd)


def _iter_lines_reversed(path: Path | str, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """(line number, raw line) for every complete line, last first; only the lines
    ending by byte `stop` when given."""
    try:
        fd = open_ledger(path)
    except FileNotFoundError:
        return
    try:
        end = os.fstat(fd).st_size if stop is None else min(stop, os.fstat(fd).st_size)
        if end and read_at(fd, 1, end - 1) != b"\n":
            end = _line_start(fd, end + 1)  # skip a torn tail
        n = count_lines(fd, 0, end)
        while end > 0:
            start = _line_start(fd, end)
            yield n, read_at(fd, end - start, start)
            end, n = start, n - 1
    finally:
        os.close(fd)


def ledger_head(path: Path | str) -> Tip:
    """The head as the file stands (no lock; a torn tail is ignored)."""
    try:
        fd = open_ledger(path)
    except FileNotFoundError:
        return Tip()
    try:
        size = os.fstat(fd).st_size
        if size and read_at(fd, 1, size - 1) != b"\n":
            size = _line_start(fd, size + 1)
        return _head_of(fd, size, str(path))
    finally:
        os.close(fd)


def complete_size(fd: int) -> int:
    """Where the last complete line ends (a torn tail is not part of the ledger)."""
    size = os.fstat(fd).st_size
    if size and read_at(fd, 1, size - 1) != b"\n":
        return _line_start(fd, size + 1)
    return size


def crlf_converted(fd: int, size: int) -> bool:
    """True when the first and the last line end in CRLF: a canonical line ends in `}`,
    so the file went through a checkout that converts line endings."""
    if size < 2 or read_at(fd, 2, size - 2) != b"\r\n":
        return False
    first = read_at(fd, min(size, 1 << 20), 0)
    i = first.find(b"\n")
    return i > 0 and first[i - 1 : i] == b"\r"


CRLF_MESSAGE = (
    "the lines end in CRLF: the ledger's line endings were converted (git with "
    "core.autocrlf?); check it out again with LF endings (`vt init` marks it -text in "
    ".gitattributes)"
)


def count_lines(fd: int, start: int, stop: int) -> int:
    """The number of lines ending between bytes `start` and `stop`."""
    count = 0
    while start < stop:
        chunk = read_at(fd, min(1 << 20, stop - start), start)
        if not chunk:
            break
        count += chunk.count(b"\n")
        start += len(chunk)
    return count


# ---------------------------------------------------------------- log


def _day_bound(value: str | date | datetime | None, end: bool) -> str | None:
    """A ts-comparable string; a bare date means the whole day (until is inclusive)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        value = value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        value = value.isoformat()
    if len(value) == 10:  # YYYY-MM-DD
        day = date.fromisoformat(value)
        if end:
            day += timedelta(days=1)
        return day.isoformat() + "T00:00:00Z"
    if end:
        return value + "\x7f"  # inclusive of that exact second
    return value


def iter_log(
    path: Path | str,
    claim_id: str | None = None,
    actor: str | None = None,
    action: str | None = None,
    since: str | date | datetime | None = None,
    until: str | date | datetime | None = None,
    stop: int | None = None,
) -> Iterator[dict]:
    """Events newest first (by position in the file), filtered; `until` is inclusive.
    `stop`: only the lines ending by that byte (those the gate checked)."""
    lo, hi = _day_bound(since, end=False), _day_bound(until, end=True)
    for n, raw in _iter_lines_reversed(path, stop):
        ev = parse_line(raw, n, str(path))
        ts = ev.get("ts", "")
        if (
            (claim_id is None or ev.get("claim_id") == claim_id)
            and (actor is None or ev.get("actor") == actor)
            and (action is None or ev.get("action") == action)
            and (lo is None or ts >= lo)
            and (hi is None or ts < hi)
        ):
            yield ev
