"""Paired, interleaved timings of `vt apply` (or of a cold `vt ledger verify`) from two
source trees of vault_tools: A B, B A, … on copies of one vault, each from the same
state. For a change whose cost hides in the load of a shared machine: each pair runs
seconds apart, so the ratio B/A of a pair is what the change costs, and the spread of
the ratios says how far to trust it.

    python bench/bench_paired.py --a OLD_TREE --b NEW_TREE [--notes 1000] [--rounds 5]
                                 [--verify TREE]

A tree is a folder holding `vault_tools/` (a checkout, or `git archive REV | tar -x`);
both default to this repository. Each run is `python -m vault_tools apply --vault V
--json` with PYTHONPATH set to the tree, started outside the repository, on a fresh copy
of the vault. The vault is bench/bench_apply.py's: every note approved by the runner.
Before the rounds, one run of each tree is not counted (it compiles the tree's
bytecode). The rounds turn the order (A B, then B A), through bench/measure.py, the
benchmarks' harness: per run wall time and CPU time (user + system of the child and its
workers, from os.wait4), then the ratios B/A with their min / median / max, and the load
average before and after. With `--verify TREE`: TREE's apply decides the vault once, and
each run is a cold `vt ledger verify` of that ledger (`.vt` left out of the copy).
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench_apply import make_approved_vault  # bench/bench_apply.py
from measure import Measured, folder, interleaved, run_checked, spread, tree_env  # bench/measure.py

REPO = Path(__file__).resolve().parents[1]


def fresh_copy(template: Path, work: Path) -> None:
    vault = work / "vault"
    if vault.exists():
        shutil.rmtree(vault)
    shutil.copytree(template, vault, symlinks=True, ignore=shutil.ignore_patterns(".vt"))
    os.sync()  # the copy's write-back is no part of the run


def run_vt(tree: Path, vault: Path, work: Path, command: str) -> Measured:
    """One `vt apply` or cold `vt ledger verify` (no .vt state) of `vault`, from `tree`."""
    args = ["apply", "--json"] if command == "apply" else ["ledger", "verify"]
    cmd = [sys.executable, "-m", "vault_tools", *args, "--vault", str(vault)]
    measured = run_checked(cmd, cwd=work, env=tree_env(tree))
    if command == "apply" and (refused := json.loads(measured.out)["refused"]):
        raise SystemExit(f"apply from {tree} refused notes: {refused[:2]}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, default=REPO, help="the tree measured first")
    parser.add_argument("--b", type=Path, default=REPO, help="the tree compared with it")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=folder, default=None, help="where to build the vaults")
    parser.add_argument(
        "--verify",
        type=Path,
        default=None,
        metavar="TREE",
        help="time a cold `vt ledger verify` instead, of the ledger TREE's apply writes",
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="paired-", dir=args.dir))
    command = "apply" if args.verify is None else "verify"
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    try:
        template = make_approved_vault(work / "template", args.notes)
        if args.verify is not None:
            fresh_copy(template, work)
            run_vt(args.verify.resolve(), work / "vault", work, "apply")
            template = work / "applied"
            shutil.move(work / "vault", template)
        applied = template
        figures = interleaved(
            {
                name: (lambda t=tree: run_vt(t, work / "vault", work, command))
                for name, tree in trees.items()
            },
            args.rounds,
            prepare=lambda: fresh_copy(applied, work),
            warmup=True,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for a, b in zip(figures.runs["A"], figures.runs["B"], strict=True):
        print(f"A wall {a.wall:.2f} s cpu {a.cpu:.2f} s | B wall {b.wall:.2f} s cpu {b.cpu:.2f} s")
    what = "apply" if args.verify is None else f"cold verify of the ledger {args.verify} wrote"
    print(f"{what}, {args.notes} notes, {args.rounds} pairs, A={trees['A']} B={trees['B']}")
    print(f"wall B/A, min / median / max: {spread(figures.ratios('B', 'A', 'wall'))}")
    print(f"CPU  B/A, min / median / max: {spread(figures.ratios('B', 'A', 'cpu'))}")
    print(figures.load(1))


if __name__ == "__main__":
    main()
