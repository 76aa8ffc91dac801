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
own wall and CPU (its CPU and its reaped children's); bench/paired.py takes the whole
process's. Prints each variant's median and the ratio B/A, min/median/max.

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
from paired import paired, phase_clock  # noqa: E402

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
    envs = tuple({**os.environ, "PYTHONPATH": str(src)} for src in (before.resolve(), here))
    figures = paired(("before", "now"), (command, command), rounds, fresh_vault, envs)  # type: ignore[arg-type]
    print(f"whole vt apply of {notes} notes, {before} against this checkout:")
    print(figures.table())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
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
        figures = paired(
            ("forks", "threads"),
            ([*me, "forks", str(vault)], [*me, "threads", str(vault)]),
            args.rounds,
            prepare=put_back,
        )
        print(f"marking {args.notes} notes APPLIED, {os.cpu_count()} cores:")
        print(figures.table())
        if args.before:
            whole_apply(vault, put_back, args.before, args.rounds, args.notes)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
