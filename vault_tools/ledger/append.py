"""Appending to the ledger (docs/ledger.md): `Ledger`, and the `Transaction` that holds
the ledger lock on `<ledger>.lock`, writes its lines in one `os.write` and fsyncs once
(or once per batch, for a caller that calls `flush` between batches).

Nothing is appended before the gate (gate.py) has checked the ledger under the lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from vault_tools.errors import IOFailure, RefusedError, UsageError, os_error_text
from vault_tools.infra.boundary import state_files, writable_path
from vault_tools.infra.durable import fsync_folder
from vault_tools.infra.lock import FileLock
from vault_tools.infra.sqlitedb import rollback
from vault_tools.ledger.events import (
    ALLOWED_FIELDS,
    GENESIS,
    NOT_IN_ID,
    VERSION,
    decision_id,
    decision_problems,
    utc_now,
    with_hash,
)
from vault_tools.ledger.faults import crash_point
from vault_tools.ledger.gate import gate, trusted_head
from vault_tools.ledger.index import STATE_DB, StateDB, Trusted, extended_blocks
from vault_tools.ledger.lost import check_not_lost
from vault_tools.ledger.problems import VerifyResult
from vault_tools.ledger.reader import (
    Tip,
    TornInfo,
    ledger_head,
    lock_path,
    open_ledger,
    recover_torn,
    torn_path,
)
from vault_tools.ledger.signatures import (
    NO_SIGNING,
    SIGNING_KEY,
    SignatureChecker,
    SignaturePolicy,
)
from vault_tools.ledger.signing import Signer, signed_message
from vault_tools.ledger.verify import verify_ledger

# ---------------------------------------------------------------- errors


class LedgerWriteError(IOFailure):
    """The ledger could not be written or fsynced. Nothing was appended; never retried."""


class InvalidEventError(UsageError):
    """A decision handed to `Transaction.append` lacks a field or has a wrong value."""


class DuplicateEventError(RefusedError):
    """The ledger already holds a decision with this id."""


class Transaction:
    """Decisions appended under the ledger lock; see `Ledger.transaction`."""

    def __init__(
        self, ledger: Ledger, fd: int, head: Tip, torn: TornInfo | None, db: StateDB | None = None
    ) -> None:
        self.ledger = ledger
        self.torn = torn  # a torn tail recovered when the lock was taken
        self.start = head  # the ledger as it stood when the lock was taken
        self.head = head  # including this transaction's pending events
        self.durable = head  # the ledger as the last flush left it (at first, `start`)
        self.appended: list[dict] = []  # the events appended since the last flush
        self._fd = fd
        self._lines: list[bytes] = []
        self._pending_latest: dict[str, dict] = {}
        self._pending_ids: set[str] = set()
        self._no_events: set[str] = set()  # claims found (by `look_up`) to have no event
        self._db = db  # the gate's: its index covers the ledger as it stood at the lock
        self._unchained: list[dict] = []  # events waiting for their signature (see _commit)
        self._checker: SignatureChecker | None = None  # made on the first flush

    # -- reading, under the lock

    def _index(self) -> StateDB:
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
        if "supersedes" not in ev and isinstance(ev.get("claim_id"), str):
            latest = self.latest(ev["claim_id"])
            ev["supersedes"] = latest["id"] if latest else None
        problems = decision_problems(ev, will_sign=self.ledger.signer is not None)
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
        if self.ledger.signer is None:
            self._chain(ev)
        else:  # signed all at once at the commit (one ssh-keygen); seq is known already
            ev["seq"] = self.head.seq + len(self._unchained) + 1
            self._unchained.append(ev)
        self._pending_latest[ev["claim_id"]] = ev
        self._pending_ids.add(ev["id"])
        self.appended.append(ev)
        return ev

    def _chain(self, ev: dict) -> None:
        ev["seq"], ev["prev"] = self.head.seq + 1, self.head.hash
        data = with_hash(ev)
        self._lines.append(data)
        self.head = Tip(ev["seq"], ev["hash"], self.head.size + len(data))

    def _sign_pending(self) -> None:
        """Sign the events appended since the last chained one, then chain them. The
        signature covers no chain field, so signing comes first; a signer that fails
        raises before anything is written."""
        if not self._unchained or self.ledger.signer is None:
            return
        pending, self._unchained = self._unchained, []
        sigs = self.ledger.signer.sign([signed_message(ev) for ev in pending])
        for ev, sig in zip(pending, sigs, strict=True):
            ev["sig"] = sig
            self._chain(ev)

    def flush(self) -> None:
        """Make the events appended so far durable now, the lock still held: written in
        one `os.write`, fsynced, and indexed, after which the transaction no longer holds
        them (a run appending many events in batches keeps one batch in memory). A
        failure leaves the ledger as the last flush left it; what earlier flushes wrote
        stays appended."""
        self._flush(forget=True)

    def _flush(self, forget: bool) -> None:
        self._sign_pending()
        if not self._lines:
            return
        data = b"".join(self._lines)
        _write_durably(self._fd, data, self.durable.size, str(self.ledger.path))
        crash_point("after-write")
        indexed = self._record_after_commit()
        self._lines, self.durable = [], self.head
        if indexed and forget:  # the index answers for these events now: forget them here
            self._pending_latest.clear()
            self._pending_ids.clear()
            self._no_events.clear()
            self.appended = []

    def _commit(self) -> None:
        self._flush(forget=False)  # `appended` is what `Ledger.append` returns

    def _signatures_hold(self) -> bool:
        """Whether every event of this flush passes the gate's signature check, under the
        policy the trusted prefix was verified with. Our own lines are remembered (and then
        never checked again, by the gate or by verify) only when checked here: a key the
        allowed signers do not list for the actor must fail every verify, not only those
        of the clones that did not write it."""
        db = self._db
        assert db is not None
        policy = self.ledger.policy
        fresh = db.trusted() is None and self.durable.size == 0  # no prefix: any policy's
        if not fresh and (db.get(SIGNING_KEY) or NO_SIGNING) != policy.digest():
            return False  # the prefix is re-verified in full under this policy anyway
        if self._checker is None:
            self._checker = policy.checker()
        check = self._checker.check
        return all(check(ev) is None for ev in self.appended)

    def _record_after_commit(self) -> bool:
        """Trust our own lines: remember them, index them, extend the prefix digest; True
        when done. The ledger is already durable, so a failure here only leaves the
        trusted prefix where it was (the next gate verifies these lines like any others,
        signatures included: lines whose signatures do not hold are never trusted here)."""
        db = self._db
        if db is None:
            return False
        if not self._signatures_hold():
            return False
        try:
            db.conn.execute("BEGIN")
            trusted = db.trusted()
            if trusted is None and self.durable.size == 0:  # the gate passed: nothing remembered
                trusted = Trusted(0, 0, GENESIS, 0, "")
                db.put(**{SIGNING_KEY: self.ledger.policy.digest()})  # what _signatures_hold used
            indexed = trusted is not None and trusted.head == self.durable
            if indexed:
                assert trusted is not None
                added = db.remember(self.appended)
                lines = [raw[:-1].decode() for raw in self._lines]
                db.index_add(list(zip(self.appended, lines, strict=True)))
                db.trust(
                    Trusted(
                        self.head.size,
                        self.head.seq,
                        self.head.hash,
                        trusted.count + added,
                        extended_blocks(self._fd, trusted, self.head.size),
                    ),
                    self._fd,
                )
            db.conn.execute("COMMIT")
        except (sqlite3.Error, OSError):
            rollback(db.conn)
            return False
        return indexed

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


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
    None only for a private ledger of no vault (a dry run's scratch copy). `policy`:
    the signatures every gate checks; `signer`: signs every event appended.
    `create_lock`: `trusted_head` may create the lock file (a command that writes);
    without it only an existing one is taken. Appending always creates it.
    """

    def __init__(
        self,
        path: Path | str,
        state_dir: Path | str,
        *,
        root: Path | None = None,
        policy: SignaturePolicy | None = None,
        signer: Signer | None = None,
        create_lock: bool = True,
    ) -> None:
        self.path = Path(path)
        self.create_lock = create_lock
        self.state_dir = Path(state_dir)
        self.root = root
        self.policy = policy or SignaturePolicy()  # what the gate checks signatures against
        self.signer = signer  # None: events are appended unsigned

    @property
    def lock_path(self) -> Path:
        return lock_path(self.path)

    @property
    def torn_path(self) -> Path:
        return torn_path(self.path)

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
        with FileLock(self.lock_path, root=self.root):
            created = not os.path.lexists(self.path)
            if created:  # an empty new file would hide the loss of a ledger verified before
                check_not_lost(self.path, self.state_dir)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_ledger(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                if created:
                    fsync_folder(self.path.parent)
                yield fd, recover_torn(fd, self.path)
            finally:
                os.close(fd)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """`with ledger.transaction() as txn:` — read and append under one lock.

        On a clean exit every appended line is written in one os.write and fsynced once;
        an exception inside the block appends nothing.
        """
        with self.locked() as (fd, torn):
            db = StateDB(self.state_dir, root=self.root)
            try:
                size = os.fstat(fd).st_size
                head = gate(self.path, self.state_dir, db, fd, size, True, self.policy)
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

    def head(self) -> Tip:
        return ledger_head(self.path)

    def trusted_head(self) -> Tip:
        """The head once the ledger has passed the gate (see `gate.trusted_head`)."""
        return trusted_head(self.path, self.state_dir, self.policy, self.root, self.create_lock)

    def verify(self) -> VerifyResult:
        return verify_ledger(self.path, self.state_dir, self.policy)
