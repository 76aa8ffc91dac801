"""The Decision Ledger (docs/ledger.md): an append-only, hash-chained JSONL file.

Every line is one canonical JSON event. `id` names the decision (stable across merges),
`hash`/`prev`/`seq` chain the lines. Appends happen inside a `Transaction` that holds a
kernel lock on `<ledger>.lock`, writes all its lines in one `os.write` and fsyncs once.

Nothing trusts the file before the gate (`Ledger.transaction`, `Ledger.trusted_head`) has
checked it: the prefix verified last time must still hash to the remembered block
digests, and every line after it must pass `vt ledger verify`'s own line checks. A prefix
that no longer matches is verified in full, including the memory below, so a merge that
only re-chained events passes and an edit, a rewrite or a rollback does not.

Derived state lives in `<state_dir>/ledger-index.sqlite` (the state dir is `<vault>/.vt/`),
written only by the lock holder, never by `vt ledger verify`:
- the trusted prefix: its size, the sha256 of each of its blocks, its last seq and hash;
- an index of that prefix (every id, each claim's latest event), so an apply does not
  re-parse a large ledger;
- the memory of every event ever trusted (id and ts), so a ledger that lost or rewrote one
  is caught, while a merge that only re-chained events (same id, new seq/prev/hash) is not.
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import BinaryIO, NoReturn, TypeGuard

from vault_tools.errors import IntegrityError, IOFailure, RefusedError, UsageError, os_error_text
from vault_tools.infra.boundary import state_files, writable_path
from vault_tools.infra.durable import fsync_folder, write_all
from vault_tools.infra.lock import FileLock
from vault_tools.infra.pool import can_fork
from vault_tools.infra.sqlitedb import connect, rollback
from vault_tools.vocabulary import (
    ACCEPT,
    BASE_MARKER,
    CHECK_KEYS,
    CONFLICT,
    LEDGER_ACTIONS,
    REJECT,
    REJECTED,
    REPAIR,
    REVERT,
    STATUS_BY_ACTION,
    conflict_marker,
)

CLAIM_KEYS = ("atomic_claim", "epistemic_mode", "mapping_status", "semantic_frame")
GENESIS = "0" * 64  # `prev` of the first line
VERSION = 1
NOT_IN_ID = ("id", "seq", "prev", "hash", "ts")
DECISION_FIELDS = (
    "action", "actor", "base", "checks", "claim", "claim_id", "comment", "note",
    "preview", "supersedes", "ts", "v",
)  # fmt: skip
EVENT_FIELDS = frozenset(DECISION_FIELDS) | {"id", "seq", "prev", "hash"}
ALLOWED_FIELDS = EVENT_FIELDS | {"reverts"}  # `reverts`: REVERT only
STATE_DB = "ledger-index.sqlite"
MAX_PROBLEMS = 1000  # keep verify's memory bounded on a thoroughly broken file
_BLOCK = 1 << 16
# a cold verify with at least this many bytes to parse in full forks a helper for half
PARALLEL_MIN_BYTES = 8 << 20
_PART_PREFIX = "verify-part-"  # + helper pid + .sqlite, in a temporary folder
# the trusted prefix is remembered as the sha256 of each block of this many bytes: an
# append re-hashes only the last block, and the blocks are hashed on two threads
DIGEST_BLOCK = 4 << 20

_SHA = re.compile(r"sha256:[0-9a-f]{64}")
# ASCII digits, as the schema says (`\d` would take the digits of any script)
_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


# ---------------------------------------------------------------- errors


class LedgerWriteError(IOFailure):
    """The ledger could not be written or fsynced. Nothing was appended; never retried."""


class InvalidEventError(UsageError):
    """A decision handed to `Transaction.append` lacks a field or has a wrong value."""


class DuplicateEventError(RefusedError):
    """The ledger already holds a decision with this id."""


# ---------------------------------------------------------------- fault injection

CRASH_ENV = "VT_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """The crash tests' one seam: when the environment variable VT_TEST_CRASH_AT names
    this point, the process is killed right here, as a power cut or `kill -9` would kill
    it (no cleanup, no buffers flushed). Points: `after-write` (ledger lines fsynced,
    derived state not updated), `after-append` (lock released, no note marked),
    `after-mark` (the first note marked, the rest and the Claim Store not)."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


# ---------------------------------------------------------------- pure helpers


# one encoder, built once: json.dumps with non-default options builds a new one per call
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# None without the C accelerator (and absent from the type stubs: it is private)
_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode_basestring = json.encoder.encode_basestring


# one encoder for every call (verify serialises every line): what _ENCODER.encode does,
# minus its Python-level dispatch and its cycle markers. Ledger values are JSON data
# (json.loads output, note properties): a cycle cannot occur, and would only raise
# RecursionError instead of ValueError
_CANONICAL_ENCODER = (
    None
    if _make_encoder is None
    else _make_encoder(
        None, _ENCODER.default, _encode_basestring, None, ":", ",", True, False, True
    )
)


def canonical(obj: object) -> str:
    """The one serialisation of ledger JSON: sorted keys, no spaces, raw UTF-8.

    Identical to json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
    """
    if _CANONICAL_ENCODER is None:
        return _ENCODER.encode(obj)
    return "".join(_CANONICAL_ENCODER(obj, 0))


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def decision_id(event: dict) -> str:
    """sha256 of the decision: every field but id, seq, prev, hash and ts."""
    return _sha(canonical({k: v for k, v in event.items() if k not in NOT_IN_ID}).encode())


def line_hash(event: dict) -> str:
    """sha256 of the canonical line without its `hash` field."""
    return _sha(canonical({k: v for k, v in event.items() if k != "hash"}).encode())


_clock: list = [None, ""]  # (the second, its text): a run stamps thousands of events


def utc_now() -> str:
    second = int(time.time())
    if _clock[0] != second:
        _clock[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))]
    return _clock[1]


def _is_sha(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _supersedes_ok(value: object) -> bool:
    """null, one event id, or a strictly sorted list of two or more (the heads an event
    settles: one id stays a string, so ledgers written before lists existed keep their ids)."""
    if value is None:
        return True
    if type(value) is str:
        return _SHA.fullmatch(value) is not None
    return (
        type(value) is list
        and len(value) >= 2
        and all(type(v) is str and _SHA.fullmatch(v) is not None for v in value)
        and all(a < b for a, b in zip(value, value[1:], strict=False))
    )


def superseded_ids(value: str | list[str] | None) -> tuple[str, ...]:
    """The event ids a `supersedes` value names."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def supersedes_value(ids: Iterable[str]) -> str | list[str] | None:
    """The `supersedes` of an event decided over these heads: null, one id, or the sorted
    list of several."""
    unique = sorted(set(ids))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else unique


def _claim_problems(action: str, claim: object) -> list[str]:
    if action in (REJECT, REVERT):
        return [] if claim is None else [f"claim must be null for {action}"]
    if not isinstance(claim, dict):
        return [f"claim must be an object for {action}"]
    problems = [f"claim.{k} missing" for k in CLAIM_KEYS if k not in claim]
    problems += [f"claim.{k} is not allowed" for k in claim if k not in CLAIM_KEYS]
    for key in ("atomic_claim", "epistemic_mode", "mapping_status"):
        if key in claim and not _is_str(claim[key]):
            problems.append(f"claim.{key} must be a string")
    if "semantic_frame" in claim and not isinstance(claim["semantic_frame"], dict):
        problems.append("claim.semantic_frame must be an object")
    return problems


def _decision_problems(ev: dict) -> list[str]:
    """Structural checks of the decision fields (mirrors schemas/ledger-event.schema.json)."""
    problems = [f"field '{k}' missing" for k in DECISION_FIELDS if k not in ev]
    if problems:
        return problems
    action = ev["action"]
    if action not in LEDGER_ACTIONS:
        return [f"action {action!r} is not one of {', '.join(LEDGER_ACTIONS)}"]
    if not (_is_str(ev["actor"]) and ev["actor"]):
        problems.append("actor must be a non-empty string")
    if not (_is_str(ev["claim_id"]) and ev["claim_id"]):
        problems.append("claim_id must be a non-empty string")
    if not _is_sha(ev["base"]):
        problems.append("base must be 'sha256:<64 hex>'")
    if ev["preview"] is not None and not _is_sha(ev["preview"]):
        problems.append("preview must be 'sha256:<64 hex>' or null")
    if not _supersedes_ok(ev["supersedes"]):
        problems.append(
            "supersedes must be an event id, a sorted list of two or more event ids, or null"
        )
    if not (_is_str(ev["note"]) and ev["note"]):
        problems.append("note must be a non-empty vault-relative path")
    if not _is_str(ev["comment"]):
        problems.append("comment must be a string")
    checks = ev["checks"]
    if not isinstance(checks, dict) or any(
        k not in CHECK_KEYS or type(v) is not bool for k, v in checks.items()
    ):
        problems.append(f"checks must map {', '.join(CHECK_KEYS)} to true/false")
    if not (_is_str(ev["ts"]) and _TS.fullmatch(ev["ts"])):
        problems.append("ts must be 'YYYY-MM-DDTHH:MM:SSZ'")
    if ev["v"] != VERSION or type(ev["v"]) is not int:
        problems.append(f"v must be {VERSION}")
    if action == REVERT:
        if not _is_sha(ev.get("reverts")):
            problems.append("REVERT needs 'reverts': the id of the reverted event")
    elif "reverts" in ev:
        problems.append("'reverts' is only allowed on REVERT")
    problems += _claim_problems(action, ev["claim"])
    return problems


def event_problems(ev: object) -> list[str]:
    """Every structural problem of one complete ledger event (empty list: well formed)."""
    if not isinstance(ev, dict):
        return ["not a JSON object"]
    problems = _decision_problems(ev)
    problems += [f"field '{k}' is not allowed" for k in ev if k not in ALLOWED_FIELDS]
    for key in ("id", "hash"):
        if key not in ev:
            problems.append(f"field '{key}' missing")
        elif not _is_sha(ev[key]):
            problems.append(f"{key} must be 'sha256:<64 hex>'")
    if "prev" not in ev:
        problems.append("field 'prev' missing")
    elif not (ev["prev"] == GENESIS or _is_sha(ev["prev"])):
        problems.append("prev must be 'sha256:<64 hex>' or 64 zeros")
    seq = ev.get("seq")
    if type(seq) is not int or seq < 1:
        problems.append("seq must be an integer ≥ 1")
    return problems


# ---------------------------------------------------------------- file helpers


@dataclass(frozen=True, slots=True)
class Head:
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
        chunk = os.pread(fd, pos - start, start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def _parse_line(raw: bytes, line: int, path: str) -> dict:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"line {line}: not valid JSON ({exc}); run `vt ledger verify`",
                             path, line) from None  # fmt: skip
    if not isinstance(obj, dict):
        raise IntegrityError(f"line {line}: not a JSON object", path, line)
    return obj


def _head_of(fd: int, size: int, path: str) -> Head:
    """Head from the last complete line, read backwards (the file must end in '\\n')."""
    if size == 0:
        return Head()
    start = _line_start(fd, size)
    event = _parse_line(os.pread(fd, size - start, start), 0, path)
    seq, hash_ = event.get("seq"), event.get("hash")
    if type(seq) is not int or not _is_sha(hash_):
        raise IntegrityError("last line: seq or hash missing; run `vt ledger verify`", path)
    return Head(seq, hash_, size)


def _recover_torn(fd: int, path: Path) -> TornInfo | None:
    """Move a last line without final '\\n' (a crash mid-write) to `<ledger>.torn`.

    The bytes are appended to the backup (one fragment per line) and fsynced before the
    ledger is truncated, so they are never lost.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    start = _line_start(fd, size + 1) if size else 0  # +1: the last byte is not a '\n'
    torn = os.pread(fd, size - start, start)
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
        handle = open(path, "rb")  # noqa: SIM115 - closed below, generator-friendly
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
    """Every event, oldest first, streamed. A line that is not JSON raises IntegrityError."""
    for n, (_, raw) in enumerate(iter_lines(path, start), 1):
        yield _parse_line(raw, n, str(path))


def _iter_lines_reversed(path: Path | str) -> Iterator[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        end = os.fstat(fd).st_size
        if end and os.pread(fd, 1, end - 1) != b"\n":
            end = _line_start(fd, end + 1)  # skip a torn tail
        while end > 0:
            start = _line_start(fd, end)
            yield os.pread(fd, end - start, start)
            end = start
    finally:
        os.close(fd)


def ledger_head(path: Path | str) -> Head:
    """The head as the file stands (no lock; a torn tail is ignored)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return Head()
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            size = _line_start(fd, size + 1)
        return _head_of(fd, size, str(path))
    finally:
        os.close(fd)


def _complete_size(fd: int) -> int:
    """Where the last complete line ends (a torn tail is not part of the ledger)."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        return _line_start(fd, size + 1)
    return size


def _crlf_converted(fd: int, size: int) -> bool:
    """True when the first and the last line end in CRLF: a canonical line ends in `}`,
    so the file went through a checkout that converts line endings."""
    if size < 2 or os.pread(fd, 2, size - 2) != b"\r\n":
        return False
    first = os.pread(fd, min(size, 1 << 20), 0)
    i = first.find(b"\n")
    return i > 0 and first[i - 1 : i] == b"\r"


CRLF_MESSAGE = (
    "the lines end in CRLF: the ledger's line endings were converted (git with "
    "core.autocrlf?); check it out again with LF endings (`vt init` marks it -text in "
    ".gitattributes)"
)


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
) -> Iterator[dict]:
    """Events newest first (by position in the file), filtered; `until` is inclusive."""
    lo, hi = _day_bound(since, end=False), _day_bound(until, end=True)
    for raw in _iter_lines_reversed(path):
        ev = _parse_line(raw, 0, str(path))
        ts = ev.get("ts", "")
        if (
            (claim_id is None or ev.get("claim_id") == claim_id)
            and (actor is None or ev.get("actor") == actor)
            and (action is None or ev.get("action") == action)
            and (lo is None or ts >= lo)
            and (hi is None or ts < hi)
        ):
            yield ev


# ---------------------------------------------------------------- derived state


_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS idx_event (id TEXT PRIMARY KEY, seq INTEGER NOT NULL,
                                      claim_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS idx_latest (claim_id TEXT PRIMARY KEY, seq INTEGER NOT NULL,
                                       line TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verified (id TEXT PRIMARY KEY, ts TEXT NOT NULL) WITHOUT ROWID;
"""
_TABLES = frozenset({"meta", "idx_event", "idx_latest", "verified"})
_TRUST_KEYS = ("trust_size", "trust_seq", "trust_hash", "trust_count", "trust_blocks")
# A stat signature younger than this may hide a same-length write in the same timestamp
# tick ("racily clean", as git calls it); 2 s covers FAT's mtime granularity too.
RACY_NS = 2_000_000_000


def stat_signature(st: os.stat_result) -> str:
    """The ledger file's identity and last change as the kernel keeps them. Any write or
    rename changes ctime (which no user call can set back), so an equal signature that is
    not racily clean proves the bytes are the ones hashed when it was taken."""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


@dataclass(frozen=True, slots=True)
class _Trusted:
    """The prefix the gate trusted last: bytes 0..size, lines 1..seq (every remembered id
    lies within them), and the sha256 of each DIGEST_BLOCK of those bytes (hex, joined)."""

    size: int
    seq: int
    hash: str
    count: int  # remembered ids
    blocks: str

    @property
    def head(self) -> Head:
        return Head(self.seq, self.hash, self.size)


class _StateDB:
    """`.vt/ledger-index.sqlite`. Only written while the ledger lock is held."""

    def __init__(self, state_dir: Path, conn: sqlite3.Connection | None = None) -> None:
        if conn is None:
            state_dir.mkdir(parents=True, exist_ok=True)
            conn = connect(state_dir / STATE_DB, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # derived state: rebuildable
                conn.executescript(_SCHEMA_SQL)
            except BaseException:
                conn.close()
                raise
        self.conn = conn

    @classmethod
    def read_only(cls, state_dir: Path, immutable: bool = False) -> _StateDB:
        """The state as it stands, opened read-only (no state at all, or one that cannot
        be read: an empty memory, in memory). `immutable`: the caller holds the ledger
        lock (shared), so no writer can be at work; without a WAL file left over, sqlite
        then reads the database file alone and creates no -wal/-shm files beside it, so
        nothing in the state dir is written or even touched."""
        path = state_dir / STATE_DB
        wal = Path(str(path) + "-wal")
        if path.is_file():
            query = "mode=ro"
            if immutable and not (wal.exists() and wal.stat().st_size):
                query += "&immutable=1"
            conn = None
            try:
                conn = sqlite3.connect(
                    f"{path.resolve().as_uri()}?{query}", uri=True, isolation_level=None
                )
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
                if tables >= _TABLES:
                    return cls(state_dir, conn)
            except (sqlite3.Error, OSError):
                pass
            if conn is not None:
                conn.close()
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.executescript(_SCHEMA_SQL)
        return cls(state_dir, conn)

    def close(self) -> None:
        self.conn.close()

    def get(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, **values: object) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            [(k, str(v)) for k, v in values.items()],
        )

    def trusted(self) -> _Trusted | None:
        marks = ",".join("?" * len(_TRUST_KEYS))
        values = dict(
            self.conn.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", _TRUST_KEYS)
        )  # noqa: S608
        if len(values) != len(_TRUST_KEYS):
            return None
        try:
            return _Trusted(
                int(values["trust_size"]),
                int(values["trust_seq"]),
                values["trust_hash"],
                int(values["trust_count"]),
                values["trust_blocks"],
            )
        except ValueError:
            return None

    def trust(self, trusted: _Trusted, fd: int) -> None:
        self.put(
            trust_size=trusted.size,
            trust_seq=trusted.seq,
            trust_hash=trusted.hash,
            trust_count=trusted.count,
            trust_blocks=trusted.blocks,
        )
        self.remember_stat(fd, trusted.size)

    def remember_stat(self, fd: int, size: int) -> None:
        """Remember the file's stat signature, when the file is exactly the trusted
        prefix (no torn tail), so that the next gate need not hash it again."""
        st = os.fstat(fd)
        value = f"{stat_signature(st)}@{time.time_ns()}" if st.st_size == size else ""
        self.put(trust_stat=value)

    def stat_unchanged(self, fd: int, size: int) -> bool:
        """Whether the file still has the signature remembered with a trusted prefix of
        `size` bytes, taken long enough after its last change to be conclusive."""
        remembered = self.get("trust_stat") or ""
        signature, _, taken = remembered.partition("@")
        st = os.fstat(fd)
        if not taken or st.st_size != size or signature != stat_signature(st):
            return False
        return int(taken) - max(st.st_mtime_ns, st.st_ctime_ns) >= RACY_NS

    def memory_size(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM verified").fetchone()[0]

    def remember(self, events: Iterable[dict]) -> int:
        """Remember the events' ids; returns how many were new."""
        cur = self.conn.executemany(
            "INSERT OR IGNORE INTO verified(id, ts) VALUES (?, ?)",
            ((ev["id"], ev["ts"]) for ev in events),
        )
        return cur.rowcount

    def index_add(self, rows: list[tuple[dict, str]]) -> None:
        """Add (event, line) pairs to the index, in ledger order."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO idx_event(id, seq, claim_id) VALUES (?, ?, ?)",
            [(ev["id"], ev["seq"], ev["claim_id"]) for ev, _ in rows],
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO idx_latest(claim_id, seq, line) VALUES (?, ?, ?)",
            [(ev["claim_id"], ev["seq"], line) for ev, line in rows],
        )


def _block_digests(fd: int, start: int, size: int) -> str:
    """The sha256 (hex) of each DIGEST_BLOCK bytes of bytes start..size, joined; `start`
    is a block boundary. Two threads: sha256 and pread release the GIL."""
    spans = range(start, size, DIGEST_BLOCK)

    def one(offset: int) -> str:
        return hashlib.sha256(os.pread(fd, min(DIGEST_BLOCK, size - offset), offset)).hexdigest()

    if len(spans) < 2 or (os.cpu_count() or 1) < 2:
        return "".join(map(one, spans))
    with ThreadPoolExecutor(max_workers=2) as pool:
        return "".join(pool.map(one, spans))


def _extended_blocks(fd: int, trusted: _Trusted, size: int) -> str:
    """The block digests of bytes 0..size, given those of the trusted prefix (only its
    last, partial block and the new bytes are hashed)."""
    keep = trusted.size // DIGEST_BLOCK
    return trusted.blocks[: keep * 64] + _block_digests(fd, keep * DIGEST_BLOCK, size)


# ---------------------------------------------------------------- transactions


class Transaction:
    """Decisions appended under the ledger lock; see `Ledger.transaction`."""

    def __init__(
        self, ledger: Ledger, fd: int, head: Head, torn: TornInfo | None, db: _StateDB | None = None
    ) -> None:
        self.ledger = ledger
        self.torn = torn  # a torn tail recovered when the lock was taken
        self.start = head  # the ledger as it stood when the lock was taken
        self.head = head  # including this transaction's pending events
        self.appended: list[dict] = []
        self._fd = fd
        self._lines: list[bytes] = []
        self._pending_latest: dict[str, dict] = {}
        self._pending_ids: set[str] = set()
        self._no_events: set[str] = set()  # claims found (by `look_up`) to have no event
        self._db = db  # the gate's: its index covers the ledger as it stood at the lock

    # -- reading, under the lock

    def _index(self) -> _StateDB:
        assert self._db is not None, "a Transaction comes from Ledger.transaction"
        return self._db

    def look_up(self, claim_ids: Iterable[str]) -> None:
        """Find out at once which of many claims have no event yet, so that `latest` and
        the duplicate check of `append` need not ask the index claim by claim (a run
        deciding thousands of new claims)."""
        wanted = list(dict.fromkeys(claim_ids))
        conn = self._index().conn
        for i in range(0, len(wanted), 500):  # within SQLite's limit on parameters
            batch = wanted[i : i + 500]
            marks = ",".join("?" * len(batch))
            found = {
                row[0]
                for row in conn.execute(
                    f"SELECT claim_id FROM idx_latest WHERE claim_id IN ({marks})", batch
                )
            }
            self._no_events.update(c for c in batch if c not in found)

    def latest(self, claim_id: str) -> dict | None:
        """The claim's latest event (by seq), including events appended in this transaction."""
        if claim_id in self._pending_latest:
            return self._pending_latest[claim_id]
        if claim_id in self._no_events:
            return None
        row = (
            self._index()
            .conn.execute("SELECT line FROM idx_latest WHERE claim_id=?", (claim_id,))
            .fetchone()
        )
        return json.loads(row[0]) if row else None

    def has_id(self, event_id: str) -> bool:
        if event_id in self._pending_ids:
            return True
        row = (
            self._index().conn.execute("SELECT 1 FROM idx_event WHERE id=?", (event_id,)).fetchone()
        )
        return row is not None

    def recorded(self, decision: dict) -> dict | None:
        """The claim's latest event if it records this same decision (every decision field
        equal, whatever it superseded and whenever it was made), else None.

        This is apply's idempotence test: with 4 processes applying the same note, the
        first appends and the others find their decision already recorded.
        """
        latest = self.latest(decision["claim_id"])
        if latest is None:
            return None
        probe = {k: v for k, v in decision.items() if k not in NOT_IN_ID}
        probe["supersedes"] = latest["supersedes"]
        probe.setdefault("v", VERSION)
        return latest if decision_id(probe) == latest["id"] else None

    # -- writing

    def prepare(self, decision: dict) -> dict:
        """The decision with `v`, `ts`, `supersedes` (if absent) and `id` filled in."""
        ev = {k: v for k, v in decision.items() if k not in NOT_IN_ID or k == "ts"}
        ev.setdefault("v", VERSION)
        ev.setdefault("ts", utc_now())
        if "supersedes" not in ev and _is_str(ev.get("claim_id")):
            latest = self.latest(ev["claim_id"])
            ev["supersedes"] = latest["id"] if latest else None
        problems = _decision_problems(ev)
        problems += [f"field '{k}' is not allowed" for k in ev if k not in ALLOWED_FIELDS]
        if problems:
            raise InvalidEventError("invalid decision: " + "; ".join(problems),
                                    str(self.ledger.path))  # fmt: skip
        ev["id"] = decision_id(ev)
        return ev

    def append(self, decision: dict) -> dict:
        """Queue one decision; returns the full event (durable only after the `with` exits)."""
        ev = self.prepare(decision)
        # an event id names its claim: a claim with no event holds none of its ids
        if (ev["id"] in self._pending_ids or ev["claim_id"] not in self._no_events) and self.has_id(
            ev["id"]
        ):
            raise DuplicateEventError(
                f"the ledger already holds decision {ev['id']}", str(self.ledger.path)
            )
        ev["seq"], ev["prev"] = self.head.seq + 1, self.head.hash
        data = _with_hash(ev)
        self._lines.append(data)
        self.head = Head(ev["seq"], ev["hash"], self.head.size + len(data))
        self._pending_latest[ev["claim_id"]] = ev
        self._pending_ids.add(ev["id"])
        self.appended.append(ev)
        return ev

    def _commit(self) -> None:
        if not self._lines:
            return
        data = b"".join(self._lines)
        _write_durably(self._fd, data, self.start.size, str(self.ledger.path))
        crash_point("after-write")
        self._record_after_commit()

    def _record_after_commit(self) -> None:
        """Trust our own lines: remember them, index them, extend the prefix digest. The
        ledger is already durable, so a failure here only leaves the trusted prefix where
        it was (the next gate verifies these lines like any others)."""
        db = self._db
        if db is None:
            return
        try:
            db.conn.execute("BEGIN")
            trusted = db.trusted()
            if trusted is None and self.start.size == 0:  # the gate passed: nothing remembered
                trusted = _Trusted(0, 0, GENESIS, 0, "")
            if trusted is not None and trusted.head == self.start:
                added = db.remember(self.appended)
                lines = [raw[:-1].decode() for raw in self._lines]
                db.index_add(list(zip(self.appended, lines, strict=True)))
                db.trust(
                    _Trusted(
                        self.head.size,
                        self.head.seq,
                        self.head.hash,
                        trusted.count + added,
                        _extended_blocks(self._fd, trusted, self.head.size),
                    ),
                    self._fd,
                )
            db.conn.execute("COMMIT")
        except (sqlite3.Error, OSError):
            rollback(db.conn)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _with_hash(ev: dict) -> bytes:
    """Set `ev["hash"]` and return the event's line, serialising it only once: the hash
    field is spliced into the canonical text of the event without it, just before the
    top-level `id` (the last `,"id":"` in the text: nested objects all come earlier)."""
    text = canonical(ev)
    ev["hash"] = _sha(text.encode())
    i = text.rfind(',"id":"')
    return (text[:i] + f',"hash":"{ev["hash"]}"' + text[i:] + "\n").encode()


def _write_durably(fd: int, data: bytes, pre_size: int, path: str) -> None:
    """Write `data` at the end and fsync once. Any OSError is fatal and leaves the file
    exactly `pre_size` bytes long, so no partial line survives the failure."""
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            if written <= 0:
                raise OSError("write returned 0 bytes")
            view = view[written:]
    except OSError as exc:
        _truncate_back(fd, pre_size)
        raise LedgerWriteError(
            f"cannot write the ledger ({os_error_text(exc)}); nothing was appended", path
        ) from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        # never retried: after a failed fsync the page cache may already be lying
        _truncate_back(fd, pre_size)
        raise LedgerWriteError(
            f"fsync of the ledger failed ({os_error_text(exc)}); the events are not "
            "durable and were not appended",
            path,
        ) from exc


def _truncate_back(fd: int, size: int) -> None:
    # if even this fails, the next lock holder moves the partial line aside as a torn tail
    with suppress(OSError):
        os.ftruncate(fd, size)


class Ledger:
    """One ledger file and its state dir (usually `<vault>/.vt`).

    `root`: the vault. Taking the lock then refuses, with BoundaryError and before any
    write, a ledger, lock, `.torn` or state file that leads outside it (see boundary.py).
    None only for a private ledger of no vault (a dry run's scratch copy).
    """

    def __init__(
        self, path: Path | str, state_dir: Path | str, *, root: Path | None = None
    ) -> None:
        self.path = Path(path)
        self.state_dir = Path(state_dir)
        self.root = root

    @property
    def lock_path(self) -> Path:
        return Path(str(self.path) + ".lock")

    @property
    def torn_path(self) -> Path:
        return Path(str(self.path) + ".torn")

    @contextmanager
    def locked(self) -> Iterator[tuple[int, TornInfo | None]]:
        """Hold the lock; yields the open ledger fd (O_APPEND) and any recovered torn tail."""
        if self.root is not None:
            for path in (
                self.lock_path,
                self.path,
                self.torn_path,
                *state_files(self.state_dir / STATE_DB),
            ):
                writable_path(self.root, path)
        with FileLock(self.lock_path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            created = not self.path.exists()
            flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
            fd = os.open(self.path, flags, 0o644)
            try:
                if created:
                    fsync_folder(self.path.parent)
                yield fd, _recover_torn(fd, self.path)
            finally:
                os.close(fd)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """`with ledger.transaction() as txn:` — read and append under one lock.

        On a clean exit every appended line is written in one os.write and fsynced once;
        an exception inside the block appends nothing.
        """
        with self.locked() as (fd, torn):
            db = _StateDB(self.state_dir)
            try:
                head = _gate(self, db, fd, os.fstat(fd).st_size, remember=True)
            except BaseException:
                db.close()
                raise
            txn = Transaction(self, fd, head, torn, db)
            try:
                yield txn
                txn._commit()
            finally:
                txn.close()

    def append(self, decisions: Iterable[dict]) -> list[dict]:
        with self.transaction() as txn:
            for decision in decisions:
                txn.append(decision)
        return txn.appended

    def head(self) -> Head:
        return ledger_head(self.path)

    def trusted_head(self) -> Head:
        """The gate for a command that reads the ledger without appending (rebuild,
        export, status, history, report): the head of the ledger once it has passed the
        gate (raises IntegrityError otherwise). Lines after `size` were not checked.

        Remembers what it checked when the lock is free and the state dir writable;
        otherwise (another vt appending, a read-only vault) it checks without the lock
        and writes nothing, which only costs time the next run. A check made without the
        lock that fails is made again under it: an append may have been under way.
        """
        lock = FileLock(self.lock_path, timeout=0)
        with suppress(RefusedError, OSError):
            lock.acquire()
        try:
            return self._gate_now(lock.held)
        except IntegrityError:
            if lock.held:
                raise
        finally:
            lock.release()
        try:
            lock = FileLock(self.lock_path)  # waits for the appender
            lock.acquire()
        except OSError:  # a read-only vault: no appender can be at work
            return self._gate_now(False)
        try:
            return self._gate_now(True)
        finally:
            lock.release()

    def _gate_now(self, locked: bool) -> Head:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = None
        try:
            db = None
            if locked:
                with suppress(OSError, sqlite3.Error):
                    db = _StateDB(self.state_dir)
            remember = db is not None
            db = db or _StateDB.read_only(self.state_dir)
            try:
                size = 0 if fd is None else _complete_size(fd)
                return _gate(self, db, fd, size, remember)
            finally:
                db.close()
        finally:
            if fd is not None:
                os.close(fd)

    def verify(self) -> VerifyResult:
        return verify_ledger(self.path, self.state_dir)


# ---------------------------------------------------------------- verify


@dataclass(frozen=True, slots=True)
class Problem:
    seq: int | None
    line: int | None
    message: str

    def to_json(self) -> dict:
        return {"seq": self.seq, "line": self.line, "message": self.message}


@dataclass(slots=True)
class VerifyResult:
    ok: bool
    events: int
    head: str
    problems: list[Problem] = field(default_factory=list)
    torn: TornInfo | None = None

    def to_json(self) -> dict:
        """The `vt ledger verify --json` object (docs/json-output.md), plus `torn`."""
        torn = None
        if self.torn:
            torn = {"offset": self.torn.offset, "length": self.torn.length,
                    "backup": self.torn.backup, "message": self.torn.message()}  # fmt: skip
        return {
            "ok": self.ok,
            "events": self.events,
            "head": self.head,
            "problems": [p.to_json() for p in self.problems],
            "torn": torn,
        }


_KEYS = EVENT_FIELDS
_REVERT_KEYS = ALLOWED_FIELDS
_CLAIM_KEYS = frozenset(CLAIM_KEYS)
_CLAIM_STR = ("atomic_claim", "epistemic_mode", "mapping_status")
_CHECK_SET = frozenset(CHECK_KEYS)
_encode_str = json.encoder.encode_basestring  # what the ensure_ascii=False encoder uses
_sha256 = hashlib.sha256


def _scalar(value: str | list[str] | None) -> str:
    if type(value) is list:  # a `supersedes` of several ids
        return canonical(value)
    return "null" if value is None else f'"{value}"'


def _sha_or_none(value: object) -> bool:
    return value is None or (type(value) is str and _SHA.fullmatch(value) is not None)


_BOOL_TYPE = frozenset({bool})
_sha_match = _SHA.fullmatch
_ts_match = _TS.fullmatch


def _quick_ok(ev: object) -> bool:
    """True only for an event `event_problems` finds nothing wrong with (the schema's rules),
    checked as cheaply as possible: it runs once per line of every verify. False only
    means: run `event_problems` for the exact messages."""
    if type(ev) is not dict:
        return False
    action = ev.get("action")
    if ev.keys() != (_REVERT_KEYS if action == REVERT else _KEYS):
        return False
    checks, claim, actor, claim_id = ev["checks"], ev["claim"], ev["actor"], ev["claim_id"]
    if action in (ACCEPT, REPAIR):
        # written out (no generator): this runs once per line
        if (
            type(claim) is not dict
            or claim.keys() != _CLAIM_KEYS
            or type(claim["semantic_frame"]) is not dict
            or type(claim["atomic_claim"]) is not str
            or type(claim["epistemic_mode"]) is not str
            or type(claim["mapping_status"]) is not str
        ):
            return False
    elif action not in LEDGER_ACTIONS or claim is not None:
        return False
    preview, supersedes, ts, base = ev["preview"], ev["supersedes"], ev["ts"], ev["base"]
    return (
        type(actor) is str
        and actor != ""
        and type(claim_id) is str
        and claim_id != ""
        and type(ev["comment"]) is str
        and type(ev["note"]) is str
        and ev["note"] != ""
        and type(ev["seq"]) is int
        and ev["seq"] > 0
        and type(ev["v"]) is int
        and ev["v"] == VERSION
        and type(ev["hash"]) is str
        and _sha_match(ev["hash"]) is not None
        and type(ev["id"]) is str
        and _sha_match(ev["id"]) is not None
        and type(ev["prev"]) is str
        and (ev["prev"] == GENESIS or _sha_match(ev["prev"]) is not None)
        and type(ts) is str
        and _ts_match(ts) is not None
        and type(base) is str
        and _sha_match(base) is not None
        and (preview is None or (type(preview) is str and _sha_match(preview) is not None))
        and (supersedes is None
             or (type(supersedes) is str and _sha_match(supersedes) is not None)
             or _supersedes_ok(supersedes))
        and (action != REVERT or _sha_or_none(ev["reverts"]) and ev["reverts"] is not None)
        and type(checks) is dict
        and checks.keys() <= _CHECK_SET
        and _BOOL_TYPE.issuperset(map(type, checks.values()))
    )  # fmt: skip


def _digests(body: bytes, ev: dict) -> tuple[str, str]:
    """(hash, id) of a canonical line without re-serialising the nested claim.

    In a canonical line the last `,"hash":"` is the top-level field (a quote inside a
    string value is always escaped, and every key after `hash` holds a scalar). Everything
    before it is the same in the hash input, the id input and the line, so it is hashed
    once (the two digests fork from a copy) and only the short scalar tail is rebuilt for
    the id input. A wrong value here can only produce a mismatch, which is reported.
    """
    i = body.rfind(b',"hash":"')
    line_digest = _sha256(memoryview(body)[:i])
    id_digest = line_digest.copy()
    line_digest.update(memoryview(body)[i + 10 + len(ev["hash"]) :])
    # the tail values are checked scalars (sha or null, int), so only `note` needs encoding
    reverts = f',"reverts":"{ev["reverts"]}"' if "reverts" in ev else ""
    tail = (
        f',"note":{_encode_str(ev["note"])},"preview":{_scalar(ev["preview"])}{reverts}'
        f',"supersedes":{_scalar(ev["supersedes"])},"v":{ev["v"]}}}'
    )
    id_digest.update(tail.encode())
    return "sha256:" + line_digest.hexdigest(), "sha256:" + id_digest.hexdigest()


class _PrefixChanged(Exception):
    """The prefix verified before has changed: verify everything in full."""


def _scalar_at(body: bytes, key: bytes, start: int) -> str | None:
    """The value of a top-level scalar field after `start` (null, or a quoteless string)."""
    k = body.find(key, start)
    if k < 0:
        return None
    v = k + len(key)
    if body[v : v + 4] == b"null":
        return None
    if body[v : v + 1] == b"[":  # a `supersedes` of several ids: kept as its JSON text
        return body[v : body.find(b"]", v) + 1].decode()
    return body[v + 1 : body.find(b'"', v + 1)].decode()


def _known_row(n: int, body: bytes, i: int) -> tuple:
    """The `seen` row of a canonical line, read by position (see `_Verifier._known`)."""
    c = body.rfind(b',"claim_id":', 0, i)
    d = body.find(b',"comment":', c)
    claim_id = json.loads(body[c + 12 : d])
    return (
        n,
        n,
        body[i + 88 : i + 159].decode(),
        _scalar_at(body, b',"ts":', i),
        claim_id,
        _scalar_at(body, b',"supersedes":', i),
        _scalar_at(body, b',"reverts":', i),
    )


class _Verifier:
    """Streams lines; keeps only the previous line's seq/hash and a batch of rows."""

    def __init__(
        self, db: _StateDB, trust_prefix: bool = True, after: _Trusted | None = None
    ) -> None:
        self.db = db
        self.problems: list[Problem] = []
        self.dropped = 0
        self.events = 0
        self.prev_seq = 0
        self.prev_hash: str | None = GENESIS
        self.rows: list[tuple] = []
        trusted = db.trusted()
        # the last line trusted before, and how many ids were remembered then
        self.remembered = (trusted.seq, trusted.hash, trusted.count) if trusted else None
        self.remembered_head_intact = False
        self.memory_proven = False
        # lines 1..prefix were verified before: re-proved by their hash chain (see _known)
        self.prefix = self.remembered[0] if self.remembered and trust_prefix else 0
        # the gate: lines 1..after.seq are proven by their digest, only later lines are fed
        self.after = after
        if after is not None:
            self.prefix, self.events = 0, after.seq
            self.prev_seq, self.prev_hash = after.seq, after.hash
        db.conn.execute("DROP TABLE IF EXISTS temp.seen")
        db.conn.execute(
            "CREATE TEMP TABLE seen (line INTEGER PRIMARY KEY, seq INTEGER, id TEXT, "
            "ts TEXT, claim_id TEXT, supersedes TEXT, reverts TEXT)"
        )

    def problem(self, seq: int | None, line: int | None, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(seq, line, message))
        else:
            self.dropped += 1

    def line(self, n: int, raw: bytes) -> None:
        self.events = n
        body = raw[:-1]
        if n <= self.prefix:
            if not self._known(n, body):
                raise _PrefixChanged
            return
        try:
            text = body.decode("utf-8")
            ev = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            if conflict_marker(body):
                self.problem(
                    None,
                    n,
                    f"line {n}: a git conflict marker: the ledger was merged "
                    "without the vt merge driver; run `vt ledger resolve`",
                )
            else:
                self.problem(None, n, f"line {n}: not valid JSON ({exc})")
            self.prev_seq, self.prev_hash = self.prev_seq + 1, None
            return
        if not _quick_ok(ev):
            structural = event_problems(ev)
            if structural:
                self._malformed(n, ev, structural)
                return
        self._check_event(n, body, text, ev)

    def _malformed(self, n: int, ev: object, messages: list[str]) -> None:
        seq = ev.get("seq") if isinstance(ev, dict) else None
        seq = seq if type(seq) is int else None
        for msg in messages:
            self.problem(seq, n, f"line {n}: {msg}")
        self.prev_seq = seq if seq is not None else self.prev_seq + 1
        self.prev_hash = ev.get("hash") if isinstance(ev, dict) else None

    def _check_event(self, n: int, body: bytes, text: str, ev: dict) -> None:
        seq = ev["seq"]
        canonical_ok = canonical(ev) == text
        if not canonical_ok:
            self.problem(seq, n, f"line {n}: not canonical JSON (re-serialised or hand-edited?)")
        if canonical_ok:
            hash_, id_ = _digests(body, ev)
        else:
            hash_, id_ = line_hash(ev), decision_id(ev)
        if seq != self.prev_seq + 1:
            self.problem(seq, n, f"line {n}: seq {self.prev_seq + 1} expected, found {seq} "
                                 "(deleted or reordered line?)")  # fmt: skip
        if n == 1 and ev["prev"] != GENESIS:
            self.problem(seq, n, "line 1: prev must be 64 zeros on the first line")
        elif n > 1 and self.prev_hash is not None and ev["prev"] != self.prev_hash:
            self.problem(seq, n, f"line {n}: prev does not match the hash of line {n - 1}")
        if hash_ != ev["hash"]:
            self.problem(seq, n, f"line {n}: hash mismatch (edited line?)")
        if id_ != ev["id"]:
            self.problem(seq, n, f"line {n}: id mismatch: the decision fields were edited "
                                 "after it was made")  # fmt: skip
        if self.remembered and n == self.remembered[0] and ev["hash"] == self.remembered[1]:
            self.remembered_head_intact = True
        self.prev_seq, self.prev_hash = seq, ev["hash"]
        supersedes = ev["supersedes"]
        if type(supersedes) is list:  # several ids: kept as their JSON text (see finish)
            supersedes = canonical(supersedes)
        self.rows.append((n, seq, ev["id"], ev["ts"], ev["claim_id"], supersedes,
                          ev.get("reverts")))  # fmt: skip
        if len(self.rows) >= 5000:
            self.flush()

    def _known(self, n: int, body: bytes) -> bool:
        """Cheap check of a line within the prefix verified before: recompute its hash and
        follow the chain, without parsing. If every line checks out and line `prefix`
        still has the remembered hash, then (sha256 being collision resistant, and the
        place of the hash field being fixed by the text around it) lines 1..prefix are
        byte for byte the lines verified before, so all the other per-line checks still
        hold. False: something changed, and the caller re-verifies everything in full.
        """
        i = body.rfind(b',"hash":"')
        if i < 0 or body.rfind(b',"id":"') != i + 81 or body[i + 80 : i + 81] != b'"':
            return False
        stated = body[i + 9 : i + 80].decode("ascii", "replace")
        if _sha(body[:i] + body[i + 81 :]) != stated:
            return False
        p = body.find(b',"prev":"', i)
        prev = body[p + 9 : body.find(b'"', p + 9)].decode("ascii", "replace")
        if p < 0 or prev != self.prev_hash:
            return False
        if n == self.prefix:
            if stated != self.remembered[1]:  # type: ignore[index]
                return False
            self.remembered_head_intact = True
        self.prev_seq, self.prev_hash = n, stated
        self.rows.append(_known_row(n, body, i))
        if len(self.rows) >= 5000:
            self.flush()
        return True

    def flush(self) -> None:
        conn = self.db.conn
        conn.execute("BEGIN")  # one transaction per batch, not one per row
        conn.executemany("INSERT INTO temp.seen VALUES (?, ?, ?, ?, ?, ?, ?)", self.rows)
        conn.execute("COMMIT")
        self.rows = []

    def finish(self) -> None:
        """The set-wide checks, done by sqlite on disk so memory stays flat."""
        self.flush()
        conn = self.db.conn
        # covering (id, ts): remembering the ids and the memory check read the index alone
        conn.execute("CREATE INDEX temp.seen_id ON seen(id, ts)")
        self._duplicates()
        # after a trusted prefix, its events are in the index (idx_event), not in `seen`
        in_prefix = ("" if self.after is None else
                     " AND NOT EXISTS (SELECT 1 FROM idx_event i WHERE i.id = a.{col} "
                     "AND i.claim_id = a.claim_id)")  # fmt: skip
        for col in ("supersedes", "reverts"):
            for line, seq, target in conn.execute(
                f"SELECT a.line, a.seq, a.{col} FROM seen a WHERE a.{col} IS NOT NULL AND NOT "
                f"EXISTS (SELECT 1 FROM seen b WHERE b.id = a.{col} AND b.line < a.line "
                f"AND b.claim_id = a.claim_id){in_prefix.format(col=col)}"
            ):
                # a `supersedes` of several ids (its JSON list never matches an id): each
                # id is checked on its own, only for these rare lines
                for missing in self._unseen(line, target):
                    self.problem(seq, line, f"line {line}: {col} {missing}, which is not an "
                                            "earlier event of the same claim")  # fmt: skip
        if self.after is not None:  # the prefix's digest proves every remembered id there
            self.memory_proven = True
            if self.dropped:
                self.problems.append(Problem(None, None, f"… and {self.dropped} more problems"))
            return
        self.memory_proven = self._prefix_proves_memory()
        if not self.memory_proven:
            self._check_memory()
        if self.dropped:
            self.problems.append(Problem(None, None, f"… and {self.dropped} more problems"))

    def _unseen(self, line: int, target: str) -> list[str]:
        """The ids `target` (one id, or a JSON list of ids) names that are not earlier
        events of line `line`'s claim."""
        if not target.startswith("["):
            return [target]
        conn = self.db.conn
        # after a trusted prefix, its events are in the index (idx_event), not in `seen`
        in_prefix = ("" if self.after is None else
                     " AND NOT EXISTS (SELECT 1 FROM idx_event i, seen a WHERE a.line = ? "
                     "AND i.id = ? AND i.claim_id = a.claim_id)")  # fmt: skip
        query = (
            "SELECT 1 FROM seen a WHERE a.line = ? AND NOT EXISTS (SELECT 1 FROM seen b "
            "WHERE b.id = ? AND b.line < a.line AND b.claim_id = a.claim_id)" + in_prefix
        )
        args = (lambda i: (line, i)) if self.after is None else (lambda i: (line, i, line, i))
        return [i for i in json.loads(target) if conn.execute(query, args(i)).fetchone()]

    def _duplicates(self) -> None:
        conn = self.db.conn
        dup_ids = [r[0] for r in conn.execute(
            "SELECT id FROM seen GROUP BY id HAVING COUNT(*) > 1"
        )]  # fmt: skip
        for id_ in dup_ids:
            lines = conn.execute("SELECT line, seq FROM seen WHERE id=? ORDER BY line", (id_,))
            (first, _), *rest = lines.fetchall()
            for line, seq in rest:
                self.problem(seq, line, f"line {line}: duplicate id {id_} (first on line {first})")
        if self.after is not None:
            for line, seq, id_, first in conn.execute(
                "SELECT s.line, s.seq, s.id, i.seq FROM seen s JOIN idx_event i ON i.id = s.id"
            ):
                self.problem(seq, line, f"line {line}: duplicate id {id_} (first on line {first})")

    def _prefix_proves_memory(self) -> bool:
        """Fast path: when every remembered id lay within lines 1..N, and line N still has
        the remembered hash while the whole chain verified, lines 1..N are unchanged, so
        every remembered id is still there."""
        if self.problems or not self.remembered or not self.remembered_head_intact:
            return False
        (count,) = self.db.conn.execute("SELECT COUNT(*) FROM verified").fetchone()
        return count == self.remembered[2]

    def _check_memory(self) -> None:
        for id_, ts, now_ts, line in self.db.conn.execute(
            "SELECT v.id, v.ts, s.ts, s.line FROM verified v LEFT JOIN seen s ON s.id = v.id "
            "WHERE s.id IS NULL OR s.ts != v.ts ORDER BY v.id"
        ):
            if now_ts is None:
                msg = f"event {id_} verified before is missing: ledger shortened or rewritten"
                self.problem(None, None, msg)
            else:
                self.problem(
                    None,
                    line,
                    f"line {line}: event {id_} verified before has "
                    f"changed its ts ({ts} → {now_ts})",
                )

    def close(self) -> None:
        self.db.conn.execute("DROP TABLE IF EXISTS temp.seen")


class _Lines:
    """The ledger read line by line from where the previous read stopped (line `n` ended
    at byte `end`); `done` once a line is torn or reaches past `size`."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle, self.size = handle, size
        self.n = self.end = 0
        self.done = False

    def feed(self, verifier: _Verifier, stop: int, stop_line: int = 0) -> None:
        """Verify lines until one ends at or after byte `stop` (or is line `stop_line`)."""
        # the loop written out: a generator costs more than a line's sha256
        n, end, size, line = self.n, self.end, self.size, verifier.line
        try:
            for raw in self.handle:
                end += len(raw)
                if not raw.endswith(b"\n") or end > size:
                    self.done = True  # a torn tail is not an event
                    return
                n += 1
                line(n, raw)
                if end >= stop or n == stop_line:
                    return
        finally:
            self.n, self.end = n, end

    def skip_to(self, n: int, end: int) -> None:
        """Lines up to `n` (ending at byte `end`) were verified elsewhere."""
        self.handle.seek(end)
        self.n, self.end = n, end


def _verify_lines(verifier: _Verifier, path: Path, size: int) -> None:
    """Feed every line (after the gate's trusted prefix: every later line) to `verifier`.
    With many bytes to parse in full, a forked helper checks the second half meanwhile
    (see `_verify_halves`)."""
    # parsed events never form cycles and are dropped line by line: pausing the cyclic
    # GC saves its repeated scans of the young objects json.loads creates
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return
        with handle:
            lines = _Lines(handle, size)
            if verifier.after is not None:
                lines.skip_to(verifier.after.seq, verifier.after.size)
            elif verifier.prefix:  # re-proved cheaply by its hash chain: not worth a helper
                lines.feed(verifier, size, stop_line=verifier.prefix)
            if not lines.done and size - lines.end >= PARALLEL_MIN_BYTES and can_fork():
                split = _split_at(handle.fileno(), lines.end, size)
                if split is not None:
                    _verify_halves(verifier, lines, path, split)
            if not lines.done:
                lines.feed(verifier, size)
    finally:
        if was_enabled:
            gc.enable()


# ---------------------------------------------------------------- verify, two processes


def _split_at(fd: int, start: int, size: int) -> int | None:
    """The start of the first line at or after the middle of bytes start..size (None: that
    line is the last one, nothing to share)."""
    pos = start + (size - start) // 2
    while pos < size:
        chunk = os.pread(fd, min(_BLOCK, size - pos), pos)
        if not chunk:
            return None
        i = chunk.find(b"\n")
        if i >= 0:
            split = pos + i + 1
            return split if split < size else None
        pos += len(chunk)
    return None


def _part_path(state_dir: Path, pid: int) -> Path:
    return state_dir / f"{_PART_PREFIX}{pid}.sqlite"


def _remove_part(part: Path) -> None:
    for name in (part.name, part.name + "-journal", part.name + "-wal", part.name + "-shm"):
        with suppress(FileNotFoundError):
            (part.parent / name).unlink()


def _verify_halves(verifier: _Verifier, lines: _Lines, path: Path, split: int) -> None:
    """Verify the lines before byte `split` here while a forked helper verifies the rest.

    When the helper found every one of its lines flawless and its first line continues
    this process's chain, its `seen` rows are taken over and `lines` skips its range;
    otherwise (a problem, a crash, any doubt) the range is left for the caller to verify
    here as usual, so the messages are exactly those of a sequential verify. The helper's
    rows go through a temporary folder outside the vault: verify writes nothing there.
    """
    scratch = Path(tempfile.mkdtemp(prefix="vt-verify-"))
    first_n, first_end = lines.n, lines.end
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: never returns
        os.close(read_fd)
        _part_child(write_fd, path, scratch, verifier.remembered,
                    (first_n, first_end, split, lines.size))  # fmt: skip
    os.close(write_fd)
    part = _part_path(scratch, pid)
    reaped = False
    try:
        lines.feed(verifier, split)
        data = _read_all(read_fd)
        _, status = os.waitpid(pid, 0)
        reaped = True
        summary = _part_summary(data, status)
        if (
            summary is not None
            and not lines.done
            and lines.end == split
            and _continues_chain(verifier, lines.n, summary)
            and _take_rows(verifier, part, summary)
        ):
            last_n, last_seq, last_hash = summary["last"]
            verifier.events, verifier.prev_seq, verifier.prev_hash = last_n, last_seq, last_hash
            if summary["intact"]:
                verifier.remembered_head_intact = True
            lines.skip_to(last_n, lines.size)
    finally:
        os.close(read_fd)
        if not reaped:  # interrupted or failed here: the helper must not outlive the lock
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        _remove_part(part)
        shutil.rmtree(scratch, ignore_errors=True)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _part_summary(data: bytes, status: int) -> dict | None:
    """The helper's report if it exited cleanly with every line flawless, else None."""
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    try:
        summary = json.loads(data)
        if summary["clean"] is not True:
            return None
        n, seq, prev = summary["first"]
        last_n, last_seq, last_hash = summary["last"]
    except (ValueError, KeyError, TypeError):
        return None
    if not (
        type(n) is int
        and type(seq) is int
        and type(last_n) is int
        and type(last_seq) is int
        and type(prev) is str
        and type(last_hash) is str
    ):
        return None  # fmt: skip
    return summary


def _continues_chain(verifier: _Verifier, n: int, summary: dict) -> bool:
    """Would the helper's first line pass the chain checks here? (the same conditions as
    `_Verifier._check_event`, so a break is reported by the sequential re-check)."""
    first_n, first_seq, first_prev = summary["first"]
    return (
        first_n == n + 1
        and first_seq == verifier.prev_seq + 1
        and (verifier.prev_hash is None or first_prev == verifier.prev_hash)
    )


def _take_rows(verifier: _Verifier, part: Path, summary: dict) -> bool:
    """Copy the helper's `seen` rows into this verify's temp table, in one statement."""
    first_n, last_n = summary["first"][0], summary["last"][0]
    conn = verifier.db.conn
    try:
        conn.execute("ATTACH DATABASE ? AS part", (str(part),))
    except sqlite3.Error:
        return False
    try:
        conn.execute("BEGIN")
        cur = conn.execute(
            "INSERT INTO temp.seen SELECT line, seq, id, ts, claim_id, supersedes, reverts "
            "FROM part.seen WHERE line BETWEEN ? AND ?", (first_n, last_n))  # fmt: skip
        if cur.rowcount != last_n - first_n + 1:
            conn.execute("ROLLBACK")
            return False
        conn.execute("COMMIT")
        return True
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        return False
    finally:
        conn.execute("DETACH DATABASE part")


class _Unclean(Exception):
    """The helper met something to report: the parent re-verifies its range itself."""


class _PartVerifier(_Verifier):
    """The helper's verifier: the per-line checks of `_Verifier`, its chain started from
    its first line (the parent checks that link), its rows in its own sqlite file (a
    connection must not cross a fork), and no problem tolerated."""

    def __init__(self, conn: sqlite3.Connection, remembered: tuple | None) -> None:
        # not _Verifier.__init__: that reads and writes the parent's connection
        self.conn = conn
        self.problems, self.dropped, self.events = [], 0, 0
        self.prev_seq, self.prev_hash = 0, None
        self.rows = []
        self.remembered, self.remembered_head_intact = remembered, False
        self.memory_proven, self.prefix, self.after = False, 0, None
        self.first: tuple[int, int, str] | None = None
        conn.execute(
            "CREATE TABLE seen (line INTEGER PRIMARY KEY, seq INTEGER, id TEXT, ts TEXT, "
            "claim_id TEXT, supersedes TEXT, reverts TEXT)"
        )

    def problem(self, seq: int | None, line: int | None, message: str) -> None:
        raise _Unclean(message)

    def _check_event(self, n: int, body: bytes, text: str, ev: dict) -> None:
        if self.first is None:  # the link to the previous line is the parent's check
            self.first = (n, ev["seq"], ev["prev"])
            self.prev_seq, self.prev_hash = ev["seq"] - 1, ev["prev"]
        super()._check_event(n, body, text, ev)

    def flush(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO seen VALUES (?, ?, ?, ?, ?, ?, ?)", self.rows)
        self.conn.execute("COMMIT")
        self.rows = []


def _part_child(
    out_fd: int,
    path: Path,
    state_dir: Path,
    remembered: tuple | None,
    span: tuple[int, int, int, int],
) -> NoReturn:
    """The forked helper's whole life: report and `os._exit`, never return or raise (the
    parent's cleanup, atexit handlers and buffered output are the parent's alone)."""
    code = 2
    try:
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            # Ctrl-C: die quietly (no KeyboardInterrupt traceback); the parent re-checks
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        summary = _verify_part(path, state_dir, remembered, *span)
        write_all(out_fd, json.dumps(summary).encode())
        code = 0 if summary["clean"] else 1
    except BaseException:  # noqa: B036 - anything at all: "not clean", no traceback
        code = 2
    finally:
        os._exit(code)


def _verify_part(
    path: Path,
    state_dir: Path,
    remembered: tuple | None,
    base_n: int,
    base_end: int,
    split: int,
    size: int,
) -> dict:
    """Check lines split..size; their rows go to `_part_path(state_dir, own pid)`."""
    part = _part_path(state_dir, os.getpid())
    _remove_part(part)  # a leftover of an earlier helper with the same pid
    with open(path, "rb") as handle:
        n = base_n + _count_lines(handle.fileno(), base_end, split)
        conn = sqlite3.connect(part, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=OFF")  # a scratch file, deleted after use
            conn.execute("PRAGMA synchronous=OFF")
            verifier = _PartVerifier(conn, remembered)
            handle.seek(split)
            lines = _Lines(handle, size)
            lines.n, lines.end = n, split
            try:
                lines.feed(verifier, size)
                if lines.done or lines.end != size or verifier.first is None:
                    raise _Unclean("the range does not end in a complete line at its end")
                verifier.flush()
            except _Unclean:
                return {"clean": False}
        finally:
            conn.close()
    return {
        "clean": True,
        "first": verifier.first,
        "last": (lines.n, verifier.prev_seq, verifier.prev_hash),
        "intact": verifier.remembered_head_intact,
    }


def _count_lines(fd: int, start: int, stop: int) -> int:
    count = 0
    while start < stop:
        chunk = os.pread(fd, min(1 << 20, stop - start), start)
        if not chunk:
            break
        count += chunk.count(b"\n")
        start += len(chunk)
    return count


def verify_ledger(path: Path | str, state_dir: Path | str) -> VerifyResult:
    """Check every line and the chain; compare with every event trusted before.

    Writes nothing, in the vault or its state dir: the memory is read as it stands, a
    torn tail is reported (`torn`, not a failure; the next append moves it aside), and
    nothing is ever repaired. Holds the ledger lock shared, when the lock file exists, so
    an append in progress is never mistaken for a torn tail. A ledger whose every line
    ends in CRLF is one problem, said once. With at least PARALLEL_MIN_BYTES to parse in
    full (a cold verify of a large ledger) and fork available, a forked helper checks the
    second half meanwhile; the result is the same either way.
    """
    ledger = Ledger(path, state_dir)
    with _shared_lock(ledger.lock_path) as locked:
        db = _StateDB.read_only(ledger.state_dir, immutable=locked)
        try:
            try:
                fd = os.open(ledger.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return _verify_missing(db, ledger.path)
            try:
                size = _complete_size(fd)
                torn = None
                if size != os.fstat(fd).st_size:
                    torn = TornInfo(
                        size, os.fstat(fd).st_size - size, str(ledger.torn_path), moved=False
                    )
                if _crlf_converted(fd, size):
                    problem = Problem(None, 1, f"line 1: {CRLF_MESSAGE}")
                    return VerifyResult(False, _count_lines(fd, 0, size), "?", [problem], torn)
            finally:
                os.close(fd)
            # its temp table goes with the connection: dropping it first only costs time
            verifier = _Verifier(db)
            try:
                _verify_lines(verifier, ledger.path, size)
            except _PrefixChanged:
                verifier = _Verifier(db, trust_prefix=False)
                _verify_lines(verifier, ledger.path, size)
            verifier.finish()
        finally:
            db.close()
    problems = sorted(verifier.problems, key=lambda p: (p.line is None, p.line or 0))
    return VerifyResult(not problems, verifier.events, verifier.prev_hash or "?", problems, torn)


@contextmanager
def _shared_lock(path: Path) -> Iterator[bool]:
    """The ledger lock, shared, if its file exists (True); nothing is created or written:
    no lock file means no vt has appended yet."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield True
    finally:
        os.close(fd)  # drops the lock


def _verify_missing(db: _StateDB, path: Path) -> VerifyResult:
    """No ledger file: fine for a new vault, an integrity failure if events were verified."""
    verifier = _Verifier(db)
    verifier.finish()
    verifier.close()
    problems = verifier.problems
    if problems:
        problems.insert(0, Problem(None, None, f"{path.name} is missing"))
    return VerifyResult(not problems, 0, GENESIS, problems, None)


# ---------------------------------------------------------------- the gate


def _gate(ledger: Ledger, db: _StateDB, fd: int | None, size: int, remember: bool) -> Head:
    """The one check before anything trusts or appends to the ledger; returns its head.

    `fd` holds the ledger (None: there is none), whose complete lines end at `size`. The
    prefix trusted last time must still hash to its remembered block digests; then only
    the lines after it are checked, by `vt ledger verify`'s own line checks, plus their
    ids against the index of the prefix. Otherwise (nothing remembered, a prefix that
    changed or shrank) the whole file is verified, memory included: a merge that only
    re-chained events passes, an edit, a rewrite or a rollback does not. Raises
    IntegrityError naming the first bad line. With `remember` (the caller holds the lock
    and `db` is writable) what passed becomes the trusted prefix, indexed and remembered.
    """
    known = db.trusted()
    if fd is None or size == 0:
        remembered = db.memory_size()
        if remembered:
            what = "missing" if fd is None else "empty"
            raise _gate_error(ledger, 1, f"the ledger is {what}, but {remembered} events were "
                                         "verified before")  # fmt: skip
        return Head()
    if known is not None and known.size == size and db.stat_unchanged(fd, size):
        return known.head  # not a byte written since it was hashed: nothing to hash
    start = None
    if (
        known is not None
        and known.size <= size
        and _block_digests(fd, 0, known.size) == known.blocks
    ):
        start = known
        if known.size == size:
            if remember:
                _remember_stat(db, fd, size)
            return known.head
    if _crlf_converted(fd, size):
        raise _gate_error(ledger, 1, CRLF_MESSAGE)
    verifier = _Verifier(db, trust_prefix=False, after=start)
    try:
        _verify_lines(verifier, ledger.path, size)
        verifier.finish()
        if verifier.problems:
            raise _refusal(ledger, verifier, changed=known is not None and start is None)
        head = Head(verifier.prev_seq, verifier.prev_hash or GENESIS, size)
        if remember:
            _trust(db, fd, ledger.path, start, head)
    finally:
        verifier.close()
    return head


def _remember_stat(db: _StateDB, fd: int, size: int) -> None:
    # best effort: without it the next gate hashes the prefix again, nothing worse
    with suppress(sqlite3.Error, OSError):
        db.remember_stat(fd, size)


def _trust(db: _StateDB, fd: int, path: Path, start: _Trusted | None, head: Head) -> None:
    """Make the lines the gate just checked (in `temp.seen`) part of the trusted prefix:
    remembered, indexed, and digested, in one sqlite transaction."""
    conn = db.conn
    conn.execute("BEGIN")
    try:
        if start is None:  # everything was verified: a fresh index
            conn.execute("DELETE FROM idx_event")
            conn.execute("DELETE FROM idx_latest")
        # in key order: b-tree appends rather than random inserts
        conn.execute(
            "INSERT OR IGNORE INTO idx_event(id, seq, claim_id) "
            "SELECT id, seq, claim_id FROM temp.seen ORDER BY id"
        )
        latest = dict(conn.execute("SELECT MAX(line), claim_id FROM temp.seen GROUP BY claim_id"))
        offset, n = (start.size, start.seq) if start else (0, 0)
        rows = []
        for end, raw in iter_lines(path, offset):
            n += 1
            if end > head.size:
                break
            if n in latest:
                rows.append((latest[n], n, raw[:-1].decode()))
        rows.sort()
        conn.executemany(
            "INSERT OR REPLACE INTO idx_latest(claim_id, seq, line) VALUES (?, ?, ?)", rows
        )
        added = conn.execute(
            "INSERT OR IGNORE INTO verified(id, ts) SELECT id, ts FROM temp.seen ORDER BY id"
        ).rowcount
        if start is None:
            blocks, count = _block_digests(fd, 0, head.size), db.memory_size()
        else:
            blocks, count = _extended_blocks(fd, start, head.size), start.count + added
        db.trust(_Trusted(head.size, head.seq, head.hash, count, blocks), fd)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _refusal(ledger: Ledger, verifier: _Verifier, changed: bool) -> IntegrityError:
    """One error for the first problem: its line (a lost event: the first line that is
    not one verified before, or the line after the last), what it is, and what to run."""
    problems = sorted(verifier.problems, key=lambda p: (p.line is None, p.line or 0))
    first = problems[0]
    line = first.line
    if line is None:
        row = verifier.db.conn.execute(
            "SELECT MIN(s.line) FROM seen s WHERE NOT EXISTS "
            "(SELECT 1 FROM verified v WHERE v.id = s.id)"
        ).fetchone()
        line = row[0] if row[0] is not None else verifier.events + 1
    what = _LINE_PREFIX.sub("", first.message)
    if len(problems) > 1:
        what += f"; {len(problems) - 1} more problem(s)"
    if changed:
        return _gate_error(ledger, line, f"the ledger changed since it was verified ({what})")
    return _gate_error(ledger, line, f"the ledger does not verify ({what})")


_LINE_PREFIX = re.compile(r"^line \d+: ")


def _gate_error(ledger: Ledger, line: int, message: str) -> IntegrityError:
    shown = ledger.path
    with suppress(ValueError):  # shown relative to the vault, as the user names it
        shown = ledger.path.relative_to(ledger.state_dir.parent)
    return IntegrityError(f"{message}; run `vt ledger verify`", str(shown), line)


# ---------------------------------------------------------------- merge


def _checked_event(raw: bytes, n: int, where: str) -> dict:
    """Parse a line to merge. Its own hash and id must hold: re-chaining recomputes the
    hash, so an edited line must be refused here or it would be laundered."""
    ev = _parse_line(raw, n, where)
    problems = event_problems(ev)
    if problems:
        raise IntegrityError(f"{where} line {n}: {problems[0]}", where, n)
    if line_hash(ev) != ev["hash"]:
        raise IntegrityError(f"{where} line {n}: hash mismatch (edited line?)", where, n)
    if decision_id(ev) != ev["id"]:
        raise IntegrityError(f"{where} line {n}: id mismatch (edited decision?)", where, n)
    return ev


def _events_of(data: bytes, where: str) -> list[dict]:
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    return [_checked_event(raw, n, where) for n, raw in enumerate(lines, 1)]


def _rechain(events: Iterable[dict], dedupe: bool = True) -> bytes:
    """Drop repeated ids, then recompute seq/prev/hash from line 1 (ids are kept)."""
    out: list[bytes] = []
    seen: set[str] = set()
    prev = GENESIS
    for ev in events:
        if dedupe and ev["id"] in seen:
            continue
        seen.add(ev["id"])
        ev = dict(ev, seq=len(out) + 1, prev=prev)
        ev.pop("hash", None)
        ev["hash"] = prev = line_hash(ev)
        out.append((canonical(ev) + "\n").encode())
    return b"".join(out)


def merge_ledgers(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """The git merge driver's result: ours (which starts with the common prefix), then
    theirs' events not already present, re-chained. Refuses a side that dropped an event
    of the merge base: the ledger is append-only, so that side rewrote history."""
    base_ev = _events_of(base, "base")
    ours_ev, theirs_ev = _events_of(ours, "ours"), _events_of(theirs, "theirs")
    for name, side in (("ours", ours_ev), ("theirs", theirs_ev)):
        ids = {ev["id"] for ev in side}
        for ev in base_ev:
            if ev["id"] not in ids:
                raise IntegrityError(
                    f"{name} no longer holds event {ev['id']} of the merge base: "
                    "ledger shortened or rewritten", name, None,
                )  # fmt: skip
    return _rechain(ours_ev + theirs_ev)


def resolve_ledger(text: bytes) -> bytes:
    """A ledger left with git conflict markers, or a `merge=union` result, turned into the
    merged ledger: events in file order (ours before theirs), the base section of a diff3
    conflict dropped, duplicates by id dropped, re-chained."""
    kept: list[bytes] = []
    in_base = False
    for raw in text.split(b"\n"):
        marker = conflict_marker(raw)
        if marker is not None:
            in_base = marker == BASE_MARKER
            continue
        if in_base or not raw.strip():
            continue
        kept.append(raw)
    events = [_checked_event(raw, n, "ledger") for n, raw in enumerate(kept, 1)]
    return _rechain(events)


# ---------------------------------------------------------------- claim status


DECISION_KEYS = ("action", "claim", "preview", "reverts")


def same_decision(a: dict, b: dict) -> bool:
    """Do two decisions (events, or a note's decision) decide the same thing? What was
    decided counts: who decided, when, the comment and the checklist do not."""
    return all(a.get(k) == b.get(k) for k in DECISION_KEYS)


@dataclass(slots=True)
class ClaimState:
    """A claim's current status computed from its events in ledger order."""

    claim_id: str
    status: str  # ACCEPTED | REPAIRED | REJECTED | REVERTED | CONFLICT
    latest: dict  # its latest event (by seq)
    current: dict | None  # the ACCEPT/REPAIR event whose claim is in force, if any
    # the events no later event supersedes, in ledger order: one, or several after
    # decisions made without seeing each other (on two branches, in two clones)
    heads: list[dict]
    events: int = 0
    decided: str = ""  # the status the events give, a disagreement of the heads aside

    @property
    def contenders(self) -> list[str]:
        """The heads' ids."""
        return [h["id"] for h in self.heads]

    @property
    def agreed(self) -> bool:
        """One head, or several that decide the same thing."""
        first = self.heads[0]
        return all(same_decision(first, h) for h in self.heads[1:])


def _apply_event(state: ClaimState | None, ev: dict) -> ClaimState:
    if state is None:
        state = ClaimState(ev["claim_id"], "", ev, None, [])
    superseded = superseded_ids(ev["supersedes"])
    # the event settles the heads it names; a head it did not see stays one beside it
    state.heads = [h for h in state.heads if h["id"] not in superseded]
    state.heads.append(ev)
    state.latest, state.events = ev, state.events + 1
    action = ev["action"]
    if action in (ACCEPT, REPAIR):
        state.current, state.decided = ev, STATUS_BY_ACTION[action]
    elif action == REJECT:
        state.current, state.decided = None, REJECTED
    elif ev.get("reverts") in superseded or (
        state.current is not None and ev.get("reverts") == state.current["id"]
    ):
        state.current, state.decided = None, "REVERTED"
    else:
        state.decided = state.decided or "REVERTED"  # reverting a superseded event
    state.status = state.decided if len(state.heads) == 1 or state.agreed else CONFLICT
    return state


def claim_states(events: Iterable[dict]) -> dict[str, ClaimState]:
    """Per-claim state from events in ledger (seq) order. Pure; streams its input."""
    states: dict[str, ClaimState] = {}
    for ev in events:
        states[ev["claim_id"]] = _apply_event(states.get(ev["claim_id"]), ev)
    return states


def claim_statuses(events: Iterable[dict]) -> dict[str, str]:
    return {cid: st.status for cid, st in claim_states(events).items()}
