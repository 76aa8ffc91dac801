"""`mark_notes`: apply's markers, on threads for many notes, one after the other for few.

Real notes in a real vault; each answer must land at its note's place whatever thread
marked it, a note edited after it was read is left alone, and `meanwhile` runs beside
the markers (in a thread of its own) or after them."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.conftest import build_vault, render_note, settings_for
from vault_tools.notes import writer
from vault_tools.notes.identity import content_digest
from vault_tools.notes.note import parse_note
from vault_tools.review.marking import THREADED_FROM, Mark, mark_notes

EVENT = "sha256:" + "e" * 64
TS = "2026-12-06T00:00:00Z"


def vault_of(tmp_path: Path, count: int) -> tuple[Path, list[Mark]]:
    names = {f"C-{i:04d}.md": render_note(claim_id=f"C-{i:04d}") for i in range(count)}
    vault = build_vault(tmp_path / "vault", names)
    marks = []
    for name in sorted(names):
        snapshot = writer.read_snapshot(vault / "03_claims" / name, None)
        marks.append(
            (f"03_claims/{name}", content_digest(snapshot.raw), snapshot.signature, EVENT, TS)
        )
    return vault, marks


def state_of(vault: Path, relative: str) -> object:
    path = vault / relative
    return parse_note(path.read_bytes(), path.name).properties.get("review_state")


@pytest.mark.parametrize("count", [3, THREADED_FROM + 37])
def test_every_answer_at_its_notes_place(tmp_path: Path, count: int) -> None:
    vault, marks = vault_of(tmp_path, count)
    edited = {1, count - 2}  # a reviewer's edit after apply read the note: it wins
    for i in edited:
        path = vault / marks[i][0]
        path.write_bytes(path.read_bytes() + b"\nan edit\n")
    settings = settings_for(vault, workers=0)
    ran: list[str] = []
    answers = list(
        mark_notes(
            settings,
            iter(marks),
            count,
            meanwhile=lambda: ran.append(threading.current_thread().name),
        )
    )
    assert len(answers) == count
    for i, (answer, mark) in enumerate(zip(answers, marks, strict=True)):
        if i in edited:
            assert answer == "changed on disk since vt read it; not marked APPLIED"
            assert state_of(vault, mark[0]) == "NEW"
        else:
            assert answer is None
            assert state_of(vault, mark[0]) == "APPLIED"
    # many notes: beside the markers, in a thread of its own; few: after them, here
    assert ran == (["vt-meanwhile"] if count >= THREADED_FROM else ["MainThread"])


def test_meanwhile_failing_is_raised_after_every_answer(tmp_path: Path) -> None:
    count = THREADED_FROM + 5
    vault, marks = vault_of(tmp_path, count)

    def fail() -> None:
        raise RuntimeError("the refresh failed")

    answers: list[object] = []
    with pytest.raises(RuntimeError, match="the refresh failed"):
        for answer in mark_notes(settings_for(vault, workers=0), iter(marks), count, fail):
            answers.append(answer)
    assert answers == [None] * count


def test_a_caller_that_stops_reading_leaves_no_marker_running(tmp_path: Path) -> None:
    count = THREADED_FROM * 3
    vault, marks = vault_of(tmp_path, count)
    answers = mark_notes(settings_for(vault, workers=2), iter(marks), count)
    assert next(answers) is None
    answers.close()  # the pool is shut down: nothing is marked after this returns
    marked = [m for m in marks if state_of(vault, m[0]) == "APPLIED"]
    assert 1 <= len(marked) < count
    assert not [t for t in threading.enumerate() if t.name.startswith("vt-mark")]
    assert marked == marks[: len(marked)]  # handed out in order, none skipped
