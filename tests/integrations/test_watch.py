"""vt watch: the real watcher as a subprocess on a copy of the example vault.

Each test starts `python -m vault_tools watch --json`, reads its event stream on a
thread, changes real files and waits for outcomes with a deadline. The watcher handles
one note at a time and emits a note's events only when it is done with that note, so
"no write happened" is checked against the event that closes the note's handling,
not against a sleep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import copy_example_vault, run_vt, start_vt
from vault_tools.config import Settings
from vault_tools.findings import error, warning
from vault_tools.infra.debounce import Debouncer
from vault_tools.integrations.watch import RESYNC, NoteStatus, ReviewQueue, is_watched

Event = dict[str, Any]
DEADLINE = 15.0  # seconds: generous, only reached when something is broken
DV3 = "03_claims/DV1-0003.md"  # REQUEST_REPAIR, with drafts
SA = "03_claims/SA260324R-0125.md"  # REQUEST_REPAIR, with drafts, links 04_knowledge_base/Prefill
IX2 = "03_claims/IX2-0328.md"  # PENDING, a warning (assist-mapping-unrelated)
DV3_WARNS = "assist-frame-expression"  # DV1-0003's one warning
DV4 = "03_claims/DV1-0004.md"  # PENDING
DV2 = "03_claims/DV1-0002.md"  # REJECT
DRAFT_CLAIM = "等新方法更能最大化 acceptance rate"


class WatchProcess:
    """`vt watch --json` running on a vault, with its events collected as they arrive."""

    def __init__(self, vault: Path, *args: str) -> None:
        self.proc = start_vt(
            "watch",
            "--json",
            *args,
            vault=vault,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            start_new_session=True,
        )
        self.events: list[Event] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.cond:
                self.events.append(json.loads(line))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def mark(self) -> int:
        with self.cond:
            return len(self.events)

    def wait(
        self, predicate: Callable[[Event], bool], since: int = 0, timeout: float = DEADLINE
    ) -> Event:
        """The first event from index `since` on that matches, waiting up to `timeout`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for event in self.events[since:]:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    stderr = (
                        self.proc.stderr.read()
                        if self.proc.poll() is not None and self.proc.stderr
                        else ""
                    )
                    raise AssertionError(f"no matching event; got {self.events[since:]}{stderr}")
                self.cond.wait(remaining)

    def wait_event(self, kind: str, path: str, since: int = 0) -> Event:
        return self.wait(lambda e: e["event"] == kind and e["path"] == path, since)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=DEADLINE)
        finally:
            self.reader.join(timeout=DEADLINE)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return copy_example_vault(tmp_path / "vault")


@contextmanager
def running(process: WatchProcess) -> Iterator[WatchProcess]:
    """The process, killed (with any worker it forked) if a test leaves it running."""
    try:
        yield process
    finally:
        if process.proc.poll() is None:
            os.killpg(process.proc.pid, signal.SIGKILL)
            process.proc.wait()


@pytest.fixture
def watcher(vault: Path) -> Iterator[WatchProcess]:
    with running(WatchProcess(vault)) as process:
        process.wait(lambda e: e["event"] == "ready")
        yield process


def edit(vault: Path, relative: str, old: str, new: str) -> bytes:
    """A plain save (write in place) replacing `old` by `new`; returns the bytes written."""
    path = vault / relative
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {relative}"
    data = text.replace(old, new, 1).encode("utf-8")
    path.write_bytes(data)
    return data


def rename_save(vault: Path, relative: str, old: str, new: str, temp: str) -> bytes:
    """An editor's atomic save: write a temp file beside the note, rename it over the note."""
    path = vault / relative
    data = path.read_bytes().decode("utf-8").replace(old, new, 1).encode("utf-8")
    tmp = path.with_name(temp)
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return data


def signature(path: Path) -> tuple[int, int, int]:
    info = os.stat(path)
    return info.st_mtime_ns, info.st_ino, info.st_size


def codes(event: Event) -> set[str]:
    return {f["code"] for f in event["findings"]}


# ---------------------------------------------------------------------------
# the real watcher


def test_startup_scan_fills_the_review_queue(watcher: WatchProcess) -> None:
    ready = watcher.events[0]
    assert ready["event"] == "ready"
    assert ready["notes"] == 6
    assert ready["by_action"] == {"APPROVE": 1, "PENDING": 2, "REJECT": 1, "REQUEST_REPAIR": 2}
    assert ready["by_state"] == {"NEW": 6}
    assert ready["errors"] == 0


def test_plain_save_is_validated_and_not_written(vault: Path, watcher: WatchProcess) -> None:
    since = watcher.mark()
    data = edit(vault, IX2, 'reviewer: ""', 'reviewer: "ana"')
    event = watcher.wait_event("validated", IX2, since)
    assert event["claim_id"] == "IX2-0328"
    assert event["state"] == "NEW" and event["review_action"] == "PENDING"
    assert event["errors"] == 0
    assert (vault / IX2).read_bytes() == data  # a PENDING note is never written


def test_atomic_rename_save_is_seen_through_the_temp_file(
    vault: Path, watcher: WatchProcess
) -> None:
    since = watcher.mark()
    rename_save(vault, DV4, "review_action: PENDING", "review_action: MAYBE", "DV1-0004.md.tmp")
    event = watcher.wait_event("validated", DV4, since)
    assert "properties-schema" in codes(event)
    assert event["review_action"] == "MAYBE"
    rename_save(vault, DV4, "review_action: MAYBE", "review_action: PENDING", ".DV1-0004.md.swp")
    fixed = watcher.wait(lambda e: e["path"] == DV4 and e["errors"] == 0, since)
    assert fixed["event"] == "validated"
    assert not any(
        "tmp" in (e["path"] or "") or "swp" in (e["path"] or "") for e in watcher.events[since:]
    )


def test_delete_then_create_is_validated_as_the_new_note(
    vault: Path, watcher: WatchProcess
) -> None:
    since = watcher.mark()
    path = vault / DV4
    data = path.read_bytes().replace(b"review_action: PENDING", b"review_action: REJECT")
    path.unlink()
    path.write_bytes(data)
    event = watcher.wait(lambda e: e["path"] == DV4 and e["review_action"] == "REJECT", since)
    assert event["event"] == "validated" and event["errors"] == 0


def test_malformed_note_is_reported_and_the_watcher_carries_on(
    vault: Path, watcher: WatchProcess
) -> None:
    since = watcher.mark()
    edit(vault, DV2, "review_action: REJECT", "review_action: [REJECT")
    broken = watcher.wait_event("validated", DV2, since)
    assert "yaml-syntax" in codes(broken)
    assert broken["findings"][0]["line"] is not None
    (vault / "03_claims" / "bad-bytes.md").write_bytes(b"---\nclaim_id: X\n---\n\xff\xfe\n")
    garbled = watcher.wait_event("validated", "03_claims/bad-bytes.md", since)
    assert "encoding" in codes(garbled)
    edit(vault, IX2, 'reviewer: ""', 'reviewer: "still here"')
    assert watcher.wait_event("validated", IX2, since)["errors"] == 0


def test_deleted_and_renamed_notes_are_reported(vault: Path, watcher: WatchProcess) -> None:
    since = watcher.mark()
    (vault / DV2).unlink()
    deleted = watcher.wait_event("deleted", DV2, since)
    assert deleted["claim_id"] == "DV1-0002"
    renamed = "03_claims/DV1-0004 renamed.md"
    os.rename(vault / DV4, vault / renamed)
    watcher.wait_event("deleted", DV4, since)
    arrived = watcher.wait_event("validated", renamed, since)
    assert arrived["claim_id"] == "DV1-0004"


def test_folder_of_notes_moved_into_the_vault(
    vault: Path, watcher: WatchProcess, tmp_path: Path
) -> None:
    batch = tmp_path / "outside" / "batch"
    batch.mkdir(parents=True)
    text = (vault / DV4).read_text(encoding="utf-8")
    (batch / "DV1-9004.md").write_text(text.replace("DV1-0004", "DV1-9004"), encoding="utf-8")
    since = watcher.mark()
    os.rename(batch, vault / "03_claims" / "batch")  # one event, for the folder only
    event = watcher.wait_event("validated", "03_claims/batch/DV1-9004.md", since)
    assert event["claim_id"] == "DV1-9004"


def test_unreadable_note_is_an_error_event(vault: Path, watcher: WatchProcess) -> None:
    since = watcher.mark()
    loop = vault / "03_claims" / "loop.md"
    os.symlink("loop.md", loop)  # reading it fails (ELOOP) even for root
    event = watcher.wait_event("error", "03_claims/loop.md", since)
    assert codes(event) == {"read-error"}
    edit(vault, IX2, 'reviewer: ""', 'reviewer: "after the error"')
    watcher.wait_event("validated", IX2, since)


def test_kb_note_deleted_makes_its_users_miss_the_target(
    vault: Path, watcher: WatchProcess
) -> None:
    since = watcher.mark()
    edit(vault, IX2, 'reviewer: ""', 'reviewer: "before"')
    assert "kb-target-missing" not in codes(watcher.wait_event("validated", IX2, since))
    assert "Prefill" in (vault / SA).read_text(encoding="utf-8")
    (vault / "04_knowledge_base" / "Prefill.md").unlink()
    since = watcher.mark()
    edit(vault, SA, 'reviewer: ""', 'reviewer: "after"')
    event = watcher.wait_event("validated", SA, since)
    missing = [f for f in event["findings"] if f["code"] == "kb-target-missing"]
    assert missing and all("Prefill" in f["message"] for f in missing)


def test_draft_edit_writes_the_preview(vault: Path, watcher: WatchProcess) -> None:
    since = watcher.mark()
    edit(vault, DV3, DRAFT_CLAIM, "等新方法更能顯著最大化 acceptance rate")
    event = watcher.wait_event("previewed", DV3, since)
    assert event["written"] is True and event["state"] == "PREVIEW_READY"
    assert any(c["field"] == "claim" for c in event["changes"])
    text = (vault / DV3).read_text(encoding="utf-8")
    assert "review_state: PREVIEW_READY" in text
    assert "<!-- vt:preview:start -->" in text and "顯著" in text
    assert f'vt_preview_hash: "{event["preview_hash"]}"' in text
    # a draft that breaks the schema: the preview says so
    since = watcher.mark()
    edit(vault, DV3, '"operator": "LESS_THAN"', '"operator": "SMALLER"')
    failed = watcher.wait(
        lambda e: e["event"] == "previewed" and e["path"] == DV3 and e["state"] == "PREVIEW_FAILED",
        since,
    )
    assert failed["written"] is True and "frame-schema" in codes(failed)
    text = (vault / DV3).read_text(encoding="utf-8")
    assert "review_state: PREVIEW_FAILED" in text and "Preview failed" in text


def test_edit_that_leaves_the_drafts_alone_writes_nothing(
    vault: Path, watcher: WatchProcess
) -> None:
    since = watcher.mark()
    edit(vault, DV3, DRAFT_CLAIM, "等新方法更能明顯最大化 acceptance rate")
    watcher.wait_event("previewed", DV3, since)
    since = watcher.mark()
    data = edit(vault, DV3, 'review_comment: ""', 'review_comment: "looks right"')
    event = watcher.wait_event("validated", DV3, since)
    assert event["state"] == "PREVIEW_READY"
    # the note's events come out once its handling is over: no preview ran, nothing written
    batch = [e for e in watcher.events[since:] if e["path"] == DV3]
    assert [e["event"] for e in batch] == ["validated"]
    assert (vault / DV3).read_bytes() == data


def test_own_preview_write_settles(vault: Path, watcher: WatchProcess) -> None:
    """After one save the watcher writes once, then never again: no loop with the editor."""
    since = watcher.mark()
    edit(vault, SA, "為了驗證 draft token", "為了驗證每個 draft token")
    previewed = watcher.wait_event("previewed", SA, since)
    assert previewed["written"] is True
    after_write = signature(vault / SA)
    writes = 0
    quiet_until = time.monotonic() + 2.0  # the spec's settling window, polled
    while time.monotonic() < quiet_until:
        current = signature(vault / SA)
        if current != after_write:
            writes += 1
            after_write = current
        time.sleep(0.02)
    assert writes == 0
    # vt's own write came back as an event and was recognised: nothing followed the preview
    assert [e for e in watcher.events[since:] if e["path"] == SA][-1] == previewed
    assert not list(vault.rglob("*.vt-tmp"))


def test_ignored_paths_never_reach_the_watcher(vault: Path, watcher: WatchProcess) -> None:
    since = watcher.mark()
    bad = "---\nclaim_id: IGNORED\nreview_action: [\n---\n"
    ignored = [
        ".obsidian/x.md",
        ".trash/x.md",
        ".vt/x.md",
        ".git/x.md",
        "03_claims/x.txt",
        "03_claims/.#DV1-0001.md",
        "03_claims/DV1-0001.md~",
        "03_claims/.x.md.tmp",
        "03_claims/.DV1-0001.md.abc.vt-tmp",
        "05_ledger/decision_ledger.jsonl",
        "05_ledger/decision_ledger.jsonl.lock",
    ]
    for relative in ignored:
        (vault / relative).parent.mkdir(parents=True, exist_ok=True)
        (vault / relative).write_text(bad, encoding="utf-8")
    # written after the others, so due after them: had they counted, they came first
    edit(vault, IX2, 'reviewer: ""', 'reviewer: "sentinel"')
    watcher.wait_event("validated", IX2, since)
    assert [e["path"] for e in watcher.events[since:]] == [IX2]


def test_sigterm_exits_cleanly_and_leaves_no_half_written_file(vault: Path) -> None:
    with running(WatchProcess(vault)) as process:
        process.wait(lambda e: e["event"] == "ready")
        edit(vault, DV3, DRAFT_CLAIM, "等新方法更能大幅最大化 acceptance rate")
        process.wait_event("validated", DV3)
        assert process.stop() == 0
    assert process.events[-1]["event"] == "stopped"
    assert not list(vault.rglob("*.vt-tmp"))
    text = (vault / DV3).read_text(encoding="utf-8")
    assert text.count("<!-- vt:preview:start -->") == text.count("<!-- vt:preview:end -->")


def test_startup_scan_with_worker_processes_then_sigterm(vault: Path) -> None:
    """A big vault is scanned by forked workers, which must not inherit vt's SIGTERM
    handler (the pool ends them with SIGTERM): the watcher gets ready and stops."""
    pages = vault / "pages"
    pages.mkdir()
    for i in range(450):  # more files than validate's PARALLEL_THRESHOLD
        (pages / f"page {i}.md").write_text(f"# Page {i}\n", encoding="utf-8")
    with running(WatchProcess(vault)) as process:
        assert process.wait(lambda e: e["event"] == "ready", timeout=60)["notes"] == 6
        assert process.stop() == 0


def test_decisions_are_applied_only_with_apply(vault: Path, watcher: WatchProcess) -> None:
    since = watcher.mark()
    edit(vault, DV2, 'reviewer: "alice"', 'reviewer: "bob"')  # REJECT, but no --apply
    assert watcher.wait_event("validated", DV2, since)["review_action"] == "REJECT"
    assert not (vault / "05_ledger" / "decision_ledger.jsonl").exists()
    assert "review_state: NEW" in (vault / DV2).read_text(encoding="utf-8")


def test_apply_appends_the_decision_once(vault: Path) -> None:
    dv1 = "03_claims/DV1-0001.md"
    ledger = vault / "05_ledger" / "decision_ledger.jsonl"
    with running(WatchProcess(vault, "--apply")) as process:
        process.wait(lambda e: e["event"] == "ready")
        since = process.mark()
        edit(vault, dv1, "check_claim_frame: true", "check_claim_frame: false")  # APPROVE
        refused = process.wait_event("refused", dv1, since)
        assert "check_claim_frame" in refused["reason"]
        assert not ledger.exists() or ledger.read_text(encoding="utf-8") == ""
        since = process.mark()
        edit(vault, dv1, "check_claim_frame: false", "check_claim_frame: true")
        applied = process.wait_event("applied", dv1, since)
        assert applied["action"] == "ACCEPT" and applied["new"] is True
        assert applied["state"] == "APPLIED"
        text = (vault / dv1).read_text(encoding="utf-8")
        assert "review_state: APPLIED" in text and applied["id"] in text
        # the note vt just marked comes back as an event: recognised, not applied again
        edit(vault, IX2, 'reviewer: ""', 'reviewer: "sentinel"')
        process.wait_event("validated", IX2, since)
        assert [e["event"] for e in process.events[since:] if e["path"] == dv1] == [
            "validated",
            "applied",
        ]
        assert len(ledger.read_text(encoding="utf-8").splitlines()) == 1
        assert process.stop() == 0


def test_review_dashboard_is_kept_up_to_date(vault: Path) -> None:
    made = run_vt("report", vault=vault)
    assert made.returncode == 0, made.stderr
    dashboard = vault / "Review Dashboard.md"
    before = dashboard.read_text(encoding="utf-8")
    with running(WatchProcess(vault)) as process:
        process.wait(lambda e: e["event"] == "ready")
        since = process.mark()
        edit(vault, DV2, "review_action: REJECT", "review_action: PENDING")
        process.wait_event("validated", DV2, since)
        process.wait_event("dashboard", "Review Dashboard.md", since)
        after = dashboard.read_text(encoding="utf-8")
        assert after != before
        # its own rewrite of the dashboard is no review note: nothing follows
        edit(vault, IX2, 'reviewer: ""', 'reviewer: "sentinel"')
        process.wait_event("validated", IX2, since)
        assert [e["event"] for e in process.events[since:]] == [
            "validated",
            "dashboard",
            "validated",
        ]
        assert process.stop() == 0


class LiveProcess:
    """`vt watch` on a pseudo-terminal, as a reviewer runs it: its live view redrawn in
    place, read back as text (the escape codes dropped) one frame at a time."""

    def __init__(self, vault: Path) -> None:
        import fcntl
        import pty
        import struct
        import termios

        self.main, child = pty.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 80, 220, 0, 0))
        env = {"COLUMNS": "220", "LINES": "80", "TERM": "xterm-256color", "NO_COLOR": None}
        self.proc = start_vt(
            "watch", vault=vault, env=env, stdin=child, stdout=child, stderr=child,
            start_new_session=True,
        )  # fmt: skip
        os.close(child)
        self.output = b""
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.main, 1 << 16)
            except OSError:  # the child's end closed
                chunk = b""
            with self.cond:
                self.output += chunk
                self.cond.notify_all()
            if not chunk:
                return

    def frame(self) -> str:
        """The last frame drawn, as text."""
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.output.decode("utf-8", "replace"))
        return text.replace("\r", "").rsplit("Ctrl-C to stop", 1)[-1]

    def wait(self, predicate: Callable[[str], bool]) -> str:
        """The first frame (from now on) the predicate holds for, as text."""
        deadline = time.monotonic() + DEADLINE
        with self.cond:
            while not predicate(self.frame()):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.reader.is_alive():
                    raise AssertionError(f"no such frame; the last:\n{self.frame()}")
                self.cond.wait(remaining)
            return self.frame()


def panel(frame: str) -> str:
    """The live view's panel of notes with findings (below the last events)."""
    assert "notes with findings" in frame or "no note has findings" in frame, frame
    return frame.split("notes with findings", 1)[-1]


def shows(heading: str, *lines: str) -> Callable[[str], bool]:
    """A frame with the panel's heading and, below it, every one of the lines."""
    return lambda frame: heading in frame and all(line in panel(frame) for line in lines)


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX's")
def test_the_live_view_keeps_the_notes_with_findings_until_they_are_fixed(vault: Path) -> None:
    live = LiveProcess(vault)
    try:
        # the startup scan: the two example notes with a warning each. A frame may be
        # read half drawn, so each wait asks for everything the frame must show.
        both = (DV3, IX2, DV3_WARNS, "assist-mapping-unrelated")
        first = live.wait(shows("notes with findings  2 notes", *both))
        assert DV4 not in panel(first)
        edit(vault, DV4, "review_action: PENDING", "review_action: MAYBE")
        broken = f"{DV4}  1 error, 0 warnings"
        live.wait(shows("notes with findings  3 notes", broken, "properties-schema"))
        # a later save of a valid note: the broken one stays in the panel
        edit(vault, DV2, 'reviewer: "alice"', 'reviewer: "bo"')
        later = live.wait(lambda f: DV2 in f.split("notes with findings")[0] and broken in f)
        assert broken in panel(later)
        # fixed: it leaves the panel; the other two stay
        edit(vault, DV4, "review_action: MAYBE", "review_action: PENDING")
        fixed = live.wait(shows("notes with findings  2 notes", *both))
        assert DV4 not in panel(fixed)
    finally:
        if live.proc.poll() is None:
            live.proc.send_signal(signal.SIGTERM)
        try:
            assert live.proc.wait(timeout=DEADLINE) == 0
        finally:
            if live.proc.poll() is None:
                os.killpg(live.proc.pid, signal.SIGKILL)
            live.reader.join(timeout=DEADLINE)
            os.close(live.main)


# ---------------------------------------------------------------------------
# the parts, in process


def test_the_queue_keeps_the_notes_with_findings_errors_first() -> None:
    queue = ReviewQueue()
    warned = (warning("03_claims/A.md", 3, "assist-claim-number", "a number"),)
    failed = (error("03_claims/B.md", 2, "properties-schema", "a bad value"),)
    queue.set("03_claims/A.md", NoteStatus("A", "PENDING", "NEW", 0, 1, "a", findings=warned))
    queue.set("03_claims/B.md", NoteStatus("B", "PENDING", "NEW", 1, 0, "b", findings=failed))
    queue.set("03_claims/C.md", NoteStatus("C", "PENDING", "NEW", 0, 0, "c"))
    total, first = queue.with_findings(5)
    assert total == 2 and [path for path, _ in first] == ["03_claims/B.md", "03_claims/A.md"]
    assert queue.with_findings(1) == (2, [("03_claims/B.md", queue.notes["03_claims/B.md"])])
    queue.set("03_claims/B.md", NoteStatus("B", "PENDING", "NEW", 0, 0, "b2"))  # fixed
    assert [path for path, _ in queue.with_findings(5)[1]] == ["03_claims/A.md"]
    queue.remove("03_claims/A.md")  # deleted
    assert queue.with_findings(5) == (0, [])


def test_the_startup_scan_fills_the_panel_with_every_note_validate_flags(vault: Path) -> None:
    from vault_tools.config import load_settings
    from vault_tools.integrations.watch import Watcher

    broken = "03_claims/broken.md"  # its frontmatter does not parse: no review fields
    (vault / broken).write_text("---\nclaim_id: X\nreview_action: [\n---\n# X\n", "utf-8")
    watcher = Watcher(load_settings(vault), lambda event: None, debounce=0)
    watcher.initial_scan()
    total, first = watcher.queue.with_findings(10)
    assert [path for path, _ in first] == [broken, DV3, IX2]  # errors first, then by path
    assert total == 3 and first[0][1].errors == 1 and "yaml-syntax" in first[0][1].findings[0]
    # kept for its findings only: its first save is checked, even with the same bytes
    assert [e.event for e in watcher.handle(broken)] == ["validated"]


def test_is_watched_takes_notes_only(tmp_path: Path) -> None:
    settings = Settings(vault=tmp_path)
    assert is_watched("03_claims/A.md", settings)
    assert is_watched("deep/er/note.md", settings)
    for relative in (
        ".obsidian/workspace.md",
        ".git/x.md",
        ".trash/A.md",
        ".vt/A.md",
        "03_claims/.#A.md",
        "03_claims/.A.md.tmp",
        "03_claims/A.md~",
        "03_claims/.A.md.k3j.vt-tmp",
        "03_claims/A.md.tmp",
        "03_claims/A.txt",
        "05_ledger/decision_ledger.jsonl",
        "05_ledger/decision_ledger.jsonl.lock",
        "05_ledger/decision_ledger.jsonl.torn",
        "",
        "../outside.md",
    ):
        assert not is_watched(relative, settings), relative


def test_debouncer_folds_a_burst_into_one_call_per_path() -> None:
    debouncer = Debouncer(0.02)
    for _ in range(5):
        debouncer.touch("a.md")
    debouncer.touch("b.md")
    debouncer.touch(RESYNC)
    got = {debouncer.next_due() for _ in range(3)}
    assert got == {"a.md", "b.md", RESYNC}
    assert debouncer.pending() == 0
    debouncer.close()
    assert debouncer.next_due() is None


def test_apply_stops_at_a_ledger_changed_since_it_was_verified(vault: Path) -> None:
    dv1 = "03_claims/DV1-0001.md"
    ledger = vault / "05_ledger" / "decision_ledger.jsonl"
    done = run_vt("apply", str(vault / DV2), vault=vault)
    assert done.returncode == 0, done.stderr
    ledger.write_bytes(ledger.read_bytes().replace(b'"v":1', b'"v":2'))  # same length
    tampered = ledger.read_bytes()
    with running(WatchProcess(vault, "--apply")) as process:
        process.wait(lambda e: e["event"] == "ready")
        since = process.mark()
        edit(vault, dv1, 'reviewer: "alice"', 'reviewer: "bob"')  # APPROVE, to apply
        error = process.wait_event("error", dv1, since)
        assert "changed since it was verified" in error["message"]
        assert "run `vt ledger verify`" in error["message"]
        assert process.stop() == 0
    assert ledger.read_bytes() == tampered
    assert "review_state: NEW" in (vault / dv1).read_text(encoding="utf-8")
