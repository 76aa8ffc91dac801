"""The Claim Store (docs/claim-store.md): `.vt/claims.sqlite`, a projection of the Decision Ledger.

Built only from the ledger, so it can be thrown away and rebuilt at any time. It holds
every event, each claim's current status and accepted version, and the graph edges
claim → entity for accepted claims. `catch_up` projects only the lines appended since
the last run when the remembered head still sits where it was (a `git pull` appended
events); anything else (a merge re-chained events, a rewritten ledger) rebuilds.

Statuses come from `ledger.claim_states`, the one definition of ACCEPTED / REPAIRED /
REJECTED / REVERTED / CONFLICT.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from vault_tools.config import Settings
from vault_tools.errors import IntegrityError
from vault_tools.infra.boundary import state_files, writable_path
from vault_tools.infra.gcpause import gc_paused
from vault_tools.infra.osfiles import read_at
from vault_tools.infra.sqlitedb import connect, rollback
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.events import GENESIS, canonical, load_json
from vault_tools.ledger.heads import ClaimState, claim_states
from vault_tools.ledger.reader import iter_lines, open_ledger
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.notes import kb as kbmod
from vault_tools.vocabulary import ACCEPTED, CONFLICT, POLICY, REPAIRED

STORE_DB = "claims.sqlite"
SCHEMA_VERSION = "2"  # 2: claims.heads
ACCEPTED_STATUSES = (ACCEPTED, REPAIRED)
# rows written at a time: events (~1-2 KiB each with their line) and claims
_BATCH = 1000
# page cache in KiB (SQLite's default): `vt rebuild` of 20k events took as long with
# it as with 64 MiB (docs/performance.md), and memory stays flat as the store grows
STORE_CACHE_KIB = 2000

_TABLES_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, claim_id TEXT NOT NULL,
    action TEXT NOT NULL, actor TEXT NOT NULL, ts TEXT NOT NULL, note TEXT NOT NULL,
    supersedes TEXT, reverts TEXT, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
    claim_id TEXT PRIMARY KEY, status TEXT NOT NULL, event_id TEXT NOT NULL,
    claim TEXT, note TEXT NOT NULL, heads TEXT);
CREATE TABLE IF NOT EXISTS edges (
    claim_id TEXT NOT NULL, target_key TEXT NOT NULL, target TEXT NOT NULL,
    role TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (claim_id, role));
"""
# created after a full rebuild's bulk insert: building an index once is cheaper than
# keeping it up to date row by row
_INDEXES_SQL = """
CREATE UNIQUE INDEX IF NOT EXISTS events_id ON events(id);
CREATE INDEX IF NOT EXISTS events_claim ON events(claim_id, seq);
CREATE INDEX IF NOT EXISTS claims_status ON claims(status);
CREATE INDEX IF NOT EXISTS claims_forked ON claims(claim_id) WHERE heads IS NOT NULL;
CREATE INDEX IF NOT EXISTS edges_target ON edges(target_key);
"""
# a full projection walks the events claim by claim through this one index, made first
_EVENTS_CLAIM_INDEX = "CREATE INDEX IF NOT EXISTS events_claim ON events(claim_id, seq)"
_DERIVED = ("events", "claims", "edges")
# The seal (docs/claim-store.md): a trigger on every write to a table of the store,
# dropped while vt itself writes and made again with `sealed` set to 1 as its
# transaction ends. A write made any other way (an `UPDATE` in a sqlite3 session) sets
# `sealed` to 0, and the next catch-up rebuilds the store from the ledger. Checking it
# costs one query, where a digest of the tables would read them whole.
_SEALED = "sealed"
_SEAL_TRIGGERS = {
    f"vt_seal_{table}_{op.lower()}": (table, op)
    for table in (*_DERIVED, "meta")
    for op in ("INSERT", "UPDATE", "DELETE")
}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CatchUp:
    new_events: int  # events projected by this call (all of them after a rebuild)
    rebuilt: bool


@dataclass(slots=True)
class ClaimRecord:
    claim_id: str
    status: str  # ACCEPTED | REPAIRED | REJECTED | REVERTED | CONFLICT
    event_id: str  # the claim's latest event
    claim: dict | None  # the claim dict of the ACCEPT/REPAIR event in force, if any
    note: str  # the review note named by the latest event


@dataclass(frozen=True, slots=True)
class _Projected:
    """How far the ledger was projected: the last line's start and end, seq and hash."""

    start: int = 0
    end: int = 0
    seq: int = 0
    hash: str = GENESIS


@lru_cache(maxsize=4096)
def _target_key(target: str) -> str:
    # claims name the same few entities over and over: normalise each spelling once
    return kbmod.normalise(kbmod.link_target(target))


def edges_of(claim: dict | None) -> list[tuple[str, str, str, str]]:
    """(target_key, target, role, label) for each entity of a claim's semantic frame."""
    frame = claim.get("semantic_frame") if isinstance(claim, dict) else None
    entities = frame.get("entities") if isinstance(frame, dict) else None
    out = []
    for index, entity in enumerate(entities if isinstance(entities, list) else []):
        if not isinstance(entity, dict) or not isinstance(entity.get("id"), str):
            continue
        target = entity["id"]
        label = entity.get("label")
        key = _target_key(target)
        out.append(
            (key, target, f"comparison_entity_{index}", label if isinstance(label, str) else "")
        )
    return out


def _event_row(ev: dict, line: str) -> tuple:
    supersedes = ev.get("supersedes")
    if isinstance(supersedes, list):  # several ids: kept as their JSON text
        supersedes = canonical(supersedes)
    return (
        ev["seq"],
        ev["id"],
        ev["claim_id"],
        ev["action"],
        ev["actor"],
        ev["ts"],
        ev["note"],
        supersedes,
        ev.get("reverts"),
        line,
    )


class _Reader:
    """Parses ledger lines from a mark on, checking the chain links as it goes (the full
    hash and id checks are `vt ledger verify`'s job) and collecting event rows."""

    def __init__(self, path: Path, mark: _Projected, stop: int) -> None:
        self.path = path
        self.mark = mark
        self.stop = stop  # the gate checked the lines up to here
        self.rows: list[tuple] = []
        self.count = 0

    def events(self) -> Iterator[dict]:
        mark = self.mark
        # the last projected line: a _Projected is built from these once, at the end
        start, end, seq, hash_ = mark.start, mark.end, mark.seq, mark.hash
        path, loads = self.path, load_json
        try:
            for line_end, raw in iter_lines(path, mark.end):
                if line_end > self.stop:
                    break
                n = seq + 1
                try:
                    text = raw[:-1].decode("utf-8")
                    ev = loads(text)
                except ValueError as exc:
                    raise IntegrityError(
                        f"line {n}: not valid JSON ({exc}); run `vt ledger verify`", str(path), n
                    ) from None
                if type(ev) is not dict or ev.get("seq") != n or ev.get("prev") != hash_:
                    raise IntegrityError(
                        f"line {n}: the chain is broken here; run `vt ledger verify`", str(path), n
                    )
                if ev.get("action") == POLICY:  # the signing policy: no claim's event
                    start, end, seq, hash_ = line_end - len(raw), line_end, n, ev.get("hash", "")
                    self.count += 1
                    continue
                try:
                    self.rows.append(_event_row(ev, text))
                except KeyError:
                    raise IntegrityError(
                        f"line {n}: not a ledger event; run `vt ledger verify`", str(path), n
                    ) from None
                start, end, seq, hash_ = line_end - len(raw), line_end, n, ev["hash"]
                self.count += 1
                yield ev
        finally:
            if seq != mark.seq:
                self.mark = _Projected(start, end, seq, hash_)


class ClaimStore:
    """`.vt/claims.sqlite`. Use as a context manager, or call `close()`."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        ledger_path: Path,
        state_dir: Path,
        policy: SignaturePolicy | None = None,
        root: Path | None = None,
        create_lock: bool = True,
    ) -> None:
        self.conn = conn
        self.ledger_path = ledger_path
        self.ledger = Ledger(
            ledger_path, state_dir, root=root, policy=policy, create_lock=create_lock
        )

    @classmethod
    def open(cls, settings: Settings) -> ClaimStore:
        for path in state_files(settings.state_dir / STORE_DB):
            writable_path(settings.vault, path)
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        conn = connect(settings.state_dir / STORE_DB, isolation_level=None, timeout=60.0)
        # rows hold ~1 KiB of event JSON: large pages pack them with little waste (only
        # takes effect when the file is created)
        conn.execute("PRAGMA page_size=16384")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # derived state: rebuildable from the ledger
        # SQLite's default page cache (2 MiB): a larger one filled up as the store grew,
        # making every command that refreshes it (apply's last step) grow with the vault
        conn.execute(f"PRAGMA cache_size=-{STORE_CACHE_KIB}")
        store = cls(
            conn,
            settings.ledger_path,
            settings.state_dir,
            SignaturePolicy.of(settings),
            settings.vault,
            settings.writes,  # a command that only reads creates no lock file
        )
        store._ensure_schema()
        return store

    def __enter__(self) -> ClaimStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    # -- schema and meta

    def _ensure_schema(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._script(_TABLES_SQL)
            if self._get("schema") != SCHEMA_VERSION:
                self._clear()
                self._put(schema=SCHEMA_VERSION)
            # after the check: an older store's tables may lack a column an index names
            self._script(_INDEXES_SQL)
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise

    def _script(self, sql: str) -> None:
        # statement by statement: executescript would commit the open transaction
        for statement in sql.split(";"):
            if statement.strip():
                self.conn.execute(statement)

    def _get(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _put(self, **values: object) -> None:
        self.conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            [(k, str(v)) for k, v in values.items()],
        )

    def _mark(self) -> _Projected | None:
        values = [self._get(k) for k in ("start", "end", "seq", "hash", "ledger")]
        if None in values or values[4] != str(self.ledger_path):
            return None
        start, end, seq, hash_, _ = values
        return _Projected(int(start), int(end), int(seq), hash_)  # type: ignore[arg-type]

    def _sealed(self) -> bool:
        """Whether nothing but vt wrote to the store since vt last sealed it."""
        if self._get(_SEALED) != "1":
            return False
        marks = ",".join("?" * len(_SEAL_TRIGGERS))
        (count,) = self.conn.execute(
            f"SELECT COUNT(*) FROM sqlite_master WHERE type='trigger' AND name IN ({marks})",  # noqa: S608
            list(_SEAL_TRIGGERS),
        ).fetchone()
        return count == len(_SEAL_TRIGGERS)

    def _unseal(self) -> None:
        """Drop the seal's triggers for vt's own writes (inside its transaction)."""
        for name in _SEAL_TRIGGERS:
            self.conn.execute(f"DROP TRIGGER IF EXISTS {name}")

    def _seal(self) -> None:
        """Mark the store as vt left it, and arm the triggers that unmark it."""
        self._put(**{_SEALED: 1})
        for name, (table, op) in _SEAL_TRIGGERS.items():
            self.conn.execute(
                f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {op} ON {table} BEGIN "
                f"UPDATE meta SET value = '0' WHERE key = '{_SEALED}' AND value != '0'; END"
            )

    def _clear(self) -> None:
        """Empty the derived tables, leaving them without indexes (see _INDEXES_SQL).

        Dropping is much cheaper than deleting row by row; the caller recreates the
        indexes after filling the tables, in the same transaction."""
        for table in _DERIVED:
            self.conn.execute(f"DROP TABLE IF EXISTS {table}")  # noqa: S608 - fixed names
        self._script(_TABLES_SQL)
        self.conn.execute("DELETE FROM meta WHERE key != 'schema'")

    # -- projecting the ledger

    def _still_valid(self, mark: _Projected) -> bool:
        """True when the ledger still holds, ending at `mark.end`, the line projected last:
        the chain then proves the whole projected prefix unchanged."""
        if mark.end == 0:
            return True
        try:
            fd = open_ledger(self.ledger_path)
        except FileNotFoundError:
            return False
        try:
            if os.fstat(fd).st_size < mark.end:
                return False
            raw = read_at(fd, mark.end - mark.start, mark.start)
        finally:
            os.close(fd)
        if not raw.endswith(b"\n") or (mark.start and b"\n" in raw[:-1]):
            return False
        try:
            ev = load_json(raw)
        except ValueError:
            return False
        return isinstance(ev, dict) and ev.get("seq") == mark.seq and ev.get("hash") == mark.hash

    def catch_up(self) -> CatchUp:
        """Project the lines appended since the last run; rebuild when the projected
        prefix changed (re-chained by a merge) or was never built. Only a ledger that
        passes the gate is projected (IntegrityError otherwise)."""
        stop = self.ledger.trusted_head().size
        self.conn.execute("BEGIN IMMEDIATE")  # one writer at a time; readers see a snapshot
        try:
            mark = self._mark()
            sealed = self._sealed()  # else written by something other than vt: rebuilt
            if mark is None or not sealed or not self._still_valid(mark):
                self._unseal()
                result = CatchUp(self._project_all(stop), rebuilt=True)
                self._seal()
            elif mark.end < stop:
                self._unseal()  # only when there is something to write: DDL is not free
                result = CatchUp(self._project_from(mark, stop), rebuilt=False)
                self._seal()
            else:
                result = CatchUp(0, rebuilt=False)
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise
        return result

    def rebuild(self) -> int:
        """Replay the whole ledger from scratch; returns the number of events.

        When no other connection has the store open, the replay runs as a bulk load: the
        old contents are dropped in a first transaction, then the tables are filled with
        a rollback journal instead of the WAL and without syncs (the store is derived).
        Pages taken from the freelist need no journaling, so each page is written once
        rather than to the WAL and again at the checkpoint. A failed load rolls back to
        an empty, unmarked store, which the next catch-up rebuilds. Only a ledger that
        passes the gate is replayed (IntegrityError otherwise, the store untouched).
        """
        stop = self.ledger.trusted_head().size
        bulk = self._journal_mode("TRUNCATE") == "truncate"
        try:
            if bulk:
                self.conn.execute("PRAGMA synchronous=OFF")
                self._transaction(self._clear)
            return self._transaction(lambda: self._project_all(stop))
        finally:
            if bulk:
                self._journal_mode("WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")

    def _journal_mode(self, mode: str) -> str:
        """Switch the journal mode; leaving WAL fails (keeps "wal") while another
        connection has the store open."""
        try:
            return self.conn.execute(f"PRAGMA journal_mode={mode}").fetchone()[0]
        except sqlite3.OperationalError:  # locked by another connection
            return "wal"

    def _transaction(self, work: Callable[[], T]) -> T:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._unseal()
            result = work()
            self._seal()
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise
        return result

    def _save_mark(self, mark: _Projected) -> None:
        self._put(
            start=mark.start, end=mark.end, seq=mark.seq, hash=mark.hash, ledger=self.ledger_path
        )

    def _project_all(self, stop: int) -> int:
        """Every event into the events table, then every claim's state from its events,
        claim by claim in claim_id order: memory holds a batch of rows and one claim's
        events, however long the ledger."""
        self._clear()
        reader = _Reader(self.ledger_path, _Projected(), stop)
        # parsed events form no cycles (infra/gcpause.py): the many young objects
        # json.loads and the rows create are not scanned again and again
        with gc_paused():
            for _ in self._flushing(reader):
                pass
            self._insert_events(reader)
            self.conn.execute(_EVENTS_CLAIM_INDEX)
            rows = self.conn.execute("SELECT claim_id, json FROM events ORDER BY claim_id, seq")
            self._write_claims(
                (_state_of(claim_id, group) for claim_id, group in groupby(rows, itemgetter(0))),
                fresh=True,
            )
        self._script(_INDEXES_SQL)
        self._save_mark(reader.mark)
        return reader.count

    def _flushing(self, reader: _Reader) -> Iterator[dict]:
        """The reader's events, with its rows written in batches on the way."""
        for ev in reader.events():
            yield ev
            if len(reader.rows) >= _BATCH:
                self._insert_events(reader)

    def _insert_events(self, reader: _Reader) -> None:
        self.conn.executemany(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", reader.rows
        )
        reader.rows = []

    def _project_from(self, mark: _Projected, stop: int) -> int:
        reader = _Reader(self.ledger_path, mark, stop)
        for _ in self._flushing(reader):
            pass
        self._insert_events(reader)
        if not reader.count:
            return 0
        # a new event can change a claim's status in ways only its whole history tells
        # (a conflict settled, a revert of a superseded event): recompute from all of it
        touched = self.conn.execute(
            "SELECT DISTINCT claim_id FROM events WHERE seq > ? ORDER BY claim_id", (mark.seq,)
        )
        self._write_claims(claim_states(self._claim_events(cid))[cid] for (cid,) in touched)
        self._save_mark(reader.mark)
        return reader.count

    def _claim_events(self, claim_id: str) -> Iterator[dict]:
        for (line,) in self.conn.execute(
            "SELECT json FROM events WHERE claim_id=? ORDER BY seq", (claim_id,)
        ):
            yield json.loads(line)

    def _write_claims(self, states: Iterable[ClaimState], fresh: bool = False) -> None:
        """Write the claims' rows and edges, each state turned into its rows as it comes
        and the rows written _BATCH claims at a time; `fresh`: the tables were just
        emptied, so there are no old edges to delete (the states come in key order:
        cheap b-tree appends)."""
        claim_rows: list[tuple] = []
        edge_rows: list[tuple] = []
        for st in states:
            current = st.current["claim"] if st.current is not None else None
            # NULL for the usual single head: it is the latest event
            heads = canonical(st.contenders) if len(st.heads) > 1 else None
            claim_rows.append(
                (
                    st.claim_id,
                    st.status,
                    st.latest["id"],
                    canonical(current) if current is not None else None,
                    st.latest["note"],
                    heads,
                )
            )
            if st.status in ACCEPTED_STATUSES:
                edge_rows += [(st.claim_id, *edge) for edge in edges_of(current)]
            if len(claim_rows) >= _BATCH:
                self._write_claim_rows(claim_rows, edge_rows, fresh)
                claim_rows, edge_rows = [], []
        self._write_claim_rows(claim_rows, edge_rows, fresh)

    def _write_claim_rows(
        self, claim_rows: list[tuple], edge_rows: list[tuple], fresh: bool
    ) -> None:
        if not fresh:
            self.conn.executemany(
                "DELETE FROM edges WHERE claim_id=?", [(row[0],) for row in claim_rows]
            )
        self.conn.executemany("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?, ?)", claim_rows)
        self.conn.executemany("INSERT OR IGNORE INTO edges VALUES (?, ?, ?, ?, ?)", edge_rows)

    # -- reading

    def claim(self, claim_id: str) -> ClaimRecord | None:
        row = self.conn.execute(
            "SELECT claim_id, status, event_id, claim, note FROM claims WHERE claim_id=?",
            (claim_id,),
        ).fetchone()
        return _claim_record(row) if row is not None else None

    def claims(self, statuses: Iterable[str] = ()) -> list[ClaimRecord]:
        """Every claim, sorted by claim_id (only those with one of `statuses`, if given)."""
        wanted = list(statuses)
        sql = "SELECT claim_id, status, event_id, claim, note FROM claims"
        if wanted:
            sql += f" WHERE status IN ({','.join('?' * len(wanted))})"
        rows = self.conn.execute(sql + " ORDER BY claim_id", wanted).fetchall()
        return [_claim_record(row) for row in rows]

    def history(self, claim_id: str) -> list[dict]:
        """The claim's events, oldest first."""
        return list(self._claim_events(claim_id))

    def heads(self, claim_id: str) -> list[dict]:
        """The claim's heads (the events no later event supersedes), in ledger order:
        its latest event alone, or several after decisions made without seeing each
        other; empty for a claim never decided."""
        row = self.conn.execute(
            "SELECT event_id, heads FROM claims WHERE claim_id=?", (claim_id,)
        ).fetchone()
        if row is None:
            return []
        ids = json.loads(row[1]) if row[1] else [row[0]]
        events = [ev for ev in map(self.event, ids) if ev is not None]
        return sorted(events, key=_seq)

    def forked(self) -> dict[str, list[str]]:
        """claim_id → its heads' ids, for every claim with more than one head."""
        return {
            claim_id: json.loads(heads)
            for claim_id, heads in self.conn.execute(
                "SELECT claim_id, heads FROM claims WHERE heads IS NOT NULL"
            )
        }

    def event(self, event_id: str) -> dict | None:
        row = self.conn.execute("SELECT json FROM events WHERE id=?", (event_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def status_counts(self) -> dict[str, int]:
        return dict(
            self.conn.execute(
                "SELECT status, COUNT(*) FROM claims GROUP BY status ORDER BY status"
            ).fetchall()
        )

    def conflicts(self) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT claim_id FROM claims WHERE status=? ORDER BY claim_id", (CONFLICT,)
            )
        ]

    def head(self) -> tuple[int, str]:
        """(seq, hash) of the last projected event; (0, 64 zeros) for an empty ledger."""
        mark = self._mark() or _Projected()
        return mark.seq, mark.hash

    def event_count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]

    def claim_count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0]

    def decision_counts(self) -> list[tuple[str, str, str, int]]:
        """(day, reviewer, action, events) over the ledger's events, sorted; the day is
        the first 10 characters of `ts` (its UTC date), the reviewer the event's
        `decided_by` when one recorder records for everyone, else its actor."""
        return self.conn.execute(
            "SELECT substr(ts, 1, 10), COALESCE(json_extract(json, '$.decided_by'), actor), "
            "action, COUNT(*) FROM events GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ).fetchall()

    def edges(self) -> list[tuple[str, str, str, str, str]]:
        """(claim_id, target_key, target, role, label) of every accepted claim, sorted."""
        return self.conn.execute(
            "SELECT claim_id, target_key, target, role, label FROM edges "
            "ORDER BY target_key, claim_id, role"
        ).fetchall()

    def graph_rows(self) -> list[tuple[str, str, str, str, str]]:
        """(target, claim_id, role, label, review note) of every edge, sorted."""
        return self.conn.execute(
            "SELECT e.target, e.claim_id, e.role, e.label, c.note FROM edges e "
            "JOIN claims c ON c.claim_id = e.claim_id "
            "ORDER BY e.target_key, e.claim_id, e.role"
        ).fetchall()

    def edge_targets(self) -> list[tuple[str, str]]:
        """(target_key, target) of every spelling of a target the edges use, sorted: as
        many as the entities named, however many claims name them."""
        return self.conn.execute(
            "SELECT DISTINCT target_key, target FROM edges ORDER BY target_key, target"
        ).fetchall()

    def graph_rows_of(self, target_keys: Iterable[str]) -> list[tuple[str, str, str, str, str]]:
        """`graph_rows` of the edges whose target_key is one of `target_keys`."""
        keys = sorted(set(target_keys))
        rows: list[tuple[str, str, str, str, str]] = []
        for i in range(0, len(keys), 500):  # within SQLite's limit on parameters
            batch = keys[i : i + 500]
            rows += self.conn.execute(
                "SELECT e.target, e.claim_id, e.role, e.label, c.note FROM edges e "
                "JOIN claims c ON c.claim_id = e.claim_id "
                f"WHERE e.target_key IN ({','.join('?' * len(batch))}) "
                "ORDER BY e.target_key, e.claim_id, e.role",
                batch,
            ).fetchall()
        return rows

    def accepted_by_entity(self) -> dict[str, list[str]]:
        """Entity note path (the target as written, `.md` added) → sorted accepted claim ids.

        Targets naming one note (case, Unicode form, link syntax) are grouped under the
        first of their written forms; the caller resolves the path against the vault.
        """
        grouped: dict[str, tuple[str, set[str]]] = {}
        for claim_id, key, target, _role, _label in self.edges():
            path = kbmod.link_target(target)
            if not path.lower().endswith(".md"):
                path += ".md"
            shown, claims = grouped.setdefault(key, (path, set()))
            grouped[key] = (min(shown, path), claims)
            claims.add(claim_id)
        return {path: sorted(claims) for path, claims in sorted(grouped.values())}

    def accepted_counts(self) -> dict[str, int]:
        """Entity target → number of accepted claims using it (for `vt entities`)."""
        return {path: len(ids) for path, ids in self.accepted_by_entity().items()}

    def dump(self) -> dict[str, list[tuple]]:
        """Every table's rows, sorted: two stores with equal dumps hold the same contents."""
        return {
            t: sorted(self.conn.execute(f"SELECT * FROM {t}").fetchall())  # noqa: S608
            for t in (*_DERIVED, "meta")
        }


def _seq(event: dict) -> int:
    return event["seq"]


def _state_of(claim_id: str, rows: Iterable[tuple[str, str]]) -> ClaimState:
    """The claim's state from its (claim_id, event JSON) rows, in seq order."""
    return claim_states(json.loads(line) for _, line in rows)[claim_id]


def _claim_record(row: tuple) -> ClaimRecord:
    claim_id, status, event_id, claim, note = row
    return ClaimRecord(claim_id, status, event_id, json.loads(claim) if claim else None, note)
