"""Cold `verify_ledger` split over two processes: the same results as the sequential verify.

Every case builds a real ledger, copies the vault, verifies one copy sequentially (the
threshold out of reach) and the other with a real forked helper (threshold 1 byte), and
compares the two results and the two state dbs. A spy on `_verify_halves`/`_take_rows`
tells whether the helper ran and whether its rows were taken over, so a case cannot pass
by silently staying sequential.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.ledger.test_ledger import decision, filled, ledger_of, lines_of, write_lines
from vault_tools.ledger import events as ledger_events
from vault_tools.ledger import index as ledger_index
from vault_tools.ledger import verify as ledger_verify
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.events import GENESIS, canonical, line_hash
from vault_tools.ledger.verify import verify_ledger

N = 400  # events: ~290 KB, split near line 200
CHILD = 300  # a line well inside the helper's half
Lines = list[bytes]


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    return tmp_path / "vault"


@dataclass
class Spy:
    forks: list[int] = field(default_factory=list)  # helper pids
    taken: list[bool] = field(default_factory=list)  # _take_rows results

    @property
    def adopted(self) -> bool:
        return self.taken == [True]


@pytest.fixture()
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    record = Spy()
    real_fork, real_take = os.fork, ledger_verify._take_rows

    def fork() -> int:
        pid = real_fork()
        if pid:
            record.forks.append(pid)
        return pid

    def take(*args: object) -> bool:
        ok = real_take(*args)
        record.taken.append(ok)
        return ok

    monkeypatch.setattr(ledger_verify.os, "fork", fork)
    monkeypatch.setattr(ledger_verify, "_take_rows", take)
    return record


def copy_of(vault: Path, dest: Path) -> Ledger:
    shutil.copytree(vault, dest)
    return ledger_of(dest)


def state_of(ledger: Ledger) -> tuple[list, list]:
    if not (ledger.state_dir / ledger_index.STATE_DB).exists():
        return [], []
    conn = sqlite3.connect(ledger.state_dir / ledger_index.STATE_DB)
    try:
        verified = conn.execute("SELECT id, ts FROM verified ORDER BY id").fetchall()
        meta = conn.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
    finally:
        conn.close()
    return verified, meta


def comparable(result: ledger_verify.VerifyResult) -> tuple:
    torn = result.torn
    torn_key = None if torn is None else (torn.offset, torn.length, Path(torn.backup).name)
    return result.ok, result.events, result.head, result.problems, torn_key


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder the helper's part files go to (outside the vault)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(ledger_verify.tempfile, "tempdir", str(folder))
    return folder


def listing(root: Path) -> list[tuple[str, int, int]]:
    """Every file and folder under `root` with its size and mtime."""
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")
    )


def verify_both(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = ""
) -> tuple[ledger_verify.VerifyResult, ledger_verify.VerifyResult]:
    """(sequential, parallel) results of copies of `vault`; asserts they are identical,
    that neither verify changed anything in its vault, and that no part file is left."""
    seq_ledger = copy_of(vault, tmp_path / f"seq{name}")
    par_ledger = copy_of(vault, tmp_path / f"par{name}")
    before = listing(tmp_path / f"par{name}")
    monkeypatch.setattr(ledger_verify, "PARALLEL_MIN_BYTES", 1 << 40)
    seq = verify_ledger(seq_ledger.path, seq_ledger.state_dir)
    monkeypatch.setattr(ledger_verify, "PARALLEL_MIN_BYTES", 1)
    par = verify_ledger(par_ledger.path, par_ledger.state_dir)
    assert comparable(par) == comparable(seq)
    assert listing(tmp_path / f"par{name}") == before
    assert state_of(par_ledger) == state_of(seq_ledger)
    assert list((tmp_path / "tmp").iterdir()) == []
    return seq, par


def messages(result: ledger_verify.VerifyResult) -> list[str]:
    return [p.message for p in result.problems]


# ---------------------------------------------------------------- clean ledgers


def test_clean_ledger_in_two_processes(vault: Path, tmp_path: Path, monkeypatch, spy) -> None:
    ledger = filled(N, vault)
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert par.ok and par.events == N and par.head == ledger.head().hash
    assert len(spy.forks) == 1 and spy.adopted
    # warm: once an append trusted the prefix, it is re-proved by its chain
    again = ledger_of(tmp_path / "par")
    again.append([decision("W1")])  # its gate verifies the forgotten prefix in full
    forks = len(spy.forks)
    assert verify_ledger(again.path, again.state_dir).ok
    assert len(spy.forks) == forks  # nothing left to parse in full: no helper


def test_new_lines_after_a_verified_prefix_go_parallel(
    vault: Path, tmp_path: Path, monkeypatch, spy
) -> None:
    ledger = filled(200, vault, verified=True)
    # appended elsewhere (a pull): this state dir's trusted prefix stops at line 200
    Ledger(ledger.path, tmp_path / "elsewhere").append(
        decision(f"D{i}", "REPAIR") for i in range(400)
    )
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert par.ok and par.events == 600
    assert spy.adopted


def test_split_after_the_first_newline_from_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"aaaa\nbb\ncccccccc\ndd\n")  # lines start at 0, 5, 8, 17
    fd = os.open(path, os.O_RDONLY)
    try:
        assert ledger_verify._split_at(fd, 0, 20) == 17  # middle 10 lies in line 3
        assert ledger_verify._split_at(fd, 0, 8) == 5  # middle 4 is line 1's newline
        assert ledger_verify._split_at(fd, 5, 20) == 17
        assert ledger_verify._split_at(fd, 0, 17) is None  # middle 8 starts the last line: no split
        assert ledger_verify._split_at(fd, 8, 17) is None
    finally:
        os.close(fd)


# ---------------------------------------------------------------- tampering


def flip_byte(raw: Lines) -> Lines:
    raw[CHILD] = raw[CHILD].replace(b'"actor":"ann"', b'"actor":"anm"')
    return raw


def edit_and_rehash(raw: Lines, at: int = CHILD) -> Lines:
    ev = json.loads(raw[at])
    ev["actor"] = "mallory"
    ev["hash"] = line_hash(ev)
    raw[at] = (canonical(ev) + "\n").encode()
    return raw


def delete_line(raw: Lines) -> Lines:
    del raw[CHILD]
    return raw


def reorder(raw: Lines) -> Lines:
    raw[CHILD], raw[CHILD + 1] = raw[CHILD + 1], raw[CHILD]
    return raw


def broken_json(raw: Lines) -> Lines:
    raw[CHILD] = b"[" + raw[CHILD][1:]
    return raw


def non_canonical(raw: Lines) -> Lines:
    raw[CHILD] = (json.dumps(json.loads(raw[CHILD]), ensure_ascii=False) + "\n").encode()
    return raw


def missing_field(raw: Lines) -> Lines:
    ev = json.loads(raw[CHILD])
    del ev["actor"]
    raw[CHILD] = (canonical(ev) + "\n").encode()
    return raw


def rechained(events: list[dict], shift_from: int | None = None) -> Lines:
    """Valid chain of `events`; seq numbers from index `shift_from` on are one too high."""
    out, prev = [], GENESIS
    for i, ev in enumerate(events):
        shift = 1 if shift_from is not None and i >= shift_from else 0
        ev = dict(ev, seq=i + 1 + shift, prev=prev)
        ev.pop("hash")
        ev["hash"] = prev = line_hash(ev)
        out.append((canonical(ev) + "\n").encode())
    return out


def duplicate_in_child(raw: Lines) -> Lines:
    events = [json.loads(x) for x in raw]
    return rechained([*events, events[CHILD]])


def duplicate_across(raw: Lines) -> Lines:
    events = [json.loads(x) for x in raw]
    return rechained([*events, events[10]])


def bad_supersedes(raw: Lines) -> Lines:
    events = [json.loads(x) for x in raw]
    events[CHILD]["supersedes"] = events[CHILD + 1]["id"]  # a later event: not allowed
    events[CHILD]["id"] = ledger_events.decision_id(events[CHILD])
    return rechained(events)


# case -> was the helper's range flawless by itself (so its rows are taken over)?
TAMPERING: dict[str, tuple[Callable[[Lines], Lines], bool]] = {
    "flipped byte": (flip_byte, False),
    "edited field, hash recomputed": (edit_and_rehash, False),
    "deleted line": (delete_line, False),
    "reordered lines": (reorder, False),
    "broken JSON": (broken_json, False),
    "non-canonical line": (non_canonical, False),
    "missing field": (missing_field, False),
    # set-wide checks run on the merged rows: the helper's own lines are flawless
    "duplicate id within the helper's half": (duplicate_in_child, True),
    "duplicate id across the halves": (duplicate_across, True),
    "supersedes a later event": (bad_supersedes, True),
}


def fill_tampered(vault: Path, tamper: Callable[[Lines], Lines]) -> None:
    """A ledger of N events, then its lines tampered with."""
    ledger = filled(N, vault)
    write_lines(ledger, tamper(lines_of(ledger)))


@pytest.mark.parametrize("case", TAMPERING, ids=list(TAMPERING))
def test_tampering_in_the_helpers_half(
    vault: Path, tmp_path: Path, monkeypatch, spy, case: str
) -> None:
    tamper, helper_clean = TAMPERING[case]
    fill_tampered(vault, tamper)
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert not seq.ok and seq.problems
    assert len(spy.forks) == 1 and spy.adopted is helper_clean
    lines = {p.line for p in seq.problems}
    assert any(line is not None and line > N // 2 for line in lines), lines


def test_tampering_in_a_verified_prefix_restarts_in_two_processes(
    vault: Path, tmp_path: Path, monkeypatch, spy
) -> None:
    ledger = filled(N, vault, verified=True)
    raw = lines_of(ledger)
    raw[10] = raw[10].replace(b'"actor":"ann"', b'"actor":"anm"')
    write_lines(ledger, raw)
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert "line 11: hash mismatch (edited line?)" in messages(seq)
    assert len(spy.forks) == 1 and spy.adopted  # the restart went parallel, 2nd half clean


# ---------------------------------------------------------------- the boundary


def split_before_line(monkeypatch: pytest.MonkeyPatch, index: int) -> None:
    """Make the helper's range start at line `index` (0-based) of the file being verified."""

    def at(fd: int, start: int, size: int) -> int:
        data = os.pread(fd, size, 0)
        offset = 0
        for _ in range(index):
            offset = data.index(b"\n", offset) + 1
        assert start < offset < size
        return offset

    monkeypatch.setattr(ledger_verify, "_split_at", at)


def cut_before_helper(raw: Lines) -> Lines:  # the helper's first line is gone
    del raw[200]
    return raw


def cut_parents_last(raw: Lines) -> Lines:  # the parent's last line is gone
    del raw[199]
    return raw


def edit_parents_last(raw: Lines) -> Lines:  # only the link across the split breaks
    return edit_and_rehash(raw, 199)


def renumber_helpers_half(raw: Lines) -> Lines:  # helper's chain intact, its seq off by one
    return rechained([json.loads(x) for x in raw], shift_from=200)


# case -> (tampering, index of the helper's first line in the tampered file)
BOUNDARY = {
    "helper's first line deleted": (cut_before_helper, 200),
    "parent's last line deleted": (cut_parents_last, 199),
    "parent's last line edited, hash recomputed": (edit_parents_last, 200),
    "seq renumbered from the split": (renumber_helpers_half, 200),
}


@pytest.mark.parametrize("case", BOUNDARY, ids=list(BOUNDARY))
def test_tampering_at_the_split(vault: Path, tmp_path: Path, monkeypatch, spy, case: str) -> None:
    tamper, split = BOUNDARY[case]
    fill_tampered(vault, tamper)
    split_before_line(monkeypatch, split)
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert not seq.ok
    # the helper's first line is where the chain breaks
    assert any(
        p.line == split + 1 and ("seq" in p.message or "prev" in p.message) for p in seq.problems
    ), messages(seq)
    # the helper's own lines are flawless: only the link was wrong, so it was re-checked
    assert len(spy.forks) == 1 and spy.taken == []


def test_renumbered_half_reports_one_gap(vault: Path, tmp_path: Path, monkeypatch) -> None:
    ledger = filled(N, vault)
    write_lines(ledger, renumber_helpers_half(lines_of(ledger)))
    split_before_line(monkeypatch, 200)
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert messages(par) == ["line 201: seq 201 expected, found 202 (deleted or reordered line?)"]


# ---------------------------------------------------------------- torn tail, failures


def test_torn_tail(vault: Path, tmp_path: Path, monkeypatch, spy) -> None:
    ledger = filled(N, vault)
    shutil.rmtree(ledger.state_dir)  # the appends' memory would miss the torn event
    whole = ledger.path.read_bytes()
    ledger.path.write_bytes(whole[:-40])  # cut inside the last line
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert par.ok and par.events == N - 1 and par.torn is not None
    assert spy.adopted
    assert not ledger_of(tmp_path / "par").torn_path.exists()  # left to the next append


def test_helper_that_dies_is_replaced_by_the_parent(
    vault: Path, tmp_path: Path, monkeypatch, spy
) -> None:
    filled(N, vault)
    # only the helper uses _PartVerifier: the parent's _Verifier is untouched
    monkeypatch.setattr(ledger_verify._PartVerifier, "line", lambda self, n, raw: os._exit(9))
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert par.ok and par.events == N
    assert len(spy.forks) == 1 and spy.taken == []


def test_helper_exception_is_silent(
    vault: Path, tmp_path: Path, monkeypatch, spy, capfd: pytest.CaptureFixture[str]
) -> None:
    filled(N, vault)

    def boom(self: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ledger_verify._PartVerifier, "flush", boom)
    capfd.readouterr()
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    out, err = capfd.readouterr()
    assert par.ok and len(spy.forks) == 1 and spy.taken == []
    assert "disk on fire" not in out + err and "Traceback" not in out + err


def test_corrupt_part_file_falls_back(vault: Path, tmp_path: Path, monkeypatch, spy) -> None:
    filled(N, vault)
    real = ledger_verify._verify_part

    def then_spoil(path: Path, part: Path, *args: object) -> dict:
        summary = real(path, part, *args)
        part.write_bytes(b"not a database" * 100)
        return summary

    monkeypatch.setattr(ledger_verify, "_verify_part", then_spoil)
    seq, par = verify_both(vault, tmp_path, monkeypatch)
    assert par.ok and spy.taken == [False]


def test_part_files_go_to_a_temporary_folder_outside_the_vault(
    vault: Path, tmp_path: Path, monkeypatch, spy, scratch: Path
) -> None:
    filled(N, vault)
    seen: list[list[Path]] = []
    real = ledger_verify._verify_part

    def watched(path: Path, part: Path, *args: object) -> dict:
        summary = real(path, part, *args)
        seen.append([part.parent.parent, *part.parent.iterdir()])  # in the helper
        return summary

    monkeypatch.setattr(ledger_verify, "_verify_part", watched)
    before = listing(vault)
    monkeypatch.setattr(ledger_verify, "PARALLEL_MIN_BYTES", 1)
    ledger = ledger_of(vault)
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert result.ok and result.events == N and spy.adopted
    assert listing(vault) == before
    assert list(scratch.iterdir()) == []  # removed after use


def test_interrupted_parent_kills_and_reaps_the_helper(
    vault: Path, tmp_path: Path, monkeypatch, spy
) -> None:
    ledger = filled(N, vault)
    monkeypatch.setattr(ledger_verify, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(ledger_verify._PartVerifier, "line", lambda self, n, raw: time.sleep(600))
    real_line = ledger_verify._Verifier.line

    def interrupted(self: ledger_verify._Verifier, n: int, raw: bytes) -> None:
        if n == 50:
            raise KeyboardInterrupt
        real_line(self, n, raw)

    monkeypatch.setattr(ledger_verify._Verifier, "line", interrupted)
    with pytest.raises(KeyboardInterrupt):
        verify_ledger(ledger.path, ledger.state_dir)
    assert len(spy.forks) == 1
    with pytest.raises(ChildProcessError):  # already reaped, not left running
        os.waitpid(spy.forks[0], os.WNOHANG)
    assert list((tmp_path / "tmp").iterdir()) == []
    monkeypatch.undo()
    assert verify_ledger(ledger.path, ledger.state_dir).ok  # the lock was released
