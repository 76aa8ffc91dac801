"""The gate (docs/ledger.md): the one check before anything trusts or appends to the
ledger. The prefix verified last time must still hash to the remembered block digests,
and every line after it must pass `vt ledger verify`'s own line checks. A prefix that no
longer matches is verified in full, including the memory, so a merge that only
re-chained events passes and an edit, a rewrite or a rollback does not."""

from __future__ import annotations

import os
import re
import sqlite3
from contextlib import suppress
from pathlib import Path

from vault_tools.errors import IntegrityError, RefusedError
from vault_tools.findings import counted
from vault_tools.infra.lock import FileLock
from vault_tools.ledger.events import GENESIS
from vault_tools.ledger.index import StateDB, Trusted, block_digests, extended_blocks
from vault_tools.ledger.lost import lost_error, lost_in
from vault_tools.ledger.policy import checker_for
from vault_tools.ledger.reader import (
    CRLF_MESSAGE,
    Tip,
    complete_size,
    crlf_converted,
    iter_lines,
    lock_path,
    open_ledger,
)
from vault_tools.ledger.signatures import NO_SIGNING, SIGNING_KEY, SignaturePolicy
from vault_tools.ledger.verify import Verifier, verify_lines


def trusted_head(
    path: Path,
    state_dir: Path,
    policy: SignaturePolicy | None = None,
    root: Path | None = None,
    create_lock: bool = True,
) -> Tip:
    """The gate for a command that reads the ledger without appending (rebuild,
    export, status, history, report): the head of the ledger once it has passed the
    gate (raises IntegrityError otherwise). Lines after `size` were not checked.

    Remembers what it checked when the lock is free and the state dir writable;
    otherwise (another vt appending, a read-only vault) it checks without the lock
    and writes nothing, which only costs time the next run. A check made without the
    lock that fails is made again under it: an append may have been under way.

    `root`: the vault, whose boundary the lock file and the state dir are held to.
    With no ledger file nothing is locked or created (`05_ledger/` appears with the
    first decision): there is nothing to trust but the rule for a missing ledger.
    Without `create_lock` (a command that only reads) only an existing lock file is
    taken: with none, the check is made and nothing is remembered.
    """
    if not os.path.lexists(path):
        return _gate_now(path, state_dir, False, policy, root)
    lock = FileLock(lock_path(path), timeout=0, root=root, folders=False, create=create_lock)
    with suppress(RefusedError, OSError):
        lock.acquire()
    try:
        return _gate_now(path, state_dir, lock.held, policy, root)
    except IntegrityError:
        if lock.held:
            raise
    finally:
        lock.release()
    try:
        # waits for the appender
        lock = FileLock(lock_path(path), root=root, folders=False, create=create_lock)
        lock.acquire()
    except OSError:  # a read-only vault: no appender can be at work
        return _gate_now(path, state_dir, False, policy, root)
    try:
        return _gate_now(path, state_dir, True, policy, root)
    finally:
        lock.release()


def _gate_now(
    path: Path,
    state_dir: Path,
    locked: bool,
    policy: SignaturePolicy | None,
    root: Path | None = None,
) -> Tip:
    try:
        fd = open_ledger(path)
    except FileNotFoundError:
        fd = None
    try:
        db = None
        if locked:
            with suppress(OSError, sqlite3.Error):
                db = StateDB(state_dir, root=root)
        remember = db is not None
        db = db or StateDB.read_only(state_dir)
        try:
            size = 0 if fd is None else complete_size(fd)
            return gate(path, state_dir, db, fd, size, remember, policy)
        finally:
            db.close()
    finally:
        if fd is not None:
            os.close(fd)


def gate(
    path: Path,
    state_dir: Path,
    db: StateDB,
    fd: int | None,
    size: int,
    remember: bool,
    policy: SignaturePolicy | None = None,
) -> Tip:
    """The one check before anything trusts or appends to the ledger; returns its head.

    `fd` holds the ledger at `path` (None: there is none), whose complete lines end at `size`. The
    prefix trusted last time must still hash to its remembered block digests; then only
    the lines after it are checked, by `vt ledger verify`'s own line checks, plus their
    ids against the index of the prefix. Otherwise (nothing remembered, a prefix that
    changed or shrank) the whole file is verified, memory included: a merge that only
    re-chained events passes, an edit, a rewrite or a rollback does not. Raises
    IntegrityError naming the first bad line. With `remember` (the caller holds the lock
    and `db` is writable) what passed becomes the trusted prefix, indexed and remembered.
    Signatures are checked against `policy`; a prefix trusted under another policy (an
    allowed signers file edited since) is verified again in full.
    """
    policy = policy or SignaturePolicy()
    known = db.trusted()
    if known is not None and (db.get(SIGNING_KEY) or NO_SIGNING) != policy.digest():
        known = None
    if fd is None or size == 0:
        remembered = db.memory_size()
        if remembered:
            raise lost_error(path, state_dir, remembered, None if fd is None else 0, 1)
        return Tip()
    if known is not None and known.size == size and db.stat_unchanged(fd, size):
        return known.head  # not a byte written since it was hashed: nothing to hash
    start = None
    if (
        known is not None
        and known.size <= size
        and block_digests(fd, 0, known.size) == known.blocks
    ):
        start = known
        if known.size == size:
            if remember:
                _remember_stat(db, fd, size)
            return known.head
    if crlf_converted(fd, size):
        raise _gate_error(path, state_dir, 1, CRLF_MESSAGE)
    checker = checker_for(policy, path, size)  # by the policy in the ledger, if any
    verifier = Verifier(db, trust_prefix=False, after=start, signatures=checker)
    try:
        verify_lines(verifier, path, size)
        verifier.finish()
        if verifier.problems:
            raise _refusal(path, state_dir, verifier, changed=known is not None and start is None)
        head = Tip(verifier.prev_seq, verifier.prev_hash or GENESIS, size)
        if remember:
            _trust(db, fd, path, start, head, policy.digest())
    finally:
        verifier.close()
    return head


def _remember_stat(db: StateDB, fd: int, size: int) -> None:
    # best effort: without it the next gate hashes the prefix again, nothing worse
    with suppress(sqlite3.Error, OSError):
        db.remember_stat(fd, size)


def _trust(db: StateDB, fd: int, path: Path, start: Trusted | None, head: Tip, policy: str) -> None:
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
            blocks, count = block_digests(fd, 0, head.size), db.memory_size()
        else:
            blocks, count = extended_blocks(fd, start, head.size), start.count + added
        db.trust(Trusted(head.size, head.seq, head.hash, count, blocks), fd)
        db.put(**{SIGNING_KEY: policy})
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _refusal(path: Path, state_dir: Path, verifier: Verifier, changed: bool) -> IntegrityError:
    """One error for the first problem: its line (a lost event: the first line that is
    not one verified before, or the line after the last), what it is, and what to run."""
    lost = _lost(path, state_dir, verifier)
    if lost is not None:
        return lost
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
        what += f"; {counted(len(problems) - 1, 'more problem')}"
    if changed:
        return _gate_error(
            path, state_dir, line, f"the ledger changed since it was verified ({what})"
        )
    return _gate_error(path, state_dir, line, f"the ledger does not verify ({what})")


_LINE_PREFIX = re.compile(r"^line \d+: ")


def _lost(path: Path, state_dir: Path, verifier: Verifier) -> IntegrityError | None:
    """The lost-ledger error (lost.py) when the file verifies by itself but lacks events
    verified before: the rule every command shares, not a tampering report."""
    if verifier.after is not None or any(p.line is not None for p in verifier.problems):
        return None
    if not lost_in(verifier):
        return None
    return lost_error(
        path, state_dir, verifier.db.memory_size(), verifier.events, verifier.events + 1
    )


def _gate_error(path: Path, state_dir: Path, line: int, message: str) -> IntegrityError:
    shown = path
    with suppress(ValueError):  # shown relative to the vault, as the user names it
        shown = path.relative_to(state_dir.parent)
    return IntegrityError(f"{message}; run `vt ledger verify`", str(shown), line)
