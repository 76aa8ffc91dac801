"""Benchmark `vt stats` on a large ledger against a warm `vt validate` of the same vault.

    python bench/bench_stats.py [--notes 10000] [--events 100000] [--rounds 5] [--dir DIR]

Builds a synthetic vault (bench/synthetic.py) and a ledger of `--events` decisions over
its notes: three reviewers deciding in rounds, each event's `base` the hash of its note's
V1 (so repairs find their V1 in the note), a fifth of the second decisions made without
seeing the first (two heads, settled by the next round). Then, interleaved and rotating,
`--rounds` times each:

- V: `vt validate`, warm (its cache filled by a run before the rounds);
- C: `vt stats`, cold: its cache in `.vt/` deleted (the ledger's gate and the Claim Store
  caught up, as after any other command);
- W: `vt stats`, warm: its cache in place, nothing changed.

Goals: C within 2 s; W within 3x V. Each run's wall time and CPU time (user + system of
the child and its workers) from bench/measure.py, the benchmarks' harness; the ratios
are taken round by round, with min / median / max; the load average is printed before
and after. Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Measured, folder, interleaved, run_checked, spread  # noqa: E402  (bench/measure.py)

from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.ledger.events import supersedes_value  # noqa: E402
from vault_tools.notes.note import parse_note  # noqa: E402
from vault_tools.review.claim_record import claim_base, v1_claim  # noqa: E402
from vault_tools.vocabulary import CHECK_KEYS  # noqa: E402

HERE = Path(__file__).resolve().parent
REVIEWERS = ("alice", "bob", "carol")
LEDGER = "05_ledger/decision_ledger.jsonl"


def notes_of(vault: Path) -> list[tuple[str, str, dict]]:
    """(claim id, vault-relative path, V1 claim) of every note, sorted by path."""
    found = []
    for path in sorted((vault / "03_claims").glob("*.md")):
        relative = path.relative_to(vault).as_posix()
        note = parse_note(path.read_bytes(), relative)
        if note.claim_id:
            found.append((note.claim_id, relative, v1_claim(note)))
    return found


def build_ledger(vault: Path, events: int) -> None:
    notes = notes_of(vault)
    ledger = Ledger(vault / LEDGER, vault / ".vt")
    heads: dict[str, list[str]] = {}
    seen_by_last: dict[str, object] = {}
    with ledger.transaction() as tx:
        for i in range(events):
            claim_id, relative, v1 = notes[i % len(notes)]
            rnd = i // len(notes)
            action = ("ACCEPT", "REPAIR", "REJECT")[(i * 7 + rnd) % 3]
            claim = None
            if action == "ACCEPT":
                claim = v1
            elif action == "REPAIR":
                frame = dict(v1["semantic_frame"] or {}, operator="APPROX_EQUAL")
                claim = dict(
                    v1, atomic_claim=f"{v1['atomic_claim']} (#{rnd})", semantic_frame=frame
                )
            failed = CHECK_KEYS[rnd % 4]  # the checklist item a repair or reject fails
            blind = rnd == 1 and i % 5 == 0  # made without seeing round 0's decision
            supersedes = (
                seen_by_last.get(claim_id)
                if blind
                else supersedes_value(sorted(heads.get(claim_id, [])))
            )
            ev = tx.append(
                {
                    "action": action,
                    "actor": REVIEWERS[(rnd + i) % 3],
                    "base": claim_base(v1),
                    "checks": {k: action == "ACCEPT" or k != failed for k in CHECK_KEYS},
                    "claim": claim,
                    "claim_id": claim_id,
                    "comment": "",
                    "note": relative,
                    "preview": None,
                    "supersedes": supersedes,
                    "ts": f"2026-12-{1 + rnd % 28:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
                }
            )
            seen_by_last[claim_id] = supersedes
            kept = [h for h in heads.get(claim_id, []) if h not in _ids(supersedes)]
            heads[claim_id] = [*kept, ev["id"]]
            if (i + 1) % 1000 == 0:
                tx.flush()


def _ids(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--events", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=folder, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-stats-", dir=args.dir))
    vault = base / "vault"
    subprocess.run(
        [sys.executable, str(HERE / "synthetic.py"), str(vault), "--notes", str(args.notes)],
        check=True,
        capture_output=True,
    )
    start = time.perf_counter()
    build_ledger(vault, args.events)
    print(f"built {args.notes} notes, {args.events} events in {time.perf_counter() - start:.1f} s")
    vt = [sys.executable, "-m", "vault_tools"]
    validate = [*vt, "validate", "--vault", str(vault)]
    stats = [*vt, "stats", "--vault", str(vault)]
    cache = vault / ".vt" / "stats-cache.marshal"
    for command in (validate, validate, stats):  # validate's cache, the gate, the store
        run_checked(command, (0, 1))

    def cold() -> Measured:
        cache.unlink(missing_ok=True)
        return run_checked(stats)

    kinds = {
        "vt validate warm": lambda: run_checked(validate, (0, 1)),  # 1: the vault's findings
        "vt stats cold": cold,
        "vt stats warm": lambda: run_checked(stats),
    }
    figures = interleaved(kinds, args.rounds)
    print(figures.load())
    for kind, runs in figures.runs.items():
        walls, cpus = [m.wall for m in runs], [m.cpu for m in runs]
        print(f"{kind}: wall {spread(walls, 2)} s, CPU {spread(cpus, 2)} s (min / median / max)")
    for kind in ("vt stats cold", "vt stats warm"):
        wall = spread(figures.ratios(kind, "vt validate warm", "wall"), 2)
        cpu = spread(figures.ratios(kind, "vt validate warm", "cpu"), 2)
        print(f"{kind} / vt validate warm: wall {wall}x, CPU {cpu}x")


if __name__ == "__main__":
    main()
