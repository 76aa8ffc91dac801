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
from collections.abc import Iterator
from itertools import islice
from types import TracebackType
from typing import IO, Any

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
