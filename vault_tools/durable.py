"""Writes that survive a crash: a temporary file written and fsynced beside its target
(then renamed or linked into place by the caller), and the folder fsync that makes the
rename or link itself durable. The note writer, the small text files, the importer and
the ledger all write this way.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

TMP_SUFFIX = ".vt-tmp"  # vt's temporary files: never notes, whatever else they look like

_temp_numbers = itertools.count()


def write_temp(target: Path, data: bytes, mode: int = 0o644) -> str:
    """A new hidden file beside `target` holding `data` with `mode`, fsynced; its name.

    Named by pid and a counter (a leftover of a killed process with our pid is skipped);
    removed again if anything fails.
    """
    while True:
        name = str(target.parent / f".{target.name}.{os.getpid()}-{next(_temp_numbers)}"
                                    f"{TMP_SUFFIX}")
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
        view = view[os.write(fd, view):]


def fsync_folder(folder: Path | str) -> None:
    """fsync a folder, so that a file renamed or linked into it stays after a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
