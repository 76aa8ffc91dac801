"""Writes that survive a crash: a temporary file written and fsynced beside its target
(then renamed or linked into place by the caller), and the folder fsync that makes the
rename or link itself durable. The note writer, the small text files, the importer and
the ledger all write this way; each checks its target against the vault boundary
(boundary.py) before calling in here, so a temporary file lands beside an allowed target.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import sys
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".vt-tmp"  # vt's temporary files: never notes, whatever else they look like
# the names write_temp gives: `.<target>.<pid>-<n>.vt-tmp`
_TEMP_NAME = re.compile(r"\..+\.(\d+)-\d+" + re.escape(TMP_SUFFIX) + r"\Z", re.DOTALL)

_temp_numbers = itertools.count()


def write_temp(target: Path, data: bytes, mode: int = 0o644) -> str:
    """A new hidden file beside `target` holding `data` with `mode`, fsynced; its name.

    Named by pid and a counter (a leftover of a killed process with our pid is skipped);
    removed again if anything fails.
    """
    while True:
        name = str(
            target.parent / f".{target.name}.{os.getpid()}-{next(_temp_numbers)}{TMP_SUFFIX}"
        )
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            continue
    try:
        try:
            os.fchmod(fd, mode)  # exactly `mode`, whatever the umask
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return name


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a write may take fewer)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_folder(folder: Path | str) -> None:
    """fsync a folder, so that a file renamed or linked into it stays after a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100
_renameat2: Any = None  # looked up on first use: None not yet, False unavailable


def exchange(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap the files named `a` and `b` in one step (Linux renameat2 RENAME_EXCHANGE).

    Unlike a rename over `b`, nothing is ever unlinked: whatever `b` held at that
    instant (even a file renamed there a moment before) is then at `a`. False, and
    nothing done, where the system or the file system cannot do it; OSError otherwise.
    """
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                function = ctypes.CDLL(None, use_errno=True).renameat2
                function.argtypes = [
                    ctypes.c_int,
                    ctypes.c_char_p,
                    ctypes.c_int,
                    ctypes.c_char_p,
                    ctypes.c_uint,
                ]
                function.restype = ctypes.c_int
                _renameat2 = function
    if _renameat2 is False:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # an old kernel, or a file system without the flag
    raise OSError(code, os.strerror(code), os.fsdecode(b))


def remove_stale_temps(folder: Path | str, recursive: bool = True) -> list[str]:
    """Remove the temporary files `write_temp` left in `folder` (and, `recursive`, its
    subfolders: not dot-folders, not through symlinks) when the process that made them is
    gone (killed mid-write); the paths removed. Only names of write_temp's exact pattern
    whose pid is not alive, and only regular files: a user's similarly named file stays.
    """
    removed: list[str] = []
    for parent, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if recursive and not name.startswith(".")]
        for name in files:
            if not name.endswith(TMP_SUFFIX):
                continue
            match = _TEMP_NAME.match(name)
            if match is None or pid_alive(int(match.group(1))):
                continue
            path = os.path.join(parent, name)
            with contextlib.suppress(OSError):
                if os.path.isfile(path) and not os.path.islink(path):
                    os.unlink(path)
                    removed.append(path)
    return removed


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (someone else's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True
