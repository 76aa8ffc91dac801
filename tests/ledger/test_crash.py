"""The last line of defence (`crash.unhandled`, via `run_app`): real `vt` processes.

A bug in vt (here: a Claim Store file with a table vt did not make) is exit 5 with one
line naming a crash report that holds the traceback, vt's version and the command line;
`VT_DEBUG=1` also prints the traceback. A failing disk met where no command expected it
is exit 4, naming the file.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import copy_example_vault, run_vt
from vault_tools import __version__
from vault_tools.cli import crash
from vault_tools.errors import ExitCode, IOFailure

REPO = Path(__file__).resolve().parents[2]
REPORT = re.compile(r"the traceback is in (\S+\.log)\. ")


def foreign_store(vault: Path) -> None:
    """A `.vt/claims.sqlite` whose `meta` table is not vt's: reading it raises
    sqlite3.OperationalError ("no such column"), which no command expects."""
    (vault / ".vt").mkdir(exist_ok=True)
    conn = sqlite3.connect(vault / ".vt" / "claims.sqlite")
    conn.execute("CREATE TABLE meta (k TEXT, v TEXT)")
    conn.commit()
    conn.close()


def test_a_bug_writes_a_crash_report_into_the_vault(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    foreign_store(vault)
    done = run_vt("status", vault=vault)
    assert done.returncode == ExitCode.INTERNAL == 5
    assert done.returncode != ExitCode.USAGE
    assert "Traceback" not in done.stderr and done.stdout == ""
    first, second = done.stderr.splitlines()
    assert first == "vt: internal error: OperationalError: no such column: value"
    found = REPORT.search(second)
    assert found, second
    report = Path(found.group(1))
    assert report.parent == vault / ".vt" and report.name.startswith("crash-")
    text = report.read_text(encoding="utf-8")
    assert text.startswith(f"vt {__version__} crashed at ")
    assert f"python {sys.version.split()[0]}" in text
    assert f"command: vt status --vault {vault}" in text
    assert "Traceback (most recent call last):" in text
    assert "sqlite3.OperationalError: no such column: value" in text


def test_vt_debug_also_prints_the_traceback(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    foreign_store(vault)
    done = run_vt("status", vault=vault, env={"VT_DEBUG": "1"})
    assert done.returncode == ExitCode.INTERNAL
    assert "Traceback (most recent call last):" in done.stderr
    assert "sqlite3.OperationalError: no such column: value" in done.stderr
    assert REPORT.search(done.stderr)  # and the report is written all the same


def test_without_a_usable_vault_the_report_goes_to_the_temp_folder(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    (vault / ".vt").write_text("not a folder")  # the Claim Store cannot be opened: a crash
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = run_vt("status", vault=vault, env={"TMPDIR": str(temp)})
    assert done.returncode == ExitCode.INTERNAL, done.stderr
    found = REPORT.search(done.stderr)
    assert found, done.stderr
    report = Path(found.group(1))
    assert report.parent == temp and "Traceback" in report.read_text(encoding="utf-8")


def test_an_unexpected_storage_error_is_an_io_failure() -> None:
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/v/.vt/x")
    failure = crash.storage_failure(full)
    assert isinstance(failure, IOFailure) and failure.exit_code == ExitCode.IO == 4
    assert str(failure) == "/v/.vt/x: I/O error: No space left on device (ENOSPC)"
    # a missing file is not the disk failing: a bug (or a race) to report as one
    assert crash.storage_failure(FileNotFoundError(errno.ENOENT, "gone", "/v/x")) is None
    assert crash.storage_failure(KeyError("x")) is None
    disk = sqlite3.OperationalError("disk I/O error")
    assert isinstance(crash.storage_failure(disk), IOFailure)
    assert crash.storage_failure(sqlite3.OperationalError("no such column: value")) is None


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_an_os_error_escaping_a_command_exits_4(tmp_path: Path, code: int) -> None:
    """An OSError no command caught (here: the vault's `.vt` folder cannot be created,
    injected in the child through sitecustomize) is an I/O error naming the file."""
    vault = copy_example_vault(tmp_path / "vault")
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import errno, os, pathlib\n"
        "real = pathlib.Path.mkdir\n"
        "def mkdir(self, *args, **kwargs):\n"
        "    if self.name == '.vt':\n"
        f"        raise OSError({code}, os.strerror({code}), str(self))\n"
        "    return real(self, *args, **kwargs)\n"
        "pathlib.Path.mkdir = mkdir\n",
        encoding="utf-8",
    )
    done = run_vt("status", vault=vault, env={"PYTHONPATH": str(hook)})
    assert done.returncode == ExitCode.IO, done.stderr
    name = errno.errorcode[code]
    assert done.stderr == f"vt: {vault}/.vt: I/O error: {os.strerror(code)} ({name})\n"


@pytest.mark.parametrize("dangling", [False, True])
def test_a_crash_report_never_goes_through_a_state_dir_leading_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dangling: bool
) -> None:
    """A `.vt` symlink a clone carries, to a folder outside (or to none yet): the report
    goes to the temporary folder instead, and nothing is made outside the vault."""
    vault = copy_example_vault(tmp_path / "vault")
    outside, temp = tmp_path / "outside", tmp_path / "temp"
    temp.mkdir()
    if not dangling:
        outside.mkdir()
    os.symlink(outside, vault / ".vt")
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    report = crash.write_report("Traceback\n", ["vt", "status", "--vault", str(vault)])
    assert report is not None and report.parent == temp
    if dangling:
        assert not outside.exists()
    else:
        assert list(outside.iterdir()) == []
