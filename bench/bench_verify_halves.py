"""Cold `vt ledger verify` of a large ledger with its forked helper for half the lines
(`beside`) and in one process, paired.

    python bench/bench_verify_halves.py [--events 60000] [--rounds 5] [--dir DIR]

Builds one ledger of realistic events (bench/bench_ledger.py's), then runs a cold verify
(a fresh, empty state folder each time: every line parsed and checked) in a fresh
process, alternating: A as shipped, B with the helper turned off (its byte threshold set
above the ledger's size in the child). Prints wall and CPU per variant and the ratio
B/A, min/median/max over the rounds (bench/paired.py). Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ledger import build  # noqa: E402
from paired import paired, phase_clock  # noqa: E402


def child(mode: str, ledger: str) -> None:
    """One cold verify in this fresh process; prints `PHASE wall cpu` of the verify."""
    from vault_tools.ledger import verify

    if mode == "one":
        verify.PARALLEL_MIN_BYTES = 1 << 62
    with tempfile.TemporaryDirectory() as state:
        clock = phase_clock()
        result = verify.verify_ledger(ledger, state)
        wall, cpu = clock()
    if not result.ok:
        raise SystemExit(f"the ledger does not verify: {result.problems[:3]}")
    print(f"PHASE {wall:.4f} {cpu:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "LEDGER"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    root = Path(tempfile.mkdtemp(prefix="bench_verify_halves_", dir=args.dir))
    try:
        ledger = root / "decision_ledger.jsonl"
        build(ledger, root / ".vt", args.events)
        size = ledger.stat().st_size
        print(f"ledger: {args.events} events, {size / 2**20:.1f} MiB")
        me = [sys.executable, __file__, "--child"]
        figures = paired(
            ("two processes", "one process"),
            ([*me, "two", str(ledger)], [*me, "one", str(ledger)]),
            args.rounds,
        )
        print("cold verify, whole process (wall, cpu) and the verify alone (phase_*):")
        print(figures.table())
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
