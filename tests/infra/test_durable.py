"""durable.py: fsynced temporary files beside their target, and folder fsyncs."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import run_vt
from tests.memo_oracle import check_memo, memo_test
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


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_zombies_temporary_file_is_stale(tmp_path: Path) -> None:
    """A writer killed and not yet waited for (a zombie) has ended: its temporary files
    are removed at once, not after its parent happens to reap it."""
    from vault_tools.infra.durable import TMP_SUFFIX, remove_stale_temps
    from vault_tools.infra.osfiles import pid_alive

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        temp = tmp_path / f".n.md.{child.pid}-1{TMP_SUFFIX}"
        temp.write_bytes(b"half a note")
        assert pid_alive(child.pid)
        assert remove_stale_temps(tmp_path) == []  # a live writer's file stays
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_bytes().split(b") ")[1][:1] != b"Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not pid_alive(child.pid)  # a zombie: ended, not yet waited for
        assert remove_stale_temps(tmp_path) == [str(temp)]
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_rerun_of_apply_removes_a_killed_workers_temp_file_while_it_is_a_zombie(
    tmp_path: Path,
) -> None:
    from tests.conftest import copy_example_vault
    from vault_tools.infra.durable import TMP_SUFFIX

    vault = copy_example_vault(tmp_path / "vault")
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        temp = vault / "03_claims" / f".DV1-0001.md.{worker.pid}-7{TMP_SUFFIX}"
        temp.write_bytes(b"---\nclaim_id: DV1-0001\n")  # a note half written when killed
        os.kill(worker.pid, signal.SIGKILL)  # never waited for: a zombie from here on
        time.sleep(0.2)
        done = run_vt("apply", vault=vault)
        assert done.returncode == 0, done.stderr
        assert Path(f"/proc/{worker.pid}").exists()  # still unreaped during the rerun
        assert not temp.exists()
    finally:
        worker.kill()
        worker.wait()


# --- the memos of infra/durable.py against the functions they memoize (tests/memo_oracle.py) ----

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_renameat2": (st.just(()), None),
}


@pytest.mark.parametrize("name", memo_test(durable, MEMO_ARGS))
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(durable, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
