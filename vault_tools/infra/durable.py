"""Writes that survive a crash: a temporary file written and fsynced beside its target
(then renamed or linked into place by the caller), and the folder fsync that makes the
rename or link itself durable; and `swap_in`, which puts a temporary file in place while
keeping the file it displaced, for a caller that must not lose a save landing meanwhile.
The note writer, the small text files, the importer and the ledger all write this way;
each checks its target against the vault boundary (boundary.py) before calling in here,
so a temporary file lands beside an allowed target.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

from vault_tools.infra.osfiles import open_fd, pid_alive, set_mode

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
            fd = open_fd(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            continue
    try:
        try:
            set_mode(fd, name, mode)
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
    """fsync a folder, so that a file renamed or linked into it stays after a crash.

    Not on Windows, where a folder cannot be opened as a file: there NTFS journals a
    rename or a new link itself, and nothing more can be asked of it from Python."""
    if os.name == "nt":
        return
    fd = open_fd(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


@cache
def _renameat2() -> Callable[..., int] | None:
    """libc's renameat2 and ctypes' errno reader, or None off Linux or without it."""
    if not sys.platform.startswith("linux"):
        return None
    # imported here, once: the commands that write no note (the pre-commit hook among
    # them) never load ctypes
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int

    def call(a: bytes, b: bytes) -> int:
        """0, or the errno of the failed call."""
        done = function(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE)
        return 0 if done == 0 else ctypes.get_errno()

    return call


def exchange(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap the files named `a` and `b` in one step (Linux renameat2 RENAME_EXCHANGE).

    Unlike a rename over `b`, nothing is ever unlinked: whatever `b` held at that
    instant (even a file renamed there a moment before) is then at `a`. False, and
    nothing done, where the system or the file system cannot do it; OSError otherwise.
    """
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    code = renameat2(os.fsencode(a), os.fsencode(b))
    if code == 0:
        return True
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # an old kernel, or a file system without the flag
    raise OSError(code, os.strerror(code), os.fsdecode(b))


def swap_in(tmp_name: str, target: Path) -> str | None:
    """Put the file `tmp_name` at `target`; the name now holding the file it displaced
    (None on a file system with neither, where the displaced file is gone).

    POSIX has no compare-and-swap rename: a save landing between the last check and the
    rename would be overwritten. So the displaced file is kept, to be checked after the
    rename. Where the system can swap two names in one step, whatever `target` held at
    that instant ends up at `tmp_name`, even a save renamed into place a moment before.
    Elsewhere the current file is hard-linked to a side name first, which keeps a save
    written into it in place (as Obsidian saves); only a save renamed into place between
    the link and the rename is lost there.
    """
    if exchange(tmp_name, target):
        return tmp_name
    side = f"{tmp_name[: -len(TMP_SUFFIX)]}-displaced{TMP_SUFFIX}"
    try:
        os.link(target, side)
    except FileNotFoundError:
        raise
    except OSError:  # no hard links here (FAT, some network file systems): as before
        os.replace(tmp_name, target)
        return None
    try:
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(side)
        raise
    return side


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
