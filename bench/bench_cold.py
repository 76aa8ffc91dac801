#!/usr/bin/env python3
"""Cold `vt validate` of this install against another install of vt, paired.

    python bench/bench_cold.py --baseline VENV [--notes 10000] [--rounds 8]
    python bench/bench_cold.py --baseline VENV --notes 300 --rounds 1   # a quick check

VENV is a virtual environment holding the version to compare with, each side from its
own `pip install .` (an editable install has no compiled modules where
PYTHONDONTWRITEBYTECODE is set, and would time Python compiling vt's source):

    git worktree add /tmp/base COMMIT
    python -m venv /tmp/base-venv && /tmp/base-venv/bin/pip install /tmp/base

Both sides validate the same vault (bench/synthetic.py, `--seed`, `--defects`), kept in
--out for later runs, its `.vt/` removed before every run (cold: no cache). The rounds
alternate the order (A B, then B A, ...), so a slow spell of the machine falls on both
sides alike. For each run: wall time and CPU time (user + system of the whole process
tree, from bench/measure.py, the benchmarks' harness). Reported: each side's median,
and the per-round ratios B/A (this install over the baseline) as min / median / max;
the load average before and after. On a loaded machine the CPU ratio is the figure to
trust.
Stdlib only (plus the two installs of vault_tools).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from measure import Measured, folder, interleaved, run_measured, spread, vt_of  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]


def the_vault(out: Path, notes: int, seed: int, defects: float) -> Path:
    vault = out / f"cold-{notes}-{seed}-{defects}"
    if not (vault / "03_claims").is_dir():
        make_vault(vault, notes, seed=seed, defects=defects)
    return vault


def cold_run(vt: str, vault: Path) -> Measured:
    shutil.rmtree(vault / ".vt", ignore_errors=True)
    measured = run_measured([vt, "validate", "--vault", str(vault)])
    if measured.code not in (0, 1):
        raise SystemExit(f"{vt} validate exited {measured.code}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other install")
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--defects", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out", type=folder, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    sides = {"A baseline": vt_of(args.baseline), "B this": vt_of(Path(sys.prefix))}
    vault = the_vault(args.out, args.notes, args.seed, args.defects)
    results = interleaved(
        {name: (lambda vt=vt: cold_run(vt, vault)) for name, vt in sides.items()}, args.rounds
    )
    print(f"{os.cpu_count()} cores; {args.notes} notes; {args.rounds} rounds, order alternating")
    print(f"  {'side':<12} {'wall s':>7} {'CPU s':>7}  vt")
    for name in sides:
        wall, cpu = results.median(name, "wall"), results.median(name, "cpu")
        print(f"  {name:<12} {wall:>7.2f} {cpu:>7.2f}  {sides[name]}")
    walls = results.ratios("B this", "A baseline", "wall")
    cpus = results.ratios("B this", "A baseline", "cpu")
    print(f"  B/A wall, min / median / max of the rounds: {spread(walls)}")
    print(f"  B/A CPU,  min / median / max of the rounds: {spread(cpus)}")
    print(f"  {results.load()}")


if __name__ == "__main__":
    main()
