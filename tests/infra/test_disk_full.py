"""A full or read-only disk under a vault: real `vt` processes on a real, small tmpfs.

Whatever fails (the ledger, a note, vt's SQLite files), the user is told which file and
what the system said, the exit code is the I/O code (4), nothing is half-written, and
the next run, with space again, works. Mounting needs root (or CAP_SYS_ADMIN): without
it these tests are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import build_vault, render_drafts, render_note, run_vt
from vault_tools.errors import ExitCode
from vault_tools.ledger.verify import verify_ledger

REPO = Path(__file__).resolve().parents[2]
LEDGER = "05_ledger/decision_ledger.jsonl"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs of its own, unmounted afterwards."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill the disk, then free `leave` bytes again; the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        block = b"\0" * 65536
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, block)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 512)
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - leave))
    finally:
        os.close(fd)
    return filler


def files(vault: Path) -> dict[str, bytes]:
    """Every file outside vt's state folder, by relative path."""
    return {
        p.relative_to(vault).as_posix(): p.read_bytes()
        for p in sorted(vault.rglob("*"))
        if p.is_file() and ".vt" not in p.relative_to(vault).parts
    }


def approved_vault(root: Path, n: int) -> Path:
    notes = {
        f"K-{i:04}.md": render_note(claim_id=f"K-{i:04}", review_action="APPROVE") for i in range(n)
    }
    return build_vault(root, notes)


def assert_io_failure(done: subprocess.CompletedProcess[str], *names: str) -> None:
    """Exit 4; one `vt: PATH: …` line naming one of `names`; no bug report, no masking."""
    assert done.returncode == ExitCode.IO, (done.returncode, done.stderr)
    assert done.stderr.startswith("vt: ") and "Traceback" not in done.stderr
    assert "internal error" not in done.stderr
    assert "cannot rollback" not in done.stderr
    assert any(name in done.stderr for name in names), done.stderr


def test_apply_on_a_full_disk_changes_nothing_and_says_why(disk: Path) -> None:
    vault = approved_vault(disk / "vault", 20)
    before = files(vault)
    filler = fill(disk)
    done = run_vt("apply", vault=vault)
    assert_io_failure(
        done,
        "No space left on device (ENOSPC)",
        "database or disk is full",
        "the file system holding it is full",
    )
    assert str(vault) in done.stderr  # the file is named
    after = files(vault)
    # the ledger may have been created (empty) with its lock file; nothing else changed
    assert after.pop(LEDGER, b"") == b"" and after.pop(LEDGER + ".lock", b"") == b""
    assert after == before  # no ledger line, no note marked, no temp file
    filler.unlink()
    again = run_vt("apply", vault=vault)
    assert again.returncode == 0, again.stderr
    assert verify_ledger(vault / LEDGER, vault / ".vt").ok
    assert (vault / LEDGER).read_bytes().count(b"\n") == 20


def test_a_failed_commit_of_the_claim_store_is_not_hidden(disk: Path) -> None:
    """A COMMIT that fails on a full disk is rolled back by SQLite itself: the error the
    user sees is the full disk, not "cannot rollback - no transaction is active"."""
    vault = approved_vault(disk / "vault", 300)
    assert run_vt("apply", vault=vault).returncode == 0
    ledger = (vault / LEDGER).read_bytes()
    for stale in (vault / ".vt").glob("claims.sqlite*"):
        stale.unlink()
    filler = fill(disk, leave=64 << 10)  # room to open the store, not to fill it
    done = run_vt("rebuild", vault=vault)
    assert_io_failure(done, "database or disk is full", "disk I/O error")
    assert f"{vault}/.vt/claims.sqlite: " in done.stderr
    assert "the file system holding it is full" in done.stderr
    assert (vault / LEDGER).read_bytes() == ledger
    filler.unlink()
    again = run_vt("rebuild", "--json", vault=vault)
    assert again.returncode == 0, again.stderr
    assert '"events": 300' in again.stdout


def test_a_note_write_on_a_full_disk_leaves_the_note(disk: Path) -> None:
    notes = {
        "R-1.md": render_note(
            claim_id="R-1",
            review_action="REQUEST_REPAIR",
            drafts=render_drafts("A repaired claim, long enough."),
        )
    }
    vault = build_vault(disk / "vault", notes)
    before = files(vault)
    fill(disk)
    done = run_vt("preview", str(vault / "03_claims" / "R-1.md"), vault=vault)
    assert_io_failure(done, "03_claims/R-1.md: cannot write: No space left on device (ENOSPC)")
    assert files(vault) == before


def test_a_read_only_file_system(disk: Path) -> None:
    notes = {
        "R-1.md": render_note(
            claim_id="R-1",
            review_action="REQUEST_REPAIR",
            drafts=render_drafts("A repaired claim, long enough."),
        ),
        "K-1.md": render_note(claim_id="K-1", review_action="APPROVE"),
    }
    vault = build_vault(disk / "vault", notes)
    assert run_vt("status", vault=vault).returncode == 0  # the state folder exists
    before = files(vault)
    remount = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True)
    if remount.returncode != 0:
        pytest.skip("cannot remount read-only here")
    preview = run_vt("preview", str(vault / "03_claims" / "R-1.md"), vault=vault)
    assert_io_failure(preview, f"cannot write: {os.strerror(errno.EROFS)} (EROFS)")
    apply = run_vt("apply", vault=vault)
    assert_io_failure(apply, "(EROFS)", "readonly database", "unable to open database file")
    assert files(vault) == before


def test_a_failed_commit_keeps_its_own_error(disk: Path) -> None:
    """The COMMIT of a transaction larger than the space left fails with SQLITE_FULL and
    SQLite rolls it back itself; `rollback` then does nothing rather than raise."""
    from vault_tools.infra.sqlitedb import StorageError, connect, rollback

    path = disk / "state.sqlite"
    conn = connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA cache_size=-65536")  # the rows stay in memory until the COMMIT
    conn.execute("CREATE TABLE t (x BLOB)")
    fill(disk, leave=256 << 10)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t VALUES (?)", ((b"x" * 4000,) for _ in range(1000)))
    with pytest.raises(StorageError) as caught:
        conn.execute("COMMIT")
    rollback(conn)  # must not raise "cannot rollback - no transaction is active"
    assert not conn.in_transaction
    assert str(caught.value).startswith(f"{path}: SQLite failed: ")
    assert "full" in str(caught.value)
    conn.close()


def test_notes_that_cannot_be_marked_after_the_ledger_append(disk: Path) -> None:
    """The ledger takes the decisions, then the notes' folder turns out read-only (a
    read-only bind mount): apply says which notes and why, exits 4, and the next run,
    with the folder writable again, marks them."""
    vault = approved_vault(disk / "vault", 5)
    claims = vault / "03_claims"
    before = files(claims)
    bind = subprocess.run(["mount", "--bind", str(claims), str(claims)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip("cannot bind-mount here")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(claims)], capture_output=True
        )
        if remount.returncode != 0:
            pytest.skip("cannot remount read-only here")
        done = run_vt("apply", vault=vault)
        assert done.returncode == ExitCode.IO, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout
        shown = done.stdout + done.stderr
        assert shown.count(f"cannot write: {os.strerror(errno.EROFS)} (EROFS)") == 5
        assert "03_claims/K-0000.md" in shown
        assert files(claims) == before  # no note half-marked
        assert verify_ledger(vault / LEDGER, vault / ".vt").ok
        assert (vault / LEDGER).read_bytes().count(b"\n") == 5  # the decisions are durable
    finally:
        subprocess.run(["umount", "-l", str(claims)], capture_output=True)
    again = run_vt("apply", "--json", vault=vault)
    assert again.returncode == 0, again.stderr
    assert (vault / LEDGER).read_bytes().count(b"\n") == 5  # nothing appended twice
    assert all(b"review_state: APPLIED" in raw for raw in files(claims).values())


def test_validate_on_a_full_disk_checks_every_note_and_warns_once(disk: Path) -> None:
    """The result cache cannot be written: every note is still checked and reported (the
    run used to stop after a few notes, exit 4, no file named); one warning names the
    cache file; the exit code is the check's."""
    notes = {
        f"K-{i:04}.md": render_note(claim_id=f"K-{i:04}", mode="NOT-A-MODE") for i in range(100)
    }
    vault = build_vault(disk / "vault", notes)
    filler = fill(disk)
    for args in (("validate",), ("validate", "--json")):
        done = run_vt(*args, vault=vault)
        assert done.returncode == ExitCode.FINDINGS, done.stderr
        assert "internal error" not in done.stderr
        warnings = [line for line in done.stderr.splitlines() if "vt: warning" in line]
        assert len(warnings) == 1, done.stderr
        assert warnings[0].startswith("vt: warning: .vt/validate-cache.")
        assert "No space left on device (ENOSPC)" in warnings[0]
        if args == ("validate",):
            assert len({line.split(":")[0] for line in done.stdout.splitlines()}) == 100
        else:
            assert len({f["path"] for f in json.loads(done.stdout)["findings"]}) == 100
    filler.unlink()
    again = run_vt("validate", vault=vault)
    assert again.returncode == ExitCode.FINDINGS and "vt: warning" not in again.stderr
    assert (vault / ".vt" / "validate-cache.marshal").exists()
