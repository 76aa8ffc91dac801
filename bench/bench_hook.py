"""Benchmark the pre-commit hook: `python -m vault_tools hook run` on a commit of a few
notes in a 10k-note vault (goal: ≤ 250 ms for the whole process).

    python bench/bench_hook.py [--notes 10000] [--staged 3] [--runs 10] [--dir bench/out]

The vault (bench/synthetic.py) is committed to a git repository once and reused across runs
(`<dir>/hook-<notes>/vault`). It stages `--staged` edited notes, then times the whole
hook process and `python -c pass`, the floor, `--runs` rounds of both, the order turning
(bench/measure.py, the benchmarks' harness); prints the medians of wall and CPU time
with the load average, and restores the notes. Stdlib only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from measure import folder, interleaved, run_measured  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]
GIT_ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout


def make_committed_vault(vault: Path, notes: int) -> None:
    print(f"building a {notes}-note vault in {vault} and committing it …", flush=True)
    make_vault(vault, notes)
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "vault")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--staged", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--dir", type=folder, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    vault = (args.dir / f"hook-{args.notes}" / "vault").resolve()
    if not (vault / ".git").is_dir():
        make_committed_vault(vault, args.notes)
    git(vault, "reset", "-q", "--hard", "HEAD")  # a previous run interrupted: start clean
    notes = sorted((vault / "03_claims").iterdir())[: args.staged]
    try:
        for note in notes:
            note.write_text(note.read_text(encoding="utf-8") + "\nedited\n", encoding="utf-8")
            git(vault, "add", str(note.relative_to(vault)))
        hook_cmd = [sys.executable, "-m", "vault_tools", "hook", "run", "--vault", "."]
        floor_cmd = [sys.executable, "-c", "pass"]
        figures = interleaved(
            {
                "hook": lambda: run_measured(hook_cmd, cwd=vault, memory=False),
                "floor": lambda: run_measured(floor_cmd, cwd=vault, memory=False),
            },
            args.runs,
            warmup=True,  # the OS caches
        )
    finally:
        git(vault, "reset", "-q", "--hard", "HEAD")
    code = figures.runs["hook"][-1].code
    hook_ms, floor_ms = (
        figures.median("hook", "wall") * 1000,
        figures.median("floor", "wall") * 1000,
    )
    hook_cpu, floor_cpu = figures.median("hook") * 1000, figures.median("floor") * 1000
    verdict = "ok" if hook_ms <= 250 else "OVER the 250 ms goal"
    print(f"vault: {args.notes} notes, {len(notes)} staged, median of {args.runs} rounds")
    print(f"python -c pass          : {floor_ms:7.1f} ms ({floor_cpu:.1f} ms CPU; the floor)")
    print(f"vt hook run (exit {code})   : {hook_ms:7.1f} ms ({hook_cpu:.1f} ms CPU; {verdict})")
    print(figures.load())


if __name__ == "__main__":
    main()
