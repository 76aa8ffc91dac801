"""The per-note result cache of `vt validate` in `.vt/` (derived state, safe to delete).

An entry stands for the note's bytes (a blake2b digest). Like git's index, an
unchanged stat signature (mtime, ctime, size, inode) lets a warm run skip reading
the file; ctime cannot be set back by a user, so an edit with a restored mtime is
still seen. A file whose timestamps fall within a second of the cache's writing is
"racily clean" and always re-read, since a later edit in the same clock tick
could leave its stat unchanged.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vault_tools.validate import NoteResult

CACHE_FILE = "validate-cache.pickle"
RACY_NS = 1_000_000_000


class ResultCache:
    """Results by vault path, valid only under one key (schemas + knowledge base + vt)."""

    def __init__(self, path: Path, key: str, entries: dict[str, NoteResult],
                 saved_ns: int = 0):
        self.path = path
        self.key = key
        self.entries = entries
        self.saved_ns = saved_ns
        self.dirty = False

    @classmethod
    def load(cls, state_dir: Path, key: str) -> ResultCache:
        path = state_dir / CACHE_FILE
        try:
            with open(path, "rb") as handle:
                stored_key, saved_ns, entries = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError,
                AttributeError, ImportError):
            return cls(path, key, {})  # absent or unreadable: start afresh
        if stored_key != key:
            return cls(path, key, {})
        return cls(path, key, entries, saved_ns)

    def lookup(self, absolute: str, relative: str) -> NoteResult | None:
        """The cached result when the file's bytes are unchanged, else None."""
        entry = self.entries.get(relative)
        if entry is None:
            return None
        info = os.stat(absolute)
        signature = stat_signature(info)
        if signature == entry.stat and max(info.st_mtime_ns, info.st_ctime_ns) \
                < self.saved_ns - RACY_NS:
            return entry
        raw, signature = read_with_stat(absolute)
        if content_digest(raw) != entry.digest:
            return None
        if signature != entry.stat:
            entry = self.entries[relative] = entry._replace(stat=signature)
            self.dirty = True
        return entry

    def store(self, result: NoteResult) -> None:
        if result.digest:
            self.entries[result.path] = result
            self.dirty = True

    def claim_ids(self) -> Iterator[NoteResult]:
        return (entry for entry in self.entries.values() if entry.claim_id is not None)

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".cache-", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((self.key, time.time_ns(), self.entries), handle,
                            protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs speed next time


def read_with_stat(path: str) -> tuple[bytes, tuple[int, ...]]:
    """The file's bytes and the stat signature they were read under."""
    fd = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        chunks = [os.read(fd, max(info.st_size, 1) + 1)]
        while chunks[-1]:  # the file may have grown since fstat
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks), stat_signature(info)
    finally:
        os.close(fd)


def stat_signature(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


def content_digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()
