"""The per-note result cache of `vt validate` in `.vt/` (derived state, safe to delete).

An entry stands for the note's bytes (`notes.identity.content_digest`). Like git's
index, an unchanged stat signature (`infra.filestat.stat_signature`) lets a warm run
skip reading the file, unless it is "racily clean" (`infra.filestat.unchanged`).

Three files of `marshal`led plain tuples (a warm run loads ten thousand entries
in a few milliseconds, where pickled objects took a hundred). The index: per note
its digest, stat, claim_id, finding counts and where its payload lies, in
length-prefixed chunks written as notes are checked, then a trailer (found from
the file's end) with the key and the knowledge base's aliases with the stat
signature they were read under. The
payload: a token naming its version, then per note one marshalled record (packed
findings, piped text), written as each note is checked and read one record at a
time, so no run holds them all. The memo: the piped output of the last
whole-vault run, which an unchanged vault copies out as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import marshal
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from vault_tools import __version__
from vault_tools.checks.schemas import Schemas
from vault_tools.config import Settings
from vault_tools.errors import os_error_text
from vault_tools.infra.filestat import settled, unchanged
from vault_tools.notes.identity import content_digest, read_with_stat
from vault_tools.notes.kb import KnowledgeBase

CACHE_FILE = "validate-cache.marshal"
PAYLOAD_FILE = "validate-cache.payload"
MEMO_FILE = "validate-cache.memo"
FORMAT = 8  # bump whenever the layout changes
LENGTH = 8  # bytes of a record's length (little-endian), before it or, for the trailer, after
CHUNK_ENTRIES = 1024  # index entries per record: a run holds at most these in memory
TOKEN_BYTES = 16  # a file's token: 8 random bytes in hex, its first bytes

# An entry is a plain tuple (see validate.pack): these are the positions cache.py reads;
# the index keeps the first INDEXED fields and the payload's (offset, size) after them.
PATH, DIGEST, STAT, CLAIM_ID = 0, 1, 2, 3
WIDE = 7  # the (target, status, path) facts the entry's findings depend on (note_results)
INDEXED = 8
LOCATION = INDEXED

ResultRow = tuple
AliasRecord = tuple  # (stat signature, aliases)


class CacheCorrupt(Exception):
    """A payload record that cannot be read (never expected: the file is opened and its
    token checked when the index is read)."""


class ResultCache:
    """Results by vault path, valid only under one key (schemas + knowledge base + vt);
    each entry also names the targets it resolved through the whole listing (`WIDE`)."""

    def __init__(
        self,
        path: Path,
        key: str = "",
        entries: dict[str, ResultRow] | None = None,
        saved_ns: int = 0,
        aliases: dict[str, AliasRecord] | None = None,
        listing: str = "",
        memo: tuple | None = None,
        payload: BinaryIO | None = None,
        token: str = "",
    ):
        self.path = path
        self.key = key
        self.entries = entries if entries is not None else {}
        self.saved_ns = saved_ns
        self.aliases = aliases if aliases is not None else {}  # kb note -> (stat, aliases)
        self.listing = listing  # the vault listing's digest the aliases were read under
        self.memo = memo  # (digest of the run's targets, memo file's token) or None
        self.token = token  # names the payload file's version that goes with the index
        self._old = payload  # the payload file the entries point into (open, token checked)
        self._new: BinaryIO | None = None  # this run's payload file, written as notes come
        self._new_size = 0  # its bytes so far (BufferedWriter.tell() costs a system call)
        self._index: BinaryIO | None = None  # this run's index file, likewise
        self._chunk: dict[str, ResultRow] = {}  # checked entries not yet written to the index
        self._broken = False  # a write failed: this run's files are dropped, the old kept
        # the first write that failed, `path: what the system said`: a cache that cannot
        # be written costs speed, never the check (validate warns once, naming the file)
        self.failure: str | None = None
        self._memo_out: BinaryIO | None = None
        self._new_token = self._memo_token = ""
        self.dirty = False

    @classmethod
    def read(cls, state_dir: Path) -> ResultCache:
        """The cache as saved, its entries not yet checked against a key (see `use_key`)."""
        path = state_dir / CACHE_FILE
        try:
            # loads() of the whole file: load() of the open file reads in small pieces
            data = path.read_bytes()
            size = int.from_bytes(data[-LENGTH:], "little")
            fmt, key, saved_ns, token, listing, aliases, memo = marshal.loads(
                data[-LENGTH - size : -LENGTH]
            )
            if (
                fmt != FORMAT
                or not isinstance(aliases, dict)
                or not isinstance(key, str)
                or not isinstance(saved_ns, int)
            ):
                raise ValueError("another cache format")
            entries = _read_chunks(memoryview(data)[: -LENGTH - size])
            payload = _open_versioned(path.with_name(PAYLOAD_FILE), token) if entries else None
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            return cls(path)  # absent, unreadable or torn: start afresh
        return cls(
            path,
            key,
            entries,
            saved_ns,
            aliases,
            listing,
            memo if isinstance(memo, tuple) and len(memo) == 2 else None,
            payload,
            token,
        )

    @classmethod
    def load(cls, state_dir: Path, key: str) -> ResultCache:
        cache = cls.read(state_dir)
        cache.use_key(key)
        return cache

    def findings_of(self, entry: ResultRow) -> tuple:
        """(packed findings, piped text) of a cached entry (one read of its record)."""
        try:
            offset, size = entry[LOCATION]
            # no payload file (None) is a corrupt cache too: the AttributeError below
            self._old.seek(offset)  # type: ignore[union-attr]
            record = marshal.loads(self._old.read(size))  # type: ignore[union-attr]
        except (AttributeError, OSError, EOFError, ValueError, TypeError) as exc:
            raise CacheCorrupt(str(self.path)) from exc
        return record

    def use_key(self, key: str) -> None:
        """Keep the entries only when they were made under `key`."""
        if key != self.key:
            self.key = key
            self.entries, self.memo = {}, None
            self._close_old()
            self.dirty = True

    def drop_moved(self, kb: KnowledgeBase) -> None:
        """Forget the entries whose findings named a target that resolves otherwise in
        `kb` (a note added, removed or renamed outside the knowledge base's folder can
        change where a bare `[[Name]]` leads); call it when the listing changed."""
        still = kb.still_resolves
        moved = [path for path, e in self.entries.items() if e[WIDE] and not still(e[WIDE])]
        for path in moved:
            del self.entries[path]
        if moved:
            self.memo, self.dirty = None, True

    def fresh(self, info: os.stat_result) -> bool:
        """Whether a file with this stat was surely last written before the cache was saved."""
        return settled(info, self.saved_ns)

    def lookup(self, absolute: str, relative: str) -> ResultRow | None:
        """The cached entry when the file's bytes are unchanged, else None."""
        entry = self.entries.get(relative)
        if entry is None:
            return None
        info = os.stat(absolute)
        if unchanged(info, entry[STAT], self.saved_ns):
            return entry
        return self._reread(absolute, relative, entry)

    def lookup_all(
        self, root: str, targets: Iterable[str]
    ) -> tuple[dict[str, ResultRow], list[str]]:
        """`lookup` of every target (vault-relative, under `root`): (hits by path, misses).

        One tight loop: a warm run of a large vault spends most of its time here.
        """
        hits: dict[str, ResultRow] = {}
        misses: list[str] = []
        entries, stat, saved_ns = self.entries, os.stat, self.saved_ns
        prefix = root.rstrip(os.sep) + os.sep
        for relative in targets:
            entry = entries.get(relative)
            if entry is not None:
                try:
                    info = stat(prefix + relative)
                    if unchanged(info, entry[STAT], saved_ns):
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

    def _reread(self, absolute: str, relative: str, entry: ResultRow) -> ResultRow | None:
        # bytes of another size are another note: no more than the entry's size is read
        raw, signature = read_with_stat(absolute, entry[STAT][2])
        if content_digest(raw) != entry[DIGEST]:
            return None
        if signature != entry[STAT]:
            entry = self.entries[relative] = (*entry[:STAT], signature, *entry[STAT + 1 :])
            self.dirty = True
        return entry

    def store(self, entry: ResultRow) -> None:
        """Keep a checked note's entry: its payload and its index entry go to this run's
        files as they come (in chunks), not into memory."""
        if not entry[DIGEST] or self._broken:
            return
        try:
            out = self._new or self._open_outputs()
            record = marshal.dumps(entry[INDEXED:])
            offset = self._new_size
            out.write(record)
            self._new_size += len(record)
            self.entries.pop(entry[PATH], None)  # the old entry: not carried over
            self._chunk[entry[PATH]] = (*entry[:INDEXED], (offset, len(record)))
            if len(self._chunk) >= CHUNK_ENTRIES:
                self._flush_chunk()
        except OSError as exc:
            self._failed(exc, self.path.with_name(PAYLOAD_FILE))
            return
        self.memo = None  # a whole-vault output made before this entry changed
        self.dirty = True

    def claim_ids(self) -> Iterator[ResultRow]:
        return (entry for entry in self.entries.values() if entry[CLAIM_ID] is not None)

    def _failed(self, exc: OSError, path: str | os.PathLike[str]) -> None:
        """A write of this run's files failed: they are dropped (the old files stay) and
        the first failure is kept for the one warning."""
        self._broken = True
        if self.failure is None:
            self.failure = f"{os.fspath(path)}: cannot write the cache ({os_error_text(exc)})"

    def memo_writer(self) -> _MemoOut | None:
        """A new memo file to write a whole-vault run's piped output into, as it goes; a
        write to it that fails drops the memo and the cache, never the run."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            out = open(_temp(self.path.with_name(MEMO_FILE)), "wb")  # noqa: SIM115
            self._memo_token = os.urandom(8).hex()
            out.write(self._memo_token.encode())
        except OSError as exc:
            self._failed(exc, self.path.with_name(MEMO_FILE))
            return None
        self._memo_out = out
        return _MemoOut(self, out)

    def finish_memo(self, run: str) -> None:
        """The memo file written is the whole output of the run whose targets digest to `run`."""
        if self._memo_out is not None:
            self.memo, self.dirty = (run, self._memo_token), True

    def open_memo(self, run: str) -> BinaryIO | None:
        """The memo, positioned at its text, when it is the output of the run `run`."""
        if self.memo is None or self.memo[0] != run:
            return None
        try:
            return _open_versioned(self.path.with_name(MEMO_FILE), self.memo[1])
        except (OSError, ValueError):
            return None

    def save(self) -> None:
        """Write the run's files: the payload (the unchanged notes' records carried over),
        the memo, then the index that names them (each replaced whole, in that order)."""
        if not self.dirty or self._broken:
            self.close()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._new is not None:  # written before the index that points into it
                self._carry_over()
                self._new.close()
                os.replace(self._new.name, self.path.with_name(PAYLOAD_FILE))
                self._new = None
                self.token = self._new_token
            if self._memo_out is not None:
                self._memo_out.close()
                if self.memo is not None and self.memo[1] == self._memo_token:
                    os.replace(self._memo_out.name, self.path.with_name(MEMO_FILE))
            if self._index is None:
                self._index = open(_temp(self.path), "wb")  # noqa: SIM115
            self._flush_chunk()
            rest = iter(self.entries.items())
            while chunk := dict(itertools.islice(rest, CHUNK_ENTRIES)):
                _write_record(self._index, marshal.dumps(chunk))
            trailer = marshal.dumps(
                (
                    FORMAT,
                    self.key,
                    time.time_ns(),
                    self.token,
                    self.listing,
                    self.aliases,
                    self.memo,
                )
            )
            self._index.write(trailer + len(trailer).to_bytes(LENGTH, "little"))
            self._index.close()
            os.replace(self._index.name, self.path)
            self._index = None
        except OSError as exc:  # a cache that cannot be written only costs speed
            self._failed(exc, self.path)
        except ValueError:
            pass
        finally:
            self.close()

    def close(self) -> None:
        """Let go of the open files; unfinished new ones are removed. Closing flushes what
        is buffered: on a full disk that fails too, and is one more cache failure."""
        self._close_old()
        for name, final in (("_new", PAYLOAD_FILE), ("_index", CACHE_FILE),
                            ("_memo_out", MEMO_FILE)):  # fmt: skip
            out = getattr(self, name)
            if out is not None:
                setattr(self, name, None)
                try:
                    out.close()
                except OSError as exc:
                    self._failed(exc, self.path.with_name(final))
                with contextlib.suppress(OSError):
                    os.unlink(out.name)

    def _open_outputs(self) -> BinaryIO:
        """This run's payload and index files (temporary names until `save`)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._index = open(_temp(self.path), "wb")  # noqa: SIM115
        self._new = open(_temp(self.path.with_name(PAYLOAD_FILE)), "wb")  # noqa: SIM115
        self._new_token = os.urandom(8).hex()
        token = self._new_token.encode()
        self._new.write(token)
        self._new_size = len(token)
        return self._new

    def _flush_chunk(self) -> None:
        if self._chunk:
            assert self._index is not None
            _write_record(self._index, marshal.dumps(self._chunk))
            self._chunk = {}

    def _carry_over(self) -> None:
        """Copy the records of the entries not checked this run into the new payload."""
        assert self._new is not None
        for path, entry in self.entries.items():
            assert self._old is not None  # entries are read only with their payload
            offset, size = entry[LOCATION]
            self._old.seek(offset)
            record = self._old.read(size)
            self.entries[path] = (*entry[:INDEXED], (self._new_size, size))
            self._new.write(record)
            self._new_size += size

    def _close_old(self) -> None:
        if self._old is not None:
            self._old.close()
            self._old = None


class _MemoOut:
    """The memo file as the run writes it: a write that fails (a full disk) drops the
    memo and this run's cache, and the run goes on."""

    def __init__(self, cache: ResultCache, out: BinaryIO) -> None:
        self.cache, self.out = cache, out

    def write(self, data: bytes) -> int:
        if self.cache._broken:
            return len(data)
        try:
            return self.out.write(data)
        except OSError as exc:
            self.cache._failed(exc, self.cache.path.with_name(MEMO_FILE))
            return len(data)


def _write_record(out: BinaryIO, data: bytes) -> None:
    out.write(len(data).to_bytes(LENGTH, "little") + data)


def _read_chunks(data: memoryview) -> dict[str, ResultRow]:
    """The entries of the index's chunk records (length-prefixed marshalled dicts)."""
    entries: dict[str, ResultRow] = {}
    offset = 0
    while offset < len(data):
        size = int.from_bytes(data[offset : offset + LENGTH], "little")
        chunk = marshal.loads(data[offset + LENGTH : offset + LENGTH + size])
        if not isinstance(chunk, dict) or size == 0:
            raise ValueError("not an index chunk")
        entries.update(chunk)
        offset += LENGTH + size
    return entries


def _open_versioned(path: Path, token: str) -> BinaryIO:
    """`path` opened after its token, which must be `token` (else it is another version)."""
    stream = open(path, "rb")  # noqa: SIM115
    if stream.read(TOKEN_BYTES) != token.encode():
        stream.close()
        raise ValueError(f"{path} belongs to another index")
    return stream


def _temp(path: Path) -> Path:
    return path.with_name(f".{path.name}-{os.getpid()}.tmp")


def _write(path: Path, data: bytes) -> None:
    temp = path.with_name(f".cache-{os.getpid()}.tmp")
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        raise


def results_key(schemas: Schemas, kb: KnowledgeBase, settings: Settings) -> str:
    """What every cached result of a note depends on besides the note's own bytes
    (`vt validate`'s cache and `vt preview`'s)."""
    parts = [
        __version__,
        schemas.digest,
        # the knowledge base's folder, not the whole listing: a note added, removed or
        # renamed elsewhere is seen by its own entry, and by `drop_moved` for the few
        # notes whose targets resolve through the whole listing
        kb.kb_digest,
        kb.aliases_digest(),
        ",".join(sorted(settings.disabled_findings)),
        settings.claims_dir,
        str(settings.max_note_bytes),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()
