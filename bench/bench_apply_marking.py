"""`vt apply`'s phase 3, marking notes APPLIED, on threads against forked processes,
paired.

    python bench/bench_apply_marking.py [--notes 2000] [--rounds 5] [--dir DIR]
                                        [--before SRC]

Builds a vault of approved notes (bench/bench_apply.py's), keeps a copy of its notes,
then alternates two fresh processes, each marking every note (`mark_note`: read, check
unchanged, rewrite atomically with an fsync) after the notes were put back as they were:
A forks MARKERS_PER_CPU processes a core through `map_chunks` (infra/pool.py), as apply
did; B marks through `mark_notes` (review/marking.py), the same number of threads. Each
child reads the notes' signatures first (outside its timing) and prints the marking's
own wall and CPU (its CPU and its reaped children's); bench/measure.py, the benchmarks'
harness, takes the whole process's and turns the order each round (A B, then B A).
Prints each variant's median and the ratio B/A, min / median / max, of the marking and
of the whole process.

With `--before SRC` (a source tree of another version, e.g. `git archive COMMIT | tar -x
-C SRC`), the whole `vt apply` of the same vault is then paired too: SRC's (A) against
this checkout's (B), each run on the notes as they were, with no ledger and no `.vt/`.
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_apply import make_approved_vault  # noqa: E402
from measure import (  # noqa: E402  (bench/measure.py)
    Measured,
    Rounds,
    folder,
    interleaved,
    phase_clock,
    run_checked,
    spread,
    tree_env,
)

LEDGER = "05_ledger/decision_ledger.jsonl"
EVENT_ID = "sha256:" + "0" * 64
TS = "2026-12-06T00:00:00Z"


def _forked_chunk(settings: object, chunk: list[tuple]) -> list:
    from vault_tools.review.marking import mark_note

    return [mark_note(settings, *job) for job in chunk]  # type: ignore[arg-type]


def child(mode: str, vault: str) -> None:
    """Mark every note of `vault` in this fresh process; prints `PHASE wall cpu`."""
    from vault_tools.config import load_settings
    from vault_tools.infra.pool import map_chunks
    from vault_tools.notes import writer
    from vault_tools.notes.identity import content_digest
    from vault_tools.review.marking import MARKERS_PER_CPU, mark_notes

    settings = load_settings(Path(vault))
    paths = sorted((Path(vault) / "03_claims").glob("*.md"))
    jobs = []
    for path in paths:
        snapshot = writer.read_snapshot(path, settings.max_note_bytes)
        relative = path.relative_to(vault).as_posix()
        jobs.append((relative, content_digest(snapshot.raw), snapshot.signature, EVENT_ID, TS))
    clock = phase_clock()
    if mode == "forks":
        workers = (os.cpu_count() or 1) * MARKERS_PER_CPU
        answers = list(map_chunks(partial(_forked_chunk, settings), jobs, workers=workers))
    else:
        answers = list(mark_notes(settings, iter(jobs), len(jobs)))
    writer.sync_folders(Path(vault) / job[0] for job in jobs)
    wall, cpu = clock()
    failed = [answer for answer in answers if answer is not None]
    if failed:
        raise SystemExit(f"{len(failed)} notes not marked: {failed[:3]}")
    print(f"PHASE {wall:.4f} {cpu:.4f}")


def whole_apply(
    vault: Path, put_back: Callable[[], None], before: Path, rounds: int, notes: int
) -> None:
    """`vt apply` of every note, the version in `before` against this checkout's."""
    here = Path(__file__).resolve().parents[1]

    def fresh_vault() -> None:
        shutil.rmtree(vault / ".vt", ignore_errors=True)
        (vault / LEDGER).unlink(missing_ok=True)
        put_back()

    command = [sys.executable, "-m", "vault_tools", "apply", "--vault", str(vault), "--json"]
    trees = {"before": before.resolve(), "now": here}
    figures = interleaved(
        {
            name: (lambda t=tree: run_checked(command, env=tree_env(t)))
            for name, tree in trees.items()
        },
        rounds,
        prepare=fresh_vault,
    )
    print(f"whole vt apply of {notes} notes, {before} against this checkout:")
    print("\n".join(figures.table("now", "before")))


def marking_table(figures: Rounds) -> list[str]:
    """The children's own figures of the marking, threads / forks, round by round."""
    lines = []
    phases: dict[str, list[tuple[float, float]]] = {}
    for name, runs in figures.runs.items():
        phases[name] = [phase_of(m) for m in runs]
        walls, cpus = [p[0] for p in phases[name]], [p[1] for p in phases[name]]
        lines.append(f"  {name}: marking wall {spread(walls)} s, CPU {spread(cpus)} s")
    pairs = list(zip(phases["threads"], phases["forks"], strict=True))
    lines.append(f"  threads/forks marking wall, min / median / max: "
                 f"{spread([t[0] / f[0] for t, f in pairs])}")  # fmt: skip
    lines.append(f"  threads/forks marking CPU,  min / median / max: "
                 f"{spread([t[1] / f[1] for t, f in pairs])}")  # fmt: skip
    return lines


def phase_of(measured: Measured) -> tuple[float, float]:
    phase = measured.phase()
    if phase is None:
        raise SystemExit(f"a child printed no PHASE line: {measured.out[-500:]}")
    return phase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=folder, default=None)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "VAULT"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    root = Path(tempfile.mkdtemp(prefix="bench_apply_marking_", dir=args.dir))
    try:
        vault = make_approved_vault(root, args.notes)
        notes, pristine = vault / "03_claims", root / "pristine"
        shutil.copytree(notes, pristine)

        def put_back() -> None:
            shutil.rmtree(notes)
            shutil.copytree(pristine, notes)
            os.sync()  # no write-back of the last run's files during this one

        me = [sys.executable, __file__, "--child"]
        figures = interleaved(
            {
                mode: (lambda m=mode: run_checked([*me, m, str(vault)]))
                for mode in ("forks", "threads")
            },
            args.rounds,
            prepare=put_back,
        )
        print(f"marking {args.notes} notes APPLIED, {os.cpu_count()} cores:")
        print("\n".join(figures.table("threads", "forks")))
        print("\n".join(marking_table(figures)))
        if args.before:
            whole_apply(vault, put_back, args.before, args.rounds, args.notes)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
