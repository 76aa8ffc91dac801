#!/usr/bin/env python3
"""Benchmark `vt report --dry-run` on a warm vault, paired with a warm `vt validate`.

    python bench/bench_report.py [--vault DIR | --notes 10000] [--runs 5] [--base SRC]

Without --vault, a synthetic vault (bench/synthetic.py, --notes notes, seed 7, 5% of the
notes with a defect) is written to a temporary folder and one `vt apply` records its
decisions (with `record_for_reviewers`, as one recorder for the four reviewers the
generator names). One warm-up round runs every command once; then each of --runs rounds
runs, back to back, the order turning each round, `vt validate` (warm: its cache is
current), `vt report --dry-run`, and with --base the same dry run from another source
tree (`SRC`, a folder holding a `vault_tools` package, e.g. `git archive REV | tar -x -C
SRC`), all on the same vault in the same state. Each run's wall time and CPU time (user
+ system of the whole process tree, as os.wait4 reports it) is measured by
bench/measure.py, the benchmarks' harness; the ratios are taken within a round (report /
validate, this / base) and given as min / median / max, beside the load average before
and after, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from measure import interleaved, run_checked, spread  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]


def vt(vault: Path, *args: str, source: Path = ROOT) -> list[str]:
    """`vt ARGS --vault VAULT`, importing vault_tools from `source`."""
    code = (
        f"import sys; sys.path.insert(0, {str(source)!r}); "
        "from vault_tools.__main__ import main; main()"
    )
    return [sys.executable, "-c", code, *args, "--vault", str(vault)]


def prepare(out: Path, notes: int) -> Path:
    vault = out / "vault"
    make_vault(vault, notes, seed=7, defects=0.05)
    (vault / "vt.toml").write_text("[review]\nrecord_for_reviewers = true\n", encoding="utf-8")
    subprocess.run(vt(vault, "apply"), cwd=ROOT, capture_output=True, check=False)
    return vault


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, help="an existing vault (left as it is)")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", type=Path, help="another source tree to pair with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vt-bench-report-") as tmp:
        vault = args.vault or prepare(Path(tmp), args.notes)
        jobs = {
            "validate": vt(vault, "validate"),
            "report --dry-run": vt(vault, "report", "--dry-run"),
        }
        if args.base is not None:
            jobs["base report --dry-run"] = vt(vault, "report", "--dry-run", source=args.base)
        figures = interleaved(
            {
                name: (lambda c=command: run_checked(c, (0, 1), cwd=ROOT))
                for name, command in jobs.items()
            },
            args.runs,
            warmup=True,  # caches current, files in the page cache
        )
    print(f"vault: {vault}; {args.runs} rounds; {figures.load()}")
    for name, measured in figures.runs.items():
        walls = [m.wall for m in measured]
        cpus = [m.cpu for m in measured]
        print(f"  {name:<24} wall {spread(walls, 2)} s   CPU {spread(cpus, 2)} s")
    pairs = [("report --dry-run", "validate")]
    if args.base is not None:
        pairs.append(("report --dry-run", "base report --dry-run"))
    for top, bottom in pairs:
        wall = spread(figures.ratios(top, bottom, "wall"), 2)
        cpu = spread(figures.ratios(top, bottom, "cpu"), 2)
        print(f"  {top} / {bottom}: wall {wall}, CPU {cpu} (min/median/max)")


if __name__ == "__main__":
    main()
