"""Paired, interleaved timings of `vt apply` (or of a cold `vt ledger verify`) from two
source trees of vault_tools: A, B, A, B, … on copies of one vault, each from the same
state. For a change whose cost hides in the load of a shared machine: each pair runs
seconds apart, so the ratio B/A of a pair is what the change costs, and the spread of
the ratios says how far to trust it.

    python bench/bench_paired.py --a OLD_TREE --b NEW_TREE [--notes 1000] [--rounds 5]
                                 [--verify TREE]

A tree is a folder holding `vault_tools/` (a checkout, or `git archive REV | tar -x`);
both default to this repository. Each run is `python -m vault_tools apply --vault V
--json` with PYTHONPATH set to the tree, started outside the repository. The vault is
bench/bench_apply.py's: every note approved by the runner. Before the pairs, one run of
each tree is not counted (it compiles the tree's bytecode). Per pair: wall time and CPU
time (user + system of the child and its workers, from getrusage(RUSAGE_CHILDREN)),
then the ratios B/A with their min / median / max, and the load average before and
after. With `--verify TREE`: TREE's apply decides the vault once, and each run is a cold
`vt ledger verify` of that ledger (`.vt` left out of the copy). Stdlib only (plus
vault_tools).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_apply import make_approved_vault  # bench/bench_apply.py

REPO = Path(__file__).resolve().parents[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_vt(tree: Path, template: Path, work: Path, command: str) -> tuple[float, float]:
    """(wall s, CPU s) of one `vt apply` or cold `vt ledger verify` (no .vt state) on a
    fresh copy of `template`."""
    vault = work / "vault"
    if vault.exists():
        shutil.rmtree(vault)
    shutil.copytree(template, vault, symlinks=True, ignore=shutil.ignore_patterns(".vt"))
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = ["apply", "--json"] if command == "apply" else ["ledger", "verify"]
    cmd = [sys.executable, "-m", "vault_tools", *args, "--vault", str(vault)]
    os.sync()  # the copy's write-back is no part of the run
    cpu = children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu = children_cpu() - cpu
    if done.returncode != 0:
        failed = f"{command} from {tree} failed ({done.returncode})"
        raise SystemExit(f"{failed}:\n{done.stderr[-2000:]}")
    if command == "apply" and (refused := json.loads(done.stdout)["refused"]):
        raise SystemExit(f"apply from {tree} refused notes: {refused[:2]}")
    return wall, cpu


def spread(values: list[float]) -> str:
    return f"min {min(values):.3f}  median {statistics.median(values):.3f}  max {max(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", type=Path, default=REPO, help="the tree measured first")
    parser.add_argument("--b", type=Path, default=REPO, help="the tree compared with it")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where to build the vaults")
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
    try:
        template = make_approved_vault(work / "template", args.notes)
        trees = {"A": args.a.resolve(), "B": args.b.resolve()}
        if args.verify is not None:
            run_vt(args.verify.resolve(), template, work, "apply")
            template = work / "applied"
            shutil.move(work / "vault", template)
        for tree in trees.values():
            run_vt(tree, template, work, command)  # bytecode compiled, not counted
        load_before = os.getloadavg()
        pairs = []
        for _ in range(args.rounds):
            a = run_vt(trees["A"], template, work, command)
            b = run_vt(trees["B"], template, work, command)
            pairs.append((a, b))
            print(f"A wall {a[0]:.2f} s cpu {a[1]:.2f} s | B wall {b[0]:.2f} s cpu {b[1]:.2f} s")
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall = [b[0] / a[0] for a, b in pairs]
    cpu = [b[1] / a[1] for a, b in pairs]
    what = "apply" if args.verify is None else f"cold verify of the ledger {args.verify} wrote"
    print(f"{what}, {args.notes} notes, {args.rounds} pairs, A={trees['A']} B={trees['B']}")
    print(f"wall B/A: {spread(wall)}")
    print(f"CPU  B/A: {spread(cpu)}")
    print(
        "load average (1, 5, 15 min): before "
        + " ".join(f"{x:.1f}" for x in load_before)
        + ", after "
        + " ".join(f"{x:.1f}" for x in load_after)
    )


if __name__ == "__main__":
    main()
