"""The Apply bridge (docs/workflow.md): turn reviewers' decisions into Decision Ledger events.

A run has four phases, and the order is what makes it safe to kill at any moment:

1. examine: read, parse and check every candidate note (a process pool for many notes,
   review/candidates.py), before the ledger lock is taken, so the lock is held only for
   the decisions;
2. decide and append, in ONE ledger transaction: a note's decision becomes an event only
   if its claim's heads do not already all record it (`judge`); the transaction writes
   and fsyncs the events of each BATCH of notes before it decides the next, so a kill
   between batches leaves the earlier ones durable (the next run completes their notes);
3. only then mark the notes `review_state: APPLIED` (one atomic rewrite each, on threads
   for many notes, refused if
   the note changed since phase 1): a note never says APPLIED for an event that is not
   durable, and a crash between 2 and 3 is finished by the next run (the note is the
   reviewer's decision: found recorded, the note is completed; changed since, it is a
   new event superseding the one the crashed run appended);
4. bring the Claim Store and the knowledge-base blocks up to date (`store.refresh`).

Memory stays flat as the vault grows: the candidates wait in a spool (a temporary
file) between phases 1 and 2, the decided notes in another between phases 2 and 3, and
each phase holds one batch of them at a time; the report's applied notes wait in a
third until they are reported (docs/performance.md).

Plain data in, plain data out: the CLI renders `ApplyReport`.
"""

from __future__ import annotations

import os
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from vault_tools.checks.context import CheckContext, make_context
from vault_tools.config import Settings
from vault_tools.errors import IOFailure, VtError
from vault_tools.infra.boundary import is_inside
from vault_tools.infra.durable import remove_stale_temps
from vault_tools.infra.filestat import Signature
from vault_tools.infra.pool import map_chunks
from vault_tools.infra.spool import Spool, SpooledList
from vault_tools.ledger.append import Ledger, Transaction
from vault_tools.ledger.events import is_timestamp
from vault_tools.ledger.faults import crash_point
from vault_tools.ledger.lost import check_not_lost, lost_event
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.notes import writer
from vault_tools.notes.identity import content_digest
from vault_tools.notes.note import parse_note
from vault_tools.notes.vault import given_notes, list_vault
from vault_tools.review.actor import Runner, decided_by, runner
from vault_tools.review.candidates import Candidate, assist_codes, examine, note_errors
from vault_tools.review.marking import Mark, mark_notes
from vault_tools.review.signer import signer_for, signing_ledger
from vault_tools.review.verdict import AGREES, REVERTED, judge
from vault_tools.store.claims import ClaimStore
from vault_tools.store.refresh import RefreshResult, refresh
from vault_tools.vocabulary import APPLIED

Progress = Callable[[int, int], None]

PROGRESS_EVERY = 64  # notes marked between two calls of `progress`
# notes decided, appended and fsynced at a time: what phase 2 holds in memory (a few MiB)
BATCH = 1000
GIST = ("id", "seq", "ts", "action", "claim_id", "note")  # what a run reports of its events


# ---------------------------------------------------------------------------
# results


@dataclass(slots=True)
class Applied:
    """A note whose decision is now (or, in a dry run, would be) in the ledger."""

    path: str
    claim_id: str
    action: str
    id: str
    seq: int
    ts: str
    new: bool = True  # False: the event was already there (a crashed run), the note completed
    marked: bool = False  # the note now says APPLIED
    settled: int = 0  # a new event superseding this many concurrent heads (2+: a CONFLICT)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "claim_id": self.claim_id,
            "action": self.action,
            "id": self.id,
            "seq": self.seq,
            "new": self.new,
        }


@dataclass(slots=True)
class NoteOutcome:
    """A note skipped or refused, and why."""

    path: str
    claim_id: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "claim_id": self.claim_id, "reason": self.reason}


@dataclass(slots=True)
class ApplyReport:
    # one per note, held until the run is reported: in a spool (a temporary file), so
    # that what the run holds does not grow with the vault
    applied: SpooledList[Applied] = field(default_factory=SpooledList)
    skipped: list[NoteOutcome] = field(default_factory=list)
    refused: list[NoteOutcome] = field(default_factory=list)
    # decisions of other reviewers (their notes name them): each reviewer's own run records them
    others: list[NoteOutcome] = field(default_factory=list)
    dry_events: list[dict] = field(default_factory=list)  # a dry run's events, whole
    dry_run: bool = False
    refresh: RefreshResult | None = None
    refresh_error: VtError | None = None
    # the first note vt could not mark because the system failed the write (full disk…)
    io_error: IOFailure | None = None
    torn: Any = None  # ledger.TornInfo: a torn last line moved aside at the lock

    @property
    def failed(self) -> bool:
        return bool(self.refused)

    @property
    def events(self) -> list[dict]:
        """The events appended, in ledger order: their GIST, made from `applied` when
        asked (a run keeps no second record of them); in a dry run, whole."""
        if self.dry_run:
            return self.dry_events
        gists = [
            {"id": a.id, "seq": a.seq, "ts": a.ts, "action": a.action,
             "claim_id": a.claim_id, "note": a.path}
            for a in self.applied
            if a.new
        ]  # fmt: skip
        return sorted(gists, key=lambda g: g["seq"])

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, Iterator) else v for k, v in self.json_items().items()}

    def json_items(self) -> dict[str, Any]:
        """`to_json`, its lists given as iterators: rendered entry by entry, a report of
        50,000 notes is never held twice (as entries and as their JSON objects)."""
        return {
            "applied": (a.to_json() for a in self.applied),
            "skipped": (s.to_json() for s in self.skipped),
            "refused": (r.to_json() for r in self.refused),
            "others": (o.to_json() for o in self.others),
            "dry_run": self.dry_run,
        }


# ---------------------------------------------------------------------------
# phase 2: decide under the lock


@dataclass(slots=True)
class _PendingMark:
    """A note to mark APPLIED after the commit."""

    applied: Applied
    digest: str
    signature: Signature


class _Decider:
    """Turns candidates into events inside one transaction; each decided note goes to
    the `decided` spool, to be marked once the transaction is over."""

    def __init__(
        self,
        settings: Settings,
        txn: Transaction,
        report: ApplyReport,
        decided: Spool,
        me: Runner,
        record_lost: bool = False,
    ) -> None:
        self.settings = settings
        self.record_lost = record_lost  # see ledger/lost.py
        self.ctx: CheckContext | None = None  # made when a late check needs it (rare)
        self.txn = txn
        self.report = report
        self.decided = decided
        self.me = me  # who runs this apply: the actor of its events
        self.store: ClaimStore | None = None
        self.forked: dict[str, list[str]] = {}

    def run(self, batches: Iterable[list[Candidate]]) -> None:
        """Decide the candidates in order, a batch at a time; after each batch its events
        are made durable (but in a dry run, which writes nothing), and no decision
        outlives its batch."""
        if self.txn.start.size == 0:  # no event yet (a dry run's scratch ledger too)
            self._batches(batches)
            return
        # under the ledger lock the store, caught up, holds exactly the ledger's heads:
        # claims with several are few, and the rest have their latest event as the head
        with ClaimStore.open(self.settings) as store:
            store.catch_up()
            self.store, self.forked = store, store.forked()
            try:
                self._batches(batches)
            finally:
                self.store = None

    def _batches(self, batches: Iterable[list[Candidate]]) -> None:
        for batch in batches:
            self.txn.look_up(c.claim_id for c in batch if c.claim_id is not None)
            for cand in _drained(batch):
                self._decide(cand)
            if not self.report.dry_run:
                self.txn.flush()

    def _heads(self, claim_id: str) -> list[dict]:
        if claim_id in self.forked:
            assert self.store is not None
            return self.store.heads(claim_id)
        latest = self.txn.latest(claim_id)
        return [latest] if latest is not None else []

    def _event_of(self, event_id: str) -> dict | None:
        assert self.store is not None
        return self.store.event(event_id)

    def _decide(self, cand: Candidate) -> None:
        decision = cand.decision
        assert decision is not None and cand.claim_id is not None
        applied_id = cand.event_id if cand.review_state == APPLIED else None
        if applied_id is not None and not self.record_lost and not self.txn.has_id(applied_id):
            # a teammate's note is theirs to record again (listed under others by
            # _recorded_as); only the runner's own lost decision is refused
            if self._recorded_as(cand) is not None:
                self.report.refused.append(
                    NoteOutcome(cand.path, cand.claim_id, lost_event(applied_id))
                )
            return
        verdict = judge(decision, self._heads(cand.claim_id), applied_id, self._event_of)
        if verdict.kind == AGREES:
            assert verdict.event is not None
            if applied_id == verdict.event["id"]:
                self._skip(cand, f"already applied: {applied_id}")
            else:
                self._mark(cand, verdict.event, new=False)  # a run killed before marking it
            return
        if verdict.kind == REVERTED:
            assert verdict.event is not None
            self._skip(
                cand,
                f"already applied as {applied_id}, which was reverted by "
                f"{verdict.event['id']}; to decide again, change review_action",
            )
            return
        recorder = self._recorded_as(cand)
        if recorder is None:
            return
        if cand.check_later or cand.assist_later:
            cand.problems += self._late_check(cand, decision)
        if cand.problems:
            self.report.refused.append(
                NoteOutcome(cand.path, cand.claim_id, "; ".join(cand.problems))
            )
            return
        event = self.txn.append(
            self._keep_ts(cand, {**decision, **recorder, "supersedes": verdict.supersedes()})
        )
        if self.report.dry_run:
            self.report.dry_events.append(event)
        self._mark(cand, event, new=True, settled=len(verdict.heads))

    def _recorded_as(self, cand: Candidate) -> dict[str, str] | None:
        """The fields that say who a new event is by: the runner as `actor`, and, in a
        vault that records for its reviewers, the note's reviewer as `decided_by` when that
        is someone else. None: the note is another reviewer's decision, left for their run."""
        me = self.me
        if me.decided(cand.reviewer):
            return {"actor": me.name}
        if self.settings.record_for_reviewers:
            return {"actor": me.name, "decided_by": cand.reviewer}
        self.report.others.append(NoteOutcome(cand.path, cand.claim_id, decided_by(cand.reviewer)))
        return None

    def _keep_ts(self, cand: Candidate, decision: dict) -> dict:
        """The decision, with the `ts` it was first appended at when the note names this
        very event (`vt_event_id`, `vt_applied_at`) and the ledger lost it (only with
        `--record-lost`): the event comes back as every clone saw it first."""
        if cand.event_id is None or cand.applied_at is None:
            return decision
        if self.txn.prepare(decision)["id"] != cand.event_id:
            return decision
        if not is_timestamp(cand.applied_at):
            return decision
        return {**decision, "ts": cand.applied_at}

    def _late_check(self, cand: Candidate, decision: dict) -> list[str]:
        """check_note for an approval, and the assist codes of any decision, found to be
        new only under the lock (rare)."""
        try:
            snapshot = writer.read_snapshot(
                self.settings.vault / cand.path, self.settings.max_note_bytes
            )
        except VtError as exc:
            return [f"cannot read: {exc.message}"]
        if content_digest(snapshot.raw) != cand.digest:
            return ["changed on disk while vt was applying; run vt apply again"]
        if self.ctx is None:
            self.ctx = make_context(self.settings, assist=False)
        note = parse_note(snapshot.raw, cand.path)
        if cand.assist_later:
            decision["assist"] = assist_codes(note, self.ctx)
        return note_errors(note, self.ctx) if cand.check_later else []

    def _skip(self, cand: Candidate, reason: str) -> None:
        self.report.skipped.append(NoteOutcome(cand.path, cand.claim_id, reason))

    def _mark(self, cand: Candidate, event: dict, new: bool, settled: int = 0) -> None:
        applied = Applied(
            cand.path,
            str(cand.claim_id),
            event["action"],
            event["id"],
            event["seq"],
            event["ts"],
            new=new,
            settled=settled if settled > 1 else 0,
        )
        self.decided.add(_PendingMark(applied, cand.digest, cand.signature))


def _drained(items: list[Candidate]) -> Iterator[Candidate]:  # in order, each removed
    items.reverse()
    while items:
        yield items.pop()


# ---------------------------------------------------------------------------
# phase 3: mark the notes


def _mark_all(
    settings: Settings, decided: Spool, report: ApplyReport, progress: Progress | None
) -> None:
    """Mark the notes, read back from the spool as the markers take them; meanwhile (the
    markers mostly wait on fsync) refresh the Claim Store, which depends on the durable
    ledger alone."""
    given: deque[_PendingMark] = deque()  # handed to the markers, their outcome not read yet

    def marks() -> Iterator[Mark]:
        for mark in decided:
            given.append(mark)
            yield mark.applied.path, mark.digest, mark.signature, mark.applied.id, mark.applied.ts

    outcomes = mark_notes(
        settings, marks(), decided.count, meanwhile=lambda: _refresh(settings, report)
    )
    done = 0
    for problem in outcomes:
        applied = given.popleft().applied
        done += 1
        if progress and (done % PROGRESS_EVERY == 0 or done == decided.count):
            progress(done, decided.count)
        applied.marked = problem is None  # before it is appended (and pickled)
        report.applied.append(applied)
        if problem is None:
            continue
        if isinstance(problem, IOFailure):
            report.io_error = report.io_error or problem
            problem = problem.message
        report.refused.append(
            NoteOutcome(
                applied.path,
                applied.claim_id,
                f"{problem}; the decision is in the ledger ({applied.id}): run vt apply "
                "again to mark the note",
            )
        )
    try:
        writer.sync_folders(settings.vault / a.path for a in report.applied)
    except VtError as exc:  # the marks are in place but may not survive a crash
        if isinstance(exc, IOFailure):
            report.io_error = report.io_error or exc
        report.refused.append(
            NoteOutcome(
                exc.path or "",
                None,
                f"{exc.message}; run vt apply again after a crash to mark the notes",
            )
        )


# ---------------------------------------------------------------------------
# the run


def apply_notes(
    settings: Settings,
    paths: list[Path] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    record_lost: bool = False,
) -> ApplyReport:
    """`vt apply [NOTE…]`: every decided note of the vault, or the notes given.

    A note marked APPLIED whose event the ledger does not hold is refused; `record_lost`
    records its decision again, with the `ts` the note keeps (ledger/lost.py)."""
    report = ApplyReport(dry_run=dry_run)
    with Spool() as examined, Spool() as owners:
        claim_hashes = _examine_all(settings, paths, report, progress, examined, owners)
        shared = _shared_claims(claim_hashes, owners) if examined.count else {}
        owners.close()
        deciding = _without_shared(examined, shared, report) if shared else examined
        if not deciding.count:
            return report
        with deciding, Spool() as decided:
            _decide_all(settings, deciding, report, decided, dry_run, record_lost)
            deciding.close()
            if dry_run:
                report.applied = SpooledList(mark.applied for mark in decided)
            else:
                crash_point("after-append")
                _mark_all(settings, decided, report, progress)
    for entries in (report.applied, report.skipped, report.refused, report.others):
        entries.sort(key=lambda e: e.path)
    return report


def _examine_all(
    settings: Settings,
    paths: list[Path] | None,
    report: ApplyReport,
    progress: Progress | None,
    deciding: Spool,
    owners: Spool,
) -> array:
    """Phase 1: examine the notes in path order, reporting those skipped or refused at
    once and spooling the rest (`deciding`); `owners` gets (claim_id, path) of every
    note naming a claim. Returns the hashes of those claim_ids, 8 bytes a note, from
    which `_shared_claims` finds a claim named by two notes."""
    listing = list_vault(settings.vault)
    ctx = make_context(settings, listing, assist=False)  # apply decides on errors only
    if paths:
        targets = sorted(_explicit_targets(settings, paths, report))
    else:
        targets = list(listing.inside())
        # a folder or file that cannot be read may hold decisions: never passed over
        report.refused += [
            NoteOutcome(f.path, None, f.message) for f in listing.findings(settings.claims_dir)
        ]
    claim_hashes = array("q")
    for cand in _pooled(settings, _examine_chunk, targets, progress, ctx=ctx, explicit=bool(paths)):
        if cand is None:
            continue
        if cand.claim_id is not None:
            claim_hashes.append(hash(cand.claim_id))
            owners.add((cand.claim_id, cand.path))
        if cand.refuse:
            report.refused.append(NoteOutcome(cand.path, cand.claim_id, cand.refuse))
        elif cand.skip:
            report.skipped.append(NoteOutcome(cand.path, cand.claim_id, cand.skip))
        else:
            deciding.add(cand)
    return claim_hashes


def _shared_claims(claim_hashes: array, owners: Spool) -> dict[str, list[str]]:
    """claim_id → its notes, in path order, for every claim_id that several notes name
    (none of them is decided: one note per claim). The spool is read only when two
    hashes meet."""
    ordered = sorted(claim_hashes)
    twice = {a for a, b in zip(ordered, ordered[1:], strict=False) if a == b}
    if not twice:
        return {}
    found: dict[str, list[str]] = {}
    for claim_id, path in owners:
        if hash(claim_id) in twice:
            found.setdefault(claim_id, []).append(path)
    return {claim_id: notes for claim_id, notes in found.items() if len(notes) > 1}


def _without_shared(examined: Spool, shared: dict[str, list[str]], report: ApplyReport) -> Spool:
    """The candidates but those whose claim_id several notes name, which are refused."""
    deciding = Spool()
    for cand in examined:
        owners = shared.get(cand.claim_id or "", [])
        if len(owners) < 2:
            deciding.add(cand)
            continue
        others = ", ".join(p for p in owners if p != cand.path)
        report.refused.append(
            NoteOutcome(
                cand.path,
                cand.claim_id,
                f"claim_id {cand.claim_id} is also used by {others}; one note per claim",
            )
        )
    examined.close()
    return deciding


def _decide_all(
    settings: Settings,
    deciding: Spool,
    report: ApplyReport,
    decided: Spool,
    dry_run: bool,
    record_lost: bool = False,
) -> None:
    """Phase 2, in one transaction, BATCH notes at a time."""
    # before the ledger is opened: a key the allowed signers do not know creates nothing
    me = runner(settings, signer_for(settings))
    if not dry_run and _nothing_to_record(settings, deciding, me, report):
        return
    with _transaction(settings, dry_run) as txn:
        report.torn = txn.torn
        _Decider(settings, txn, report, decided, me, record_lost).run(deciding.batches(BATCH))


def _nothing_to_record(
    settings: Settings, deciding: Spool, me: Runner, report: ApplyReport
) -> bool:
    """True, with each note reported, when the vault has no ledger yet and no note is a
    decision this run would record (all are teammates', or refused): `05_ledger/` then
    appears only with the first decision, never as an empty file. A lost ledger is still
    refused here (ledger/lost.py)."""
    if os.path.lexists(settings.ledger_path):
        return False
    check_not_lost(settings.ledger_path, settings.state_dir)

    def own(cand: Candidate) -> bool:
        return settings.record_for_reviewers or me.decided(cand.reviewer)

    for cand in deciding:
        if cand.event_id is not None or (own(cand) and not cand.problems):
            return False  # a decision to record, or a lost event's rule to apply
    for cand in deciding:
        if own(cand):
            report.refused.append(NoteOutcome(cand.path, cand.claim_id, "; ".join(cand.problems)))
        else:
            report.others.append(NoteOutcome(cand.path, cand.claim_id, decided_by(cand.reviewer)))
    return True


def _explicit_targets(settings: Settings, paths: list[Path], report: ApplyReport) -> list[str]:
    targets: list[str] = []
    for relative, problem in given_notes(settings.vault, paths):
        if problem is None:
            targets.append(relative)
        else:
            report.refused.append(NoteOutcome(relative, None, problem.message))
    return targets


class _DryRun(Exception):
    """Raised inside the transaction of a dry run so that it appends nothing."""


@contextmanager
def _transaction(settings: Settings, dry_run: bool) -> Iterator[Transaction]:
    """The run's one ledger transaction. A dry run decides the same way and writes
    nothing: the transaction is abandoned (or, without a ledger yet, a scratch one)."""
    if not dry_run:
        with signing_ledger(settings, root=settings.vault).transaction() as txn:
            _remove_stale_temps(settings)
            yield txn
        return
    check_not_lost(settings.ledger_path, settings.state_dir)  # as the real run would
    with TemporaryDirectory(prefix="vt-dry-run-") as scratch:
        if settings.ledger_path.exists():
            ledger = Ledger(settings.ledger_path, settings.state_dir, root=settings.vault,
                            policy=SignaturePolicy.of(settings))  # fmt: skip
        else:
            ledger = Ledger(Path(scratch) / "ledger.jsonl", Path(scratch) / "state")
        try:
            with ledger.transaction() as txn:
                yield txn
                raise _DryRun
        except _DryRun:
            pass


def _remove_stale_temps(settings: Settings) -> None:
    """Temp files of an earlier vt killed while writing notes (see durable.write_temp),
    removed from the folders vt writes notes into; under the ledger lock, so never those
    of a run applying meanwhile. A folder leading out of the vault is not vt's to clean."""
    for folder, recursive in ((settings.claims_dir, True), (settings.kb_dir, True), ("", False)):
        if is_inside(settings.vault, folder):
            remove_stale_temps(settings.vault / folder, recursive)


def _refresh(settings: Settings, report: ApplyReport) -> None:
    """Bring the Claim Store and the knowledge-base blocks up to date. The events are
    durable and the notes marked: a failure here is reported, and the next command that
    reads the store catches up."""
    try:
        report.refresh = refresh(settings)
    except VtError as exc:
        report.refresh_error = exc


# ---------------------------------------------------------------------------
# the process pool (examining the notes)


def _examine_chunk(
    settings: Settings, ctx: CheckContext | None, chunk: list[str], explicit: bool = False
) -> list[Candidate | None]:
    assert ctx is not None
    return [examine(settings, ctx, relative, explicit) for relative in chunk]


def _pooled(
    settings: Settings,
    function: Callable,
    items: Iterable,
    progress: Progress | None,
    ctx: CheckContext | None = None,
    **kwargs: Any,
) -> Iterator:
    """`function(settings, ctx, chunk, **kwargs)` over chunks of `items`, results in
    order as they come; in forked workers when there are enough items."""
    work = partial(function, settings, ctx, **kwargs)
    return map_chunks(work, items, workers=settings.workers, progress=progress)
