#!/usr/bin/env python3
"""Where a cold `vt validate` spends its CPU, in one process: reading and parsing the
notes, the checks other than the review assist, and the review assist, for this
install and, paired, another (`--baseline VENV`).

    python bench/bench_parts.py --baseline VENV [--notes 10000] [--rounds 3]
    python bench/bench_parts.py --notes 300 --rounds 1    # this install alone, a quick check

Each run is a fresh process of the install's own Python (each side from its own `pip
install .`, as bench_cold.py explains) that reads and parses every note of the vault
(bench/synthetic.py, `--seed`, `--defects`, kept in --out), checks them with the review
assist off, then runs the review assist over them, each step once and timed with
`time.process_time()`, with the collector off as in a worker of the pool. It knows two
layouts of the package: today's subpackages and the flat package of 3c43af8 and before.
The rounds alternate the order (A B, then B A, ...). Reported: each side's median of
each part, and the per-round ratios this / baseline of each part, min / median / max;
the load average before and after.
Stdlib only (plus the installs of vault_tools).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from measure import Measured, folder, interleaved, run_checked, spread  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("read and parse", "other checks", "review assist")

# Run by each side's own interpreter: prints `PARTS read check assist` (CPU seconds).
CHILD = """
import gc, sys, time
from pathlib import Path
from vault_tools.config import load_settings
try:  # the subpackages
    from vault_tools.checks.assist.run import review_findings
    from vault_tools.checks.context import make_context
    from vault_tools.checks.file_checks import _read
    from vault_tools.checks.rules import check_note
    from vault_tools.notes.vault import list_vault

    def read(settings, relative):
        return _read(settings, relative)[0]
except ImportError:  # one flat package (3c43af8 and before)
    from vault_tools.assist import review_findings
    from vault_tools.checks import check_note
    from vault_tools.validate import _read as read, make_context
    from vault_tools.vault import list_vault

settings = load_settings(Path(sys.argv[1]))
listing = list_vault(settings.vault)
ctx = make_context(settings, listing, assist=False)
gc.collect()
gc.freeze()
gc.disable()
start = time.process_time()
notes = [r.note for r in (read(settings, p) for p in listing.paths) if hasattr(r, "note")]
read_done = time.process_time()
for note in notes:
    check_note(note, ctx)
checks_done = time.process_time()
ctx.assist = True
for note in notes:
    review_findings(note, ctx)
assist_done = time.process_time()
print("PARTS", read_done - start, checks_done - read_done, assist_done - checks_done)
"""


def parts(measured: Measured) -> tuple[float, ...]:
    last = measured.out.strip().splitlines()[-1]
    return tuple(float(x) for x in last.split()[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="the other install (a virtual env)")
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--defects", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=folder, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    vault = args.out / f"cold-{args.notes}-{args.seed}-{args.defects}"
    if not (vault / "03_claims").is_dir():
        make_vault(vault, args.notes, seed=args.seed, defects=args.defects)
    pythons = {"B this": sys.executable}
    if args.baseline is not None:
        pythons = {"A baseline": str(args.baseline / "bin" / "python"), **pythons}
    results = interleaved(
        {
            # in the vault's folder: `-c` puts the working folder first on sys.path, and
            # from a checkout both sides would import the checkout's vault_tools
            name: (lambda python=python: run_checked([python, "-c", CHILD, str(vault)], cwd=vault))
            for name, python in pythons.items()
        },
        args.rounds,
    )
    print(f"{os.cpu_count()} cores; {args.notes} notes; {args.rounds} rounds, order alternating")
    print(f"  {'side':<12} " + " ".join(f"{part + ' ms':>17}" for part in PARTS))
    measured = {name: [parts(m) for m in results.runs[name]] for name in pythons}
    for name in pythons:
        medians = [statistics.median(run[i] for run in measured[name]) for i in range(3)]
        print(f"  {name:<12} " + " ".join(f"{1000 * m:>17.0f}" for m in medians))
    if args.baseline is not None:
        for i, part in enumerate(PARTS):
            pairs = zip(measured["B this"], measured["A baseline"], strict=True)
            ratios = [this[i] / base[i] for this, base in pairs]
            print(f"  B/A {part}, min / median / max of the rounds: {spread(ratios)}")
    print(f"  {results.load()}")


if __name__ == "__main__":
    main()
