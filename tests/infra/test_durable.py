"""durable.py: fsynced temporary files beside their target, and folder fsyncs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from vault_tools.infra import durable


def test_a_temp_file_holds_the_bytes_with_the_mode_beside_its_target(tmp_path: Path) -> None:
    target = tmp_path / "note.md"
    name = durable.write_temp(target, b"x" * 100_000, 0o640)
    temp = Path(name)
    assert temp.parent == tmp_path and temp.name.startswith(".note.md.")
    assert temp.name.endswith(durable.TMP_SUFFIX)
    assert temp.read_bytes() == b"x" * 100_000
    assert stat.S_IMODE(temp.stat().st_mode) == 0o640
    assert durable.write_temp(target, b"", 0o644) != name  # every call a new file


def test_a_leftover_with_the_same_name_is_skipped(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "note.md"
    counter = iter(range(10))
    monkeypatch.setattr(durable, "_temp_numbers", counter)
    leftover = tmp_path / f".note.md.{os.getpid()}-0{durable.TMP_SUFFIX}"
    leftover.write_bytes(b"old")
    name = durable.write_temp(target, b"new")
    assert name == str(tmp_path / f".note.md.{os.getpid()}-1{durable.TMP_SUFFIX}")
    assert leftover.read_bytes() == b"old"


def test_a_failed_fsync_leaves_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    def failing(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable.os, "fsync", failing)
    with pytest.raises(OSError, match="No space"):
        durable.write_temp(tmp_path / "note.md", b"data")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_is_synced_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    durable.fsync_folder(tmp_path)
    with pytest.raises(FileNotFoundError):
        durable.fsync_folder(tmp_path / "gone")
