"""sqlitedb.py: SQLite's storage failures as StorageErrors naming the file (real SQLite)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from vault_tools.errors import ExitCode, IOFailure
from vault_tools.infra.sqlitedb import StorageError, connect, is_io_error, rollback


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    path.write_bytes(b"this is not an SQLite database, but it is long enough" * 20)
    conn = connect(path)
    with pytest.raises(StorageError) as caught:
        conn.execute("SELECT * FROM sqlite_master")
    conn.close()
    failure = caught.value
    assert isinstance(failure, IOFailure) and isinstance(failure, sqlite3.OperationalError)
    assert failure.exit_code == ExitCode.IO
    assert str(failure).startswith(f"{path}: SQLite failed: file is not a database")


def test_a_database_that_cannot_be_opened(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.sqlite"
    folder.mkdir()
    with pytest.raises(StorageError) as caught:
        connect(folder).execute("CREATE TABLE t (x)")
    assert str(caught.value).startswith(f"{folder}: SQLite failed: unable to open database file")


def test_other_errors_stay_what_they_are(tmp_path: Path) -> None:
    conn = connect(tmp_path / "ok.sqlite")
    conn.execute("CREATE TABLE meta (k TEXT)")
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("SELECT value FROM meta")
    assert not isinstance(caught.value, IOFailure)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("CREATE TABLE u (x UNIQUE)")
        conn.executemany("INSERT INTO u VALUES (?)", [(1,), (1,)])
    conn.close()


def test_io_errors_are_known_by_code_and_by_message() -> None:
    # Python 3.10 has no sqlite_errorname: SQLite's message says it
    for message in (
        "database or disk is full",
        "disk I/O error",
        "attempt to write a readonly database",
        "unable to open database file",
    ):
        assert is_io_error(sqlite3.OperationalError(message))
    assert not is_io_error(sqlite3.OperationalError("database is locked"))
    assert not is_io_error(sqlite3.OperationalError("no such column: value"))
    coded = sqlite3.OperationalError("anything")
    coded.sqlite_errorname = "SQLITE_IOERR_FSYNC"  # type: ignore[attr-defined]
    assert is_io_error(coded)
    coded.sqlite_errorname = "SQLITE_BUSY"  # type: ignore[attr-defined]
    assert not is_io_error(coded)


def test_rollback_without_a_transaction_does_nothing(tmp_path: Path) -> None:
    conn = connect(tmp_path / "ok.sqlite", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    rollback(conn)  # no transaction open: no "cannot rollback" error
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES (1)")
    rollback(conn)
    assert not conn.in_transaction
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (0,)
    conn.close()
