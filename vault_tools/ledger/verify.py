"""`vt ledger verify` (docs/ledger.md): every line and the chain checked, compared with
every event trusted before; and the verifier the gate (gate.py) runs on new lines."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from vault_tools.findings import counted
from vault_tools.infra.gcpause import gc_paused
from vault_tools.infra.lock import lock_fd, unlock_fd
from vault_tools.infra.osfiles import open_fd
from vault_tools.ledger.events import (
    GENESIS,
    canonical,
    decision_id,
    event_problems,
    line_digests,
    line_hash,
    load_json,
    quick_ok,
    sha256_id,
)
from vault_tools.ledger.index import StateDB, Trusted
from vault_tools.ledger.policy import checker_for
from vault_tools.ledger.problems import Problem, VerifyResult
from vault_tools.ledger.reader import (
    CRLF_MESSAGE,
    TornInfo,
    complete_size,
    count_lines,
    crlf_converted,
    lock_path,
    open_ledger,
    open_ledger_binary,
    torn_path,
)
from vault_tools.ledger.signatures import (
    NO_SIGNING,
    SIGNING_KEY,
    SignatureChecker,
    SignaturePolicy,
)
from vault_tools.vocabulary import conflict_marker

Checker = SignatureChecker | None
MAX_PROBLEMS = 1000  # keep verify's memory bounded on a thoroughly broken file


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
    """The `seen` row of a canonical line, read by position (see `Verifier._known`)."""
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


class Verifier:
    """Streams lines; keeps only the previous line's seq/hash and a batch of rows."""

    def __init__(
        self,
        db: StateDB,
        trust_prefix: bool = True,
        after: Trusted | None = None,
        signatures: SignatureChecker | None = None,
    ) -> None:
        self.db = db
        self.signatures = signatures
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
            ev = load_json(text)
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
        if not quick_ok(ev):
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
            hash_, id_ = line_digests(body, ev)
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
        if self.signatures is not None and (wrong := self.signatures.check(ev)) is not None:
            self.problem(seq, n, f"line {n}: {wrong}")
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
        if sha256_id(body[:i] + body[i + 81 :]) != stated:
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
        if self.signatures is not None:  # verified with the prefix, under the same policy
            self.signatures.count(b',"sig":"' in body)
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
                self.problems.append(
                    Problem(None, None, f"… and {counted(self.dropped, 'more problem')}")
                )
            return
        self.memory_proven = self._prefix_proves_memory()
        if not self.memory_proven:
            self._check_memory()
        if self.dropped:
            self.problems.append(
                Problem(None, None, f"… and {counted(self.dropped, 'more problem')}")
            )

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
        # only the id: the same decision appended in two clones a second apart is two
        # copies with different `ts`, and the merge keeps one (docs/ledger.md, Merging)
        for (id_,) in self.db.conn.execute(
            "SELECT v.id FROM verified v WHERE NOT EXISTS "
            "(SELECT 1 FROM seen s WHERE s.id = v.id) ORDER BY v.id"
        ):
            msg = f"event {id_} verified before is missing: ledger shortened or rewritten"
            self.problem(None, None, msg)

    def close(self) -> None:
        self.db.conn.execute("DROP TABLE IF EXISTS temp.seen")


class _Lines:
    """The ledger read line by line from where the previous read stopped (line `n` ended
    at byte `end`); `done` once a line is torn or reaches past `size`."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle, self.size = handle, size
        self.n = self.end = 0
        self.done = False

    def feed(self, verifier: Verifier, stop: int, stop_line: int = 0) -> None:
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
        """Lines up to `n` (ending at byte `end`) were verified before (the gate's)."""
        self.handle.seek(end)
        self.n, self.end = n, end


def verify_lines(verifier: Verifier, path: Path, size: int) -> None:
    """Feed every line (after the gate's trusted prefix: every later line) to `verifier`."""
    # parsed events never form cycles and are dropped line by line (infra/gcpause.py):
    # the young objects json.loads creates are not scanned again and again
    with gc_paused():
        try:
            handle = open_ledger_binary(path)
        except FileNotFoundError:
            return
        with handle:
            lines = _Lines(handle, size)
            if verifier.after is not None:
                lines.skip_to(verifier.after.seq, verifier.after.size)
            elif verifier.prefix:  # re-proved cheaply by its hash chain
                lines.feed(verifier, size, stop_line=verifier.prefix)
            if not lines.done:
                lines.feed(verifier, size)


def verify_ledger(
    path: Path | str, state_dir: Path | str, policy: SignaturePolicy | None = None
) -> VerifyResult:
    """Check every line and the chain; compare with every event trusted before.

    Writes nothing, in the vault or its state dir: the memory is read as it stands, a
    torn tail is reported (`torn`, not a failure; the next append moves it aside), and
    nothing is ever repaired. Holds the ledger lock shared, when the lock file exists, so
    an append in progress is never mistaken for a torn tail. A ledger whose every line
    ends in CRLF is one problem, said once. Signatures are checked
    against `policy` (None: not checked at all, the chain alone is verified).
    """
    path, state_dir = Path(path), Path(state_dir)
    with _shared_lock(lock_path(path)) as locked:
        db = StateDB.read_only(state_dir, immutable=locked)
        try:
            try:
                fd = open_ledger(path)
            except FileNotFoundError:
                return _verify_missing(db, path)
            try:
                size = complete_size(fd)
                torn = None
                if size != os.fstat(fd).st_size:
                    torn = TornInfo(
                        size, os.fstat(fd).st_size - size, str(torn_path(path)), moved=False
                    )
                if crlf_converted(fd, size):
                    problem = Problem(None, 1, f"line 1: {CRLF_MESSAGE}")
                    return VerifyResult(False, count_lines(fd, 0, size), "?", [problem], torn)
            finally:
                os.close(fd)
            # its temp table goes with the connection: dropping it first only costs time
            # a prefix verified under another signing policy is verified again in full
            digest = policy.digest() if policy else NO_SIGNING
            same = (db.get(SIGNING_KEY) or NO_SIGNING) == digest
            checker = checker_for(policy, path, size)  # by the policy in the ledger, if any
            verifier = Verifier(db, trust_prefix=same, signatures=checker)
            try:
                verify_lines(verifier, path, size)
            except _PrefixChanged:
                checker = checker_for(policy, path, size)
                verifier = Verifier(db, trust_prefix=False, signatures=checker)
                verify_lines(verifier, path, size)
            verifier.finish()
        finally:
            db.close()
    problems = sorted(verifier.problems, key=lambda p: (p.line is None, p.line or 0))
    result = VerifyResult(not problems, verifier.events, verifier.prev_hash or "?", problems, torn)
    if checker is not None:
        result.signed, result.unsigned = checker.signed, checker.unsigned
    return result


@contextmanager
def _shared_lock(path: Path) -> Iterator[bool]:
    """The ledger lock, shared, if its file exists (True); nothing is created or written:
    no lock file means no vt has appended yet."""
    try:
        fd = open_fd(path, os.O_RDONLY)
    except OSError:
        yield False
        return
    try:
        lock_fd(fd, shared=True)
        try:
            yield True
        finally:
            # before the close: Windows may drop a lock only some time after its close
            unlock_fd(fd)
    finally:
        os.close(fd)


def _verify_missing(db: StateDB, path: Path) -> VerifyResult:
    """No ledger file: fine for a new vault, an integrity failure if events were verified."""
    verifier = Verifier(db)
    verifier.finish()
    verifier.close()
    problems = verifier.problems
    if problems:
        problems.insert(0, Problem(None, None, f"{path.name} is missing"))
    return VerifyResult(not problems, 0, GENESIS, problems, None)
