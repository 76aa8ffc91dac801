"""`pool.map_chunks`: results in order or as done, in-process or forked, frozen gc."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.errors import UsageError
from vault_tools.infra import pool
from vault_tools.infra.pool import map_chunks


def _square(chunk: list[int]) -> list[int]:
    return [n * n for n in chunk]


def _frozen(chunk: list[int]) -> list[int]:
    return [gc.get_freeze_count() > 0 for _ in chunk]


def test_results_in_order_in_process_and_forked() -> None:
    items = list(range(500))
    expected = [n * n for n in items]
    assert list(map_chunks(_square, items, workers=1)) == expected
    assert list(map_chunks(_square, items, workers=2, threshold=1, chunk=7)) == expected


def test_progress_counts_each_chunk_before_its_results() -> None:
    seen: list[tuple[int, int]] = []
    results = map_chunks(
        _square,
        list(range(10)),
        workers=1,
        chunk=4,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert next(results) == 0 and seen == [(4, 10)]
    assert len(list(results)) == 9 and seen == [(4, 10), (8, 10), (10, 10)]


def test_workers_freeze_what_they_inherit() -> None:
    assert all(map_chunks(_frozen, list(range(20)), workers=2, threshold=1, chunk=5))


class _Cycle:
    def __init__(self) -> None:
        self.me = self


_CYCLES: list[weakref.ref] = []  # a worker's own (each fork starts with the parent's empty one)


def _cycles_left_from_earlier_chunks(chunk: list[int]) -> list[tuple[bool, int]]:
    """Per item: whether the automatic collector is on, and how many of the cycles this
    worker made in its earlier chunks are still alive; then a new cycle, left as garbage."""
    alive = sum(1 for ref in _CYCLES if ref() is not None)
    _CYCLES.append(weakref.ref(_Cycle()))
    return [(gc.isenabled(), alive) for _ in chunk]


def test_workers_collect_every_so_many_items_not_automatically(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pool, "COLLECT_EVERY", 4)  # after every second chunk of 2
    results = list(
        map_chunks(
            _cycles_left_from_earlier_chunks, list(range(80)), workers=2, threshold=1, chunk=2
        )
    )
    assert {enabled for enabled, _ in results} == {False}  # off during the work
    # at most the cycle of the chunk before: a worker's 20 chunks never pile theirs up
    assert max(alive for _, alive in results) <= 1


_KEPT: list[list] = []  # what a worker keeps from chunk to chunk, like its caches


def _frozen_so_far(chunk: list[int]) -> list[tuple[int, int]]:
    _KEPT.append([object() for _ in range(10)])
    return [(os.getpid(), gc.get_freeze_count()) for _ in chunk]


def test_what_outlives_a_collection_is_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool, "COLLECT_EVERY", 4)
    by_worker: dict[int, list[int]] = {}
    for pid, count in map_chunks(_frozen_so_far, list(range(40)), workers=2, threshold=1, chunk=2):
        by_worker.setdefault(pid, []).append(count)
    # a worker's later chunks find more frozen: what it kept was frozen after a collection
    # (its first collection comes after its second chunk)
    long_lived = [counts for counts in by_worker.values() if len(counts) > 2]
    assert long_lived and all(counts[-1] > counts[0] for counts in long_lived)


_PREPARED: list[int] = []  # what `before_fork` did, for the workers to inherit


def _saw_prepared(chunk: list[int]) -> list[tuple[bool, list[int]]]:
    return [(os.getpid() not in _PREPARED, list(_PREPARED)) for _ in chunk]


def test_before_fork_runs_once_here_and_every_worker_inherits_it() -> None:
    try:
        got = list(
            map_chunks(
                _saw_prepared,
                list(range(40)),
                workers=2,
                threshold=1,
                chunk=4,
                before_fork=lambda: _PREPARED.append(os.getpid()),
            )
        )
        assert [os.getpid()] == _PREPARED  # once, in this process
    finally:
        _PREPARED.clear()
    # worked on in other processes, each of which found it done
    assert got == [(True, [os.getpid()])] * 40


def test_before_fork_is_not_run_when_nothing_forks() -> None:
    calls: list[str] = []
    results = map_chunks(_square, [1, 2], workers=1, before_fork=lambda: calls.append("x"))
    assert list(results) == [1, 4] and calls == []


def test_chunks_grow_with_the_run_but_leave_every_worker_several() -> None:
    from vault_tools.infra.pool import CHUNK, CHUNKS_PER_WORKER, MAX_CHUNK, _chunk_size

    assert _chunk_size(500, 2) == CHUNK  # small runs: small chunks
    assert _chunk_size(1_500, 2) == -(-1_500 // (2 * CHUNKS_PER_WORKER))
    assert _chunk_size(1_000_000, 2) == MAX_CHUNK
    for items in (401, 5_000, 10_000, 50_000):
        chunks = -(-items // _chunk_size(items, 2))
        assert chunks >= min(2 * CHUNKS_PER_WORKER, -(-items // CHUNK))


@pytest.mark.parametrize("items", [1, 63, 64, 401, 5_000, 10_000, 50_001])
def test_chunks_shrink_towards_the_end_of_a_run(items: int) -> None:
    from vault_tools.infra.pool import CHUNK, _chunk_size, _chunk_sizes

    sizes = list(_chunk_sizes(items, 2))
    assert sum(sizes) == items
    assert sizes[0] == min(items, _chunk_size(items, 2))
    assert sizes == sorted(sizes, reverse=True)  # never growing again
    assert all(size >= CHUNK for size in sizes[:-1])
    if items >= 4 * CHUNK:  # the last chunks are the smallest a chunk may be
        assert sizes[-2] == CHUNK and sizes[-1] <= CHUNK


def test_shrinking_chunks_keep_every_item_in_order() -> None:
    items = list(range(3_001))
    assert list(map_chunks(_square, items, workers=2, threshold=1)) == [n * n for n in items]
    assert list(map_chunks(_square, iter(items), workers=2, threshold=1, count=len(items))) == [
        n * n for n in items
    ]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_stream_with_its_count(workers: int) -> None:
    """An iterable that is no sequence (a spilled listing, a filtered view), read once."""
    reads = []

    def stream():
        for n in range(300):
            reads.append(n)
            yield n

    done = []
    got = list(
        map_chunks(
            _square,
            stream(),
            workers=workers,
            threshold=1,
            count=300,
            progress=lambda d, total: done.append((d, total)),
        )
    )
    assert got == [n * n for n in range(300)]
    assert reads == list(range(300))  # once each
    assert done[-1] == (300, 300)


# --- the pool's own pipes: failures, large messages, early ends ------------------------


def _fail_at(bad: int, chunk: list[int]) -> list[int]:
    if bad in chunk:
        raise UsageError("no such note", "03_claims/x.md", 7)
    return _square(chunk)


def test_an_exception_in_a_worker_is_raised_in_the_caller() -> None:
    got = []
    with pytest.raises(UsageError) as raised:
        for value in map_chunks(
            partial(_fail_at, 23), list(range(40)), workers=2, threshold=1, chunk=5
        ):
            got.append(value)
    # the same error, its place kept, the worker's traceback as its cause
    assert str(raised.value) == "03_claims/x.md:7: no such note"
    assert "_fail_at" in str(raised.value.__cause__)
    assert got == [n * n for n in range(20)]  # every chunk before the failing one, in order
    _assert_no_children()


def _unpicklable(chunk: list[int]) -> list:
    return [(lambda: None) for _ in chunk]


def test_a_result_that_cannot_cross_is_an_error_not_a_hang() -> None:
    with pytest.raises(Exception, match="pickle"):
        list(map_chunks(_unpicklable, list(range(10)), workers=2, threshold=1, chunk=2))
    _assert_no_children()


def _die_at(bad: int, chunk: list[int]) -> list[int]:
    if bad in chunk:
        os.kill(os.getpid(), signal.SIGKILL)
    return _square(chunk)


def test_a_worker_killed_is_reported_not_waited_for() -> None:
    with pytest.raises(pool.WorkerError, match="ended unexpectedly.*SIGKILL"):
        list(map_chunks(partial(_die_at, 13), list(range(40)), workers=2, threshold=1, chunk=3))
    _assert_no_children()


def _echo_large(chunk: list[str]) -> list[str]:
    return [text * 3 for text in chunk]


def test_chunks_and_results_larger_than_a_pipe_holds() -> None:
    """Messages of several pipe-fuls each way: none is given ahead, and none blocks."""
    items = [f"{n:08d}" * 10_000 for n in range(24)]  # 80 kB each, 160 kB a chunk
    with _failing_after(60):  # a deadlock fails the test instead of hanging the suite
        got = list(map_chunks(_echo_large, items, workers=2, threshold=1, chunk=2))
    assert got == [text * 3 for text in items]


def test_a_caller_that_stops_reading_ends_the_workers() -> None:
    results = map_chunks(_square, list(range(2_000)), workers=2, threshold=1, chunk=5)
    assert next(results) == 0
    results.close()
    _assert_no_children()


@contextmanager
def _failing_after(seconds: int) -> Iterator[None]:
    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _assert_no_children() -> None:
    """Every worker was waited for: this process has no child left, zombie or not."""
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_a_map_started_from_another_thread() -> None:
    """The forked workers of a thread (not the main one) still set their own signals."""
    got: list[list[int]] = []
    thread = threading.Thread(
        target=lambda: got.append(
            list(map_chunks(_square, list(range(100)), workers=2, threshold=1, chunk=10))
        )
    )
    thread.start()
    thread.join()
    assert got == [[n * n for n in range(100)]]


# --- a real process interrupted or killed: no worker outlives it --------------------------

_SLOW_MAP = """
import time
from vault_tools.infra.pool import map_chunks

def slow(chunk):
    time.sleep(0.01 * len(chunk))
    return chunk

try:  # as every vt command does (cli/running.py): Ctrl-C is exit 130, not a traceback
    for _ in map_chunks(slow, list(range(100_000)), workers=2, threshold=1, chunk=4):
        pass
except KeyboardInterrupt:
    raise SystemExit(130) from None
"""


def _group(pgid: int) -> dict[int, tuple[int, str]]:
    """The processes of a process group: pid -> (parent pid, state), from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == pgid:
            found[int(entry.name)] = (int(fields[1]), fields[0])
    return found


def _running_with_two_workers() -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_MAP],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while sum(1 for ppid, _ in _group(process.pid).values() if ppid == process.pid) < 2:
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.01)
    return process


def _gone(pgid: int, timeout: float) -> bool:
    """Whether every process of the group ended (zombies awaiting init count as ended)."""
    deadline = time.monotonic() + timeout
    while any(state != "Z" for _, state in _group(pgid).values()):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_ends_the_workers_with_the_run() -> None:
    process = _running_with_two_workers()
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
    assert process.wait(timeout=30) != 0
    assert _group(process.pid) == {}  # every worker ended and was waited for


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_end_by_themselves_when_their_parent_is_killed() -> None:
    process = _running_with_two_workers()
    process.kill()  # SIGKILL: no cleanup of the parent's runs
    process.wait(timeout=30)
    # each finds its pipe closed once its chunk is done, and exits
    assert _gone(process.pid, timeout=30)


@pytest.mark.parametrize("items", [[], [7]])
def test_nothing_or_one_item_needs_no_pool(items: list[int]) -> None:
    assert list(map_chunks(_square, items, workers=2, threshold=0)) == [n * n for n in items]
    _assert_no_children()


def _tagged(chunk: list[str]) -> list[str]:
    return [f"{item}:{len(chunk) > 0}" for item in chunk]


@settings(max_examples=15, deadline=None)
@given(
    items=st.lists(st.text(max_size=3), max_size=60),
    workers=st.integers(1, 3),
    chunk=st.none() | st.integers(1, 9),
    streamed=st.booleans(),
)
def test_any_run_gives_what_one_map_in_this_process_gives(
    items: list[str], workers: int, chunk: int | None, streamed: bool
) -> None:
    """The plain rule of the pool: `work` over the items in this process, in order;
    forked or not, any chunk size, the items given as a list or as a stream."""
    given_items = iter(items) if streamed else items
    count = len(items) if streamed else None
    got = map_chunks(_tagged, given_items, workers=workers, threshold=1, chunk=chunk, count=count)
    assert list(got) == _tagged(items)
