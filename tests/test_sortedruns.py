"""sortedruns: more strings sorted than a run holds in memory, spilled and merged."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.infra import sortedruns
from vault_tools.infra.sortedruns import (
    SortedRuns,
    SpilledStrings,
    SpillError,
    in_batches,
    sorted_strings,
)

# any text a file name may hold: no NUL; lone surrogates (undecodable names) included
names = st.text(st.characters(blacklist_characters="\0", blacklist_categories=()), max_size=12)


def _open_files() -> set[str]:
    return {
        os.readlink(f"/proc/self/fd/{fd}")
        for fd in os.listdir("/proc/self/fd")
        if os.path.exists(f"/proc/self/fd/{fd}")
    }


@settings(max_examples=60, deadline=None)
@given(st.lists(names, max_size=300), st.integers(1, 40), st.integers(1, 7))
def test_the_merge_is_sorted(items: list[str], limit: int, stride: int) -> None:
    sortedruns.STRIDE = stride  # restored below (hypothesis reruns the test: no monkeypatch)
    try:
        got = sorted_strings(items, limit)
        expected = sorted(items)
        assert len(got) == len(expected)
        assert list(got) == expected
        assert [got[i] for i in range(len(got))] == expected  # random access by stride
        assert [s for batch in in_batches(got) for s in batch] == expected
        assert isinstance(got, list) == (len(items) < limit)
        if isinstance(got, SpilledStrings):
            got.close()
    finally:
        sortedruns.STRIDE = 64


def test_small_blocks_and_long_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sortedruns, "BLOCK_BYTES", 5)  # strings longer than a block
    items = [f"{i % 7}" * (i % 13) + str(i) for i in range(200)]
    with sorted_strings(items, 16) as got:
        assert list(got) == sorted(items)
        assert got[-1] == sorted(items)[-1]
        with pytest.raises(IndexError):
            got[len(items)]


def test_the_file_has_no_name_and_is_closed_with_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = _open_files()
    got = sorted_strings((f"n/{i:05d}.md" for i in range(1000, 0, -1)), 100)
    assert isinstance(got, SpilledStrings)
    assert os.listdir(tmp_path) == []  # never a name on disk, even while in use
    assert len(_open_files() - before) == 1
    got.close()
    assert _open_files() == before


def test_a_failed_sort_leaves_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _open_files()
    with pytest.raises(ValueError, match="NUL"):
        sorted_strings(["a", "b\0c", "d"], 1)
    with pytest.raises(RuntimeError):
        sorted_strings((_ for _ in iter(_broken, None)), 1)
    assert _open_files() == before


def _broken() -> str:
    if _broken.calls:  # type: ignore[attr-defined]
        raise RuntimeError("interrupted")
    _broken.calls += 1  # type: ignore[attr-defined]
    return "x"


_broken.calls = 0  # type: ignore[attr-defined]


def test_a_full_disk_is_a_spill_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    runs = SortedRuns(2)
    with pytest.raises(SpillError):
        for text in "cba":
            runs.add(text)
    runs.close()
