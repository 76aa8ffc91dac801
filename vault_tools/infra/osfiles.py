"""Files by descriptor, the same on Linux, macOS and Windows: what differs is decided
here, when a function is called, never at import (no POSIX-only module or name is
touched before a call needs it).

- `open_fd` is the one `os.open` of the package. On Windows `os.open` opens in text mode
  unless told `O_BINARY`: each `os.write` would turn "\\n" into "\\r\\n" (a CRLF note would
  get "\\r\\r\\n", a ledger line would break its chain) and each `os.read` the reverse.
  `O_CLOEXEC` and `O_NONBLOCK` exist on POSIX only (Python makes every descriptor
  non-inheritable anyway; Windows has no FIFOs to block on).
- `read_at` is `os.pread` where it exists (POSIX), else (Windows) a seek, a read and a
  seek back to where the descriptor was, under one lock: threads that read one
  descriptor at several offsets (the ledger's block digests) still get their own bytes,
  and a file object over the descriptor finds its position unmoved.
- `set_mode`: `os.fchmod` where it exists, else `os.chmod` by name (Windows before
  Python 3.13, where a mode is only the read-only bit).
- `pid_alive`: `os.kill(pid, 0)` on POSIX; on Windows `os.kill` with any signal but a
  console event terminates the process, so there the process is asked for its exit code.
  A zombie (ended, not yet waited for) answers `os.kill` like a live process: where
  `/proc` tells a process's state (Linux), a zombie counts as gone.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_SEEKING = threading.Lock()  # read_at without pread: one seek-read-seek at a time


def open_fd(
    path: str | os.PathLike[str], flags: int, mode: int = 0o644, *, nonblocking: bool = False
) -> int:
    """`os.open(path, flags, mode)` in binary mode and not inherited, on every platform;
    `nonblocking` where the system has it (a FIFO is then never waited on)."""
    flags |= getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    if nonblocking:
        flags |= getattr(os, "O_NONBLOCK", 0)
    return os.open(path, flags, mode)


def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes from byte `offset` (fewer only at the end of the file)."""
    pread = getattr(os, "pread", None)
    if pread is not None:
        data: bytes = pread(fd, size, offset)
        return data
    parts: list[bytes] = []
    with _SEEKING:
        was = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, offset, os.SEEK_SET)
        try:
            while size > 0:
                part = os.read(fd, size)
                if not part:
                    break
                parts.append(part)
                size -= len(part)
        finally:
            os.lseek(fd, was, os.SEEK_SET)
    return b"".join(parts)


def set_mode(fd: int, path: str | Path, mode: int) -> None:
    """Give the open file `fd` (named `path`) exactly `mode`, whatever the umask."""
    fchmod = getattr(os, "fchmod", None)
    if fchmod is not None:
        fchmod(fd, mode)
    else:
        os.chmod(path, mode)


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (someone else's counts)."""
    if pid <= 0:
        return False
    if os.name == "nt":
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return not _ended(pid)


def _ended(pid: int) -> bool:
    """Whether `pid` has ended and awaits only its parent's wait (a zombie, state Z, or
    X while it is being removed), as /proc says; False where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except FileNotFoundError:  # gone meanwhile, or no /proc at all (macOS, BSD)
        return os.path.isdir("/proc/self")
    except OSError:
        return False
    # "pid (comm) S …": the name may hold spaces and parentheses, the state follows the last ")"
    state = text[text.rfind(b")") + 2 : text.rfind(b")") + 3]
    return state in (b"Z", b"X")


_QUERY_LIMITED_INFORMATION = 0x1000  # PROCESS_QUERY_LIMITED_INFORMATION
_STILL_ACTIVE = 259
_ACCESS_DENIED = 5  # ERROR_ACCESS_DENIED: the process exists, it is someone else's


def _windows_pid_alive(pid: int) -> bool:
    """OpenProcess and GetExitCodeProcess (kernel32), through ctypes."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
    handle = kernel32.OpenProcess(_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return bool(ctypes.get_last_error() == _ACCESS_DENIED)  # type: ignore[attr-defined]
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True  # cannot tell: a temporary file of a live process must stay
        return code.value == _STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)
