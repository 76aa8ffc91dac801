"""The ledger's derived state, `<state_dir>/ledger-index.sqlite` (the state dir is
`<vault>/.vt/`), written only by the lock holder, never by `vt ledger verify`:
- the trusted prefix: its size, the sha256 of each of its blocks, its last seq and hash;
- an index of that prefix (every id, each claim's latest event), so an apply does not
  re-parse a large ledger;
- the memory of every event ever trusted (id and ts), so a ledger that lost or rewrote one
  is caught, while a merge that only re-chained events (same id, new seq/prev/hash) is not.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from vault_tools.infra.boundary import state_files, writable_path
from vault_tools.infra.filestat import settled, signature_text, stat_signature
from vault_tools.infra.osfiles import read_at
from vault_tools.infra.sqlitedb import connect
from vault_tools.ledger.reader import Tip

STATE_DB = "ledger-index.sqlite"

# the trusted prefix is remembered as the sha256 of each block of this many bytes: an
# append re-hashes only the last block, and the blocks are hashed on two threads
DIGEST_BLOCK = 4 << 20


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


@dataclass(frozen=True, slots=True)
class Trusted:
    """The prefix the gate trusted last: bytes 0..size, lines 1..seq (every remembered id
    lies within them), and the sha256 of each DIGEST_BLOCK of those bytes (hex, joined)."""

    size: int
    seq: int
    hash: str
    count: int  # remembered ids
    blocks: str

    @property
    def head(self) -> Tip:
        return Tip(self.seq, self.hash, self.size)


class StateDB:
    """`.vt/ledger-index.sqlite`. Only written while the ledger lock is held."""

    def __init__(
        self, state_dir: Path, conn: sqlite3.Connection | None = None, root: Path | None = None
    ) -> None:
        """`root`: the vault, whose boundary the state dir and its files are held to."""
        if conn is None:
            if root is not None:
                for path in state_files(state_dir / STATE_DB):
                    writable_path(root, path)
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
    def read_only(cls, state_dir: Path, immutable: bool = False) -> StateDB:
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

    @classmethod
    def empty(cls) -> StateDB:
        """No memory at all, in memory: for verifying a ledger by itself alone."""
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.executescript(_SCHEMA_SQL)
        return cls(Path(os.devnull), conn)

    def forget(self, ids: Iterable[str]) -> None:
        """Forget the events `ids` and the trusted prefix with its index, in one
        transaction: the next gate verifies the whole ledger and remembers it anew."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("DELETE FROM verified WHERE id=?", ((i,) for i in ids))
            conn.execute("DELETE FROM idx_event")
            conn.execute("DELETE FROM idx_latest")
            keys = (*_TRUST_KEYS, "trust_stat")
            marks = ",".join("?" * len(keys))
            conn.execute(f"DELETE FROM meta WHERE key IN ({marks})", keys)  # noqa: S608
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

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

    def trusted(self) -> Trusted | None:
        marks = ",".join("?" * len(_TRUST_KEYS))
        values = dict(
            self.conn.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})", _TRUST_KEYS)
        )  # noqa: S608
        if len(values) != len(_TRUST_KEYS):
            return None
        try:
            return Trusted(
                int(values["trust_size"]),
                int(values["trust_seq"]),
                values["trust_hash"],
                int(values["trust_count"]),
                values["trust_blocks"],
            )
        except ValueError:
            return None

    def trust(self, trusted: Trusted, fd: int) -> None:
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
        value = (
            f"{signature_text(stat_signature(st))}@{time.time_ns()}" if st.st_size == size else ""
        )
        self.put(trust_stat=value)

    def stat_unchanged(self, fd: int, size: int) -> bool:
        """Whether the file still has the signature remembered with a trusted prefix of
        `size` bytes, taken long enough after its last change to be conclusive."""
        remembered = self.get("trust_stat") or ""
        signature, _, taken = remembered.partition("@")
        st = os.fstat(fd)
        if not taken or st.st_size != size or signature != signature_text(stat_signature(st)):
            return False
        return settled(st, int(taken))

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


def block_digests(fd: int, start: int, size: int) -> str:
    """The sha256 (hex) of each DIGEST_BLOCK bytes of bytes start..size, joined; `start`
    is a block boundary. Two threads: sha256 and pread release the GIL."""
    spans = range(start, size, DIGEST_BLOCK)

    def one(offset: int) -> str:
        return hashlib.sha256(read_at(fd, min(DIGEST_BLOCK, size - offset), offset)).hexdigest()

    if len(spans) < 2 or (os.cpu_count() or 1) < 2:
        return "".join(map(one, spans))
    with ThreadPoolExecutor(max_workers=2) as pool:
        return "".join(pool.map(one, spans))


def extended_blocks(fd: int, trusted: Trusted, size: int) -> str:
    """The block digests of bytes 0..size, given those of the trusted prefix (only its
    last, partial block and the new bytes are hashed)."""
    keep = trusted.size // DIGEST_BLOCK
    return trusted.blocks[: keep * 64] + block_digests(fd, keep * DIGEST_BLOCK, size)
