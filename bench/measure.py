"""Run a command and measure its whole process tree: wall time, CPU time, peak memory.

- wall: from spawn to exit;
- CPU: user + system time of the process and of every descendant it waited for, as
  os.wait4 reports it (Linux adds reaped children's time to their parent's);
- peak memory: the sum over the processes of the tree of each one's own peak resident
  set (VmHWM in /proc/PID/status), read every `INTERVAL` seconds while they run. A
  process's peak only grows, so what is missed is growth in its last interval. Pages
  that forked workers still share with their parent count in each process's RSS, so the
  sum is an upper bound on the memory the run held at any one time. (os.wait4's
  ru_maxrss is the largest single process, not the sum.)

Linux only (/proc); stdlib only.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

INTERVAL = 0.02


@dataclass
class Measured:
    wall: float  # seconds
    cpu: float  # seconds, user + system, the whole tree
    peak_kib: int  # sum of each process's peak RSS
    processes: int  # processes seen in the tree, the root included
    code: int
    largest_kib: int = 0  # the largest single process's peak (os.wait4's ru_maxrss)


def _pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def _peak_kib(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_bytes()
    except OSError:
        return None
    start = status.find(b"VmHWM:")
    if start < 0:  # a zombie: its memory is gone, its peak was read before
        return None
    return int(status[start + 6 : status.index(b"kB", start)])


class _TreeSampler(threading.Thread):
    """Follows the tree under `root`: new processes whose parent is in the tree join it."""

    def __init__(self, root: int, before: set[int]) -> None:
        super().__init__(daemon=True)
        self.root, self.seen = root, set(before)
        self.tree: set[int] = {root}
        self.peaks: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while True:
            self.sample()
            if self.done.wait(INTERVAL):
                return

    def sample(self) -> None:
        for pid in _pids() - self.seen:  # processes started since the last look
            self.seen.add(pid)
            if _parent_of(pid) in self.tree:
                self.tree.add(pid)
        for pid in self.tree:
            peak = _peak_kib(pid)
            if peak is not None:
                self.peaks[pid] = max(peak, self.peaks.get(pid, 0))


def run_measured(
    command: list[str],
    cwd: Path | None = None,
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
) -> Measured:
    """Run `command` and measure it; see the module's docstring. Its output is discarded,
    or written to the files `stdout` and `stderr`."""
    before = _pids()
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=stdout, stderr=stderr)
    sampler = _TreeSampler(process.pid, before)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
    peaks = sampler.peaks
    if len(sampler.tree) == 1:  # one process: its own peak, exactly
        peaks = {process.pid: usage.ru_maxrss}
    return Measured(
        wall,
        usage.ru_utime + usage.ru_stime,
        sum(peaks.values()),
        len(sampler.tree),
        process.returncode,
        usage.ru_maxrss,
    )
