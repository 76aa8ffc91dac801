"""The one rule for a ledger that lost events (docs/ledger.md, "A missing or shortened
ledger"), and its way out.

`.vt/ledger-index.sqlite` remembers every event ever verified. A ledger file that is
missing, or holds fewer of those events than were verified (restored from an older copy,
`git checkout` of an old commit, deleted), is the same state for every command: exit 3,
one message naming the file and what was verified before. vt never appends to such a
ledger or takes a note's word for what it lost. The ways out (docs/exit-codes.md):

- get the file back (git), after which the gate passes again;
- accept the loss: `vt ledger forget` lists the remembered events the file no longer
  holds and forgets them, so that the ledger as it stands is verified anew; with no
  ledger file this is a deliberate fresh start.

A note that says APPLIED with a `vt_event_id` the ledger does not hold (a lost event, or
a clone whose ledger never had it) is refused by `vt apply`, never decided again on its
own word; `vt apply --record-lost` records its decision again, with its first `ts`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from vault_tools.errors import IntegrityError
from vault_tools.findings import counted
from vault_tools.infra.lock import FileLock
from vault_tools.infra.osfiles import open_fd
from vault_tools.ledger.index import StateDB
from vault_tools.ledger.policy import checker_for
from vault_tools.ledger.reader import complete_size, lock_path
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.ledger.verify import Verifier, verify_lines

FORGET = "vt ledger forget"


def lost_error(
    path: Path, state_dir: Path, remembered: int, held: int | None, line: int | None = None
) -> IntegrityError:
    """The error of every command for a ledger that lost events verified before.

    `remembered`: events verified before; `held`: events the file holds now (None: there
    is no file); `line`: the first line where a lost event is missing, if known.
    """
    if held is None:
        were = "was" if remembered == 1 else "were"
        what = f"the ledger is missing, but {counted(remembered, 'event')} {were} verified before"
        line = None
    else:
        # every event it holds was verified before (else it is a rewrite, not a loss)
        what = (
            f"the ledger holds {counted(held, 'event')}, but {remembered} were verified before: "
            f"{remembered - held} lost (restored from an older copy?)"
        )
    return IntegrityError(
        f"{what} (get the file back from git, or accept the loss with `{FORGET}`); "
        "run `vt ledger verify` to list them",
        _shown(path, state_dir),
        line,
    )


def check_not_lost(path: Path, state_dir: Path) -> None:
    """Raise `lost_error` when the ledger file is missing but events were verified before
    (a writer calls this before it creates the file: an empty new ledger would hide the
    loss)."""
    if os.path.lexists(path):
        return
    db = StateDB.read_only(state_dir)
    try:
        remembered = db.memory_size()
    finally:
        db.close()
    if remembered:
        raise lost_error(path, state_dir, remembered, None)


def lost_event(event_id: str) -> str:
    """Why `vt apply` refuses a note marked APPLIED as `event_id`, which the ledger lacks."""
    return (
        f"marked APPLIED as {event_id}, an event the ledger does not hold (lost with an "
        "older copy of the ledger, or never in this clone's); get the ledger back from git, "
        "or `vt apply --record-lost` records the note's decision again"
    )


def lost_in(verifier: Verifier) -> int:
    """How many remembered events a full verify (no trusted prefix) did not see, when
    every event it saw was verified before (a ledger that only lost events: restored
    from an older copy); 0 otherwise (a rewrite, told apart by its first new line)."""
    conn = verifier.db.conn
    new = conn.execute(
        "SELECT 1 FROM seen s WHERE NOT EXISTS (SELECT 1 FROM verified v WHERE v.id = s.id)"
    ).fetchone()
    if new is not None:
        return 0
    row = conn.execute(
        "SELECT COUNT(*) FROM verified v WHERE NOT EXISTS (SELECT 1 FROM seen s WHERE s.id = v.id)"
    ).fetchone()
    return int(row[0])


@dataclass(slots=True)
class Forgotten:
    """What `vt ledger forget` forgot (or would, in a dry run)."""

    path: str
    events: int  # the events the ledger holds, verified as they stand
    forgotten: list[tuple[str, str]] = field(default_factory=list)  # (id, ts), by ts
    dry_run: bool = False

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "events": self.events,
            "forgotten": [{"id": i, "ts": ts} for i, ts in self.forgotten],
            "dry_run": self.dry_run,
        }


def forget_lost(
    path: Path,
    state_dir: Path,
    root: Path,
    policy: SignaturePolicy | None = None,
    dry_run: bool = False,
) -> Forgotten:
    """Accept the ledger as it stands: verify it without the memory (IntegrityError if
    it does not verify by itself), list the remembered events it no longer holds, and
    (unless `dry_run`) forget them and the trusted prefix, under the ledger lock. The next
    gate verifies the whole file again and remembers it."""
    with _lock(path, root):
        held = _verified_ids(path, policy)
        db = StateDB.read_only(state_dir)
        try:
            forgotten = sorted(
                ((i, ts) for i, ts in db.conn.execute("SELECT id, ts FROM verified")
                 if i not in held),
                key=lambda pair: (pair[1], pair[0]),
            )  # fmt: skip
        finally:
            db.close()
        result = Forgotten(_shown(path, state_dir), len(held), forgotten, dry_run)
        if dry_run or not (state_dir / "ledger-index.sqlite").exists():
            return result
        db = StateDB(state_dir, root=root)
        try:
            db.forget([i for i, _ in forgotten])
        finally:
            db.close()
    return result


def _verified_ids(path: Path, policy: SignaturePolicy | None) -> set[str]:
    """The ids of the ledger's events, once the file verifies without any memory."""
    try:
        fd = open_fd(path, os.O_RDONLY)
    except FileNotFoundError:
        return set()
    try:
        size = complete_size(fd)
    finally:
        os.close(fd)
    empty = StateDB.empty()
    checker = checker_for(policy or SignaturePolicy(), path, size)
    verifier = Verifier(empty, trust_prefix=False, signatures=checker)
    try:
        verify_lines(verifier, path, size)
        verifier.finish()
        if verifier.problems:
            first = min(verifier.problems, key=lambda p: (p.line is None, p.line or 0))
            raise IntegrityError(
                f"the ledger does not verify by itself ({_LINE_PREFIX.sub('', first.message)}); "
                f"`{FORGET}` only forgets lost events: run `vt ledger verify`",
                str(path),
                first.line,
            )
        return {row[0] for row in empty.conn.execute("SELECT id FROM temp.seen")}
    finally:
        verifier.close()
        empty.close()


_LINE_PREFIX = re.compile(r"^line \d+: ")


@contextmanager
def _lock(path: Path, root: Path) -> Iterator[None]:
    """The ledger lock, when the ledger's folder exists (nothing is created for it)."""
    lock = FileLock(lock_path(path), root=root, folders=False)
    with suppress(FileNotFoundError):
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _shown(path: Path, state_dir: Path) -> str:
    shown = path
    with suppress(ValueError):  # relative to the vault, as the user names it
        shown = path.relative_to(state_dir.parent)
    return str(shown)
