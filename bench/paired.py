"""Paired, interleaved timing of two variants of one step: A, B, A, B, ... on the same
input, each run a fresh process.

Each run is a command; its wall time is taken around it and its CPU time (user + system
of the child and of every process it waited for) from `resource.getrusage(
RUSAGE_CHILDREN)` before and after. `prepare()` runs before every run (outside the
timing) to put the input back in the same state. The result of a pair is the ratio B/A;
the figures are the min, median and max of the ratios over the rounds, with the load
average before and after. Stdlib only; POSIX (`resource`, `os.getloadavg`).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Run:
    wall: float
    cpu: float
    phase_wall: float | None = None  # what the child reported of its own step, if any
    phase_cpu: float | None = None


@dataclass
class Paired:
    names: tuple[str, str]
    a: list[Run] = field(default_factory=list)
    b: list[Run] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # the 1-minute load average, each round

    def ratios(self, key: str) -> list[float]:
        return [getattr(rb, key) / getattr(ra, key) for ra, rb in zip(self.a, self.b, strict=True)]

    def table(self) -> str:
        """The figures as lines of text: each variant's median, and the ratio B/A."""
        rows = [f"rounds: {len(self.a)}, load average {min(self.load):.2f}-{max(self.load):.2f}"]
        keys = ["wall", "cpu"]
        if self.a and self.a[0].phase_wall is not None:
            keys += ["phase_wall", "phase_cpu"]
        for key in keys:
            a = statistics.median(getattr(r, key) for r in self.a)
            b = statistics.median(getattr(r, key) for r in self.b)
            ratios = self.ratios(key)
            rows.append(
                f"{key:>10}: {self.names[0]} {a:.3f} s, {self.names[1]} {b:.3f} s; "
                f"{self.names[1]}/{self.names[0]} min {min(ratios):.3f} "
                f"median {statistics.median(ratios):.3f} max {max(ratios):.3f}"
            )
        return "\n".join(rows)


def run_once(command: Sequence[str], env: dict[str, str] | None = None) -> Run:
    """One timed run of `command`. If its last line of output is `PHASE wall cpu`, the
    child's own figures for its step are kept beside the process's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run = Run(wall, cpu)
    last = done.stdout.strip().splitlines()[-1:] or [""]
    if last[0].startswith("PHASE "):
        _, phase_wall, phase_cpu = last[0].split()
        run.phase_wall, run.phase_cpu = float(phase_wall), float(phase_cpu)
    return run


def paired(
    names: tuple[str, str],
    commands: tuple[Sequence[str], Sequence[str]],
    rounds: int,
    prepare: Callable[[], None] = lambda: None,
    envs: tuple[dict[str, str] | None, dict[str, str] | None] = (None, None),
) -> Paired:
    """`rounds` pairs, A then B, each run after `prepare()`, each in its environment of
    `envs` (None: this process's)."""
    result = Paired(names)
    for _ in range(rounds):
        result.load.append(os.getloadavg()[0])
        for command, env, runs in zip(commands, envs, (result.a, result.b), strict=True):
            prepare()
            runs.append(run_once(command, env))
    result.load.append(os.getloadavg()[0])
    return result


def phase_clock() -> Callable[[], tuple[float, float]]:
    """For a child: call it at the start of its step; calling what it returns gives the
    step's (wall, CPU) so far, the CPU of this process and of the children it reaped."""

    def cpu() -> float:
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    wall0, cpu0 = time.perf_counter(), cpu()
    return lambda: (time.perf_counter() - wall0, cpu() - cpu0)
