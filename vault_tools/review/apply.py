"""The Apply bridge (docs/workflow.md): turn reviewers' decisions into Decision Ledger events.

A run has four phases, and the order is what makes it safe to kill at any moment:

1. examine: read, parse and check every candidate note (a process pool for many notes),
   before the ledger lock is taken, so the lock is held only for the decisions;
2. decide and append, in ONE ledger transaction: a note's decision becomes an event only
   if its claim's heads do not already all record it (`judge`); the transaction fsyncs
   once on exit;
3. only then mark the notes `review_state: APPLIED` (one atomic rewrite each, refused if
   the note changed since phase 1): a note never says APPLIED for an event that is not
   durable, and a crash between 2 and 3 is finished by the next run (the note is the
   reviewer's decision: found recorded, the note is completed; changed since, it is a
   new event superseding the one the crashed run appended);
4. bring the Claim Store and the knowledge-base blocks up to date (`store.refresh`).

Plain data in, plain data out: the CLI renders `ApplyReport`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from vault_tools.checks.context import CheckContext, make_context
from vault_tools.checks.rules import check_note
from vault_tools.config import Settings
from vault_tools.errors import IOFailure, VtError
from vault_tools.findings import ERROR
from vault_tools.infra.boundary import is_inside
from vault_tools.infra.durable import remove_stale_temps
from vault_tools.infra.pool import map_chunks
from vault_tools.ledger.append import Ledger, Transaction
from vault_tools.ledger.crash import crash_point
from vault_tools.ledger.events import is_timestamp
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.notes import writer
from vault_tools.notes.conflicts import has_conflict
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import given_notes, list_vault, read_file
from vault_tools.review.actor import default_actor
from vault_tools.review.claims import claim_base, claim_complete, decision_content, v1_claim
from vault_tools.review.fingerprint import preview_hash
from vault_tools.review.marking import mark_note
from vault_tools.review.signer import signing_ledger
from vault_tools.review.verdict import AGREES, REVERTED, judge
from vault_tools.store.claims import ClaimStore
from vault_tools.store.refresh import RefreshResult, refresh
from vault_tools.vocabulary import (
    ACCEPT,
    APPLIED,
    APPROVE_REPAIR,
    CHECK_KEYS,
    LEDGER_ACTION_OF,
    PENDING,
    PREVIEW_FAILED,
    PREVIEW_READY,
    REJECT,
    REQUEST_REPAIR,
    REVIEW_ACTIONS,
)

Progress = Callable[[int, int], None]

# fsync'd note rewrites in flight per core: ext4 commits concurrent fsyncs together
IO_WORKERS_PER_CPU = 4
SKIP_REQUEST_REPAIR = f"preview, then set {APPROVE_REPAIR}"
# parse findings of text that must never reach the ledger, whatever the decision
NEVER_RECORDED = frozenset({"control-character", "number-too-large"})
GIST = ("id", "seq", "ts", "action", "claim_id", "note")  # what a run keeps of its events
DRAFTS_CHANGED = (
    f"drafts changed since the preview; set review_action to {REQUEST_REPAIR} and run vt preview"
)


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
class Entry:
    """A note skipped or refused, and why."""

    path: str
    claim_id: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "claim_id": self.claim_id, "reason": self.reason}


@dataclass(slots=True)
class ApplyReport:
    applied: list[Applied] = field(default_factory=list)
    skipped: list[Entry] = field(default_factory=list)
    refused: list[Entry] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)  # their GIST; dry run: whole
    dry_run: bool = False
    refresh: RefreshResult | None = None
    refresh_error: VtError | None = None
    # the first note vt could not mark because the system failed the write (full disk…)
    io_error: IOFailure | None = None
    torn: Any = None  # ledger.TornInfo: a torn last line moved aside at the lock

    @property
    def failed(self) -> bool:
        return bool(self.refused)

    def to_json(self) -> dict[str, Any]:
        return {
            "applied": [a.to_json() for a in self.applied],
            "skipped": [s.to_json() for s in self.skipped],
            "refused": [r.to_json() for r in self.refused],
            "dry_run": self.dry_run,
        }


# ---------------------------------------------------------------------------
# phase 1: examine one note (in a worker for big runs)


@dataclass(slots=True)
class Candidate:
    """What one note asks for, read before the lock. Small and picklable."""

    path: str
    claim_id: str | None = None
    review_action: str | None = None
    decision: dict[str, Any] | None = None  # decision fields but ts/supersedes; actor may be ""
    problems: list[str] = field(default_factory=list)  # why a NEW decision would be refused
    skip: str | None = None  # nothing to decide, and why
    refuse: str | None = None  # cannot be decided at all, and why
    review_state: str | None = None
    event_id: str | None = None  # vt_event_id
    applied_at: str | None = None  # vt_applied_at: the ts of the event vt_event_id names
    digest: str = ""  # of the bytes read: the note is marked only if it still has them
    signature: tuple[int, int, int] = (0, 0, 0)
    check_later: bool = False  # check_note not run yet (see _fill_decision)


def examine(
    settings: Settings, ctx: CheckContext, relative: str, explicit: bool = True
) -> Candidate | None:
    """What `relative` asks apply to do; None for a note with nothing to say in a vault run."""
    try:
        snapshot = writer.read_snapshot(settings.vault / relative, settings.max_note_bytes)
    except VtError as exc:
        if not explicit and not _mentions_claim(settings, relative):
            return None
        reason = (
            exc.message if exc.message.startswith("cannot read") else f"cannot read: {exc.message}"
        )
        return Candidate(relative, refuse=reason)
    raw = snapshot.raw
    if not explicit and b"claim_id" not in raw:
        return None
    note = parse_note(raw, relative)
    conflict = has_conflict(note.findings)
    if conflict is not None:  # never a decision read from half of a merge
        return Candidate(relative, note.claim_id, refuse=f"{conflict.code}: {conflict.message}")
    if not note.is_review_note:
        return (
            Candidate(relative, refuse="not a review note (its frontmatter has no claim_id)")
            if explicit
            else None
        )
    props = note.properties
    action = props.get("review_action")
    action = PENDING if action is None else str(action)
    cand = Candidate(
        relative,
        note.claim_id,
        action,
        review_state=_str_or_none(props.get("review_state")),
        event_id=_str_or_none(props.get("vt_event_id")),
        applied_at=_str_or_none(props.get("vt_applied_at")),
        digest=hashlib.sha256(raw).hexdigest(),
        signature=snapshot.signature,
    )
    if action == PENDING:
        if not explicit:
            return None
        cand.skip = "review_action is PENDING: nothing to apply"
    elif action == REQUEST_REPAIR:
        cand.skip = SKIP_REQUEST_REPAIR
    elif action not in LEDGER_ACTION_OF:
        cand.refuse = f"review_action {action!r} is not one of {', '.join(REVIEW_ACTIONS)}"
    elif unfit := [f for f in note.findings if f.code in NEVER_RECORDED]:
        # whatever the decision, such text must never reach the ledger
        cand.refuse = _errors_reason(unfit)
    else:
        _fill_decision(settings, ctx, note, cand)
    return cand


def _mentions_claim(settings: Settings, relative: str) -> bool:
    """Whether an unreadable note may hold a decision: its bytes mention claim_id, or
    they cannot be read at all (not a regular file, too large, no permission)."""
    try:
        raw, _ = read_file(settings.vault / relative, settings.max_note_bytes)
    except OSError:
        return True
    return b"claim_id" in raw


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _fill_decision(settings: Settings, ctx: CheckContext, note: Note, cand: Candidate) -> None:
    props = note.properties
    content = decision_content(note, str(cand.review_action))
    assert content is not None
    action = content["action"]
    checks = {key: props.get(key) is True for key in CHECK_KEYS}
    v1 = content["claim"] if action == ACCEPT else v1_claim(note)
    reviewer = props.get("reviewer")
    comment = props.get("review_comment")
    cand.decision = {
        **content,
        "actor": str(reviewer).strip() if reviewer is not None else "",
        "base": claim_base(v1),
        "checks": checks,
        "claim_id": note.claim_id,
        "comment": "" if comment is None else str(comment),
        "note": cand.path,
        "v": 1,
    }
    if action == REJECT:
        return
    unchecked = [key for key in settings.required_checks if props.get(key) is not True]
    if unchecked:
        cand.problems.append(
            f"unchecked: {', '.join(unchecked)} (every required check must be true to approve)"
        )
    if action == ACCEPT:
        if cand.review_state == APPLIED and cand.event_id:
            # almost surely applied already: check only if it turns out to be a new decision
            cand.check_later = True
        else:
            cand.problems += note_errors(note, ctx)
    else:
        _fill_repair(note, cand)


def note_errors(note: Note, ctx: CheckContext) -> list[str]:
    """Why an approval of `note` must be refused for its error findings (empty: none)."""
    errors = [f for f in check_note(note, ctx) if f.severity == ERROR]
    return [_errors_reason(errors)] if errors else []


def _errors_reason(errors: list) -> str:
    shown = "; ".join(f"line {f.line or '-'}: {f.code} {f.message}" for f in errors[:2])
    more = f" (and {len(errors) - 2} more)" if len(errors) > 2 else ""
    return f"the note has errors: {shown}{more}; run vt validate"


def _fill_repair(note: Note, cand: Candidate) -> None:
    assert cand.decision is not None
    v2 = cand.decision["claim"]
    if v2 is None:
        cand.problems.append(
            "the note has no V2 Draft section: run vt draft, edit the drafts, "
            f"set {REQUEST_REPAIR} and run vt preview"
        )
        return
    stated = cand.decision["preview"]
    if cand.review_state == PREVIEW_FAILED:
        cand.problems.append(
            "the preview failed: fix the drafts, set review_action to "
            f"{REQUEST_REPAIR} and run vt preview"
        )
    elif cand.review_state not in (PREVIEW_READY, APPLIED) or stated is None:
        cand.problems.append(
            f"no valid preview: set review_action to {REQUEST_REPAIR} and run "
            f"vt preview, then {APPROVE_REPAIR}"
        )
    elif stated != preview_hash(note):
        cand.problems.append(DRAFTS_CHANGED)
    elif cand.review_state == APPLIED:
        # a preview is approved once: after an apply the reviewer previews again
        cand.problems.append(
            "no valid preview since the last apply: set review_action to "
            f"{REQUEST_REPAIR} and run vt preview, then {APPROVE_REPAIR}"
        )
    elif not claim_complete(v2):
        cand.problems.append(
            f"the V2 drafts do not parse; set review_action to {REQUEST_REPAIR} and run vt preview"
        )


# ---------------------------------------------------------------------------
# phase 2: decide under the lock


@dataclass(slots=True)
class _Mark:
    """A note to mark APPLIED after the commit."""

    applied: Applied
    digest: str
    signature: tuple[int, int, int]


class _Decider:
    """Turns candidates into events inside one transaction."""

    def __init__(
        self,
        settings: Settings,
        txn: Transaction,
        report: ApplyReport,
        ctx: CheckContext | None = None,
    ) -> None:
        self.settings = settings
        self.ctx = ctx
        self.txn = txn
        self.report = report
        self.marks: list[_Mark] = []
        self._actor: str | None = None
        self.store: ClaimStore | None = None
        self.forked: dict[str, list[str]] = {}

    def actor(self) -> str:
        if self._actor is None:
            self._actor = default_actor(self.settings)
        return self._actor

    def run(self, candidates: list[Candidate]) -> None:
        """Decide `candidates` in order, emptying the list: no decision outlives its turn."""
        self.txn.look_up(c.claim_id for c in candidates if c.claim_id is not None)
        if self.txn.start.size == 0:  # no event yet (a dry run's scratch ledger too)
            for cand in _drained(candidates):
                self._decide(cand)
            return
        # under the ledger lock the store, caught up, holds exactly the ledger's heads:
        # claims with several are few, and the rest have their latest event as the head
        with ClaimStore.open(self.settings) as store:
            store.catch_up()
            self.store, self.forked = store, store.forked()
            try:
                for cand in _drained(candidates):
                    self._decide(cand)
            finally:
                self.store = None

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
        if cand.check_later:
            cand.problems += self._late_check(cand)
        if cand.problems:
            self.report.refused.append(Entry(cand.path, cand.claim_id, "; ".join(cand.problems)))
            return
        event = self.txn.append(
            self._keep_ts(
                cand,
                {
                    **decision,
                    "actor": decision["actor"] or self.actor(),
                    "supersedes": verdict.supersedes(),
                },
            )
        )
        self.report.events.append(event)
        self._mark(cand, event, new=True)
        if len(verdict.heads) > 1:
            self.report.applied[-1].settled = len(verdict.heads)

    def _keep_ts(self, cand: Candidate, decision: dict) -> dict:
        """The decision, with the `ts` it was first appended at when the note names this
        very event (`vt_event_id`, `vt_applied_at`) and the ledger lost it: an id never
        comes back with another ts, which every clone that saw it first would refuse."""
        if cand.event_id is None or cand.applied_at is None:
            return decision
        if self.txn.prepare(decision)["id"] != cand.event_id:
            return decision
        if not is_timestamp(cand.applied_at):
            return decision
        return {**decision, "ts": cand.applied_at}

    def _late_check(self, cand: Candidate) -> list[str]:
        """check_note for an approval found to be new only under the lock (rare)."""
        try:
            snapshot = writer.read_snapshot(
                self.settings.vault / cand.path, self.settings.max_note_bytes
            )
        except VtError as exc:
            return [f"cannot read: {exc.message}"]
        if hashlib.sha256(snapshot.raw).hexdigest() != cand.digest:
            return ["changed on disk while vt was applying; run vt apply again"]
        if self.ctx is None:
            self.ctx = make_context(self.settings, assist=False)
        return note_errors(parse_note(snapshot.raw, cand.path), self.ctx)

    def _skip(self, cand: Candidate, reason: str) -> None:
        self.report.skipped.append(Entry(cand.path, cand.claim_id, reason))

    def _mark(self, cand: Candidate, event: dict, new: bool) -> None:
        applied = Applied(
            cand.path,
            str(cand.claim_id),
            event["action"],
            event["id"],
            event["seq"],
            event["ts"],
            new=new,
        )
        self.report.applied.append(applied)
        self.marks.append(_Mark(applied, cand.digest, cand.signature))


def _drained(items: list[Candidate]) -> Iterator[Candidate]:  # in order, each removed
    items.reverse()
    while items:
        yield items.pop()


# ---------------------------------------------------------------------------
# phase 3: mark the notes


def _mark_all(
    settings: Settings, marks: list[_Mark], report: ApplyReport, progress: Progress | None
) -> None:
    """Mark the notes; meanwhile (the markers mostly wait on fsync) refresh the Claim
    Store, which depends on the durable ledger alone, not on the notes."""
    jobs = [(m.applied.path, m.digest, m.signature, m.applied.id, m.applied.ts) for m in marks]
    outcomes = _pooled(
        settings,
        _mark_chunk,
        jobs,
        progress,
        io_bound=True,
        meanwhile=lambda: _refresh(settings, report),
    )
    try:
        writer.sync_folders(settings.vault / m.applied.path for m in marks)
    except VtError as exc:  # the marks are in place but may not survive a crash
        if isinstance(exc, IOFailure):
            report.io_error = report.io_error or exc
        report.refused.append(
            Entry(
                exc.path or "",
                None,
                f"{exc.message}; run vt apply again after a crash to mark the notes",
            )
        )
    for mark, problem in zip(marks, outcomes, strict=True):
        if problem is None:
            mark.applied.marked = True
        else:
            if isinstance(problem, IOFailure):
                report.io_error = report.io_error or problem
                problem = problem.message
            report.refused.append(
                Entry(
                    mark.applied.path,
                    mark.applied.claim_id,
                    f"{problem}; the decision is in the ledger ({mark.applied.id}): run vt apply "
                    "again to mark the note",
                )
            )


def _mark_chunk(
    settings: Settings, ctx: CheckContext | None, jobs: list[tuple]
) -> list[str | IOFailure | None]:
    return [mark_note(settings, *job) for job in jobs]


# ---------------------------------------------------------------------------
# the run


def apply_notes(
    settings: Settings,
    paths: list[Path] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ApplyReport:
    """`vt apply [NOTE…]`: every decided note of the vault, or the notes given."""
    report = ApplyReport(dry_run=dry_run)
    listing = list_vault(settings.vault)
    ctx = make_context(settings, listing, assist=False)  # apply decides on errors only
    if paths:
        targets = _explicit_targets(settings, paths, report)
    else:
        targets = list(listing.inside())
        # a folder or file that cannot be read may hold decisions: never passed over
        report.refused += [
            Entry(f.path, None, f.message) for f in listing.findings(settings.claims_dir)
        ]
    examined = _pooled(settings, _examine_chunk, targets, progress, ctx=ctx, explicit=bool(paths))
    candidates = _sorted_out(report, examined)  # `examined` emptied: phase 2 owns them
    if not candidates:
        return report
    marks = _decide_all(settings, candidates, report, ctx, dry_run)
    if not dry_run:
        crash_point("after-append")
    for entries in (report.applied, report.skipped, report.refused):
        entries.sort(key=lambda e: e.path)
    if dry_run:
        return report
    _mark_all(settings, marks, report, progress)
    report.refused.sort(key=lambda e: e.path)
    return report


def _decide_all(
    settings: Settings,
    candidates: list[Candidate],
    report: ApplyReport,
    ctx: CheckContext,
    dry_run: bool,
) -> list[_Mark]:
    """Phase 2 in a frame of its own: the transaction is freed before phase 3 and 4."""
    with _transaction(settings, dry_run) as txn:
        report.torn = txn.torn
        decider = _Decider(settings, txn, report, ctx)
        decider.run(candidates)
    if not dry_run:  # not printed: their gist, not ~5 KiB each alive through phase 4
        report.events = [{k: ev[k] for k in GIST} for ev in report.events]
    return decider.marks


def _explicit_targets(settings: Settings, paths: list[Path], report: ApplyReport) -> list[str]:
    targets: list[str] = []
    for relative, problem in given_notes(settings.vault, paths):
        if problem is None:
            targets.append(relative)
        else:
            report.refused.append(Entry(relative, None, problem.message))
    return targets


def _sorted_out(report: ApplyReport, examined: list[Candidate | None]) -> list[Candidate]:
    """Report skipped and refused notes; the rest, in path order, go to the decider.
    Empties `examined`, so that only the returned list holds the candidates."""
    candidates = [c for c in examined if c is not None]
    examined.clear()
    owners: dict[str, list[str]] = {}
    for cand in candidates:
        if cand.claim_id is not None:
            owners.setdefault(cand.claim_id, []).append(cand.path)
    deciding = []
    for cand in sorted(candidates, key=lambda c: c.path):
        others = [p for p in owners.get(cand.claim_id or "", []) if p != cand.path]
        if cand.refuse:
            report.refused.append(Entry(cand.path, cand.claim_id, cand.refuse))
        elif cand.skip:
            report.skipped.append(Entry(cand.path, cand.claim_id, cand.skip))
        elif others:
            report.refused.append(
                Entry(
                    cand.path,
                    cand.claim_id,
                    f"claim_id {cand.claim_id} is also used by "
                    f"{', '.join(others)}; one note per claim",
                )
            )
        else:
            deciding.append(cand)
    return deciding


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
# the process pool


def _examine_chunk(
    settings: Settings, ctx: CheckContext | None, chunk: list[str], explicit: bool = False
) -> list[Candidate | None]:
    assert ctx is not None
    return [examine(settings, ctx, relative, explicit) for relative in chunk]


def _pooled(
    settings: Settings,
    function: Callable,
    items: list,
    progress: Progress | None,
    ctx: CheckContext | None = None,
    io_bound: bool = False,
    meanwhile: Callable[[], None] | None = None,
    **kwargs: Any,
) -> list:
    """`function(settings, ctx, chunk, **kwargs)` over chunks of `items`, in order; in
    forked workers when there are enough items. fsync-bound work gets more workers than
    cores: the disk, not the CPU, is what they wait for."""
    cpus = settings.workers or os.cpu_count() or 1
    workers = cpus * IO_WORKERS_PER_CPU if io_bound and not settings.workers else cpus
    work = partial(function, settings, ctx, **kwargs)
    return list(map_chunks(work, items, workers=workers, progress=progress, meanwhile=meanwhile))
