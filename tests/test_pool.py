"""`pool.map_chunks`: results in order or as done, in-process or forked, frozen gc."""

from __future__ import annotations

import gc

from vault_tools.pool import map_chunks


def _square(chunk: list[int]) -> list[int]:
    return [n * n for n in chunk]


def _frozen(chunk: list[int]) -> list[int]:
    return [gc.get_freeze_count() > 0 for _ in chunk]


def test_results_in_order_in_process_and_forked() -> None:
    items = list(range(500))
    expected = [n * n for n in items]
    assert list(map_chunks(_square, items, workers=1)) == expected
    assert list(map_chunks(_square, items, workers=2, threshold=1, chunk=7)) == expected


def test_unordered_gives_every_result() -> None:
    items = list(range(300))
    got = list(map_chunks(_square, items, workers=2, threshold=1, chunk=5, ordered=False))
    assert sorted(got) == [n * n for n in items]


def test_progress_counts_each_chunk_before_its_results() -> None:
    seen: list[tuple[int, int]] = []
    results = map_chunks(_square, list(range(10)), workers=1, chunk=4,
                         progress=lambda done, total: seen.append((done, total)))
    assert next(results) == 0 and seen == [(4, 10)]
    assert len(list(results)) == 9 and seen == [(4, 10), (8, 10), (10, 10)]


def test_workers_freeze_what_they_inherit() -> None:
    assert all(map_chunks(_frozen, list(range(20)), workers=2, threshold=1, chunk=5))
