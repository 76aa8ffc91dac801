"""`vt status`: the review queue at a glance (docs/json-output.md).

Notes by `review_action` and `review_state`; previews gone stale (the drafts changed after
`vt preview` recorded `vt_preview_hash`); notes marked APPLIED whose decision no longer
matches the ledger event they name (`vt_event_id`); notes whose decision disagrees with
their claim's latest event(s) (`verdict.judge`, the comparison apply decides by); claims
in CONFLICT, with their heads and what settles them; the ledger head.
A note is parsed only when it changed since the last run kept what status needs of it
(notes/facts.py; in forked workers when many did); the claim statuses come from the
Claim Store, caught up first.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from vault_tools.checks.file_checks import Tap
from vault_tools.config import Settings
from vault_tools.errors import UsageError
from vault_tools.findings import Finding
from vault_tools.ledger.heads import same_decision
from vault_tools.notes.conflicts import GIT_CONFLICT, has_conflict
from vault_tools.notes.facts import NoteFacts, surveyed
from vault_tools.notes.frontmatter import may_name
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import Listing, list_vault, read_file, read_finding
from vault_tools.review.actor import Runner, decided_by, runner, runner_of
from vault_tools.review.claim_record import decision_content
from vault_tools.review.fingerprint import preview_current, recorded_preview_hash
from vault_tools.review.verdict import AGREES, DIFFERS, FIRST, REVERTED, describe_head, judge
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import (
    APPLIED,
    APPROVE_REPAIR,
    PREVIEW_FAILED,
    REPAIR,
    REQUEST_REPAIR,
    REVIEW_ACTIONS,
    review_action,
    review_state,
)

Progress = Callable[[int, int], None]

UNMARKED = "unmarked"  # the ledger records the note's decision; the note does not say so
OTHERS = "others"  # a teammate's decision, not recorded yet: their own vt apply records it
SETTLE = (
    "resolve the note, set review_action to the final decision (reviewer: yourself) and "
    "run vt apply: one new event in your name then supersedes every head"
)


@dataclass(frozen=True, slots=True)
class NoteInfo:
    """What status needs of one review note (small: it crosses process boundaries)."""

    path: str
    claim_id: str
    action: str
    state: str
    stale_preview: bool
    event_id: str | None  # vt_event_id
    decision: dict | None  # what the note's review_action decides (`decision_content`)
    reviewer: str = ""  # whose decision the note is ("": whoever runs vt apply)


@dataclass(slots=True)
class StatusReport:
    notes: int = 0
    by_action: dict[str, int] = field(default_factory=dict)
    by_state: dict[str, int] = field(default_factory=dict)
    claims: dict[str, int] = field(default_factory=dict)
    # notes whose review_action is none of the review actions: no command acts on them
    unknown_actions: list[dict[str, Any]] = field(default_factory=list)
    stale_previews: list[dict[str, Any]] = field(default_factory=list)
    edited_since_apply: list[dict[str, Any]] = field(default_factory=list)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    ledger_head: dict[str, Any] = field(default_factory=dict)
    # files and folders that could not be read (each may hide a review note), by path
    unreadable: list[Finding] = field(default_factory=list)
    # notes left with git conflict markers by a merge: no decision is read from them
    git_conflicts: list[Finding] = field(default_factory=list)
    # not in `to_json`; for the dashboard: review_action -> review_state -> notes
    by_action_and_state: dict[str, dict[str, int]] = field(default_factory=dict)
    # repair notes whose last `vt preview` failed (review_state PREVIEW_FAILED)
    failed_previews: list[dict[str, Any]] = field(default_factory=list)
    # notes whose decision this user's `vt apply` would record now (none recorded yet, or
    # a new one): the dashboard asks apply's own checks which of them it would refuse
    to_record: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "notes": self.notes,
            "by_action": self.by_action,
            "by_state": self.by_state,
            "claims": self.claims,
            "unknown_actions": self.unknown_actions,
            "stale_previews": self.stale_previews,
            "edited_since_apply": self.edited_since_apply,
            "disagreements": self.disagreements,
            "conflicts": self.conflicts,
            "ledger_head": self.ledger_head,
            "unreadable": [f.to_json() for f in self.unreadable],
            "git_conflicts": [f.to_json() for f in self.git_conflicts],
        }


def _prop(note: Note, key: str, default: str | None) -> str | None:
    value = note.properties.get(key)
    return default if value is None or value == "" else str(value)


def _stale(note: Note, action: str) -> bool:
    """A repair note that records a preview no longer made from its drafts."""
    if action not in (REQUEST_REPAIR, APPROVE_REPAIR):
        return False
    return recorded_preview_hash(note.properties) is not None and not preview_current(note)


def note_info(settings: Settings, relative: str) -> NoteInfo | Finding | None:
    """One vault file's status, None when it is not a review note, or the finding why it
    could not be read."""
    try:
        raw, _ = read_file(os.path.join(settings.vault, relative), settings.max_note_bytes)
    except OSError as exc:
        return read_finding(relative, exc)
    return info_of(relative, raw)


def info_of(relative: str, raw: bytes, note: Note | None = None) -> NoteInfo | Finding | None:
    """`note_info` of a file's bytes (`note`: those bytes parsed already, if they were)."""
    if not may_name(raw, b"claim_id"):
        return None
    if note is None:
        note = parse_note(raw, relative)
    conflict = has_conflict(note.findings)
    if conflict is not None:
        return conflict  # what it decides cannot be read until the merge is resolved
    if not note.is_review_note:
        return None
    action = review_action(note.properties)
    state = review_state(note.properties)
    return NoteInfo(
        relative,
        note.claim_id or "",
        action,
        state,
        _stale(note, action),
        _prop(note, "vt_event_id", None),
        decision_content(note, action),
        (_prop(note, "reviewer", "") or "").strip(),
    )


def _edited(info: NoteInfo, event: dict | None) -> str | None:
    """Why an APPLIED note no longer says what the ledger recorded (`event`, the one its
    vt_event_id names); None if it does."""
    if info.event_id is None:
        return "marked APPLIED but has no vt_event_id"
    if event is None:
        return f"vt_event_id {info.event_id} is not in the ledger"
    if info.decision is None or info.decision["action"] != event["action"]:
        return f"review_action is now {info.action}; {event['action']} was applied"
    if event["claim_id"] != info.claim_id:
        return f"claim_id is now {info.claim_id}; the event is for {event['claim_id']}"
    if not same_decision(info.decision, event):
        action = event["action"]
        what = "the V2 drafts" if action == REPAIR else "the claim"
        return f"{what} changed since {action} was applied"
    return None


def _head_json(event: dict) -> dict[str, Any]:
    return {k: event[k] for k in ("id", "action", "actor", "ts", "note")}


def _disagreement(
    info: NoteInfo, heads: list[dict], store: ClaimStore, recorder: Callable[[str], bool]
) -> dict | None:
    """The note's entry in `disagreements`, if its decision is not what its claim's heads
    record (or the note does not name the event that records it); None otherwise.
    `recorder(reviewer)`: whether this user's vt apply would record the note's decision."""
    assert info.decision is not None
    applied_id = info.event_id if info.state == APPLIED else None
    verdict = judge(info.decision, heads, applied_id, store.event)
    kind = verdict.kind
    if kind == FIRST:
        return None
    shown = ", ".join(describe_head(h) for h in heads)
    if kind == AGREES:
        assert verdict.event is not None
        if applied_id == verdict.event["id"]:
            return None
        kind = UNMARKED
        reason = (
            f"the ledger records this decision ({verdict.event['id']}) but the note "
            "is not marked with it: run vt apply to mark it"
        )
    elif kind == REVERTED:
        reason = (
            f"its decision was reverted ({shown}); vt apply will not apply it again: "
            "change review_action to decide again"
        )
    elif not recorder(info.reviewer):
        kind = OTHERS
        reason = f"review_action is {info.action}; {decided_by(info.reviewer)}"
    elif len(heads) == 1:
        reason = (
            f"review_action is {info.action}; the claim's latest event is {shown}: "
            f"run vt apply to record {info.action}"
        )
    else:
        reason = (
            f"review_action is {info.action}; the claim is in CONFLICT between {shown}: "
            f"run vt apply to settle it with {info.action}"
        )
    assert kind in (UNMARKED, REVERTED, DIFFERS, OTHERS)
    return {
        "path": info.path,
        "claim_id": info.claim_id,
        "review_action": info.action,
        "kind": kind,
        "heads": [_head_json(h) for h in heads],
        "reason": reason,
    }


def _conflict(claim_id: str, store: ClaimStore) -> dict[str, Any]:
    """A claim in CONFLICT: its heads, the latest last, and what settles it."""
    heads = store.heads(claim_id)
    record = store.claim(claim_id)
    return {
        "claim_id": claim_id,
        "note": record.note if record is not None else heads[-1]["note"],
        "heads": [_head_json(h) for h in heads],
        "unseen": [h["id"] for h in heads[:-1]],  # heads the latest decision did not see
        "settle": SETTLE,
    }


def status(settings: Settings, store: ClaimStore, progress: Progress | None = None) -> StatusReport:
    """The vault's review status; `store` must be caught up by the caller."""
    return assemble(*survey(settings, store, progress), store)


def survey(
    settings: Settings,
    store: ClaimStore,
    progress: Progress | None = None,
    kept: NoteFacts | None = None,
    listing: Listing | None = None,
) -> tuple[list[NoteInfo], list[NoteEntries], list[Finding]]:
    """The review notes of the vault with their entries, in path order, and the files
    that could not be read (see `assemble`); `kept`: the status facts, when the caller
    holds them (see `status_tap`); `listing`: the vault's, when the caller listed it."""
    listing = list_vault(settings.vault) if listing is None else listing
    infos: list[NoteInfo] = []
    unreadable = listing.findings(settings.claims_dir)
    for info in _run(settings, list(listing.inside()), progress, kept):
        if isinstance(info, NoteInfo):
            infos.append(info)
        elif info is not None:
            unreadable.append(info)
    recorder = recorder_of(settings)
    return infos, [note_entries(i, store, recorder) for i in infos], unreadable


class NoteEntries(NamedTuple):
    """What one review note adds to the report's lists (None: nothing); a function of
    the note and of its claim's events, so a caller that keeps them (the dashboard)
    makes them again only for a note that changed, or when the ledger did."""

    unknown: dict[str, Any] | None
    stale: dict[str, Any] | None
    edited: dict[str, Any] | None
    failed: dict[str, Any] | None
    disagreement: dict[str, Any] | None
    to_record: bool


def note_entries(info: NoteInfo, store: ClaimStore, recorder: Callable[[str], bool]) -> NoteEntries:
    """`info`'s entries in the report (see `recorder_of` for `recorder`)."""
    brief = {"path": info.path, "claim_id": info.claim_id, "review_action": info.action}
    unknown = dict(brief) if info.action not in REVIEW_ACTIONS else None
    stale = dict(brief) if info.stale_preview else None
    failed = (
        brief
        if info.state == PREVIEW_FAILED and info.action in (REQUEST_REPAIR, APPROVE_REPAIR)
        else None
    )
    heads = store.heads(info.claim_id) if info.decision is not None else []
    edited = None
    if info.state == APPLIED:
        named = next((h for h in heads if h["id"] == info.event_id), None)
        if named is None and info.event_id is not None:
            named = store.event(info.event_id)
        reason = _edited(info, named)
        if reason is not None:
            edited = {
                "path": info.path,
                "claim_id": info.claim_id,
                "event_id": info.event_id,
                "reason": reason,
            }
    entry, to_record = None, False
    if info.decision is not None:
        entry = _disagreement(info, heads, store, recorder)
        first = not heads and info.state != APPLIED and recorder(info.reviewer)
        to_record = first or (entry is not None and entry["kind"] == DIFFERS)
    return NoteEntries(unknown, stale, edited, failed, entry, to_record)


def assemble(
    infos: list[NoteInfo],
    entries: list[NoteEntries],
    unreadable: list[Finding],
    store: ClaimStore,
) -> StatusReport:
    """The report of review notes `infos` (with their `note_entries`, in the same order)
    and of the files that could not be read (git conflict markers among them)."""
    conflicted = sorted(f for f in unreadable if f.code == GIT_CONFLICT)
    unreadable = [f for f in unreadable if f.code != GIT_CONFLICT]
    report = StatusReport(notes=len(infos), unreadable=sorted(unreadable))
    report.git_conflicts = conflicted
    report.by_action = dict(sorted(Counter(i.action for i in infos).items()))
    report.by_state = dict(sorted(Counter(i.state for i in infos).items()))
    pairs = Counter((i.action, i.state) for i in infos)
    for (action, state), count in sorted(pairs.items()):
        report.by_action_and_state.setdefault(action, {})[state] = count
    report.claims = store.status_counts()
    for info, found in zip(infos, entries, strict=True):
        if found.unknown is not None:
            report.unknown_actions.append(found.unknown)
        if found.stale is not None:
            report.stale_previews.append(found.stale)
        if found.edited is not None:
            report.edited_since_apply.append(found.edited)
        if found.failed is not None:
            report.failed_previews.append(found.failed)
        if found.disagreement is not None:
            report.disagreements.append(found.disagreement)
        if found.to_record:
            report.to_record.append(info.path)
    report.conflicts = [_conflict(claim_id, store) for claim_id in store.conflicts()]
    seq, hash_ = store.head()
    report.ledger_head = {"seq": seq, "hash": hash_}
    return report


def recorder_of(settings: Settings) -> Callable[[str], bool]:
    """Whether this user's vt apply records a note whose reviewer is the argument: apply's
    own rule (review/actor.py), the runner found only when a note needs it."""
    if settings.record_for_reviewers:
        return lambda reviewer: True
    found: list[Runner] = []

    def records(reviewer: str) -> bool:
        if not reviewer:
            return True
        if not found:
            try:
                found.append(runner_of(settings))
            except UsageError:  # no usable signing key: judged by the plain name
                found.append(runner(settings))
        return found[0].decided(reviewer)

    return records


# ---------------------------------------------------------------------------
# reading the notes: those unchanged since the last survey from the kept facts
# (notes/facts.py), the others parsed now, in forked workers when there are many

STATUS_FACTS = "status"  # the kind of fact kept
_FINDING, _NOTE = "finding", "note"


def _run(
    settings: Settings, targets: list[str], progress: Progress | None, kept: NoteFacts | None
) -> Iterable[NoteInfo | Finding | None]:
    found = surveyed(settings, targets, STATUS_FACTS, (status_fact, _unread), progress, kept)
    return [from_fact(fact) for _, fact in found]


def status_fact(relative: str, raw: bytes, note: Note | None = None) -> tuple | None:
    """`info_of` as plain data, to be kept (see `from_fact`)."""
    return fact_of(info_of(relative, raw, note))


def fact_of(info: NoteInfo | Finding | None) -> tuple | None:
    """What `info_of` gave, as plain data (see `from_fact`)."""
    if info is None:
        return None
    if isinstance(info, Finding):
        return (_FINDING, tuple(info))
    return (_NOTE, *(getattr(info, name) for name in NoteInfo.__slots__))


def status_tap(settings: Settings) -> tuple[Tap, NoteFacts]:
    """A tap for `vt validate` (checks/file_checks.py) that keeps the status facts of
    the notes it reads, so that a `status` after it parses none of them again; save the
    facts once validate is done."""
    facts = NoteFacts.open(settings, STATUS_FACTS)
    return Tap(status_fact, facts.keep), facts


def _unread(relative: str, exc: OSError) -> tuple:
    return (_FINDING, tuple(read_finding(relative, exc)))


def from_fact(fact: Any) -> NoteInfo | Finding | None:
    """What `status_fact` kept, as `info_of` gave it."""
    if fact is None:
        return None
    if fact[0] == _FINDING:
        return Finding(*fact[1])
    return NoteInfo(*fact[1:])
