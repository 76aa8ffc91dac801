"""Run one function over many vault files, on every core when the run is large.

What it buys: a cold `vt validate` of 10k or 50k notes takes 1.5x the time in one process.
The interface is `map_chunks` (and `can_fork`, whether this system can run a pool).

Only where `fork` exists and is safe (Linux and other POSIX systems but macOS) is there a
pool: on Windows there is no `fork`, and on macOS a forked child of a process that has
loaded the system's frameworks can crash (Python's own default there is spawn). There the
work runs in this process, as every run below PARALLEL_THRESHOLD does everywhere. Not a
spawn-based pool: a spawned worker starts a new interpreter and imports vt, the schemas
and the knowledge base again (the inherited state that makes forking pay), and `work`,
a closure over that state, would have to be pickled; one code path, the serial one, is
correct on every system and is the one most runs take anyway.

Workers are forked, so they inherit the caller's state (settings, compiled schemas,
the knowledge-base index) instead of having it pickled; only the chunks of items and
the results cross the process boundary, each through a pipe of its worker's own. Small
runs stay in-process: below PARALLEL_THRESHOLD items forking costs more than it saves.

The pool is ours rather than `multiprocessing.Pool`, whose three helper threads cost
the parent about 0.15 s of CPU over a 10k-note `vt validate` (its worker-handler
thread wakes for every result waiting in the shared queue): on two cores that time is
taken from the workers. Here the parent's one thread sleeps in poll() until a worker
answers; and a worker that dies is reported, where a `multiprocessing.Pool` waits for
it forever.
"""

from __future__ import annotations

import gc
import itertools
import os
import pickle
import select
import signal
import struct
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from types import ModuleType
from typing import Any, NoReturn, TypeVar

from vault_tools.errors import VtError
from vault_tools.infra.durable import write_all

Item = TypeVar("Item")
Result = TypeVar("Result")
Progress = Callable[[int, int], None]

PARALLEL_THRESHOLD = 400
# Items per chunk: at least CHUNK; more on a large run, where each chunk costs a message
# each way, keeping CHUNKS_PER_WORKER chunks for each worker so that they still finish
# together. Near the end of a run the chunks shrink (see _chunk_sizes), so that the
# workers finish within a small chunk of each other instead of one working alone
# through a large one.
CHUNK = 64
MAX_CHUNK = 128  # a larger chunk's results, held and pickled at once, cost a worker memory
CHUNKS_PER_WORKER = 8
TAIL_SHARES = 2  # near the end, a chunk is a worker's 1/TAIL_SHARES share of what is left
# Chunks a worker is given at once: the one it works on and the next, so that it never
# waits for the parent to read its answer before it can go on.
AHEAD = 2

_WORK: Callable[[list[Any]], list[Any]] | None = None  # the running map's work, for workers


class WorkerError(VtError):
    """A worker process ended without answering (killed, out of memory, a crash)."""


def map_chunks(
    work: Callable[[list[Item]], list[Result]],
    items: Iterable[Item],
    *,
    workers: int = 0,
    progress: Progress | None = None,
    threshold: int | None = None,
    chunk: int | None = None,
    count: int | None = None,
    before_fork: Callable[[], None] | None = None,
) -> Iterator[Result]:
    """`work(chunk)` over chunks of `items`, results in the order of the items.

    `items`: a sequence, or any iterable when `count` says how many it yields (it is
    then iterated once, as the chunks are handed out: a stream need not be in memory).
    `workers` 0 means one per core; `threshold` defaults to the module's value, `chunk`
    to a size fit for the run (see CHUNK). `progress(done, total)` is called after each
    chunk. Results are yielded as their chunks finish, so a caller that consumes them as
    they come holds few. An exception of `work` is raised here, in the caller, once the
    results of the chunks before it are yielded.
    `before_fork()` runs in this process just before the workers are forked, and only
    when they are: what every worker would otherwise do for itself (such as importing
    what `work` needs), done once for all of them to inherit.
    """
    workers = workers or os.cpu_count() or 1
    threshold = PARALLEL_THRESHOLD if threshold is None else threshold
    total = len(items) if count is None else count  # type: ignore[arg-type]
    sizes = itertools.repeat(chunk) if chunk else _chunk_sizes(total, workers)
    largest = chunk or _chunk_size(total, workers)
    # made as they are handed out: a large run never holds a second list of its items
    rest = iter(items)
    chunks = itertools.takewhile(bool, (list(itertools.islice(rest, size)) for size in sizes))
    if workers < 2 or total < max(threshold, 2) or not can_fork():  # a pool needs work
        yield from _counted(map(work, chunks), total, progress)
        return
    global _WORK
    _WORK = work  # inherited by the forked workers
    try:
        if before_fork:
            before_fork()
        with _Pool(min(workers, -(-total // largest))) as pool:
            yield from _counted(pool.results(chunks), total, progress)
    finally:
        _WORK = None


def _chunk_size(items: int, workers: int) -> int:
    """CHUNK, or larger for a large run (see CHUNK)."""
    return max(CHUNK, min(MAX_CHUNK, -(-items // (workers * CHUNKS_PER_WORKER))))


def _chunk_sizes(items: int, workers: int) -> Iterator[int]:
    """The sizes of a run's chunks, in the order they are handed out: `_chunk_size` while
    much is left, then a share of what is left (never below CHUNK), so that the last
    chunks are small. They add up to `items`."""
    largest, left = _chunk_size(items, workers), items
    while left > 0:
        size = min(largest, max(CHUNK, -(-left // (workers * TAIL_SHARES))), left)
        yield size
        left -= size


def _counted(
    batches: Iterable[list[Result]], total: int, progress: Progress | None
) -> Iterator[Result]:
    done = 0
    for batch in batches:
        done += len(batch)
        if progress:  # before the batch: a streaming caller sees the last one counted
            progress(done, total)
        yield from batch


# --- the pool ---------------------------------------------------------------------------

_HEADER = struct.Struct("<Q")  # a message: its length, then the pickle


class _Worker:
    """A forked worker as the parent sees it: its pid, the write end of its task pipe,
    the read end of its answer pipe, and the chunks it was given and has not answered."""

    def __init__(self, pid: int, tasks: int, answers: int):
        self.pid, self.tasks, self.answers = pid, tasks, answers
        self.given: list[tuple[int, int]] = []  # (chunk index, message size), oldest first


_STOPPING = {signal.SIGINT, signal.SIGTERM}


class _Pool:
    """Forked workers, each fed chunks through its own pipe (see the module's docstring)."""

    def __init__(self, size: int):
        self.workers: list[_Worker] = []
        self.ended = False
        try:
            for _ in range(size):
                self._fork()
        except BaseException:
            self.close(abandon=True)
            raise
        # A chunk is given ahead (to a worker still busy with one) only if it fits in the
        # pipe beside the one the worker may not have read yet: a write that blocked while
        # the worker blocked on its answer would wait forever.
        self.ahead_limit = _pipe_capacity(self.workers[0].tasks) // 2

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, kind: type | None, *rest: object) -> None:
        self.close(abandon=kind is not None or not self.ended)

    def _fork(self) -> None:
        task_read, task_write = os.pipe()
        answer_read, answer_write = os.pipe()
        _widen(answer_write)
        # Ctrl-C waits until the worker is in self.workers: one landing between the fork
        # and the append would leave a worker that close() never ends nor waits for
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
        try:
            pid = os.fork()
            if pid == 0:  # the worker: never returns
                # Ctrl-C and SIGTERM end a worker at once and quietly (the parent reports),
                # not through the handlers it inherited (Python's KeyboardInterrupt, `vt
                # watch`'s): one that came while they were blocked must not run the
                # parent's code (its cleanup would kill this worker's siblings)
                for number in _STOPPING:
                    signal.signal(number, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                os.close(task_write)
                os.close(answer_read)
                for earlier in self.workers:  # or an earlier worker never sees its pipe end
                    os.close(earlier.tasks)
                    os.close(earlier.answers)
                _serve(task_read, answer_write)
            os.close(task_read)
            os.close(answer_write)
            self.workers.append(_Worker(pid, task_write, answer_read))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def results(self, chunks: Iterator[list]) -> Iterator[list]:
        """The results of each chunk, in the order of `chunks`."""
        indexes = itertools.count()
        waiting: list[tuple[int, bytes]] = []  # the next chunk, when it could not be given
        failed = False
        arrived: dict[int, tuple[bool, Any]] = {}
        expected = 0

        def give(worker: _Worker) -> None:
            while not failed and len(worker.given) < AHEAD:
                if not waiting:
                    chunk = next(chunks, None)
                    if chunk is None:
                        return
                    index = next(indexes)
                    waiting.append((index, _message((index, chunk))))
                index, message = waiting[0]
                if worker.given and (
                    len(message) > self.ahead_limit or worker.given[-1][1] > self.ahead_limit
                ):
                    return
                try:
                    write_all(worker.tasks, message)
                except BrokenPipeError:
                    _gone(worker)
                worker.given.append((index, len(message)))
                waiting.clear()

        for worker in self.workers:
            give(worker)
        poller = select.poll()
        by_fd = {worker.answers: worker for worker in self.workers}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        while any(worker.given for worker in self.workers):
            for fd, _ in poller.poll():
                worker = by_fd[fd]
                index, ok, value = _answer_of(worker)
                worker.given.pop(0)
                failed = failed or not ok
                give(worker)
                arrived[index] = (ok, value)
                while expected in arrived:
                    yield _result(*arrived.pop(expected))
                    expected += 1
        self.ended = True

    def close(self, abandon: bool) -> None:
        """End the workers: at the end of the run, by closing their task pipes (each
        exits when it has read them to the end); otherwise (an error, an interrupt, a
        caller that stopped reading) with SIGTERM. Each is waited for."""
        for worker in self.workers:
            os.close(worker.tasks)
            if abandon and worker.pid:
                with suppress(ProcessLookupError):
                    os.kill(worker.pid, signal.SIGTERM)
        for worker in self.workers:
            os.close(worker.answers)
            if worker.pid:
                os.waitpid(worker.pid, 0)
        self.workers = []


def _answer_of(worker: _Worker) -> tuple[int, bool, Any]:
    data = _read(worker.answers)
    if data is None:
        _gone(worker)
    return pickle.loads(data)  # noqa: S301 - from our own fork


def _gone(worker: _Worker) -> NoReturn:
    _, status = os.waitpid(worker.pid, 0)
    worker.pid = 0  # reaped
    raise WorkerError(
        f"a worker process ended unexpectedly ({_how_it_ended(status)}); the run was stopped"
    )


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _result(ok: bool, value: Any) -> list:
    if ok:
        return value
    failure, remote = value
    failure.__cause__ = _RemoteTraceback(remote)
    raise failure


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker, kept as its cause."""

    def __str__(self) -> str:
        return str(self.args[0])


# --- the worker's side --------------------------------------------------------------------


def _serve(tasks: int, answers: int) -> NoReturn:
    """A worker's whole life: answer each chunk it reads, then `os._exit` (the parent's
    cleanup, atexit handlers and buffered output are the parent's alone)."""
    code = 1
    try:
        _prepare()
        while (data := _read(tasks)) is not None:
            index, chunk = pickle.loads(data)
            write_all(answers, _answer(index, chunk))
            _collect_now_and_then(len(chunk))
        code = 0
    except BaseException:  # noqa: B036, BLE001 - the parent sees the pipe close
        pass
    finally:
        os._exit(code)


def _answer(index: int, chunk: list) -> bytes:
    """The message answering a chunk: its results, or the exception `work` raised."""
    assert _WORK is not None
    try:
        return _message((index, True, _WORK(chunk)))
    except Exception as exc:  # noqa: BLE001 - raised again in the parent
        return _message((index, False, _portable(exc)))


def _portable(exc: Exception) -> tuple[Exception, str]:
    """The exception and its traceback, as they can cross to the parent."""
    remote = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc, pickle.HIGHEST_PROTOCOL))
    except Exception:  # noqa: BLE001 - its type cannot be rebuilt: its text can
        exc = RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc, remote


def _collect_now_and_then(items: int) -> None:
    global _UNCOLLECTED
    _UNCOLLECTED += items
    if _UNCOLLECTED >= COLLECT_EVERY:  # see _prepare
        gc.collect()
        gc.freeze()  # what outlived the chunks so far (modules, caches) is not walked again
        _UNCOLLECTED = 0


# A worker collects after this many items (at the end of the chunk reaching it): without
# a full collection now and then a worker's memory kept growing slowly (by ~2 MiB over 20k
# notes of `vt validate`) though it finds no garbage. What is alive after a collection
# (the modules the worker imported, its caches) is frozen, so the next one walks only
# what came after: a worker's collections took 15 ms over a 10k validate, now 3 ms.
COLLECT_EVERY = 512
_UNCOLLECTED = 0  # items a worker has worked on since its last collection


def _prepare() -> None:
    """A worker runs without the automatic cyclic collector and collects now and then
    instead (see COLLECT_EVERY): set off again and again by the short-lived containers
    of parsing, the collector cost a worker of `vt validate` about a tenth of its time,
    and a check leaves no cycles, so a collection finds next to nothing. What the worker
    inherited is frozen: no collection walks (and so copies) it.
    """
    gc.freeze()
    gc.disable()


# --- messages ---------------------------------------------------------------------------


def _message(value: Any) -> bytes:
    data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def _read(fd: int) -> bytes | None:
    """The next message's pickle; None when the pipe was closed (before or within it)."""
    header = _read_exactly(fd, _HEADER.size)
    return None if header is None else _read_exactly(fd, _HEADER.unpack(header)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    data = os.read(fd, size)
    if len(data) == size:  # the usual case: all of it at once
        return data
    parts, left = [data], size - len(data)
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


# A chunk's answer (its results, several kB each with their findings) is larger than a
# pipe holds by default (64 KiB on Linux): a worker writing it would wait, several times
# over, for the parent to be scheduled and read. A pipe this wide takes it at once.
ANSWER_PIPE = 1 << 20


def _pipe_tuning() -> ModuleType | None:
    """`fcntl` where it can size a pipe (Linux), else None; imported when a pool starts,
    never at load (no `fcntl` on Windows)."""
    try:
        import fcntl
    except ImportError:
        return None
    return fcntl if hasattr(fcntl, "F_SETPIPE_SZ") else None


def _widen(fd: int) -> None:
    """Let the pipe hold ANSWER_PIPE bytes where the system allows (Linux; within
    /proc/sys/fs/pipe-max-size), else leave it as it is."""
    fcntl = _pipe_tuning()
    if fcntl is not None:
        with suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, ANSWER_PIPE)


def _pipe_capacity(fd: int) -> int:
    fcntl = _pipe_tuning()
    if fcntl is not None:
        with suppress(OSError):
            return int(fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    return select.PIPE_BUF  # the least any POSIX pipe holds


def can_fork() -> bool:
    """Whether this system can fork the pool's workers safely: not Windows (no `fork`),
    not macOS (see the module's docstring). Asked at each run, not at import."""
    return hasattr(os, "fork") and sys.platform != "darwin"
