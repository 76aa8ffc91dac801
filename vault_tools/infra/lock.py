"""A cross-process kernel lock on a separate lock file, taken with the platform's own
locking: `fcntl.flock` on POSIX, `msvcrt.locking` on Windows.

Both belong to the open file (POSIX: the open file description; Windows: the handle),
so the system drops them when the holder dies, even by SIGKILL or TerminateProcess: a
crashed process can never leave a stale lock. The lock file itself is never written and
never deleted (deleting it would let two processes lock two different files).

Which locking is used is decided when a lock is taken, not when this module is imported
(nothing here imports `fcntl` or `msvcrt` at load): the package imports on every
platform. `lock_fd` and `unlock_fd` are the whole interface the ledger uses.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from types import ModuleType, TracebackType

from vault_tools.errors import RefusedError
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.osfiles import open_fd

POLL = 0.01  # seconds between two tries of a lock that is held elsewhere
# Windows locks a byte range; every vt locks the same first byte (beyond the end of the
# empty lock file, which Windows allows)
_WINDOWS_RANGE = 1
# what msvcrt.locking raises when the range is locked by another handle
_WINDOWS_BUSY = (errno.EACCES, errno.EDEADLOCK)


class NoLocking(RefusedError):
    """This system has neither `fcntl` nor `msvcrt`: vt cannot lock the ledger."""


def _fcntl() -> ModuleType | None:
    try:
        import fcntl
    except ImportError:
        return None
    return fcntl


def _msvcrt() -> ModuleType | None:
    try:
        import msvcrt
    except ImportError:
        return None
    return msvcrt


def lock_fd(fd: int, *, wait: bool = True, shared: bool = False) -> bool:
    """Lock the open file `fd`: True once held; False, without waiting, when `wait` is
    False and another process holds it. `shared` (POSIX) lets other shared holders in;
    Windows has no shared lock, so there it is exclusive."""
    fcntl = _fcntl()
    if fcntl is not None:
        flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB)
        try:
            fcntl.flock(fd, flags)
        except BlockingIOError:
            return False
        return True
    msvcrt = _msvcrt()
    if msvcrt is None:
        raise NoLocking("this system has no file locking (neither fcntl nor msvcrt)")
    while True:
        os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks from the file's position
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, _WINDOWS_RANGE)
            return True
        except OSError as exc:
            if exc.errno not in _WINDOWS_BUSY:
                raise
        if not wait:
            return False
        time.sleep(POLL)  # msvcrt's own waiting (LK_LOCK) gives up after ten seconds


def unlock_fd(fd: int) -> None:
    """Release the lock `lock_fd` took on `fd` (closing `fd` releases it too)."""
    fcntl = _fcntl()
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return
    msvcrt = _msvcrt()
    if msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, _WINDOWS_RANGE)


class FileLock:
    """`with FileLock(path):` holds an exclusive lock on `path` (created if missing).

    `root`: the vault; the lock file (and any folder made for it) is held to the vault
    boundary (BoundaryError before anything is created). `create`: make the lock file
    (and, with `folders`, its missing folders) if missing; without it a missing lock file
    is a FileNotFoundError, so a command that only reads creates nothing for its lock.
    """

    def __init__(
        self,
        path: Path | str,
        timeout: float | None = None,
        *,
        root: Path | None = None,
        folders: bool = True,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout  # None: wait as long as it takes
        self.root = root
        self.folders = folders and create
        self.create = create
        self._fd: int | None = None

    def acquire(self) -> None:
        if self.root is not None:
            writable_path(self.root, self.path)
        if self.folders:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_fd(self.path, os.O_RDWR | (os.O_CREAT if self.create else 0), 0o644)
        try:
            self._lock(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _lock(self, fd: int) -> None:
        if self.timeout is None:
            lock_fd(fd)
            return
        deadline = time.monotonic() + self.timeout
        while not lock_fd(fd, wait=False):
            if time.monotonic() >= deadline:
                raise RefusedError(
                    "another vt process holds the lock; try again", str(self.path)
                ) from None
            time.sleep(POLL)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            unlock_fd(fd)
        finally:
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
