#!/usr/bin/env python3
"""Time `vt preview` against `vt validate` on the same synthetic vault (synthetic.py).

    python bench/bench_preview.py [--notes 3000] [--runs 3]

The vault (about a third of its notes are REQUEST_REPAIR with V2 drafts) is generated
once, then copied afresh for every run so each `vt preview` is a cold, writing run:
every marked note gets its preview block, `review_state` and `vt_preview_hash`.
`vt validate` runs on a fresh copy too, with no `.vt/` cache (cold). Both are timed as
whole processes, `--runs` rounds, the order turning each round (bench/measure.py, the
benchmarks' harness: wall time, and CPU time of the process and its workers); the goal
is preview/validate <= 3, the median of the rounds' ratios. A `vt preview` with nothing
to do follows each writing run: the second run (drafts unchanged: it writes nothing,
reading the notes the first one wrote once) and a third (every note only stat'ed); the
goal is no-op/validate <= 0.3, as ratios of the same round.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from measure import Measured, interleaved, run_checked, spread  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]


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
        no_op: dict[str, list[Measured]] = {"second": [], "third": []}

        def validate() -> Measured:
            vault = fresh_copy(source, work, "validate")
            return run_checked([vt, "validate", "--vault", str(vault)], (0, 1))

        def preview() -> Measured:
            vault = fresh_copy(source, work, "preview")
            command = [vt, "preview", "--vault", str(vault)]
            first = run_checked(command, (0, 1))
            for run in no_op.values():  # the same vault, its previews written
                run.append(run_checked(command, (0, 1)))
            return first

        figures = interleaved({"validate": validate, "preview": preview}, args.runs)
    cold = figures.runs["validate"]

    def median(runs: list[Measured], key: str = "wall") -> float:
        return statistics.median(getattr(m, key) for m in runs)

    def over_validate(runs: list[Measured], key: str) -> str:
        return spread([m.wall / v.wall if key == "wall" else m.cpu / v.cpu
                       for m, v in zip(runs, cold, strict=True)], 2)  # fmt: skip

    print(f"vault: {args.notes} notes, {marked} REQUEST_REPAIR; median of {args.runs} rounds")
    print(f"vt validate (cold, no .vt/):        {median(cold):6.2f} s "
          f"({median(cold, 'cpu'):.2f} s CPU)")  # fmt: skip
    for label, runs in (
        (f"vt preview  (cold, writes {marked}):  ", figures.runs["preview"]),
        ("vt preview  (second run, no writes): ", no_op["second"]),
        ("vt preview  (third run, no writes):  ", no_op["third"]),
    ):
        print(f"{label}{median(runs):6.2f} s ({median(runs, 'cpu'):.2f} s CPU); / validate, "
              f"min / median / max: wall {over_validate(runs, 'wall')}, "
              f"CPU {over_validate(runs, 'cpu')}")  # fmt: skip
    ratio = statistics.median(figures.ratios("preview", "validate", "wall"))
    print(f"preview / validate = {ratio:.2f}  (goal <= 3)")
    noop = statistics.median(m.wall / v.wall for m, v in zip(no_op["second"], cold, strict=True))
    noop3 = statistics.median(m.wall / v.wall for m, v in zip(no_op["third"], cold, strict=True))
    print(
        f"no-op preview / cold validate, median of the rounds' ratios: second run "
        f"{noop:.2f}, third run {noop3:.2f}  (goal <= 0.3)"
    )
    print(figures.load())


if __name__ == "__main__":
    main()
