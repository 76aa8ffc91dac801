"""The benchmarks' one harness: run a command as a child process and measure it, and run
several such sides interleaved, round after round, so that a slow spell of a shared
machine falls on every side alike.

A run (`run_measured`) is one child process, measured from outside:
- wall: from spawn to exit;
- CPU: user + system time of the process and of every descendant it waited for, as
  os.wait4 reports it (Linux adds reaped children's time to their parent's);
- peak memory: the sum over the processes of the tree of each one's own peak resident
  set (VmHWM in /proc/PID/status), read every `INTERVAL` seconds while they run. A
  process's peak only grows, so what is missed is growth in its last interval. Pages
  that forked workers still share with their parent count in each process's RSS, so the
  sum is an upper bound on the memory the run held at any one time. (os.wait4's
  ru_maxrss is the largest single process, not the sum, and on Linux never less than
  the peak of the parent that spawned it: it is used only when it is more.) Where /proc
  is missing the memory figures are those of wait4 alone.

Rounds (`interleaved`): every side runs once a round, in an order that turns each round
(A B, then B A; with three sides A B C, B C A, C A B), each run after `prepare()` puts the
input back in the same state, outside the timing. The figures are each side's median and
the per-round ratios of two sides (`Rounds.ratios`) as min / median / max, with the load
average before and after (`Rounds.load`). On a loaded machine the CPU ratio is the one
to trust: the wall ratio follows the load.

Versions are compared from real installs: `vt_of(VENV)` is the `vt` of a virtual
environment, `install(SOURCE, VENV)` makes one with `pip install SOURCE`, and
`export(COMMIT, INTO)` unpacks a commit's source tree (`git archive`) to install or to
run with PYTHONPATH (`tree_env`).

    python bench/measure.py --rounds 5 -- CMD_A ... -- CMD_B ...   # pair two commands
    python bench/measure.py --install COMMIT VENV                  # a baseline install

Stdlib only; POSIX (os.wait4, os.getloadavg).
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

INTERVAL = 0.02
ROOT = Path(__file__).resolve().parents[1]
PROC = Path("/proc")


@dataclass
class Measured:
    wall: float  # seconds
    cpu: float  # seconds, user + system, the whole tree
    peak_kib: int  # sum of each process's peak RSS
    processes: int  # processes seen in the tree, the root included
    code: int
    largest_kib: int = 0  # the largest single process's peak (os.wait4's ru_maxrss)
    out: str = ""  # its standard output, when captured
    err: str = ""

    def phase(self) -> tuple[float, float] | None:
        """The (wall, CPU) a child printed of its own step as its last line, `PHASE wall
        cpu` (see `phase_clock`), or None."""
        last = self.out.strip().splitlines()[-1:] or [""]
        if not last[0].startswith("PHASE "):
            return None
        _, wall, cpu = last[0].split()
        return float(wall), float(cpu)


def folder(text: str) -> Path:
    """An argparse type for a folder a benchmark writes into: made when missing (with its
    parents), so that `--dir` or `--out` naming a new folder works as written."""
    path = Path(text)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _pids() -> set[int]:
    return {int(name) for name in os.listdir(PROC) if name.isdigit()}


def _parent_of(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def _peak_kib(pid: int) -> int | None:
    try:
        status = (PROC / str(pid) / "status").read_bytes()
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
    command: Sequence[str],
    cwd: Path | None = None,
    stdout: IO[bytes] | int = subprocess.DEVNULL,
    stderr: IO[bytes] | int = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
    capture: bool = False,
    memory: bool = True,
) -> Measured:
    """Run `command` and measure it; see the module's docstring. Its output is discarded,
    written to the files `stdout` and `stderr`, or with `capture` kept in `out` and
    `err` (through files: a pipe could fill while the child is waited for). `memory`
    False leaves the tree unsampled, for runs too short for a 20 ms sampler."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        if capture:
            stdout, stderr = out, err
        sampling = memory and PROC.is_dir()
        before = _pids() if sampling else set()
        # Linux keeps the peak of the image a child replaced at exec in its ru_maxrss, and
        # that image is this process's (vfork) or a copy of it (fork)
        inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            env=None if env is None else dict(env),
        )
        sampler = _TreeSampler(process.pid, before)
        if sampling:
            sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if sampling:
            sampler.done.set()
            sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        peaks = dict(sampler.peaks)
        # wait4's figure is the tree's largest peak, exactly, unless it is no more than
        # what the child inherited; then the samples are all there is
        own = usage.ru_maxrss if usage.ru_maxrss > inherited else 0
        if len(sampler.tree) == 1:  # one process: its own peak
            peaks = {process.pid: max(own, peaks.get(process.pid, 0))}
        largest = max(own, *peaks.values(), 0)
        if not largest:  # over before the first sample: wait4's figure, an upper bound
            largest = usage.ru_maxrss
            peaks = {process.pid: largest}
        measured = Measured(
            wall,
            usage.ru_utime + usage.ru_stime,
            sum(peaks.values()),
            len(sampler.tree),
            process.returncode,
            largest,
        )
        if capture:
            out.seek(0)
            err.seek(0)
            measured.out = out.read().decode("utf-8", "replace")
            measured.err = err.read().decode("utf-8", "replace")
    return measured


def run_checked(
    command: Sequence[str],
    codes: tuple[int, ...] = (0,),
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    memory: bool = True,
) -> Measured:
    """`run_measured`, its output captured; a run that exits with a code not in `codes`
    ends the benchmark with its command and the end of its error output."""
    measured = run_measured(command, cwd=cwd, env=env, capture=True, memory=memory)
    if measured.code not in codes:
        tail = measured.err.strip()[-2000:]
        raise SystemExit(f"{' '.join(command)} exited {measured.code}:\n{tail}")
    return measured


def phase_clock() -> Callable[[], tuple[float, float]]:
    """For timing a step inside a process (a benchmark's child, or an in-process loop):
    call it at the start of the step; calling what it returns gives the step's (wall,
    CPU) so far, the CPU of this process and of the children it reaped. A child prints
    them as its last line, `PHASE wall cpu`, for `Measured.phase`."""

    def cpu() -> float:
        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    wall0, cpu0 = time.perf_counter(), cpu()
    return lambda: (time.perf_counter() - wall0, cpu() - cpu0)


Side = Callable[[], Measured]


@dataclass
class Rounds:
    """The runs of each side, in the order the sides were given, and the load average
    (1, 5, 15 minutes) before the first round and after the last."""

    runs: dict[str, list[Measured]]
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    order: list[str] = field(default_factory=list)  # the sides, as they ran

    def median(self, side: str, key: str = "cpu") -> float:
        return statistics.median(getattr(m, key) for m in self.runs[side])

    def ratios(self, top: str, bottom: str, key: str = "cpu") -> list[float]:
        """top / bottom of each round, by `key` ("wall", "cpu" or "peak_kib")."""
        pairs = zip(self.runs[top], self.runs[bottom], strict=True)
        return [getattr(t, key) / getattr(b, key) for t, b in pairs]

    def load(self, digits: int = 2) -> str:
        return load_text(self.load_before, self.load_after, digits)

    def table(self, top: str, bottom: str) -> list[str]:
        """Lines of text: each side's median wall and CPU, and the ratios top / bottom."""
        lines = [f"{len(self.runs[top])} rounds, order turning; {self.load()}"]
        for side in (bottom, top):
            lines.append(
                f"  {side}: wall median {self.median(side, 'wall'):.3f} s, "
                f"CPU median {self.median(side):.3f} s"
            )
        for key, label in (("wall", "wall,"), ("cpu", "CPU,")):
            lines.append(
                f"  {top} / {bottom} {label:<5} min / median / max: "
                f"{spread(self.ratios(top, bottom, key))}"
            )
        return lines


def load_text(
    before: tuple[float, float, float], after: tuple[float, float, float], digits: int = 2
) -> str:
    """The load average before and after a measurement (os.getloadavg() at each end)."""

    def three(values: tuple[float, float, float]) -> str:
        return " ".join(f"{x:.{digits}f}" for x in values)

    return f"load average (1, 5, 15 min): before {three(before)}, after {three(after)}"


def turn(names: Sequence[str], number: int) -> list[str]:
    """The order of round `number`: A B, B A, ...; with more sides, rotated by one a round."""
    if len(names) == 2:
        return list(names) if number % 2 == 0 else list(reversed(names))
    shift = number % max(len(names), 1)
    return [*names[shift:], *names[:shift]]


def interleaved(
    sides: Mapping[str, Side],
    rounds: int,
    prepare: Callable[[], None] | None = None,
    warmup: bool = False,
    order: Callable[[Sequence[str], int], list[str]] = turn,
) -> Rounds:
    """`rounds` rounds of every side once, the order of round N `order(names, N)` (by
    default turning each round); `prepare()` before each run, outside its timing. With
    `warmup`, each side runs once first, uncounted (bytecode compiled, caches filled,
    files in the page cache)."""
    names = list(sides)
    if warmup:
        for name in names:
            if prepare is not None:
                prepare()
            sides[name]()
    result = Rounds({name: [] for name in names}, load_before=os.getloadavg())
    for number in range(rounds):
        for name in order(names, number):
            if prepare is not None:
                prepare()
            result.runs[name].append(sides[name]())
            result.order.append(name)
    result.load_after = os.getloadavg()
    return result


def spread(values: Sequence[float], digits: int = 3) -> str:
    """min / median / max."""
    return " / ".join(
        f"{x:.{digits}f}" for x in (min(values), statistics.median(values), max(values))
    )


def vt_of(prefix: Path) -> str:
    """The `vt` script of the environment at `prefix`."""
    found = shutil.which("vt", path=str(prefix / "bin")) or shutil.which(
        "vt", path=str(prefix / "Scripts")
    )
    if found is None:
        raise SystemExit(f"{prefix}: no vt installed there")
    return found


def export(commit: str, into: Path) -> Path:
    """The source tree of `commit` of this repository (what `pip install` needs, and the
    package to run with `tree_env`), unpacked into a folder of `into`."""
    tree = into / commit.replace("/", "_")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def install(source: Path, venv: Path) -> str:
    """A virtual environment at `venv` with `pip install SOURCE` (compiled modules, as a
    user's install), and its `vt`. An editable install would time Python compiling vt's
    source at every start where PYTHONDONTWRITEBYTECODE is set."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    subprocess.run([str(bindir / "python"), "-m", "pip", "install", "-q", str(source)], check=True)
    return vt_of(venv)


def tree_env(tree: Path) -> dict[str, str]:
    """This process's environment with `tree`'s vault_tools first on the import path: a
    source tree run as `python -m vault_tools`, this interpreter's packages for the rest."""
    return {**os.environ, "PYTHONPATH": str(tree)}


def _split_commands(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    for word in words:
        if word == "--":
            commands.append([])
        elif commands:
            commands[-1].append(word)
    return [command for command in commands if command]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Pair two commands (A B, B A, ...) and print the ratio B/A, or make "
        "a baseline install of a commit.",
        usage="%(prog)s [--rounds N] -- CMD_A ... -- CMD_B ...\n"
        "       %(prog)s --install COMMIT VENV",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--install", nargs=2, metavar=("COMMIT", "VENV"))
    args, rest = parser.parse_known_args(argv)
    if args.install:
        commit, venv = args.install
        with tempfile.TemporaryDirectory(prefix="vt-baseline-") as scratch:
            print(install(export(commit, Path(scratch)), Path(venv)))
        return
    commands = _split_commands(rest)
    if len(commands) != 2:
        parser.error("give two commands, each after its own --")
    sides = {"A": commands[0], "B": commands[1]}
    rounds = interleaved(
        {name: (lambda c=command: run_checked(c)) for name, command in sides.items()},
        args.rounds,
    )
    for name, command in sides.items():
        print(f"{name}: {' '.join(command)}")
    print("\n".join(rounds.table("B", "A")))


if __name__ == "__main__":
    main()
