#!/usr/bin/env python3
"""Time `vt validate` against references measured in the same run.

    pip install -e '.[bench]'    # python-frontmatter, for (N)
    python bench/bench_validate.py [--sizes 2000,10000] [--runs 3]
    python bench/bench_validate.py --sizes 300 --runs 1    # a quick check

The vaults are written by bench/synthetic.py (kept in --out for later runs).
(R1) a lean script: read each file, load the frontmatter with PyYAML's C loader,
     json.loads each fenced JSON block; validates nothing. One process.
(RW) the same lean script on as many processes as a cold `vt validate` uses (vt's rule:
     one worker per core from 400 notes on, the parent listing the files): the parent
     lists the files and forks the workers, each reads its share.
(N)  the obvious python-frontmatter + jsonschema loop that also validates each frame.
vt cold: no `.vt/` cache; vt warm: the cache of the previous run, nothing changed;
vt json: the same warm run with --json (goal: within 1.5x of the warm plain run, the
median of the rounds' json/warm ratios).
Each round runs every command once, one after the other, the order turning each round
(so a slow spell of the machine falls on all of them); ratios are taken within a round
and their median is reported, with "best" (fastest cold over fastest RW) as a second
view. For every command: wall time, CPU time (user + system of all its processes) and
peak memory (the sum of each process's own peak RSS), from bench/measure.py, the
benchmarks' harness, which says what each counts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
from pathlib import Path

from measure import Measured, Rounds, folder, interleaved, run_measured  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

from vault_tools.infra.pool import PARALLEL_THRESHOLD

ROOT = Path(__file__).resolve().parents[1]

LEAN = r"""
import json, os, re, sys, yaml
fence = re.compile(r"```json\n(.*?)\n```", re.S)

def check(paths):
    for path in paths:
        text = open(path, encoding="utf-8", errors="replace").read()
        if text.startswith("---\n"):
            try:
                yaml.load(text[4:text.find("\n---", 4)], Loader=yaml.CSafeLoader)
            except yaml.YAMLError:
                pass
        for block in fence.finditer(text):
            try:
                json.loads(block.group(1))
            except ValueError:
                pass

paths = []
for root, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    paths += [os.path.join(root, name) for name in files if name.endswith(".md")]
workers = int(sys.argv[2])
if workers < 2:
    check(paths)
else:
    children = []
    for i in range(workers):
        pid = os.fork()
        if pid == 0:
            check(paths[i::workers])
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
"""

NAIVE = r"""
import json, os, re, sys, frontmatter, jsonschema
schema = json.load(open(sys.argv[2], encoding="utf-8"))
validator = jsonschema.Draft202012Validator(schema)
fence = re.compile(r"```json\n(.*?)\n```", re.S)
for root, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for name in files:
        if not name.endswith(".md"):
            continue
        try:
            post = frontmatter.load(os.path.join(root, name))
        except Exception:
            continue
        if "claim_id" not in post.metadata:
            continue
        for block in fence.finditer(post.content):
            try:
                frame = json.loads(block.group(1))
            except ValueError:
                continue
            if "frame_type" in frame:
                list(validator.iter_errors(frame))
"""


def sized_vault(size: int, out: Path) -> Path:
    """The vault of `size` notes under `out`, made once and kept for later runs."""
    vault = out / f"vault-{size}"
    if not (vault / "03_claims").is_dir():
        make_vault(vault, size)
    return vault


def vt_workers(size: int) -> int:
    """The workers a cold `vt validate` of `size` notes forks (0: it runs alone)."""
    cores = os.cpu_count() or 1
    return cores if cores > 1 and size >= PARALLEL_THRESHOLD else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,10000", help="vault sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="rounds")
    parser.add_argument("--out", type=folder, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    naive = importlib.util.find_spec("frontmatter") is not None
    if not naive:
        print("(N) skipped: it needs python-frontmatter (pip install -e '.[bench]')")
    vt = shutil.which("vt", path=str(Path(sys.executable).parent)) or "vt"
    schema = ROOT / "schemas" / "semantic-frame.schema.json"
    print(f"{os.cpu_count()} cores; medians of {args.runs} rounds; ratios within a round")
    for size in (int(s) for s in args.sizes.split(",")):
        vault = sized_vault(size, args.out)
        workers = vt_workers(size)
        commands = {
            "R1": [sys.executable, "-c", LEAN, str(vault), "1"],
            "RW": [sys.executable, "-c", LEAN, str(vault), str(workers)],
            "N": [sys.executable, "-c", NAIVE, str(vault), str(schema)],
            "cold": [vt, "validate", "--vault", str(vault)],
            "warm": [vt, "validate", "--vault", str(vault)],
            "json": [vt, "validate", "--vault", str(vault), "--json"],
        }
        if not naive:
            del commands["N"]
        figures = rounds(args.runs, vault, commands)
        report(size, figures.runs)
        print(f"  {figures.load()}")
    print("goals: cold/RW <= 1.5 at 10k, warm/RW <= 0.25, memory flat as the vault grows")


def rounds(runs: int, vault: Path, commands: dict[str, list[str]]) -> Rounds:
    """Each command once per round (the order turning, cold always before the warm runs
    of the first round): a machine that slows down for a while slows every command
    alike, not one command's runs."""

    def side(kind: str, command: list[str]) -> Measured:
        if kind == "cold":
            shutil.rmtree(vault / ".vt", ignore_errors=True)
        measured = run_measured(command)
        if measured.code not in (0, 1):
            raise SystemExit(f"{' '.join(command)} exited {measured.code}")
        return measured

    sides = {kind: (lambda k=kind, c=command: side(k, c)) for kind, command in commands.items()}
    return interleaved(sides, runs)


LABELS = {
    "R1": "R1 lean, one process",
    "RW": "RW lean, as vt",
    "N": "N  naive",
    "cold": "vt cold",
    "warm": "vt warm",
    "json": "vt warm --json",
}


def report(size: int, results: dict[str, list[Measured]]) -> None:
    """One table per size: medians, and the medians of the per-round ratios to RW."""
    base = results["RW"]
    print(f"\n{size} notes")
    print(
        f"  {'command':<22} {'procs':>5} {'wall s':>7} {'CPU s':>7} {'peak MiB':>8} "
        f"{'wall/RW':>8} {'CPU/RW':>7}"
    )
    for kind, runs in results.items():
        wall = statistics.median(m.wall for m in runs)
        cpu = statistics.median(m.cpu for m in runs)
        peak = statistics.median(m.peak_kib for m in runs) / 1024
        wall_ratio = statistics.median(m.wall / b.wall for m, b in zip(runs, base, strict=True))
        cpu_ratio = statistics.median(m.cpu / b.cpu for m, b in zip(runs, base, strict=True))
        print(
            f"  {LABELS[kind]:<22} {runs[0].processes:>5} {wall:>7.2f} {cpu:>7.2f} "
            f"{peak:>8.1f} {wall_ratio:>8.2f} {cpu_ratio:>7.2f}",
            flush=True,
        )
    best = min(m.wall for m in results["cold"]) / min(m.wall for m in base)
    print(f"  best: the fastest cold run over the fastest RW run, {best:.2f}")
    as_json = statistics.median(
        j.wall / w.wall for j, w in zip(results["json"], results["warm"], strict=True)
    )
    print(f"  warm --json over warm plain, the rounds' median: {as_json:.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()
