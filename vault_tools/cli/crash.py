"""The last line of defence: an exception no command handled.

A failing disk or file system (an OSError such as ENOSPC, EIO, EROFS, EACCES; SQLite's
"database or disk is full") is reported as an I/O error naming the file, exit 4. Anything
else is a bug in vt: one line on stderr naming a crash report (the traceback, vt's and
Python's versions, the command line) written to `<vault>/.vt/crash-<time>-<pid>.log`,
or to the system's temporary folder when no vault can be found; exit 5. `VT_DEBUG=1`
also prints the traceback on stderr.
"""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path

from vault_tools import __version__
from vault_tools.cli.printable import printable
from vault_tools.config import STATE_DIR, find_vault
from vault_tools.errors import (
    BoundaryError,
    ExitCode,
    IOFailure,
    VtError,
    io_failure,
    is_storage_error,
)
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.sqlitedb import io_failure as sqlite_failure
from vault_tools.infra.sqlitedb import is_io_error


def unhandled(exc: BaseException, argv: list[str]) -> int:
    """Report `exc` on stderr as the user should see it; the exit code."""
    failure = storage_failure(exc)
    if failure is not None:
        sys.stderr.write(printable(f"vt: {failure}") + "\n")
        return int(failure.exit_code)
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    report = write_report(text, argv)
    if os.environ.get("VT_DEBUG") == "1":
        sys.stderr.write(text)
    where = (
        f"the traceback is in {report}"
        if report is not None
        else "no crash report could be written; run again with VT_DEBUG=1 to see it"
    )
    sys.stderr.write(
        printable(f"vt: internal error: {type(exc).__name__}: {exc}") + "\n"
        f"vt: this is a bug in vt; {where}. Please report it with that file.\n"
    )
    return int(ExitCode.INTERNAL)


def storage_failure(exc: BaseException) -> IOFailure | None:
    """The IOFailure an unhandled exception stands for, if the disk or the file system
    failed (not vt)."""
    if isinstance(exc, OSError) and is_storage_error(exc):
        return io_failure(exc, doing="I/O error")
    if isinstance(exc, sqlite3.Error) and not isinstance(exc, VtError) and is_io_error(exc):
        return sqlite_failure(exc, None)
    return None


def write_report(text: str, argv: list[str]) -> Path | None:
    """Write the crash report; its path, or None when not even the temp folder takes it."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    body = (
        f"vt {__version__} crashed at {stamp}\n"
        f"python {sys.version.split()[0]} ({sys.executable}) on {platform.platform()}\n"
        f"command: {' '.join(argv)}\n"
        f"working folder: {os.getcwd() if os.path.isdir('.') else '?'}\n\n{text}"
    )
    name = f"crash-{stamp}-{os.getpid()}.log"
    vault = _vault(argv)
    places: list[tuple[Path | None, Path]] = [(None, Path(tempfile.gettempdir()))]
    if vault is not None:  # the vault's own `.vt/`, held to its boundary like every write
        places.insert(0, (vault, vault / STATE_DIR))
    for root, folder in places:
        try:
            path = folder / name
            if root is not None:
                path = writable_path(root, path)
            folder.mkdir(exist_ok=True)
            with open(path, "x", encoding="utf-8") as out:
                out.write(body)
            return path
        except (OSError, BoundaryError):
            continue
    return None


def _vault(argv: list[str]) -> Path | None:
    """The vault the command ran on, when it can be found."""
    explicit = None
    for i, arg in enumerate(argv):
        if arg == "--vault" and i + 1 < len(argv):
            explicit = Path(argv[i + 1])
        elif arg.startswith("--vault="):
            explicit = Path(arg.split("=", 1)[1])
    try:
        return find_vault(explicit)
    except (VtError, OSError):
        return None
