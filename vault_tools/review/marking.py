"""Phase 3 of apply (docs/workflow.md): mark a note APPLIED once its event is durable;
and, after a pull, every note's marks recomputed from the merged ledger (`remark_notes`).

The one rewrite apply makes of a note, and only of the bytes apply decided on: a note
edited meanwhile is left alone (its reviewer's edit wins, and the next run sees it).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from vault_tools.config import Settings
from vault_tools.errors import IOFailure, RefusedError, VtError
from vault_tools.infra.filestat import Signature
from vault_tools.infra.pool import map_chunks
from vault_tools.ledger.faults import crash_point
from vault_tools.ledger.heads import same_decision
from vault_tools.notes import writer
from vault_tools.notes.conflicts import has_conflict
from vault_tools.notes.frontmatter import may_name
from vault_tools.notes.identity import content_digest
from vault_tools.notes.note import parse_note
from vault_tools.notes.owned_properties import set_properties
from vault_tools.notes.vault import list_vault
from vault_tools.review.claim_record import decision_content
from vault_tools.review.verdict import AGREES, judge
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import APPLIED, review_action


def mark_note(
    settings: Settings,
    path: str,
    digest: str,
    signature: Signature,
    event_id: str,
    ts: str,
) -> str | IOFailure | None:
    """Set review_state APPLIED, vt_event_id and vt_applied_at on a note that still has
    the bytes apply decided on. None when done; otherwise why the note was not marked
    (the IOFailure itself when the system failed the write)."""
    try:
        snapshot = writer.read_snapshot(settings.vault / path, settings.max_note_bytes)
    except VtError as exc:
        return f"cannot read: {exc.message}"
    if snapshot.signature != signature or content_digest(snapshot.raw) != digest:
        if _marked_as(snapshot.raw, path, event_id):
            return None  # another vt run (applying the same note) marked it meanwhile
        return "changed on disk since vt read it; not marked APPLIED"
    text = set_properties(
        snapshot.text, {"review_state": APPLIED, "vt_event_id": event_id, "vt_applied_at": ts}
    )
    try:
        # the folder is fsynced once for the whole batch (apply's _mark_all): group commit
        writer.write_if_changed(snapshot, text, sync_folder=False, root=settings.vault)
        crash_point("after-mark")
    except RefusedError as exc:
        try:
            if _marked_as(
                writer.read_snapshot(snapshot.path, settings.max_note_bytes).raw, path, event_id
            ):
                return None  # a concurrent run wrote the same marks first
        except VtError:
            pass
        return exc.message
    except IOFailure as exc:
        return exc
    except VtError as exc:
        return exc.message
    return None


# fsync'd note rewrites in flight per core: ext4 commits concurrent fsyncs together, and a
# thread waiting on fsync holds no lock
MARKERS_PER_CPU = 4
# below this many notes they are marked one after the other: a thread costs more than the
# fsyncs it would overlap, and a crash test's "first note marked, the rest not" holds
THREADED_FROM = 64

Mark = tuple[str, str, Signature, str, str]  # mark_note's arguments after `settings`
Marked = str | IOFailure | None  # mark_note's answer


def mark_notes(
    settings: Settings,
    marks: Iterable[Mark],
    count: int,
    meanwhile: Callable[[], None] | None = None,
) -> Iterator[Marked]:
    """`mark_note` for each of `marks` (an iterable of `count`), answers in their order as
    they come. Many notes are marked by threads, MARKERS_PER_CPU a core (or the
    configured `workers`), a bounded number in flight, so a stream of marks is never
    all in memory. `meanwhile()` runs in a thread of its own beside them (after them
    when they are few); its exception is raised once every answer is yielded."""
    aside = _Aside(meanwhile) if meanwhile and count >= THREADED_FROM else None
    try:
        if count < THREADED_FROM:
            for mark in marks:
                yield mark_note(settings, *mark)
        else:
            threads = settings.workers or (os.cpu_count() or 1) * MARKERS_PER_CPU
            yield from _threaded(settings, marks, threads)
    finally:
        if aside is not None:
            aside.join()
    if aside is not None:
        aside.reraise()
    elif meanwhile is not None:
        meanwhile()


def _threaded(settings: Settings, marks: Iterable[Mark], threads: int) -> Iterator[Marked]:
    in_flight: deque[Future[Marked]] = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="vt-mark") as pool:
        try:
            for mark in marks:
                in_flight.append(pool.submit(mark_note, settings, *mark))
                if len(in_flight) >= 2 * threads:
                    yield in_flight.popleft().result()
            while in_flight:
                yield in_flight.popleft().result()
        finally:  # a caller that stopped reading: what was not started is not started
            for future in in_flight:
                future.cancel()


class _Aside(threading.Thread):
    """`meanwhile`, run in a thread while the markers mark."""

    def __init__(self, function: Callable[[], None]):
        super().__init__(name="vt-meanwhile", daemon=True)
        self.function = function
        self.failure: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.function()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            self.failure = exc

    def reraise(self) -> None:
        if self.failure is not None:
            raise self.failure


def _marked_as(raw: bytes, path: str, event_id: str) -> bool:
    props = parse_note(raw, path).properties
    return props.get("review_state") == APPLIED and props.get("vt_event_id") == event_id


# ---------------------------------------------------------------------------
# after a pull: every note marked as the merged ledger says


@dataclass(frozen=True, slots=True)
class _Marks:
    """What one review note decides and how vt marked it (small: it crosses processes)."""

    path: str
    claim_id: str
    decision: dict
    state: str | None  # review_state
    event_id: str | None  # vt_event_id
    digest: str
    signature: Signature


@dataclass(slots=True)
class Remarked:
    marked: list[str] = field(default_factory=list)  # notes whose marks were rewritten
    problems: list[str] = field(default_factory=list)  # notes that could not be, and why


def remark_notes(settings: Settings) -> Remarked:
    """Every review note's marks (`review_state`, `vt_event_id`, `vt_applied_at`) made to
    agree with the ledger, as `mark_note` writes them for apply; nothing is appended.

    Two clones that both marked a note leave the merge with one side's marks (the note
    driver keeps ours): a note whose decision the claim's heads record is marked with
    the head that records it, the one apply would name (`judge`). In a CONFLICT a note
    already APPLIED is marked with the head recording its own decision, so every clone
    shows the same marks; a note not APPLIED keeps its state (a PREVIEW_READY repair
    must stay approvable to settle the claim). Notes whose decision no head records,
    notes with conflict markers and notes edited meanwhile are left alone."""
    result = Remarked()
    listing = list_vault(settings.vault)
    # read before the store opens: the workers are forked without its connection
    found = list(
        map_chunks(partial(_read_chunk, settings), list(listing.inside()), workers=settings.workers)
    )
    jobs: list[tuple[_Marks, dict]] = []
    with ClaimStore.open(settings) as store:
        store.catch_up()
        for marks in found:
            head = None if marks is None else _head_to_name(marks, store)
            if marks is not None and head is not None:
                jobs.append((marks, head))
    for marks, head in jobs:
        path = marks.path
        problem = mark_note(settings, path, marks.digest, marks.signature, head["id"], head["ts"])
        if problem is None:
            result.marked.append(path)
        else:
            message = problem.message if isinstance(problem, IOFailure) else problem
            result.problems.append(f"{path}: {message}; run vt apply to mark it")
    try:
        writer.sync_folders(settings.vault / path for path in result.marked)
    except VtError as exc:
        result.problems.append(f"{exc.path}: {exc.message}")
    return result


def _head_to_name(marks: _Marks, store: ClaimStore) -> dict | None:
    """The head the note is to be marked with; None when its marks stand as they are."""
    heads = store.heads(marks.claim_id)
    applied_id = marks.event_id if marks.state == APPLIED else None
    verdict = judge(marks.decision, heads, applied_id, store.event)
    if verdict.kind == AGREES:
        head = verdict.event
    elif marks.state == APPLIED:
        recording = [h for h in heads if same_decision(marks.decision, h)]
        head = next((h for h in recording if h["id"] == applied_id), None)
        head = head or (recording[-1] if recording else None)
    else:
        head = None
    if head is None or head["id"] == applied_id:
        return None
    return head


def _read_chunk(settings: Settings, chunk: list[str]) -> list[_Marks | None]:
    return [_read_marks(settings, relative) for relative in chunk]


def _read_marks(settings: Settings, relative: str) -> _Marks | None:
    try:
        snapshot = writer.read_snapshot(settings.vault / relative, settings.max_note_bytes)
    except VtError:
        return None  # vt validate and vt status report what cannot be read
    if not may_name(snapshot.raw, b"claim_id"):
        return None
    note = parse_note(snapshot.raw, relative)
    if has_conflict(note.findings) is not None or not note.is_review_note:
        return None
    props = note.properties
    decision = decision_content(note, review_action(props))
    if decision is None or note.claim_id is None:
        return None
    state, event_id = props.get("review_state"), props.get("vt_event_id")
    return _Marks(
        relative,
        note.claim_id,
        decision,
        None if state is None else str(state),
        None if event_id is None else str(event_id),
        content_digest(snapshot.raw),
        snapshot.signature,
    )
