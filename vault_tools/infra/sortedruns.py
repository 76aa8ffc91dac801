"""Sort more strings than a run should hold in memory: sorted runs spilled to a file.

`SortedRuns` takes strings (a caller may append to its `run` list directly, calling
`spill()` once it holds `limit`); at most `limit` are in memory at once. Below the limit
`result()` is the plain sorted list; above it each full run is sorted and written out,
and the runs are merged as a stream into a `SpilledStrings`: a read-only sequence backed
by an anonymous temporary file (no name on disk, so nothing is left behind even when the
process is killed), read with `os.pread` (no shared file offset, so threads and forked
processes may read it at once) and never mapped (mapped pages would count in the
reader's memory).

Strings are stored UTF-8 ('surrogatepass', so file names that are not valid UTF-8
round-trip) and NUL-separated: they must not hold NUL (no file name does).
"""

from __future__ import annotations

import bisect
import itertools
import os
import tempfile
from array import array
from collections.abc import Iterable, Iterator

SEP = b"\0"
BLOCK_BYTES = 8192  # read at a time from each run while merging, and when iterating
STRIDE = 64  # strings between two remembered offsets (random access reads one stride)
ENCODING = ("utf-8", "surrogatepass")


class SpillError(OSError):
    """The temporary file could not be written (a full disk): the strings are not all
    sorted, unlike an error of the caller's own reading, which it may skip."""


class SpilledStrings:
    """Sorted strings in a temporary file: len, iteration in order, and `[i]`."""

    def __init__(self, handle: object, fd: int, start: int, end: int, count: int, offsets: array):
        self._handle = handle  # the file object that owns `fd`
        self._fd = fd
        self._start, self._end = start, end
        self._count = count
        self._offsets = offsets  # byte offset of every STRIDE-th string, and `end`

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[str]]:
        """The strings in order, a list of a block's worth at a time."""
        return _read_strings(self._fd, self._start, self._end)

    def __getitem__(self, index: int) -> str:
        if not isinstance(index, int):
            raise TypeError("SpilledStrings indices must be integers")
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        stride, within = divmod(index, STRIDE)
        start, end = self._offsets[stride], self._offsets[stride + 1]
        data = os.pread(self._fd, end - start, start)
        return data.split(SEP)[within].decode(*ENCODING)

    def close(self) -> None:
        self._handle.close()  # type: ignore[attr-defined]

    def __enter__(self) -> SpilledStrings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SortedRuns:
    """Strings sorted with at most `limit` of them in memory (see the module)."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.run: list[str] = []  # the strings not yet spilled (callers may append)
        self._file: object | None = None
        self._bounds: list[tuple[int, int]] = []  # (start, end) of each spilled run
        self._size = 0  # bytes written
        self._count = 0  # strings spilled

    def add(self, text: str) -> None:
        self.run.append(text)
        if len(self.run) >= self.limit:
            self.spill()

    def spill(self) -> None:
        """Sort the strings in memory and write them out as one run."""
        if not self.run:
            return
        self.run.sort()
        fd = self._fd()
        text = "\0".join(self.run)
        if text.count("\0") != len(self.run) - 1:
            raise ValueError("a string holds NUL")
        data = (text + "\0").encode(*ENCODING)
        try:
            _write_all(fd, data, self._size)
        except OSError as exc:
            raise SpillError(exc.errno, f"cannot spill sorted strings: {exc.strerror}") from exc
        self._bounds.append((self._size, self._size + len(data)))
        self._size += len(data)
        self._count += len(self.run)
        self.run.clear()

    def result(self) -> list[str] | SpilledStrings:
        """Every string added, sorted: the list itself when none were spilled (fewer
        than `limit` strings)."""
        if self._file is None:
            self.run.sort()
            return self.run
        try:
            self.spill()
            return self._merge()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Drop the spilled runs (only needed when `result()` is never asked for)."""
        if self._file is not None:
            self._file.close()  # type: ignore[attr-defined]

    def _fd(self) -> int:
        if self._file is None:
            try:
                self._file = tempfile.TemporaryFile()  # noqa: SIM115 - owned by the result
            except OSError as exc:
                raise SpillError(exc.errno, f"cannot spill sorted strings: {exc}") from exc
        return self._file.fileno()  # type: ignore[attr-defined]

    def _merge(self) -> SpilledStrings:
        """The runs merged into one, written after them in the same file.

        A block of each run at a time: every string up to the least of the blocks' last
        strings is surely next, so those are taken from all the blocks at once and
        sorted together (C's sort of a few sorted runs), not one by one (heapq.merge).
        """
        fd = self._fd()
        readers = [_read_strings(fd, start, end) for start, end in self._bounds]
        blocks = [(next(reader), reader) for reader in readers]
        start = position = self._size
        offsets = array("Q")
        pending: list[str] = []  # merged, not yet written (less than a STRIDE)
        while blocks:
            bound = min(block[-1] for block, _ in blocks)
            kept = []
            for block, reader in blocks:
                cut = bisect.bisect_right(block, bound)
                pending += block[:cut]
                if cut < len(block):
                    kept.append((block[cut:], reader))
                elif (more := next(reader, None)) is not None:
                    kept.append((more, reader))
            blocks = kept
            pending.sort()  # sorted tail + the new strings: a few runs for timsort to join
            whole = len(pending) - len(pending) % STRIDE if blocks else len(pending)
            position = _write_strides(fd, pending[:whole], position, offsets)
            del pending[:whole]
        offsets.append(position)
        return SpilledStrings(self._file, fd, start, position, self._count, offsets)


def sorted_strings(items: Iterable[str], limit: int) -> list[str] | SpilledStrings:
    """sorted(items) with at most `limit` of them in memory at once (see the module)."""
    runs = SortedRuns(limit)
    try:
        for text in items:
            runs.add(text)
    except BaseException:
        runs.close()
        raise
    return runs.result()


def _write_strides(fd: int, texts: list[str], position: int, offsets: array) -> int:
    """Write `texts` at `position`, noting where each STRIDE of them starts; the end."""
    parts = []
    for first in range(0, len(texts), STRIDE):
        offsets.append(position)
        parts.append(("\0".join(texts[first : first + STRIDE]) + "\0").encode(*ENCODING))
        position += len(parts[-1])
    data = b"".join(parts)
    _write_all(fd, data, position - len(data))
    return position


def _write_all(fd: int, data: bytes, position: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        view, position = view[written:], position + written


def _read_strings(fd: int, start: int, end: int) -> Iterator[list[str]]:
    """The NUL-terminated strings between `start` and `end`, a block's worth at a time."""
    tail = b""
    while start < end:
        data = os.pread(fd, min(BLOCK_BYTES, end - start), start)
        if not data:
            raise OSError(f"the spilled strings end early, at byte {start}")
        start += len(data)
        data = tail + data
        cut = data.rfind(SEP)
        if cut < 0:  # one string longer than a block
            tail = data
            continue
        tail = data[cut + 1 :]
        yield data[:cut].decode(*ENCODING).split("\0")
    if tail:
        raise OSError("the spilled strings do not end with a separator")


def in_batches(strings: Iterable[str], size: int = 1024) -> Iterator[list[str]]:
    """The strings in order, a list at a time: a spilled sequence's own blocks, a list's
    slices of `size`, else `size` at a time of the iteration."""
    if isinstance(strings, SpilledStrings):
        yield from strings.batches()
    elif isinstance(strings, list):
        for start in range(0, len(strings), size):
            yield strings[start : start + size]
    else:
        items = iter(strings)
        while batch := list(itertools.islice(items, size)):
            yield batch
