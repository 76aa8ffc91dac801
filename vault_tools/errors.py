"""The one error hierarchy of vt, and the exit codes it maps to.

Core modules raise these; each class carries its exit code, and only the CLI's
`run_app` turns an error into a process exit.
"""

from __future__ import annotations

import errno
import os
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1  # invalid notes, refused decisions
    USAGE = 2  # bad command line, bad config, a path outside the vault
    INTEGRITY = 3  # a broken ledger
    IO = 4  # the system failed a read or write: full disk, I/O error, read-only, permission
    INTERNAL = 5  # a bug in vt: the traceback is in a crash report (see cli/crash.py)


class VtError(Exception):
    """An error vt reports as `path:line: message` and never as a traceback."""

    exit_code = ExitCode.FINDINGS

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    # path and line survive a trip from a worker process
    def __reduce__(self) -> tuple[type, tuple[str, str | None, int | None]]:
        return type(self), (self.message, self.path, self.line)

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.message}"


class UsageError(VtError):
    """The user asked for something that cannot be done as asked."""

    exit_code = ExitCode.USAGE


class BoundaryError(UsageError):
    """A write that would land outside the vault (through a symlink leading out); nothing
    was written. See boundary.py."""


class RefusedError(VtError):
    """A write vt declined to make (e.g. the note changed on disk since it was read)."""

    exit_code = ExitCode.FINDINGS


class IntegrityError(VtError):
    """The ledger (or derived state) does not verify."""

    exit_code = ExitCode.INTEGRITY


class IOFailure(VtError):
    """A read or write the operating system (or SQLite beneath vt) failed: a full disk,
    an I/O error, a read-only file system, a permission. Names the file and the error."""

    exit_code = ExitCode.IO


# the errors of a failing disk, file system or permission, as opposed to a missing file
# or a wrong kind of file (which vt checks for where it expects them)
STORAGE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "ENOSPC",
        "EDQUOT",
        "EIO",
        "EROFS",
        "EACCES",
        "EPERM",
        "EFBIG",
        "EMFILE",
        "ENFILE",
        "ESTALE",
        "ENOLCK",
    )
    if hasattr(errno, name)
)


def is_storage_error(exc: OSError) -> bool:
    """Whether `exc` says the disk, the file system or a permission failed."""
    return exc.errno in STORAGE_ERRNOS


def os_error_text(exc: OSError) -> str:
    """The OS error as the user should see it: `No space left on device (ENOSPC)`."""
    text = exc.strerror or str(exc) or type(exc).__name__
    name = errno.errorcode.get(exc.errno) if isinstance(exc.errno, int) else None
    return f"{text} ({name})" if name else text


def io_failure(
    exc: OSError, path: str | os.PathLike[str] | None = None, doing: str = "cannot write"
) -> IOFailure:
    """The IOFailure for `exc`, met while `doing` something to `path` (default: the file
    the OSError names): `path: cannot write: No space left on device (ENOSPC)`."""
    where = path if path is not None else exc.filename
    return IOFailure(
        f"{doing}: {os_error_text(exc)}", os.fsdecode(where) if where is not None else None
    )
