"""A spool: records written one after the other to an anonymous temporary file and read
back in the same order, so that a run over many notes holds a batch of them in memory
instead of all of them (`vt apply`: the candidates between examining and deciding, the
decided notes between appending and marking).

The file is private to the process (`tempfile.TemporaryFile`: unlinked at once, gone
when closed or when the process dies) and is never a durable record of anything: what
must survive a crash is in the ledger and the notes.
"""

from __future__ import annotations

import pickle
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from itertools import islice, pairwise
from types import TracebackType
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")

# records pickled at once: one write and one read per group, not per record
_GROUP = 256


class Spool:
    """Records in, then the same records out, in order; use as a context manager.

    `add` while writing; `__iter__` (or `batches`) reads them all back, from the first,
    and may be called again for another pass. Only `_GROUP` records are in memory on
    either side."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._pending: list[Any] = []
        self.count = 0

    def __enter__(self) -> Spool:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._pending = []

    def add(self, record: Any) -> None:
        self._pending.append(record)
        self.count += 1
        if len(self._pending) >= _GROUP:
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="vt-spool-")  # noqa: SIM115 - close()
        self._file.seek(0, 2)
        pickle.dump(self._pending, self._file, pickle.HIGHEST_PROTOCOL)
        self._pending = []

    def __iter__(self) -> Iterator[Any]:
        self._write_pending()
        if self._file is None:
            return
        file = self._file
        offset = 0
        while True:
            file.seek(offset)  # another pass or an `add` may have moved the position
            try:
                group = pickle.load(file)  # noqa: S301 - written by this process
            except EOFError:
                return
            offset = file.tell()
            yield from group

    def batches(self, size: int) -> Iterator[list[Any]]:
        """The records, `size` at a time (the last batch may be smaller)."""
        records = iter(self)
        while batch := list(islice(records, size)):
            yield batch


class SpooledList(Generic[T]):
    """A list of records kept in a spool: appended, counted, read back in order, as a
    list is, for a result naming every note of a large vault (`vt apply`'s applied
    notes) that would otherwise stay in memory until it is reported. A record is
    pickled when appended (within its group): change it before, never after. The file
    is closed when the list is garbage."""

    def __init__(self, records: Iterable[T] = ()) -> None:
        self._spool = Spool()
        self._finalizer = weakref.finalize(self, self._spool.close)
        for record in records:
            self.append(record)

    def append(self, record: T) -> None:
        self._spool.add(record)

    def __len__(self) -> int:
        return self._spool.count

    def __bool__(self) -> bool:
        return self._spool.count > 0

    def __iter__(self) -> Iterator[T]:
        # a generator of this list's own: the list (so its file) lives while it is read,
        # also when nothing else holds the list any more (`for x in report().applied`)
        yield from self._spool

    def __getitem__(self, index: int) -> T:
        """The record at `index` (read through the spool: for a few, not in a loop)."""
        count = self._spool.count
        if not -count <= index < count:
            raise IndexError("SpooledList index out of range")
        return next(islice(self._spool, index % count, None))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SpooledList | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list is

    def sort(self, key: Callable[[T], Any]) -> None:
        """Sorted by `key`, as list.sort (stable). Records appended in order already
        (the usual case) are left where they are, after one pass reading them."""
        if all(key(a) <= key(b) for a, b in pairwise(self)):
            return
        records = sorted(self, key=key)
        self._spool.close()
        self._spool = Spool()
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, self._spool.close)
        for record in records:
            self.append(record)

    def __repr__(self) -> str:
        return f"SpooledList({list(self)!r})"
