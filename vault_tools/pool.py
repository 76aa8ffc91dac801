"""Run one function over many vault files, on every core when the run is large.

Workers are forked, so they inherit the caller's state (settings, compiled schemas,
the knowledge-base index) instead of having it pickled; only the chunks of items and
the results cross the process boundary. Small runs stay in-process: below
PARALLEL_THRESHOLD items a pool costs more than it saves, and `multiprocessing`
is imported only when a pool is made.
"""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
Progress = Callable[[int, int], None]

PARALLEL_THRESHOLD = 400
# Items per chunk: at least CHUNK; more on a large run, where each chunk costs the pool's
# machinery in the parent (a message each way, its bookkeeping), keeping CHUNKS_PER_WORKER
# chunks for each worker so that they still finish together.
# Near the end of a run the chunks shrink (see chunk_sizes), so that the workers finish
# within a small chunk of each other instead of one working alone through a large one.
CHUNK = 64
MAX_CHUNK = 128  # a larger chunk's results, held and pickled at once, cost a worker memory
CHUNKS_PER_WORKER = 8
TAIL_SHARES = 2  # near the end, a chunk is a worker's 1/TAIL_SHARES share of what is left

_WORK: Callable[[list[Any]], list[Any]] | None = None  # the running map's work, for workers


def map_chunks(work: Callable[[list[Item]], list[Result]], items: Iterable[Item], *,
               workers: int = 0, progress: Progress | None = None,
               threshold: int | None = None, chunk: int | None = None,
               ordered: bool = True, count: int | None = None,
               meanwhile: Callable[[], None] | None = None) -> Iterator[Result]:
    """`work(chunk)` over chunks of `items`, results in order (or, `ordered=False`, by
    chunk as each is done).

    `items`: a sequence, or any iterable when `count` says how many it yields (it is
    then iterated once, as the chunks are handed out: a stream need not be in memory).
    `workers` 0 means one per core; `threshold` defaults to the module's value, `chunk`
    to a size fit for the run (see CHUNK). `progress(done, total)` is called after each
    chunk. Results are yielded as their chunks finish, so a caller that consumes them as
    they come holds few.
    `meanwhile()` runs in this process while the workers work (after the work when
    there are no workers): other work that would otherwise wait for them, such as the
    CPU-bound part of a run whose workers wait on the disk. Its exception (not an
    interrupt) is raised once the results are all yielded.
    """
    workers = workers or os.cpu_count() or 1
    threshold = PARALLEL_THRESHOLD if threshold is None else threshold
    total = len(items) if count is None else count  # type: ignore[arg-type]
    sizes = itertools.repeat(chunk) if chunk else chunk_sizes(total, workers)
    largest = chunk or chunk_size(total, workers)
    # made as the pool hands them out: a large run never holds a second list of its items
    rest = iter(items)
    chunks = itertools.takewhile(bool, (list(itertools.islice(rest, size)) for size in sizes))
    if workers < 2 or total < threshold or not _can_fork():
        yield from _counted(map(work, chunks), total, progress)
        if meanwhile:
            meanwhile()
        return
    import multiprocessing

    global _WORK
    _WORK = work  # inherited by the forked workers
    failure: Exception | None = None
    try:
        # the workers are forked here, before `meanwhile` may start threads or open files
        with multiprocessing.get_context("fork").Pool(min(workers, -(-total // largest)),
                                                      initializer=_prepare) as pool:
            mapper = pool.imap if ordered else pool.imap_unordered
            results = mapper(_run_in_worker, chunks)  # handed out by the pool's own thread
            if meanwhile:
                try:
                    meanwhile()
                except Exception as exc:  # the workers' results still count: finish first
                    failure = exc
            yield from _counted(results, total, progress)
    finally:
        _WORK = None
    if failure is not None:
        raise failure


def chunk_size(items: int, workers: int) -> int:
    """CHUNK, or larger for a large run (see CHUNK)."""
    return max(CHUNK, min(MAX_CHUNK, -(-items // (workers * CHUNKS_PER_WORKER))))


def chunk_sizes(items: int, workers: int) -> Iterator[int]:
    """The sizes of a run's chunks, in the order they are handed out: `chunk_size` while
    much is left, then a share of what is left (never below CHUNK), so that the last
    chunks are small. They add up to `items`."""
    largest, left = chunk_size(items, workers), items
    while left > 0:
        size = min(largest, max(CHUNK, -(-left // (workers * TAIL_SHARES))), left)
        yield size
        left -= size


def _counted(batches: Iterable[list[Result]], total: int,
             progress: Progress | None) -> Iterator[Result]:
    done = 0
    for batch in batches:
        done += len(batch)
        if progress:  # before the batch: a streaming caller sees the last one counted
            progress(done, total)
        yield from batch


def _run_in_worker(chunk: list[Any]) -> list[Any]:
    global _UNCOLLECTED
    assert _WORK is not None
    try:
        return _WORK(chunk)
    finally:
        _UNCOLLECTED += len(chunk)
        if _UNCOLLECTED >= COLLECT_EVERY:  # see _prepare
            gc.collect()
            _UNCOLLECTED = 0


# A worker collects after this many items (at the end of the chunk reaching it): one
# full collection costs about half a millisecond, and without one a worker's memory kept
# growing slowly (by ~2 MiB over 20k notes of `vt validate`) though it finds no garbage.
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


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()
