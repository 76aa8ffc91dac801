#!/usr/bin/env python3
"""Time the commands a reviewer runs all day against `vt validate`, paired, as ratios.

    python bench/bench_views.py [--notes 10000] [--rounds 5] [--saves 5] [--parts 1234]

The vault: `bench/synthetic.py` (seed 7, 5% defects), `record_for_reviewers` on so that
one `vt apply` records every decision, then one `vt report` (the dashboard exists).
Every figure is a pair run back to back in the same state, A then B, repeated --rounds
times, interleaved (A, B, A, B, …): the machine's load changes between rounds, less
within a pair. Each pair gives B / A for wall time and for CPU time (user + system of
the child and the processes it waited for, from os.wait4); min / median / max of the
ratios are printed, with the load average before and after.

1. Warm (nothing changed since the last run): `vt status`, `vt report`, `vt report
   --dry-run`, `vt entities`, `vt history ID` against a warm `vt validate`.
2. Nothing cached (`.vt/`'s caches removed before each run, the Claim Store kept): the
   same commands against a cold `vt validate`.
3. One note added / renamed / removed: the next `vt validate`, `vt preview`, `vt status`
   against a warm run of the same command (the change is undone after each pair).
4. `vt watch --json` with the dashboard present: its CPU time over --saves saves of a
   repair note, each followed by the dashboard's refresh (DASHBOARD_QUIET after it),
   less its CPU time over as long without saves; per save.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_watch import Watch, marked_notes, with_new_draft  # the watch benchmark's helpers
from measure import Measured, folder, interleaved, run_checked, spread  # the one harness
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]
CACHES = (
    "validate-cache.marshal",
    "validate-cache.payload",
    "validate-cache.memo",
    "preview-cache.marshal",
    "note-facts-status.marshal",
    "note-facts-queue.marshal",
    "note-facts-uses.marshal",
    "stats-cache.marshal",
    "dashboard-state.marshal",
)


def run(vault: Path, *args: str) -> Measured:
    """One `vt` run, measured by the harness (bench/measure.py); exit 1 (findings) is fine."""
    command = [sys.executable, "-m", "vault_tools", *args, "--vault", str(vault)]
    return run_checked(command, (0, 1), cwd=ROOT, memory=False)


def paired(rounds: int, a: Callable[[], Measured], b: Callable[[], Measured]) -> dict:
    """B / A over `rounds` interleaved rounds (A B, B A, …): wall and CPU ratios, B's own
    figures and the load."""
    figures = interleaved({"A": a, "B": b}, rounds)
    return {
        "wall": spread(figures.ratios("B", "A", "wall"), 2),
        "cpu": spread(figures.ratios("B", "A"), 2),
        "b_wall_median": figures.median("B", "wall"),
        "b_cpu_median": figures.median("B"),
        "a_cpu_median": figures.median("A"),
        "load": figures.load(),
    }


def show(name: str, figures: dict) -> None:
    print(
        f"{name:<44} wall {figures['wall']}  CPU {figures['cpu']}  "
        f"(B {figures['b_wall_median']:.2f} s, {figures['b_cpu_median']:.2f} s CPU; "
        f"A {figures['a_cpu_median']:.2f} s CPU; {figures['load']})",
        flush=True,
    )


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def drop_caches(vault: Path) -> None:
    for name in CACHES:
        (vault / ".vt" / name).unlink(missing_ok=True)


def decided_claim(vault: Path) -> str:
    ledger = vault / "05_ledger" / "decision_ledger.jsonl"
    with ledger.open(encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event.get("claim_id"):
                return str(event["claim_id"])
    raise SystemExit("no decision in the ledger")


def warm_and_cold(vault: Path, rounds: int) -> None:
    claim = decided_claim(vault)
    views = {
        "status": ("status",),
        "report": ("report",),
        "report --dry-run": ("report", "--dry-run"),
        "entities": ("entities",),
        f"history {claim}": ("history", claim),
    }
    print(f"1. warm, B / warm validate (min / median / max), load {load()}", flush=True)
    for name, args in views.items():
        run(vault, *args)  # warm: its caches made
        show(name, paired(rounds, lambda: run(vault, "validate"), lambda a=args: run(vault, *a)))

    def cold(*args: str) -> Measured:
        drop_caches(vault)
        return run(vault, *args)

    print(f"2. nothing cached, B / cold validate, load {load()}")
    for name, args in views.items():
        show(name, paired(rounds, lambda: cold("validate"), lambda a=args: cold(*a)))
    for args in views.values():
        run(vault, *args)  # warm again


def changes(vault: Path, rounds: int) -> None:
    claims = vault / "03_claims"
    source = sorted(claims.glob("*.md"))[len(list(claims.glob("*.md"))) // 2]
    added, renamed = claims / "ZZ-bench-added.md", claims / "ZZ-bench-renamed.md"
    text = source.read_bytes()

    def add() -> None:
        added.write_bytes(text.replace(b"claim_id: ", b"claim_id: ZZ-", 1))

    def undo_add() -> None:
        added.unlink()

    def rename() -> None:
        source.rename(renamed)

    def undo_rename() -> None:
        renamed.rename(source)

    def remove() -> None:
        source.unlink()

    def undo_remove() -> None:
        source.write_bytes(text)

    operations = {
        "added": (add, undo_add),
        "renamed": (rename, undo_rename),
        "removed": (remove, undo_remove),
    }
    print(f"3. one note changed, B / warm run of the same command, load {load()}")
    for command in (("validate",), ("preview",), ("status",)):
        for name, (do, undo) in operations.items():

            def warm(c: tuple[str, ...] = command) -> Measured:
                run(vault, *c)  # the state after the last change undone, cached
                return run(vault, *c)

            def after(
                c: tuple[str, ...] = command, do: Callable = do, undo: Callable = undo
            ) -> Measured:
                do()
                try:
                    return run(vault, *c)
                finally:
                    undo()

            show(f"vt {' '.join(command)} after a note {name}", paired(rounds, warm, after))


def watch_saves(vault: Path, saves: int, quiet: float) -> None:
    """CPU per save of `vt watch`, with the dashboard and (moved aside) without it."""
    notes = marked_notes(vault)
    dashboard = vault / "Review Dashboard.md"
    per_save = {}
    for name in ("with the dashboard", "without it"):
        watch = Watch(vault)
        watch.wait_ready(300)
        try:
            time.sleep(2 * quiet)  # the catch-up resync
            save(notes[-1], "warm-up", quiet)  # the first refresh gathers everything
            idle_start = watch.cpu_seconds()
            time.sleep(saves * quiet)
            idle = watch.cpu_seconds() - idle_start
            refreshed = watch.counts.get("dashboard", 0)
            start = watch.cpu_seconds()
            for i in range(saves):
                save(notes[i % (len(notes) - 1)], f"{name} {i}", quiet)
            busy = watch.cpu_seconds() - start
            refreshed = watch.counts.get("dashboard", 0) - refreshed
        finally:
            watch.stop()
        per_save[name] = (busy - idle) / saves
        print(
            f"4. vt watch {name}, load {load()}: {per_save[name]:.3f} s CPU per save "
            f"({saves} saves, {refreshed} dashboard refreshes, {idle:.3f} s idle)",
            flush=True,
        )
        if dashboard.exists():
            dashboard.rename(vault / "dashboard.aside")  # for the second round
    (vault / "dashboard.aside").rename(dashboard)


def save(path: Path, marker: str, quiet: float) -> None:
    """A save of the note's V2 claim draft as editors make it, then `quiet` seconds."""
    temp = path.with_name(f".{path.name}.bench.tmp")
    temp.write_text(with_new_draft(path.read_text("utf-8"), f"（{marker}）"), "utf-8")
    os.replace(temp, path)
    time.sleep(quiet)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--saves", type=int, default=5)
    parser.add_argument("--quiet", type=float, default=3.5, help="seconds after each save")
    parser.add_argument("--dir", type=folder, default=None)
    parser.add_argument("--parts", default="1234", help="which parts to run, e.g. 4")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vt-views-", dir=args.dir))
    try:
        vault = make_vault(work / "vault", args.notes, seed=7, defects=0.05)
        (vault / "vt.toml").write_text("[review]\nrecord_for_reviewers = true\n", "utf-8")
        run(vault, "apply")
        run(vault, "report")
        print(f"{args.notes} notes, {args.rounds} pairs each, load {load()}", flush=True)
        if "1" in args.parts or "2" in args.parts:
            warm_and_cold(vault, args.rounds)
        if "3" in args.parts:
            changes(vault, args.rounds)
        if "4" in args.parts:
            watch_saves(vault, args.saves, args.quiet)
        print(f"load at the end {load()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
