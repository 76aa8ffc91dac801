"""`vt watch`: re-validate and preview review notes as they are saved (watchdog, inotify).

One worker thread does all the work, one note at a time, so a stop request always
lets the current note finish (writes are atomic anyway) and nothing runs twice at
once. The observer thread only files paths into a `Debouncer`; a path is handled once
it has been quiet for the debounce period, which folds an editor's burst of saves
(Obsidian saves while you type) and its save patterns (write a temp file and rename it
over the note; delete + create) into one check of the final content.

Never a loop with the editor: the content digest of every note vt has handled —
including what vt itself just wrote — is remembered per path, and an event whose file
content equals it is an echo and is dropped. `preview_note` never writes a
byte-identical file, and it is only called when a REQUEST_REPAIR note's drafts differ
from the ones its preview was made from.

Plain data out: every outcome is a `WatchEvent` dataclass handed to a callback; the
CLI's reporter renders them (live view, plain lines or a JSON stream).
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from watchdog.events import FileSystemEventHandler

from vault_tools.checks.context import CheckContext, make_context
from vault_tools.checks.file_checks import check_file
from vault_tools.checks.validate import validate
from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.findings import ERROR, WARNING, Finding, severity_counts
from vault_tools.infra.debounce import Debouncer
from vault_tools.infra.filestat import stat_signature
from vault_tools.notes import markers
from vault_tools.notes.frontmatter import may_name
from vault_tools.notes.frontmatter import read as read_frontmatter
from vault_tools.notes.identity import content_digest, read_with_stat
from vault_tools.notes.kb import KnowledgeBase
from vault_tools.notes.note import Note, decode, parse_note
from vault_tools.notes.vault import (
    MarkdownFile,
    is_note_path,
    markdown_files,
    read_finding,
)
from vault_tools.review.fingerprint import preview_current
from vault_tools.review.preview import BLOCK as PREVIEW_BLOCK
from vault_tools.review.preview import preview_note
from vault_tools.vocabulary import APPLIED as APPLIED_STATE
from vault_tools.vocabulary import (
    LEDGER_ACTION_OF,
    PREVIEW_FAILED,
    PREVIEW_READY,
    REQUEST_REPAIR,
    UNSET,
    review_action,
    review_state,
)

if TYPE_CHECKING:  # made on the first refresh of a dashboard
    from vault_tools.integrations.dashboard_state import LiveDashboard

DEFAULT_DEBOUNCE = 0.150  # seconds of quiet per path before it is handled
RESYNC = "\0resync"  # debouncer key: compare the vault's files with what the watcher knows
DASHBOARD = "\0dashboard"  # debouncer key: refresh the Review Dashboard note (vt report)
DASHBOARD_QUIET = 2.0  # seconds without a review-note change before the dashboard refresh
REVIEW_EVENTS = frozenset({"validated", "previewed", "applied", "deleted"})
APPLY_ACTIONS = frozenset(LEDGER_ACTION_OF)
# a note written by vt is re-checked; a save racing vt's write may need a second round
MAX_ROUNDS = 3

# event names of the stream
READY = "ready"
VALIDATED = "validated"
PREVIEWED = "previewed"
APPLIED = "applied"
SKIPPED = "skipped"  # apply had nothing to do (e.g. already applied), and why
REFUSED = "refused"  # apply refused the decision (an unchecked check, a stale preview, …)
DELETED = "deleted"
ERROR_EVENT = "error"
DASHBOARD_EVENT = "dashboard"  # the Review Dashboard note was rewritten
STOPPED = "stopped"

Progress = Callable[[int, int], None]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class WatchEvent:
    """One thing the watcher did or noticed (rendered by the CLI's reporter)."""

    event: str
    path: str | None = None
    claim_id: str | None = None
    findings: tuple[Finding, ...] = ()
    state: str | None = None  # the note's review_state after the event
    review_action: str | None = None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    ts: str = field(default_factory=_now)

    @property
    def errors(self) -> int:
        return severity_counts(self.findings)[0]

    @property
    def warnings(self) -> int:
        return severity_counts(self.findings)[1]


# ---------------------------------------------------------------------------
# the review queue: counts kept up to date from every check


@dataclass(slots=True)
class NoteStatus:
    claim_id: str | None
    review_action: str | None
    review_state: str | None
    errors: int
    warnings: int
    digest: str  # of the bytes this status describes: an event with equal bytes is an echo
    stat: tuple[int, ...] = ()
    generation: int = 0  # of the knowledge-base context the note was checked against
    findings: tuple[Finding, ...] = ()  # the note's findings now (the live view's panel)


class ReviewQueue:
    """Per-note review fields and the counts over them, updated one note at a time."""

    def __init__(self) -> None:
        self.notes: dict[str, NoteStatus] = {}
        self.by_action: Counter[str] = Counter()
        self.by_state: Counter[str] = Counter()
        self.invalid = 0  # notes with at least one error
        self.flagged: dict[str, NoteStatus] = {}  # the notes with findings
        self._lock = threading.Lock()  # the live view reads the counts from another thread

    def set(self, path: str, status: NoteStatus) -> None:
        with self._lock:
            self._drop(path)
            self.notes[path] = status
            self.by_action[status.review_action or UNSET] += 1
            self.by_state[status.review_state or UNSET] += 1
            self.invalid += status.errors > 0
            if status.findings:
                self.flagged[path] = status

    def remove(self, path: str) -> NoteStatus | None:
        with self._lock:
            return self._drop(path)

    def _drop(self, path: str) -> NoteStatus | None:
        old = self.notes.pop(path, None)
        self.flagged.pop(path, None)
        if old is not None:
            for counter, key in (
                (self.by_action, old.review_action),
                (self.by_state, old.review_state),
            ):
                counter[key or UNSET] -= 1
                if counter[key or UNSET] <= 0:
                    del counter[key or UNSET]
            self.invalid -= old.errors > 0
        return old

    def with_findings(self, limit: int) -> tuple[int, list[tuple[str, NoteStatus]]]:
        """How many notes still have findings, and the first `limit` of them: those with
        errors first, then by path (a note leaves as soon as a save fixes it)."""
        with self._lock:
            first = heapq.nsmallest(
                limit, self.flagged.items(), key=lambda item: (item[1].errors == 0, item[0])
            )
            return len(self.flagged), first

    def counts(self) -> dict[str, Any]:
        with self._lock:
            return {
                "notes": len(self.notes),
                "invalid": self.invalid,
                "by_action": dict(sorted(self.by_action.items())),
                "by_state": dict(sorted(self.by_state.items())),
            }


# ---------------------------------------------------------------------------
# which paths matter


def is_watched(relative: str, settings: Settings) -> bool:
    """A vault-relative path the watcher reacts to: a note, not a temp file or vt's state.

    Dot-folders (.obsidian, .git, .trash, .vt, …) and dot-files (editor temp files
    `.#x`, `.x.tmp`, vt's `.x.<pid>-<n>.vt-tmp`) are never notes, as for `vt validate`.
    """
    if not is_note_path(relative):
        return False
    ledger = settings.ledger.strip("/")
    return relative != ledger and not relative.startswith(ledger + ".")


# ---------------------------------------------------------------------------
# the watcher


class Watcher:
    """Watches one vault; `start()` scans it, then events flow to `on_event` until `stop()`."""

    def __init__(
        self,
        settings: Settings,
        on_event: Callable[[WatchEvent], None],
        *,
        debounce: float = DEFAULT_DEBOUNCE,
        apply: bool = False,
    ):
        self.settings = settings
        self.on_event = on_event
        self.apply = apply
        self.queue = ReviewQueue()
        self.debouncer = Debouncer(debounce)
        self.ctx: CheckContext | None = None
        self.generation = 0
        self.files: set[str] = set()
        self._stale = False  # the vault's file list (or a KB note) changed: rebuild ctx
        self._kb_prefix = settings.kb_dir.strip("/") + "/"
        self._emit_lock = threading.Lock()
        self._observer: Any = None
        self._worker: threading.Thread | None = None
        self.busy = threading.Event()  # set while a note is being handled
        # the dashboard's state (made on its first refresh: most watchers have none) and
        # the files handled since its last refresh
        self.dashboard: LiveDashboard | None = None
        self.handled: set[str] = set()

    # -- lifecycle ---------------------------------------------------------

    def start(self, progress: Progress | None = None) -> WatchEvent:
        """Scan the vault once, then start watching. Returns (and emits) the `ready` event.

        The scan runs before any thread exists: `validate` may fork worker processes.
        Saves made during the scan are caught by a resync right after the observer starts.
        """
        started = time.monotonic()
        ready = self.initial_scan(progress)
        self._start_observer()
        self._worker = threading.Thread(target=self._work, name="vt-watch", daemon=True)
        self._worker.start()
        self.debouncer.touch(RESYNC)
        ready.extra["seconds"] = round(time.monotonic() - started, 3)
        self._emit(ready)
        return ready

    def stop(self) -> None:
        """Stop watching; the note being handled is finished first."""
        if self._observer is not None:
            self._observer.stop()
        self.debouncer.close()
        if self._worker is not None:
            self._worker.join()
        if self._observer is not None:
            self._observer.join()
        self._emit(WatchEvent(STOPPED))

    def _start_observer(self) -> None:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        )
        from watchdog.observers import Observer

        # only the events that can change a note's content or existence: opening and
        # reading (vt's own reads included) are not even subscribed to
        kinds = [
            FileCreatedEvent,
            FileModifiedEvent,
            FileDeletedEvent,
            FileMovedEvent,
            FileClosedEvent,
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
        ]
        observer = Observer()
        try:
            observer.schedule(
                _Handler(self), str(self.settings.vault), recursive=True, event_filter=kinds
            )
            observer.start()
        except OSError as exc:
            raise VtError(
                f"cannot watch the vault: {exc.strerror or exc} (on Linux, raise "
                "fs.inotify.max_user_watches if the limit is reached)",
                str(self.settings.vault),
            ) from exc
        self._observer = observer

    def _work(self) -> None:
        while True:
            key = self.debouncer.next_due()
            if key is None:
                return
            self.busy.set()
            try:
                if key not in (RESYNC, DASHBOARD):
                    self.handled.add(key)  # whatever happened to it, the dashboard looks
                events = self._handle_safely(key)
                for event in events:
                    self._emit(event)
                if any(e.event in REVIEW_EVENTS for e in events) and self._has_dashboard():
                    self.debouncer.touch(DASHBOARD, DASHBOARD_QUIET)
            finally:
                self.busy.clear()

    def _has_dashboard(self) -> bool:
        from vault_tools.integrations.dashboard import DASHBOARD as NOTE

        return (self.settings.vault / NOTE).is_file()

    def _emit(self, event: WatchEvent) -> None:
        # a broken consumer must not stop the watcher (the CLI handles its own pipe)
        with self._emit_lock, contextlib.suppress(Exception):
            self.on_event(event)

    # -- the observer's side: paths in ---------------------------------------

    def notice(self, absolute: str, is_directory: bool) -> None:
        """File one changed path (called from the observer thread)."""
        relative = self._relative(absolute)
        if relative is None:
            return
        if is_directory:
            # a folder created, moved or deleted (the only folder events subscribed to):
            # its notes came or went with it, so compare the listing with what is known
            if not any(p.startswith(".") for p in relative.split("/")):
                self.debouncer.touch(RESYNC)
            return
        if is_watched(relative, self.settings):
            self.debouncer.touch(relative)

    def _relative(self, absolute: str) -> str | None:
        root = str(self.settings.vault)
        if not absolute.startswith(root + os.sep):
            return None
        return absolute[len(root) + 1 :].replace(os.sep, "/")

    # -- the startup scan -----------------------------------------------------

    def initial_scan(self, progress: Progress | None = None) -> WatchEvent:
        """One validate pass (reusing `.vt`'s cache) and the review fields of every note."""
        report = validate(self.settings, progress=progress)
        found: dict[str, list[Finding]] = {}
        for finding in report.findings:
            found.setdefault(finding.path, []).append(finding)
        files = markdown_files(self.settings.vault)
        self._rebuild_context(files)
        for file in files:
            if not file.escapes:
                self._scan_note(file.relative, tuple(found.get(file.relative, ())))
        return WatchEvent(
            READY,
            extra={**self.queue.counts(), "errors": report.errors, "warnings": report.warnings},
        )

    def _scan_note(self, relative: str, findings: tuple[Finding, ...]) -> None:
        try:
            raw, stat = read_with_stat(
                os.path.join(self.settings.vault, relative), self.settings.max_note_bytes
            )
        except OSError:
            return
        if not may_name(raw, b"claim_id") and not findings:
            return
        properties = _properties(raw, relative)
        review = "claim_id" in properties
        # as a save does (`_check`): a note that is no review note is kept for its findings,
        # without its digest, so that its first event is checked whatever its bytes
        if not review and not findings:
            return
        errors, warnings = severity_counts(findings)
        self.queue.set(
            relative,
            NoteStatus(
                _text(properties.get("claim_id")),
                review_action(properties),
                review_state(properties),
                errors,
                warnings,
                content_digest(raw) if review else "",
                stat,
                self.generation,
                findings,
            ),
        )

    def _rebuild_context(self, files: list[MarkdownFile] | None = None) -> None:
        files = markdown_files(self.settings.vault) if files is None else files
        if self.ctx is None:
            self.ctx = make_context(self.settings, files)
        else:  # the schemas do not change while watching; only the file list does
            self.ctx = CheckContext(
                self.ctx.schemas,
                KnowledgeBase(files, self.settings.kb_dir, self.settings.vault),
                self.settings.disabled_findings,
            )
        self.files = {f.relative for f in files}
        self.generation += 1
        self._stale = False

    # -- one path --------------------------------------------------------------

    def _handle_safely(self, key: str) -> list[WatchEvent]:
        try:
            return self.handle(key)
        except Exception as exc:  # noqa: BLE001 - reported, and the watcher carries on
            path = None if key == RESYNC else key
            return [
                WatchEvent(
                    ERROR_EVENT, path, message=f"internal error: {type(exc).__name__}: {exc}"
                )
            ]

    def handle(self, key: str) -> list[WatchEvent]:
        """Everything one due path calls for, as events (runs on the worker thread)."""
        if key == RESYNC:
            self._resync()
            return []
        if key == DASHBOARD:
            return self._refresh_dashboard()
        events: list[WatchEvent] = []
        wrote: str | None = None
        for _ in range(MAX_ROUNDS):
            wrote = self._check(key, events, wrote)
            if wrote is None:
                break
        return events

    def _check(self, relative: str, events: list[WatchEvent], after: str | None) -> str | None:
        """Check the note once; what vt wrote into it ("preview", "apply"), else None.

        `after` says what vt has just written: that content is then recorded quietly (it
        is vt's own) unless a racing save left something to do.
        """
        absolute = os.path.join(self.settings.vault, relative)
        try:
            raw, _ = read_with_stat(absolute, self.settings.max_note_bytes)
        except FileNotFoundError:
            self._gone(relative, events)
            return None
        except OSError as exc:
            events.append(self._read_error(relative, exc))
            return None
        if relative not in self.files or relative.startswith(self._kb_prefix):
            self._stale = True  # a new note, or a KB note whose aliases may have changed
        if self._stale:
            self._rebuild_context()
        assert self.ctx is not None
        digest = content_digest(raw)
        known = self.queue.notes.get(relative)
        if known is not None and known.digest == digest and known.generation == self.generation:
            return None  # vt's own write coming back, or a save that changed nothing
        result = check_file(self.settings, self.ctx, relative)
        if result.digest != digest:
            self.debouncer.touch(relative)  # saved again meanwhile: that save's turn comes
            return None
        if result.claim_id is None and not result.findings:
            self.queue.remove(relative)  # not a review note (a KB note, a plain page)
            return None
        note = parse_note(raw, relative)
        status = NoteStatus(
            result.claim_id,
            review_action(note.properties),
            review_state(note.properties),
            sum(f.severity == ERROR for f in result.findings),
            sum(f.severity == WARNING for f in result.findings),
            digest,
            result.stat,
            self.generation,
            tuple(result.findings),
        )
        self.queue.set(relative, status)
        preview_due = self._preview_due(note, raw)
        # the note apply just marked is its own echo; apply is idempotent anyway
        apply_due = not preview_due and after != "apply" and self._apply_due(status)
        if after is None or preview_due or apply_due:
            events.append(
                WatchEvent(
                    VALIDATED,
                    relative,
                    result.claim_id,
                    result.findings,
                    status.review_state,
                    status.review_action,
                )
            )
        if preview_due:
            return "preview" if self._preview(relative, events) else None
        if apply_due:
            return "apply" if self._apply(relative, events) else None
        return None

    def _preview_due(self, note: Note, raw: bytes) -> bool:
        """A REQUEST_REPAIR note whose drafts differ from those its preview was made from."""
        properties = note.properties
        if review_action(properties) != REQUEST_REPAIR:
            return False
        if note.drafts is None:
            return True  # preview_note says what to do (run vt draft); it writes nothing
        return not (
            _text(properties.get("review_state")) in (PREVIEW_READY, PREVIEW_FAILED)
            and preview_current(note)
            and markers.has_start(raw, PREVIEW_BLOCK)
        )

    def _preview(self, relative: str, events: list[WatchEvent]) -> bool:
        assert self.ctx is not None
        result = preview_note(self.settings, self.ctx, relative)
        extra = {
            "written": result.written,
            "preview_hash": result.preview_hash,
            "changes": [c.to_json() for c in result.changes],
        }
        if result.remark:
            extra["remark"] = result.remark
        events.append(
            WatchEvent(
                PREVIEWED,
                relative,
                result.claim_id,
                tuple(result.findings),
                result.state,
                result.review_action,
                extra=extra,
            )
        )
        return result.written

    def _apply_due(self, status: NoteStatus) -> bool:
        return self.apply and status.review_action in APPLY_ACTIONS

    def _apply(self, relative: str, events: list[WatchEvent]) -> bool:
        """Apply the note's decision (the Apply bridge); True when the note was marked."""
        from vault_tools.review.apply import apply_notes

        try:
            report = apply_notes(self.settings, [self.settings.vault / relative])
        except VtError as exc:  # e.g. a broken ledger: said, and the watcher carries on
            events.append(WatchEvent(ERROR_EVENT, relative, message=f"apply: {exc}"))
            return False
        for done in report.applied:
            events.append(
                WatchEvent(
                    APPLIED,
                    done.path,
                    done.claim_id,
                    state=APPLIED_STATE if done.marked else None,
                    message=f"{done.action} appended as event {done.seq}"
                    if done.new
                    else f"{done.action} already in the ledger (event {done.seq}); note completed",
                    extra={
                        "action": done.action,
                        "id": done.id,
                        "seq": done.seq,
                        "new": done.new,
                        "marked": done.marked,
                    },
                )
            )
        for kind, entries in ((SKIPPED, report.skipped), (REFUSED, report.refused)):
            for entry in entries:
                events.append(
                    WatchEvent(
                        kind,
                        entry.path,
                        entry.claim_id,
                        message=entry.reason,
                        extra={"reason": entry.reason},
                    )
                )
        if report.refresh_error is not None:
            events.append(
                WatchEvent(
                    ERROR_EVENT,
                    relative,
                    message=f"claim store not refreshed: {report.refresh_error}",
                )
            )
        return any(done.marked for done in report.applied)

    def _refresh_dashboard(self) -> list[WatchEvent]:
        """Rewrite the Review Dashboard (made by `vt report`) when what it shows changed."""
        from vault_tools.integrations.dashboard import DASHBOARD as NOTE
        from vault_tools.integrations.dashboard_state import LiveDashboard

        # no worker processes: forking a process that runs threads is not safe
        settings = dataclasses.replace(self.settings, workers=1)
        if self.dashboard is None:
            self.dashboard = LiveDashboard()
        try:
            written = self.dashboard.refresh(settings, self.handled)
            self.handled = set()
        except VtError as exc:  # e.g. edited meanwhile: the next refresh tries again
            return [WatchEvent(ERROR_EVENT, NOTE, message=f"dashboard not refreshed: {exc}")]
        return [WatchEvent(DASHBOARD_EVENT, NOTE, message="dashboard updated")] if written else []

    def _gone(self, relative: str, events: list[WatchEvent]) -> None:
        if relative in self.files:
            self.files.discard(relative)
            self._stale = True  # notes linking to it must see it missing
        old = self.queue.remove(relative)
        if old is not None:
            events.append(
                WatchEvent(DELETED, relative, old.claim_id, message="deleted (or renamed away)")
            )

    def _read_error(self, relative: str, exc: OSError) -> WatchEvent:
        finding = read_finding(relative, exc)
        old = self.queue.notes.get(relative)
        return WatchEvent(
            ERROR_EVENT,
            relative,
            old.claim_id if old else None,
            (finding,),
            message=finding.message,
        )

    def _resync(self) -> None:
        """File every note that appeared, vanished or changed without an event reaching us."""
        listed = {f.relative for f in markdown_files(self.settings.vault)}
        changed = (listed ^ self.files) | set(self._stat_changed(listed & self.files))
        for relative in sorted(changed):
            if is_watched(relative, self.settings):
                self.debouncer.touch(relative)
        if listed != self.files:
            self._stale = True

    def _stat_changed(self, paths: Iterable[str]) -> Iterable[str]:
        for relative in paths:
            known = self.queue.notes.get(relative)
            if known is None:
                continue
            try:
                info = os.stat(os.path.join(self.settings.vault, relative))
            except OSError:
                yield relative
                continue
            if stat_signature(info) != known.stat:
                yield relative


class _Handler(FileSystemEventHandler):
    """Forwards watchdog's events to the watcher as paths."""

    def __init__(self, watcher: Watcher) -> None:
        super().__init__()
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        try:
            self.watcher.notice(os.fsdecode(event.src_path), event.is_directory)
            dest = getattr(event, "dest_path", "")
            if dest:  # a rename: the temp file (or old name) goes, the note arrives
                self.watcher.notice(os.fsdecode(dest), event.is_directory)
        except Exception:  # noqa: BLE001,S110 - the observer thread must survive anything
            pass


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _properties(raw: bytes, relative: str) -> dict[str, Any]:
    """The frontmatter properties only (the scan needs no body); {} when unreadable."""
    text, problem = decode(raw, relative)
    if problem is not None or text is None:
        return {}
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    return read_frontmatter(lines, relative).properties
