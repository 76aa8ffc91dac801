"""vt's SQLite files (the ledger index, the Claim Store): storage failures as IOFailures.

SQLite reports a full disk or a failed read as `sqlite3.OperationalError` without the
file's name. Every connection vt opens is a `Connection`, whose statements turn such
errors into a `StorageError`: an `IOFailure` naming the database file, and still a
`sqlite3.OperationalError` for the code that falls back on any SQLite error (the
derived state is best effort in places). Any other SQLite error (a bug, a lock) stays
what it is. `rollback` keeps a failed COMMIT's error visible.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from vault_tools.errors import IOFailure

# the primary result codes of a failing file or disk (3.11+ names extended codes too, e.g.
# SQLITE_IOERR_WRITE: the first two words are the primary code)
_IO_CODES = frozenset(
    {
        "SQLITE_FULL",
        "SQLITE_IOERR",
        "SQLITE_READONLY",
        "SQLITE_CANTOPEN",
        "SQLITE_PERM",
        "SQLITE_CORRUPT",
        "SQLITE_NOTADB",
    }
)
# the same errors by SQLite's message, for Python 3.10 (no sqlite_errorname)
_IO_MESSAGES = (
    "database or disk is full",
    "disk i/o error",
    "readonly database",
    "unable to open database file",
    "database disk image is malformed",
    "file is not a database",
    "access permission denied",
)


def is_io_error(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because of the file or the disk beneath it."""
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(name, str) and name.startswith("SQLITE_"):
        return "_".join(name.split("_")[:2]) in _IO_CODES
    message = str(exc).lower()
    return any(text in message for text in _IO_MESSAGES)


class StorageError(IOFailure, sqlite3.OperationalError):
    """SQLite could not read or write its file."""


def io_failure(exc: sqlite3.Error, path: str | Path | None) -> StorageError:
    """`path: SQLite failed: database or disk is full (SQLITE_FULL)`, and whether the
    file system holding it is full (SQLite keeps the OS error to itself: a full disk
    often shows as a "disk I/O error" about its shared-memory file)."""
    name = getattr(exc, "sqlite_errorname", None)
    detail = f"{exc} ({name})" if name else str(exc)
    if path is not None:
        with suppress(OSError):
            free = shutil.disk_usage(os.path.dirname(os.path.abspath(path))).free
            if free < _NEARLY_FULL:
                detail += f"; the file system holding it is full ({free // 1024} KiB free)"
    return StorageError(f"SQLite failed: {detail}", str(path) if path is not None else None)


_NEARLY_FULL = 1 << 20  # bytes free: less than a WAL's few pages and its index need


class Connection(sqlite3.Connection):
    """A connection whose statements raise StorageError (naming `path`) for storage errors."""

    path: str = ""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            if is_io_error(exc):
                raise io_failure(exc, self.path) from exc
            raise

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.Error as exc:
            if is_io_error(exc):
                raise io_failure(exc, self.path) from exc
            raise

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(sql_script)
        except sqlite3.Error as exc:
            if is_io_error(exc):
                raise io_failure(exc, self.path) from exc
            raise

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.Error as exc:
            if is_io_error(exc):
                raise io_failure(exc, self.path) from exc
            raise


def connect(path: str | Path, **options: Any) -> Connection:
    """`sqlite3.connect(path, **options)`, as a `Connection`."""
    try:
        conn = sqlite3.connect(path, factory=Connection, **options)
    except sqlite3.Error as exc:
        if is_io_error(exc):
            raise io_failure(exc, path) from exc
        raise
    conn.path = str(path)
    return conn


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if one is still open, and never raise.

    A COMMIT that failed on a full disk may have been rolled back by SQLite already; a
    second ROLLBACK would then fail with "cannot rollback - no transaction is active",
    and that error would replace the one that says what happened.
    """
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
