"""bench/measure.py, the one harness every benchmark times its runs with: real child
processes, measured from outside. What is checked is what the figures rest on (the CPU
of a process's own children is counted, the order turns round by round, a failed run
stops the benchmark), never how fast anything is."""

from __future__ import annotations

import importlib.util
import re
import resource
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

BENCH = REPO / "bench"
# a grandchild busy for a while: its CPU reaches the parent only through the child's wait
BUSY_GRANDCHILD = (
    "import subprocess, sys; "
    "subprocess.run([sys.executable, '-c', 'sum(i * i for i in range(3_000_000))'], check=True)"
)


@pytest.fixture(scope="module")
def measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("measure", BENCH / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["measure"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_a_tiny_paired_run_prints_ratios_and_the_load(tmp_path: Path) -> None:
    command = [sys.executable, str(BENCH / "measure.py"), "--rounds", "2"]
    command += ["--", sys.executable, "-c", "pass", "--", sys.executable, "-c", BUSY_GRANDCHILD]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.match(r"2 rounds, order turning; load average \(1, 5, 15 min\): before [\d.]+ "
                    r"[\d.]+ [\d.]+, after [\d.]+ [\d.]+ [\d.]+$", lines[2]), lines  # fmt: skip
    spread = r"([\d.]+) / ([\d.]+) / ([\d.]+)$"
    wall = re.search(r"B / A wall, min / median / max: " + spread, done.stdout, re.M)
    cpu = re.search(r"B / A CPU,  min / median / max: " + spread, done.stdout, re.M)
    assert wall and cpu, done.stdout
    low, median, high = (float(x) for x in cpu.groups())
    assert low <= median <= high
    # the grandchild's CPU is in B's figure: wait4 of the child holds its reaped children
    assert low > 1.5, done.stdout


def test_two_sides_alternate_and_more_sides_rotate(measure: ModuleType) -> None:
    ran: list[str] = []

    def side(name: str) -> object:
        def run() -> object:
            ran.append(name)
            return measure.Measured(1.0, 1.0, 0, 1, 0)

        return run

    prepared: list[int] = []
    rounds = measure.interleaved(
        {n: side(n) for n in "AB"}, 3, prepare=lambda: prepared.append(1), warmup=True
    )
    assert ran == ["A", "B", "A", "B", "B", "A", "A", "B"]  # the warm-up, then A B, B A, A B
    assert rounds.order == ran[2:] and len(prepared) == len(ran)
    assert [len(runs) for runs in rounds.runs.values()] == [3, 3]
    ran.clear()
    measure.interleaved({n: side(n) for n in "ABC"}, 3)
    assert ran == list("ABCBCACAB")


def test_ratios_are_taken_round_by_round(measure: ModuleType) -> None:
    def runs(*cpus: float) -> list[object]:
        return [measure.Measured(1.0, cpu, 0, 1, 0) for cpu in cpus]

    rounds = measure.Rounds({"base": runs(1.0, 2.0, 4.0), "new": runs(2.0, 2.0, 2.0)})
    assert rounds.ratios("new", "base") == [2.0, 1.0, 0.5]
    assert measure.spread(rounds.ratios("new", "base")) == "0.500 / 1.000 / 2.000"
    assert rounds.median("base") == 2.0


def test_a_run_counts_its_tree_and_keeps_its_output(measure: ModuleType, tmp_path: Path) -> None:
    busy = measure.run_measured([sys.executable, "-c", BUSY_GRANDCHILD], memory=True)
    idle = measure.run_measured([sys.executable, "-c", "pass"], memory=True)
    assert busy.code == 0 and busy.processes >= 2 and idle.processes == 1
    assert busy.cpu > idle.cpu and busy.peak_kib > 0 and idle.largest_kib > 0
    # a bare interpreter's own peak (sampled while it waits), not the peak of the test
    # run that spawned it, which Linux leaves in the child's ru_maxrss
    waiting = measure.run_measured([sys.executable, "-c", "import time; time.sleep(0.3)"])
    assert 0 < waiting.peak_kib < resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    printed = measure.run_measured(
        [sys.executable, "-c", "print('figures'); print('PHASE 0.5 0.25')"], capture=True
    )
    assert printed.out.splitlines()[0] == "figures"
    assert printed.phase() == (0.5, 0.25)
    assert idle.phase() is None


def test_a_failed_run_stops_the_benchmark_in_one_message(measure: ModuleType) -> None:
    script = "import sys; print('what went wrong', file=sys.stderr); sys.exit(3)"
    with pytest.raises(SystemExit) as stopped:
        measure.run_checked([sys.executable, "-c", script])
    message = str(stopped.value.code)
    assert "exited 3" in message and message.endswith("what went wrong")
    assert measure.run_checked([sys.executable, "-c", "import sys; sys.exit(1)"], (0, 1)).code == 1


def test_the_vt_of_an_environment(measure: ModuleType, tmp_path: Path) -> None:
    assert Path(measure.vt_of(Path(sys.prefix))).name.startswith("vt")
    with pytest.raises(SystemExit, match="no vt installed there"):
        measure.vt_of(tmp_path)
