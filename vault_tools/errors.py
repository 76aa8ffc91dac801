"""The one error hierarchy of vt, and the exit codes it maps to.

Core modules raise these; each class carries its exit code, and only the CLI's
`run_app` turns an error into a process exit.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1  # invalid notes, refused decisions
    USAGE = 2  # bad command line, bad config, a path outside the vault
    INTEGRITY = 3  # a broken ledger


class VtError(Exception):
    """An error vt reports as `path:line: message` and never as a traceback."""

    exit_code = ExitCode.FINDINGS

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def __reduce__(self) -> tuple:  # path and line survive a trip from a worker process
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
