#!/usr/bin/env python3
"""Time `vt preview` against `vt validate` on the same synthetic vault (synthetic.py).

    python bench/bench_preview.py [--notes 3000] [--runs 3]

The vault (about a third of its notes are REQUEST_REPAIR with V2 drafts) is generated
once, then copied afresh for every run so each `vt preview` is a cold, writing run:
every marked note gets its preview block, `review_state` and `vt_preview_hash`.
`vt validate` runs on a fresh copy too, with no `.vt/` cache (cold). Both are timed as
whole processes (median of --runs); the goal is preview/validate <= 3.
A `vt preview` with nothing to do follows each writing run: the second run (drafts
unchanged: it writes nothing, reading the notes the first one wrote once) and a third
(every note only stat'ed); the goal is no-op/validate <= 0.3, as ratios of the same round.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-500:]!r}")
    return elapsed


def fresh_copy(source: Path, work: Path, name: str) -> Path:
    target = work / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".vt"))
    return target


def count_marked(vault: Path) -> int:
    return sum(
        b"review_action: REQUEST_REPAIR" in p.read_bytes()
        for p in (vault / "03_claims").glob("*.md")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    vt = shutil.which("vt", path=str(Path(sys.executable).parent)) or "vt"
    with tempfile.TemporaryDirectory(prefix="bench-preview-") as tmp:
        work = Path(tmp)
        source = work / "source"
        make_vault(source, args.notes)
        marked = count_marked(source)
        validate_times, preview_times, warm_times, third_times = [], [], [], []
        for run in range(args.runs):
            vault = fresh_copy(source, work, f"validate-{run}")
            validate_times.append(timed([vt, "validate", "--vault", str(vault)]))
            vault = fresh_copy(source, work, f"preview-{run}")
            preview_times.append(timed([vt, "preview", "--vault", str(vault)]))
            warm_times.append(timed([vt, "preview", "--vault", str(vault)]))
            third_times.append(timed([vt, "preview", "--vault", str(vault)]))
        validate = statistics.median(validate_times)
        preview = statistics.median(preview_times)
        warm = statistics.median(warm_times)
        third = statistics.median(third_times)
        noop = statistics.median(w / v for w, v in zip(warm_times, validate_times, strict=True))
        noop3 = statistics.median(w / v for w, v in zip(third_times, validate_times, strict=True))
    print(f"vault: {args.notes} notes, {marked} REQUEST_REPAIR; median of {args.runs} runs")
    print(f"vt validate (cold, no .vt/):        {validate:6.2f} s")
    print(f"vt preview  (cold, writes {marked}):  {preview:6.2f} s")
    print(f"vt preview  (second run, no writes): {warm:6.2f} s")
    print(f"vt preview  (third run, no writes):  {third:6.2f} s")
    print(f"preview / validate = {preview / validate:.2f}  (goal <= 3)")
    print(
        f"no-op preview / cold validate, median of the rounds' ratios: second run "
        f"{noop:.2f}, third run {noop3:.2f}  (goal <= 0.3)"
    )


if __name__ == "__main__":
    main()
