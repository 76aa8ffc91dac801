"""Fault injection: the crash tests' one seam, in the ledger and the steps after it."""

from __future__ import annotations

import os
import signal

CRASH_ENV = "VT_TEST_CRASH_AT"


def crash_point(name: str) -> None:
    """The crash tests' one seam: when the environment variable VT_TEST_CRASH_AT names
    this point, the process is killed right here, as a power cut or `kill -9` would kill
    it (no cleanup, no buffers flushed). Points: `after-write` (ledger lines fsynced,
    derived state not updated), `after-append` (lock released, no note marked),
    `after-mark` (the first note marked, the rest and the Claim Store not)."""
    if os.environ.get(CRASH_ENV) == name:
        # Windows has no SIGKILL; there os.kill is TerminateProcess, as hard a stop
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
