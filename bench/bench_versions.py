#!/usr/bin/env python3
"""Cold `vt validate` of one vault by two versions of vt, paired and interleaved.

    python bench/synthetic.py /tmp/vault --notes 10000 --seed 7 --defects 0.05
    python bench/bench_versions.py --vault /tmp/vault --base d531b8f [--new HEAD] [--runs 6]
    python bench/bench_versions.py --notes 200 --dir /tmp/v --base HEAD --runs 1  # quick

Without --vault, a vault of --notes notes is written by bench/synthetic.py (seed 7, 5%
defects) into --dir.

Each version is the source tree of a commit (`git archive`, so neither is an editable
install of the work tree), run as `python -m vault_tools` with that tree first on
PYTHONPATH and this interpreter's packages for the dependencies. Each round runs both,
cold (no `.vt/` cache), the order turning every round (A B, B A, …) so a slow spell of
the machine falls on both. A round's ratio is new over base; the minimum, median and
maximum of the rounds' ratios are printed for wall time and for CPU time (user + system
of every process of the run), with the load average before and after, all from
bench/measure.py, the benchmarks' harness. The
two versions' outputs must be the same but for the new version's own findings, which
are listed by code.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from measure import Measured, export, folder, interleaved, run_measured, spread, tree_env
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]


def codes(output: str) -> Counter[str]:
    """Findings by code, from `vt validate`'s lines (`path:line: severity code: …`)."""
    found: Counter[str] = Counter()
    for line in output.splitlines():
        parts = line.split(": ")
        if len(parts) >= 3:
            found[parts[1].split(" ")[-1]] += 1
    return found


def run(tree: Path, vault: Path, out: Path) -> Measured:
    shutil.rmtree(vault / ".vt", ignore_errors=True)
    with out.open("wb") as sink:
        command = [sys.executable, "-m", "vault_tools", "validate", "--vault", str(vault)]
        measured = run_measured(command, stdout=sink, env=tree_env(tree))
    if measured.code not in (0, 1):
        raise SystemExit(f"{tree.name}: vt validate exited {measured.code}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, help="an existing vault (else one is written)")
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--dir", type=folder, default=Path(tempfile.gettempdir()))
    parser.add_argument("--base", required=True, help="the commit measured against")
    parser.add_argument("--new", default="HEAD")
    parser.add_argument("--runs", type=int, default=6, help="rounds (each runs both)")
    args = parser.parse_args()
    if args.vault is None:
        args.vault = args.dir / f"versions-{args.notes}"
        if not args.vault.exists():
            make_vault(args.vault, args.notes, seed=7, defects=0.05)
    with tempfile.TemporaryDirectory(prefix="vt-versions-") as scratch:
        scratch_dir = Path(scratch)
        base, new = export(args.base, scratch_dir), export(args.new, scratch_dir)
        trees = {"base": base, "new": new}
        figures = interleaved(
            {
                name: (lambda t=tree: run(t, args.vault, scratch_dir / f"{t.name}.out"))
                for name, tree in trees.items()
            },
            args.runs,
        )
        base_codes = codes((scratch_dir / f"{base.name}.out").read_text("utf-8", "replace"))
        new_codes = codes((scratch_dir / f"{new.name}.out").read_text("utf-8", "replace"))
    print(f"vault {args.vault}, {args.runs} rounds, base {args.base}, new {args.new}")
    print(figures.load())
    for name in trees:
        print(
            f"  {name}: wall median {figures.median(name, 'wall'):.3f} s, "
            f"CPU median {figures.median(name):.3f} s"
        )
    print(f"  new/base wall, min / median / max: {spread(figures.ratios('new', 'base', 'wall'))}")
    print(f"  new/base CPU,  min / median / max: {spread(figures.ratios('new', 'base', 'cpu'))}")
    added = new_codes - base_codes
    gone = base_codes - new_codes
    print(f"  findings only the new version gives: {dict(added) or 'none'}")
    print(f"  findings only the base gives: {dict(gone) or 'none'}")


if __name__ == "__main__":
    main()
