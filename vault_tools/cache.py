"""The per-note result cache of `vt validate` in `.vt/` (derived state, safe to delete).

An entry stands for the note's bytes (a blake2b digest). Like git's index, an
unchanged stat signature (mtime, ctime, size, inode) lets a warm run skip reading
the file; ctime cannot be set back by a user, so an edit with a restored mtime is
still seen. A file whose timestamps fall within a second of the cache's writing is
"racily clean" and always re-read, since a later edit in the same clock tick
could leave its stat unchanged.

The file is a `marshal` of plain tuples: a warm run loads ten thousand entries in
a few milliseconds, where pickled objects took a hundred. Besides the entries it
keeps the knowledge base's aliases with the stat signature they were read under,
so a warm run need not re-read every knowledge-base note to know they are unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from collections.abc import Iterator
from pathlib import Path

CACHE_FILE = "validate-cache.marshal"
FORMAT = 3  # bump whenever the entry layout changes
RACY_NS = 1_000_000_000

# An entry is a plain tuple (see validate.pack): these are the positions cache.py reads.
PATH, DIGEST, STAT, CLAIM_ID = 0, 1, 2, 3

Entry = tuple
AliasRecord = tuple  # (stat signature, aliases)


class ResultCache:
    """Results by vault path, valid only under one key (schemas + knowledge base + vt)."""

    def __init__(self, path: Path, key: str = "", entries: dict[str, Entry] | None = None,
                 saved_ns: int = 0, aliases: dict[str, AliasRecord] | None = None):
        self.path = path
        self.key = key
        self.entries = entries if entries is not None else {}
        self.saved_ns = saved_ns
        self.aliases = aliases if aliases is not None else {}  # kb note -> (stat, aliases)
        self.dirty = False

    @classmethod
    def read(cls, state_dir: Path) -> ResultCache:
        """The cache as saved, its entries not yet checked against a key (see `use_key`)."""
        path = state_dir / CACHE_FILE
        try:
            # loads() of the whole file: load() of the open file reads in small pieces, 5x slower
            fmt, key, saved_ns, aliases, entries = marshal.loads(path.read_bytes())
            if fmt != FORMAT or not isinstance(entries, dict) or not isinstance(aliases, dict) \
                    or not isinstance(key, str) or not isinstance(saved_ns, int):
                raise ValueError("another cache format")
        except (OSError, EOFError, ValueError, TypeError):
            return cls(path)  # absent or unreadable: start afresh
        return cls(path, key, entries, saved_ns, aliases)

    @classmethod
    def load(cls, state_dir: Path, key: str) -> ResultCache:
        cache = cls.read(state_dir)
        cache.use_key(key)
        return cache

    def use_key(self, key: str) -> None:
        """Keep the entries only when they were made under `key`."""
        if key != self.key:
            self.key = key
            self.entries = {}
            self.dirty = True

    def fresh(self, info: os.stat_result) -> bool:
        """Whether a file with this stat was surely last written before the cache was saved."""
        return max(info.st_mtime_ns, info.st_ctime_ns) < self.saved_ns - RACY_NS

    def lookup(self, absolute: str, relative: str) -> Entry | None:
        """The cached entry when the file's bytes are unchanged, else None."""
        entry = self.entries.get(relative)
        if entry is None:
            return None
        info = os.stat(absolute)
        if (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino) == entry[STAT] \
                and self.fresh(info):
            return entry
        raw, signature = read_with_stat(absolute)
        if content_digest(raw) != entry[DIGEST]:
            return None
        if signature != entry[STAT]:
            entry = self.entries[relative] = (*entry[:STAT], signature, *entry[STAT + 1:])
            self.dirty = True
        return entry

    def store(self, entry: Entry) -> None:
        if entry[DIGEST]:
            self.entries[entry[PATH]] = entry
            self.dirty = True

    def claim_ids(self) -> Iterator[Entry]:
        return (entry for entry in self.entries.values() if entry[CLAIM_ID] is not None)

    def save(self) -> None:
        if not self.dirty:
            return
        import time

        temp = self.path.with_name(f".cache-{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(temp, "wb") as handle:
                marshal.dump((FORMAT, self.key, time.time_ns(), self.aliases, self.entries),
                             handle)
            os.replace(temp, self.path)
        except (OSError, ValueError):  # a cache that cannot be written only costs speed
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)


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
