"""The per-note result cache of `vt validate` in `.vt/` (derived state, safe to delete).

An entry stands for the note's bytes (a blake2b digest). Like git's index, an
unchanged stat signature (mtime, ctime, size, inode) lets a warm run skip reading
the file; ctime cannot be set back by a user, so an edit with a restored mtime is
still seen. A file whose timestamps fall within a second of the cache's writing is
"racily clean" and always re-read, since a later edit in the same clock tick
could leave its stat unchanged.

Two files of `marshal`led plain tuples (a warm run loads ten thousand entries in
a few milliseconds, where pickled objects took a hundred). The index: the key,
the knowledge base's aliases with the stat signature they were read under, per
note its digest, stat, claim_id and finding counts, and the memo (the piped
output of the last whole-vault run, which an unchanged vault prints as it is).
The payload, per note its packed findings and their piped text, is read only
when some note's findings are needed.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from collections.abc import Iterator
from pathlib import Path

CACHE_FILE = "validate-cache.marshal"
PAYLOAD_FILE = "validate-cache.payload"
FORMAT = 5  # bump whenever the layout changes
RACY_NS = 1_000_000_000

# An entry is a plain tuple (see validate.pack): these are the positions cache.py reads;
# the index keeps the first INDEXED fields, the payload the rest.
PATH, DIGEST, STAT, CLAIM_ID = 0, 1, 2, 3
INDEXED = 7

Entry = tuple
AliasRecord = tuple  # (stat signature, aliases)


class CacheCorrupt(Exception):
    """The payload file does not belong to the index (never expected: it is written first)."""


class ResultCache:
    """Results by vault path, valid only under one key (schemas + knowledge base + vt)."""

    def __init__(self, path: Path, key: str = "", entries: dict[str, Entry] | None = None,
                 saved_ns: int = 0, aliases: dict[str, AliasRecord] | None = None,
                 listing: str = "", memo: tuple | None = None, token: str = ""):
        self.path = path
        self.key = key
        self.entries = entries if entries is not None else {}
        self.saved_ns = saved_ns
        self.aliases = aliases if aliases is not None else {}  # kb note -> (stat, aliases)
        self.listing = listing  # the vault listing's digest the aliases were read under
        self.memo = memo  # (digest of the run's targets, its piped output) or None
        self.token = token  # names the payload file's version that goes with the index
        self._payload: dict[str, tuple] | None = None if token else {}
        self.dirty = False

    @classmethod
    def read(cls, state_dir: Path) -> ResultCache:
        """The cache as saved, its entries not yet checked against a key (see `use_key`)."""
        path = state_dir / CACHE_FILE
        try:
            # loads() of the whole file: load() of the open file reads in small pieces
            fmt, key, saved_ns, token, listing, aliases, entries, memo = \
                marshal.loads(path.read_bytes())
            if fmt != FORMAT or not isinstance(entries, dict) or not isinstance(aliases, dict) \
                    or not isinstance(key, str) or not isinstance(saved_ns, int):
                raise ValueError("another cache format")
        except (OSError, EOFError, ValueError, TypeError):
            return cls(path)  # absent or unreadable: start afresh
        return cls(path, key, entries, saved_ns, aliases, listing,
                   memo if isinstance(memo, tuple) and len(memo) == 2 else None, token)

    @classmethod
    def load(cls, state_dir: Path, key: str) -> ResultCache:
        cache = cls.read(state_dir)
        cache.use_key(key)
        return cache

    def payload(self) -> dict[str, tuple]:
        """Path -> (packed findings, piped text) of every entry; read on first use."""
        if self._payload is None:
            try:
                token, payload = marshal.loads(self.path.with_name(PAYLOAD_FILE).read_bytes())
                if token != self.token or not isinstance(payload, dict):
                    raise ValueError("a payload of another index")
            except (OSError, EOFError, ValueError, TypeError) as exc:
                raise CacheCorrupt(str(self.path)) from exc
            self._payload = payload
        return self._payload

    def findings_of(self, path: str) -> tuple:
        """(packed findings, piped text) of the cached note at `path`."""
        return self.payload()[path]

    def use_key(self, key: str) -> None:
        """Keep the entries only when they were made under `key`."""
        if key != self.key:
            self.key = key
            self.entries, self._payload, self.token = {}, {}, ""
            self.memo = None
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
        return self._reread(absolute, relative, entry)

    def lookup_all(self, root: str, targets: list[str]) -> tuple[dict[str, Entry], list[str]]:
        """`lookup` of every target (vault-relative, under `root`): (hits by path, misses).

        One tight loop: a warm run of a large vault spends most of its time here.
        """
        hits: dict[str, Entry] = {}
        misses: list[str] = []
        entries, stat, limit = self.entries, os.stat, self.saved_ns - RACY_NS
        prefix = root.rstrip(os.sep) + os.sep
        for relative in targets:
            entry = entries.get(relative)
            if entry is not None:
                try:
                    info = stat(prefix + relative)
                    if info.st_mtime_ns < limit and info.st_ctime_ns < limit and entry[STAT] == \
                            (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino):
                        hits[relative] = entry
                        continue
                    entry = self._reread(prefix + relative, relative, entry)
                except OSError:
                    entry = None
            if entry is None:
                misses.append(relative)
            else:
                hits[relative] = entry
        return hits, misses

    def _reread(self, absolute: str, relative: str, entry: Entry) -> Entry | None:
        raw, signature = read_with_stat(absolute)
        if content_digest(raw) != entry[DIGEST]:
            return None
        if signature != entry[STAT]:
            entry = self.entries[relative] = (*entry[:STAT], signature, *entry[STAT + 1:])
            self.dirty = True
        return entry

    def store(self, entry: Entry) -> None:
        if entry[DIGEST]:
            self.payload()[entry[PATH]] = entry[INDEXED:]
            self.entries[entry[PATH]] = entry[:INDEXED]
            self.memo = None  # a whole-vault output made before this entry changed
            self.dirty = True

    def claim_ids(self) -> Iterator[Entry]:
        return (entry for entry in self.entries.values() if entry[CLAIM_ID] is not None)

    def save(self) -> None:
        if not self.dirty:
            return
        import time

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._payload is not None:  # changed, or new: written before the index
                self.token = os.urandom(8).hex()
                _write(self.path.with_name(PAYLOAD_FILE),
                       marshal.dumps((self.token, self._payload)))
            _write(self.path, marshal.dumps((FORMAT, self.key, time.time_ns(), self.token,
                                             self.listing, self.aliases, self.entries,
                                             self.memo)))
        except (OSError, ValueError):
            pass  # a cache that cannot be written only costs speed


def _write(path: Path, data: bytes) -> None:
    temp = path.with_name(f".cache-{os.getpid()}.tmp")
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        raise


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
