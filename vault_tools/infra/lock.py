"""A cross-process kernel lock on a separate lock file.

`fcntl.flock` locks belong to the open file description, so the kernel drops them when
the holder dies (even by SIGKILL): a crashed process can never leave a stale lock. The
lock file itself is never written and never deleted (deleting it would let two processes
lock two different inodes).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from vault_tools.errors import RefusedError


class FileLock:
    """`with FileLock(path):` holds an exclusive flock on `path` (created if missing)."""

    def __init__(self, path: Path | str, timeout: float | None = None) -> None:
        self.path = Path(path)
        self.timeout = timeout  # None: wait as long as it takes
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            self._lock(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _lock(self, fd: int) -> None:
        if self.timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RefusedError(
                        "another vt process holds the lock; try again", str(self.path)
                    ) from None
                time.sleep(0.01)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
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
