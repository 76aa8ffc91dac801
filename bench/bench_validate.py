#!/usr/bin/env python3
"""Time `vt validate` against two references measured in the same run.

    pip install -e '.[bench]'    # python-frontmatter, for (N)
    python bench/bench_validate.py [--sizes 1000,10000,50000] [--runs 3]

(R) a lean script: read each file, load the frontmatter with PyYAML's C loader,
    json.loads each fenced JSON block; validates nothing.
(N) the obvious python-frontmatter + jsonschema loop that also validates each frame.
vt cold: no `.vt/` cache; vt warm: the cache of the previous run, nothing changed.
The commands run in --runs rounds, each once per round (so a slow spell of the machine
falls on all of them); figures are medians of the whole-process runs, reported as ratios
to (R) so that a noisy machine cancels out, with "best" (fastest cold over fastest R) as
a second view; peak RSS of the vt process shows memory staying flat.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]

LEAN = r"""
import json, os, re, sys, yaml
fence = re.compile(r"```json\n(.*?)\n```", re.S)
for root, dirs, files in os.walk(sys.argv[1]):
    dirs[:] = [d for d in dirs if not d.startswith(".")]
    for name in files:
        if not name.endswith(".md"):
            continue
        text = open(os.path.join(root, name), encoding="utf-8", errors="replace").read()
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


def timed(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {code}")
    return elapsed, usage.ru_maxrss


def sized_vault(size: int, out: Path) -> Path:
    """The vault of `size` notes under `out`, made once and kept for later runs."""
    vault = out / f"vault-{size}"
    if not (vault / "03_claims").is_dir():
        make_vault(vault, size)
    return vault


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    if importlib.util.find_spec("frontmatter") is None:
        sys.exit("(N) needs python-frontmatter: pip install -e '.[bench]'")
    vt = shutil.which("vt", path=str(Path(sys.executable).parent)) or "vt"
    schema = ROOT / "schemas" / "semantic-frame.schema.json"
    print(
        f"{'notes':>7} {'R s':>7} {'N s':>7} {'cold s':>7} {'warm s':>7} "
        f"{'N/R':>6} {'cold/R':>7} {'warm/R':>7} {'best':>6} {'RSS MiB':>8}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        vault = sized_vault(size, args.out)
        times, rss = rounds(args.runs, vault, vt, schema)
        lean, naive, cold, warm = (statistics.median(times[k]) for k in KINDS)
        best = min(times["cold"]) / min(times["lean"])
        print(
            f"{size:>7} {lean:>7.2f} {naive:>7.2f} {cold:>7.2f} {warm:>7.2f} "
            f"{naive / lean:>6.2f} {cold / lean:>7.2f} {warm / lean:>7.2f} {best:>6.2f} "
            f"{rss / 1024:>8.1f}",
            flush=True,
        )
    print("medians of the runs; best: the fastest cold run over the fastest (R) run")
    print("goals: cold/R <= 1.5 at 10k, warm/R <= 0.25, RSS flat as the vault grows")


KINDS = ("lean", "naive", "cold", "warm")


def rounds(runs: int, vault: Path, vt: str, schema: Path) -> tuple[dict[str, list], int]:
    """Each command once per round, the rounds one after the other: a machine that slows
    down for a while slows every command alike, not one command's runs."""
    state = vault / ".vt"
    validate = [vt, "validate", "--vault", str(vault)]
    commands = {
        "lean": [sys.executable, "-c", LEAN, str(vault)],
        "naive": [sys.executable, "-c", NAIVE, str(vault), str(schema)],
        "cold": validate,
        "warm": validate,
    }
    times: dict[str, list] = {kind: [] for kind in KINDS}
    peak = 0
    for _ in range(runs):
        for kind in KINDS:
            if kind == "cold":
                shutil.rmtree(state, ignore_errors=True)
            seconds, rss = timed(commands[kind])
            times[kind].append(seconds)
            if kind == "cold":
                peak = max(peak, rss)
    return times, peak


if __name__ == "__main__":
    main()
