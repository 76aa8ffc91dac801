"""The Apply bridge (DESIGN §5–6): turn reviewers' decisions into Decision Ledger events.

A run has four phases, and the order is what makes it safe to kill at any moment:

1. examine: read, parse and check every candidate note (a process pool for many notes),
   before the ledger lock is taken, so the lock is held only for the decisions;
2. decide and append, in ONE ledger transaction: a note's decision becomes an event only
   if its claim's history does not already record it; the transaction fsyncs once on exit;
3. only then mark the notes `review_state: APPLIED` (one atomic rewrite each, refused if
   the note changed since phase 1): a note never says APPLIED for an event that is not
   durable, and a crash between 2 and 3 is finished by the next run (the ledger is the
   truth: the note's decision is found recorded, and the note is completed);
4. bring the Claim Store and the knowledge-base blocks up to date (`store.refresh`).

Plain data in, plain data out: the CLI renders `ApplyReport`.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from vault_tools import writer
from vault_tools.checks import CheckContext, check_note
from vault_tools.config import Settings
from vault_tools.errors import RefusedError, VtError
from vault_tools.findings import ERROR
from vault_tools.ledger import CHECK_KEYS, CLAIM_KEYS, Ledger, Transaction, canonical, iter_lines
from vault_tools.note import Note, parse_note
from vault_tools.pool import map_chunks
from vault_tools.preview import PREVIEW_FAILED, PREVIEW_READY, preview_hash
from vault_tools.validate import make_context
from vault_tools.vault import given_notes, list_vault, read_file

Progress = Callable[[int, int], None]

APPLIED = "APPLIED"
PENDING = "PENDING"
REQUEST_REPAIR = "REQUEST_REPAIR"
# review_action -> the ledger action it becomes
# fsync'd note rewrites in flight per core: ext4 commits concurrent fsyncs together
IO_WORKERS_PER_CPU = 4
ACTION_OF = {"APPROVE": "ACCEPT", "REJECT": "REJECT", "APPROVE_REPAIR": "REPAIR"}
REVIEW_ACTIONS = (PENDING, REQUEST_REPAIR, "APPROVE_REPAIR", "APPROVE", "REJECT")
SKIP_REQUEST_REPAIR = "preview, then set APPROVE_REPAIR"
# parse findings of text that must never reach the ledger, whatever the decision
NEVER_RECORDED = frozenset({"control-character", "number-too-large"})
DRAFTS_CHANGED = ("drafts changed since the preview; set review_action to REQUEST_REPAIR and "
                  "run vt preview")

# below this many notes a process pool costs more than it saves


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

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "claim_id": self.claim_id, "action": self.action,
                "id": self.id, "seq": self.seq, "new": self.new}


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
    events: list[dict] = field(default_factory=list)  # appended (or, dry run, would be)
    dry_run: bool = False
    refresh: Any = None  # store.RefreshResult
    refresh_error: VtError | None = None

    @property
    def failed(self) -> bool:
        return bool(self.refused)

    def to_json(self) -> dict[str, Any]:
        return {"applied": [a.to_json() for a in self.applied],
                "skipped": [s.to_json() for s in self.skipped],
                "refused": [r.to_json() for r in self.refused],
                "dry_run": self.dry_run}


# ---------------------------------------------------------------------------
# the claim a decision carries


def claim_base(claim: dict) -> str:
    """"sha256:" + sha256 of the canonical JSON of a claim dict (the V1 claim: `base`)."""
    return "sha256:" + hashlib.sha256(canonical(claim).encode("utf-8")).hexdigest()


def v1_claim(note: Note) -> dict[str, Any]:
    """The note's V1 claim; a part that is missing or does not parse is None."""
    claim, frame = note.claim, note.frame
    return {
        "atomic_claim": claim.text.value if claim is not None else None,
        "epistemic_mode": claim.epistemic_mode.value
        if claim is not None and claim.epistemic_mode is not None else None,
        "mapping_status": claim.mapping_status.value
        if claim is not None and claim.mapping_status is not None else None,
        "semantic_frame": frame.data if frame is not None and frame.ok else None,
    }


def v2_claim(note: Note) -> dict[str, Any] | None:
    """The claim of the V2 drafts (None without a V2 Draft section)."""
    drafts = note.drafts
    if drafts is None:
        return None
    meta = drafts.metadata.data if drafts.metadata is not None and drafts.metadata.ok else None
    meta = meta if isinstance(meta, dict) else {}
    return {
        "atomic_claim": drafts.claim.value if drafts.claim is not None else None,
        "epistemic_mode": meta.get("epistemic_mode"),
        "mapping_status": meta.get("mapping_status"),
        "semantic_frame": drafts.frame.data if drafts.frame is not None and drafts.frame.ok
        else None,
    }


def _claim_ok(claim: dict[str, Any] | None) -> bool:
    return (claim is not None and isinstance(claim.get("semantic_frame"), dict)
            and all(isinstance(claim.get(k), str) for k in CLAIM_KEYS if k != "semantic_frame"))


# ---------------------------------------------------------------------------
# who decided


def default_actor(settings: Settings) -> str:
    """The actor when a note names no reviewer: vt.toml, else git user.name, else the OS user."""
    if settings.actor:
        return settings.actor
    return _git_user(str(settings.vault)) or _os_user()


@lru_cache(maxsize=8)
def _git_user(folder: str) -> str | None:
    try:
        done = subprocess.run(["git", "config", "user.name"], cwd=folder, capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    name = done.stdout.strip()
    return name if done.returncode == 0 and name else None


def _os_user() -> str:
    try:
        return getpass.getuser() or "unknown"
    except (KeyError, OSError):  # no passwd entry (containers)
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"


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
    digest: str = ""  # of the bytes read: the note is marked only if it still has them
    signature: tuple[int, int, int] = (0, 0, 0)
    check_later: bool = False  # check_note not run yet (see _fill_decision)


def examine(settings: Settings, ctx: CheckContext, relative: str,
            explicit: bool = True) -> Candidate | None:
    """What `relative` asks apply to do; None for a note with nothing to say in a vault run."""
    try:
        snapshot = writer.read_snapshot(settings.vault / relative, settings.max_note_bytes)
    except VtError as exc:
        if not explicit and not _mentions_claim(settings, relative):
            return None
        reason = exc.message if exc.message.startswith("cannot read") \
            else f"cannot read: {exc.message}"
        return Candidate(relative, refuse=reason)
    raw = snapshot.raw
    if not explicit and b"claim_id" not in raw:
        return None
    note = parse_note(raw, relative)
    if not note.is_review_note:
        return Candidate(relative, refuse="not a review note (its frontmatter has no claim_id)") \
            if explicit else None
    props = note.properties
    action = props.get("review_action")
    action = PENDING if action is None else str(action)
    cand = Candidate(relative, note.claim_id, action,
                     review_state=_str_or_none(props.get("review_state")),
                     event_id=_str_or_none(props.get("vt_event_id")),
                     digest=hashlib.sha256(raw).hexdigest(), signature=snapshot.signature)
    if action == PENDING:
        if not explicit:
            return None
        cand.skip = "review_action is PENDING: nothing to apply"
    elif action == REQUEST_REPAIR:
        cand.skip = SKIP_REQUEST_REPAIR
    elif action not in ACTION_OF:
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
    action = ACTION_OF[str(cand.review_action)]
    checks = {key: props.get(key) is True for key in CHECK_KEYS}
    v1 = v1_claim(note)
    reviewer = props.get("reviewer")
    comment = props.get("review_comment")
    cand.decision = {
        "action": action,
        "actor": str(reviewer).strip() if reviewer is not None else "",
        "base": claim_base(v1),
        "checks": checks,
        "claim": None,
        "claim_id": note.claim_id,
        "comment": "" if comment is None else str(comment),
        "note": cand.path,
        "preview": None,
        "v": 1,
    }
    if action == "REJECT":
        return
    unchecked = [key for key in settings.required_checks if props.get(key) is not True]
    if unchecked:
        cand.problems.append(f"unchecked: {', '.join(unchecked)} (every required check must "
                             "be true to approve)")
    if action == "ACCEPT":
        cand.decision["claim"] = v1
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
    v2 = v2_claim(note)
    if v2 is None:
        cand.problems.append("the note has no V2 Draft section: run vt draft, edit the drafts, "
                             "set REQUEST_REPAIR and run vt preview")
        return
    cand.decision["claim"] = v2
    stated = note.properties.get("vt_preview_hash")
    cand.decision["preview"] = str(stated) if stated is not None else None
    if cand.review_state == PREVIEW_FAILED:
        cand.problems.append("the preview failed: fix the drafts, set review_action to "
                             "REQUEST_REPAIR and run vt preview")
    elif cand.review_state not in (PREVIEW_READY, APPLIED) or stated is None:
        cand.problems.append("no valid preview: set review_action to REQUEST_REPAIR and run "
                             "vt preview, then APPROVE_REPAIR")
    elif stated != preview_hash(note):
        cand.problems.append(DRAFTS_CHANGED)
    elif cand.review_state == APPLIED:
        # a preview is approved once: after an apply the reviewer previews again
        cand.problems.append("no valid preview since the last apply: set review_action to "
                             "REQUEST_REPAIR and run vt preview, then APPROVE_REPAIR")
    elif not _claim_ok(v2):
        cand.problems.append("the V2 drafts do not parse; set review_action to REQUEST_REPAIR "
                             "and run vt preview")


# ---------------------------------------------------------------------------
# phase 2: decide under the lock


@dataclass(slots=True)
class _Mark:
    """A note to mark APPLIED after the commit."""

    applied: Applied
    digest: str
    signature: tuple[int, int, int]


def _same_decision(decision: dict[str, Any], event: dict[str, Any]) -> bool:
    """Does `event` record this decision? Action, claim and approved preview decide it:
    who clicked, the comment or a moved note do not make a new decision."""
    return all(decision.get(k) == event.get(k) for k in ("action", "claim", "preview"))


def _probe(decision: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
    """The decision with the latest event's incidental fields, for `txn.recorded`: it then
    matches exactly when action, claim and preview are those the latest event records."""
    incidental = ("actor", "base", "checks", "comment", "note")
    return {**decision, **{k: latest[k] for k in incidental if k in latest}}


class _Decider:
    """Turns candidates into events inside one transaction."""

    def __init__(self, settings: Settings, txn: Transaction, report: ApplyReport,
                 ctx: CheckContext | None = None) -> None:
        self.settings = settings
        self.ctx = ctx
        self.txn = txn
        self.report = report
        self.marks: list[_Mark] = []
        self._actor: str | None = None

    def actor(self) -> str:
        if self._actor is None:
            self._actor = default_actor(self.settings)
        return self._actor

    def run(self, candidates: list[Candidate]) -> None:
        self.txn.look_up(c.claim_id for c in candidates if c.claim_id is not None)
        earlier: list[Candidate] = []
        for cand in candidates:
            if self._decide(cand, allow_earlier=True) is False:
                earlier.append(cand)
        if earlier:
            found = _events_by_id(self.txn, {c.event_id for c in earlier if c.event_id})
            for cand in earlier:
                self._decide(cand, allow_earlier=False, found=found)

    def _decide(self, cand: Candidate, allow_earlier: bool,
                found: dict[str, dict] | None = None) -> bool | None:
        """Decide one note. False: it needs the event its vt_event_id names (looked up in
        one pass for all such notes, then decided again)."""
        decision = cand.decision
        assert decision is not None and cand.claim_id is not None
        latest = self.txn.latest(cand.claim_id)
        if latest is not None and self.txn.recorded(_probe(decision, latest)) is not None:
            if cand.review_state == APPLIED and cand.event_id == latest["id"]:
                self._skip(cand, f"already applied: {latest['id']}")
            else:
                self._mark(cand, latest, new=False)  # a run crashed before marking it
            return None
        if cand.review_state == APPLIED and cand.event_id and (
                latest is None or cand.event_id != latest["id"]):
            if allow_earlier:
                return False
            event = (found or {}).get(cand.event_id)
            if event is not None and _same_decision(decision, event):
                self._skip(cand, _superseded_reason(event, latest))
                return None
        if cand.check_later:
            cand.problems += self._late_check(cand)
        if cand.problems:
            self.report.refused.append(Entry(cand.path, cand.claim_id, "; ".join(cand.problems)))
            return None
        # the latest event, looked up above, is what this decision supersedes
        event = self.txn.append({**decision, "actor": decision["actor"] or self.actor(),
                                 "supersedes": latest["id"] if latest else None})
        self.report.events.append(event)
        self._mark(cand, event, new=True)
        return None

    def _late_check(self, cand: Candidate) -> list[str]:
        """check_note for an approval found to be new only under the lock (rare)."""
        try:
            snapshot = writer.read_snapshot(self.settings.vault / cand.path)
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
        applied = Applied(cand.path, str(cand.claim_id), event["action"], event["id"],
                          event["seq"], event["ts"], new=new)
        self.report.applied.append(applied)
        self.marks.append(_Mark(applied, cand.digest, cand.signature))


def _superseded_reason(event: dict, latest: dict | None) -> str:
    if latest is not None and latest["action"] == "REVERT" and latest.get("reverts") == event["id"]:
        return (f"already applied as {event['id']}, which was reverted by {latest['id']}; "
                "to decide again, change review_action")
    later = f" (the claim's latest event is {latest['id']}, {latest['action']})" if latest else ""
    return f"already applied as {event['id']}{later}"


def _events_by_id(txn: Transaction, ids: set[str]) -> dict[str, dict]:
    """The ledger events with these ids, in one pass over the file (a rare path: notes
    applied before whose claim has moved on since)."""
    found: dict[str, dict] = {}
    needles = {f'"id":"{i}"'.encode(): i for i in ids}
    for end, raw in iter_lines(txn.ledger.path):
        if end > txn.start.size:
            break
        for needle, event_id in needles.items():
            if needle in raw:
                event = json.loads(raw)
                if event.get("id") == event_id:
                    found[event_id] = event
    return found


# ---------------------------------------------------------------------------
# phase 3: mark the notes


def mark_note(settings: Settings, path: str, digest: str, signature: tuple[int, int, int],
              event_id: str, ts: str) -> str | None:
    """Set review_state APPLIED, vt_event_id and vt_applied_at on a note that still has
    the bytes apply decided on. None when done; otherwise why the note was not marked."""
    try:
        snapshot = writer.read_snapshot(settings.vault / path)
    except VtError as exc:
        return f"cannot read: {exc.message}"
    if snapshot.signature != signature or hashlib.sha256(snapshot.raw).hexdigest() != digest:
        if _marked_as(snapshot.raw, path, event_id):
            return None  # another vt run (applying the same note) marked it meanwhile
        return "changed on disk since vt read it; not marked APPLIED"
    text = writer.set_properties(snapshot.text, {"review_state": APPLIED,
                                                 "vt_event_id": event_id, "vt_applied_at": ts})
    try:
        # the folder is fsynced once for the whole batch (_mark_all): group commit
        writer.write_if_changed(snapshot, text, sync_folder=False)
    except RefusedError as exc:
        try:
            if _marked_as(writer.read_snapshot(snapshot.path).raw, path, event_id):
                return None  # a concurrent run wrote the same marks first
        except VtError:
            pass
        return exc.message
    except VtError as exc:
        return exc.message
    return None


def _marked_as(raw: bytes, path: str, event_id: str) -> bool:
    props = parse_note(raw, path).properties
    return props.get("review_state") == APPLIED and props.get("vt_event_id") == event_id


def _mark_all(settings: Settings, marks: list[_Mark], report: ApplyReport,
              progress: Progress | None) -> None:
    """Mark the notes; meanwhile (the markers mostly wait on fsync) refresh the Claim
    Store, which depends on the durable ledger alone, not on the notes."""
    jobs = [(m.applied.path, m.digest, m.signature, m.applied.id, m.applied.ts) for m in marks]
    outcomes = _pooled(settings, _mark_chunk, jobs, progress, io_bound=True,
                       meanwhile=lambda: _refresh(settings, report))
    try:
        writer.sync_folders(settings.vault / m.applied.path for m in marks)
    except VtError as exc:  # the marks are in place but may not survive a crash
        report.refused.append(Entry(exc.path or "", None, f"{exc.message}; run vt apply "
                                    "again after a crash to mark the notes"))
    for mark, problem in zip(marks, outcomes, strict=True):
        if problem is None:
            mark.applied.marked = True
        else:
            report.refused.append(Entry(
                mark.applied.path, mark.applied.claim_id,
                f"{problem}; the decision is in the ledger ({mark.applied.id}): run vt apply "
                "again to mark the note"))


def _mark_chunk(settings: Settings, ctx: CheckContext | None,
                jobs: list[tuple]) -> list[str | None]:
    return [mark_note(settings, *job) for job in jobs]


# ---------------------------------------------------------------------------
# the run


def apply_notes(settings: Settings, paths: list[Path] | None = None, dry_run: bool = False,
                progress: Progress | None = None) -> ApplyReport:
    """`vt apply [NOTE…]`: every decided note of the vault, or the notes given."""
    report = ApplyReport(dry_run=dry_run)
    listing = list_vault(settings.vault)
    ctx = make_context(settings, listing, assist=False)  # apply decides on errors only
    if paths:
        targets = _explicit_targets(settings, paths, report)
    else:
        targets = list(listing.inside())
        # a folder or file that cannot be read may hold decisions: never passed over
        report.refused += [Entry(f.path, None, f.message)
                           for f in listing.findings(settings.claims_dir)]
    examined = _pooled(settings, _examine_chunk, targets, progress, ctx=ctx,
                       explicit=bool(paths))
    candidates = _sorted_out(report, [c for c in examined if c is not None])
    if not candidates:
        return report
    with _transaction(settings, dry_run) as txn:
        decider = _Decider(settings, txn, report, ctx)
        decider.run(candidates)
    for entries in (report.applied, report.skipped, report.refused):
        entries.sort(key=lambda e: e.path)
    if dry_run:
        return report
    _mark_all(settings, decider.marks, report, progress)
    report.refused.sort(key=lambda e: e.path)
    return report


def _explicit_targets(settings: Settings, paths: list[Path], report: ApplyReport) -> list[str]:
    targets: list[str] = []
    for relative, problem in given_notes(settings.vault, paths):
        if problem is None:
            targets.append(relative)
        else:
            report.refused.append(Entry(relative, None, problem.message))
    return targets


def _sorted_out(report: ApplyReport, candidates: list[Candidate]) -> list[Candidate]:
    """Report skipped and refused notes; the rest, in path order, go to the decider."""
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
            report.refused.append(Entry(cand.path, cand.claim_id,
                                        f"claim_id {cand.claim_id} is also used by "
                                        f"{', '.join(others)}; one note per claim"))
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
        with Ledger(settings.ledger_path, settings.state_dir).transaction() as txn:
            yield txn
        return
    with TemporaryDirectory(prefix="vt-dry-run-") as scratch:
        if settings.ledger_path.exists():
            ledger = Ledger(settings.ledger_path, settings.state_dir)
        else:
            ledger = Ledger(Path(scratch) / "ledger.jsonl", Path(scratch) / "state")
        try:
            with ledger.transaction() as txn:
                yield txn
                raise _DryRun
        except _DryRun:
            pass


def _refresh(settings: Settings, report: ApplyReport) -> None:
    """Bring the Claim Store and the knowledge-base blocks up to date. The events are
    durable and the notes marked: a failure here is reported, and the next command that
    reads the store catches up."""
    from vault_tools.store import refresh

    try:
        report.refresh = refresh(settings)
    except VtError as exc:
        report.refresh_error = exc


# ---------------------------------------------------------------------------
# the process pool


def _examine_chunk(settings: Settings, ctx: CheckContext | None, chunk: list[str],
                   explicit: bool = False) -> list[Candidate | None]:
    assert ctx is not None
    return [examine(settings, ctx, relative, explicit) for relative in chunk]


def _pooled(settings: Settings, function: Callable, items: list, progress: Progress | None,
            ctx: CheckContext | None = None, io_bound: bool = False,
            meanwhile: Callable[[], None] | None = None, **kwargs: Any) -> list:
    """`function(settings, ctx, chunk, **kwargs)` over chunks of `items`, in order; in
    forked workers when there are enough items. fsync-bound work gets more workers than
    cores: the disk, not the CPU, is what they wait for."""
    cpus = settings.workers or os.cpu_count() or 1
    workers = cpus * IO_WORKERS_PER_CPU if io_bound and not settings.workers else cpus
    work = partial(function, settings, ctx, **kwargs)
    return list(map_chunks(work, items, workers=workers, progress=progress,
                           meanwhile=meanwhile))


