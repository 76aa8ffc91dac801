"""cache.read_with_stat: the bytes of a note and the stat signature they were read under."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vault_tools.checks.cache import read_with_stat, stat_signature


@pytest.mark.parametrize("size", [0, 1, 4095, 70_000, 300_001])
def test_reads_every_byte_with_the_signature_of_the_file(tmp_path: Path, size: int) -> None:
    note = tmp_path / "note.md"
    data = os.urandom(size)
    note.write_bytes(data)
    raw, signature = read_with_stat(str(note))
    assert raw == data
    assert signature == stat_signature(os.stat(note))


def test_a_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_with_stat(str(tmp_path / "gone.md"))
