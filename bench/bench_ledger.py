"""Benchmark `verify_ledger` against a bare loop, and show its memory stays flat.

    python bench/bench_ledger.py [--events 100000] [--small 10000] [--dir DIR]

Builds ledgers of realistic events (a seed-sized semantic frame), then, in the same run:
- baseline: read the file, `json.loads` + sha256 every line;
- `verify_ledger` on the same file, cold (fresh .vt: every line parsed and checked) and
  warm (the prefix the appends trusted, re-proved by its hash chain) (goal: within 3x of
  the baseline);
- peak memory of verify at the small and the large size, each in a fresh subprocess
  (tracemalloc peak for Python objects, ru_maxrss for the whole process incl. sqlite).
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.ledger.verify import verify_ledger  # noqa: E402
from vault_tools.vocabulary import CHECK_KEYS  # noqa: E402

FRAME = {
    "comparison_expression": "warm prefill of k tokens ≈ one decode step",
    "entities": [
        {"id": "04_knowledge_base/Prefill", "label": "prefill"},
        {"id": "04_knowledge_base/Decode", "label": "decode step"},
        {"id": "04_knowledge_base/Draft_Token", "label": "draft token"},
    ],
    "frame_type": "COMPARISON",
    "metric": "LATENCY_COST",
    "operator": "APPROX_EQUAL",
    "qualifiers": {
        "condition_text": "for a decoding step of context N tokens",
        "numeric_mentions": ["1", "k"],
        "temporal_mentions": [],
    },
}


def decision(i: int) -> dict:
    action = ("ACCEPT", "REPAIR", "REJECT")[i % 3]
    claim = None
    if action != "REJECT":
        claim = {
            "atomic_claim": f"為了驗證 draft token，main model 只需要做一次 warm prefill #{i}",
            "epistemic_mode": "ASSERTED",
            "mapping_status": "PARTIAL",
            "semantic_frame": FRAME,
        }
    return {
        "action": action,
        "actor": "reviewer",
        "base": "sha256:" + hashlib.sha256(str(i).encode()).hexdigest(),
        "checks": dict.fromkeys(CHECK_KEYS, True),
        "claim": claim,
        "claim_id": f"SA260324R-{i:06d}",
        "comment": "",
        "note": f"03_claims/SA260324R-{i:06d}.md",
        "preview": None,
        "ts": "2026-11-29T10:00:00Z",
    }


def build(path: Path, state: Path, n: int) -> float:
    start = time.perf_counter()
    Ledger(path, state).append(decision(i) for i in range(n))
    return time.perf_counter() - start


def bare_loop(path: Path) -> float:
    start = time.perf_counter()
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
            hashlib.sha256(line).hexdigest()
    return time.perf_counter() - start


def timed_verify(path: Path, state: Path) -> float:
    start = time.perf_counter()
    result = verify_ledger(path, state)
    elapsed = time.perf_counter() - start
    assert result.ok, result.problems[:5]
    return elapsed


def child(path: str, state: str) -> None:
    """Run in a fresh process: one verify, report peak memory as JSON."""
    # the peak RSS is inherited from the (large) parent across fork+exec: reset it first
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    tracemalloc.start()
    result = verify_ledger(path, state)
    _, peak = tracemalloc.get_traced_memory()
    maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        status = Path("/proc/self/status").read_text()
        maxrss_kib = int(status.split("VmHWM:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        pass
    print(json.dumps({"ok": result.ok, "traced_peak": peak, "maxrss_kib": maxrss_kib}))


def memory_of(path: Path, state: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(path), str(state)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("LEDGER", "STATE"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench_ledger_"))
    sizes = {"small": args.small, "large": args.events}
    paths = {}
    for name, n in sizes.items():
        ledger, state = root / name / "decision_ledger.jsonl", root / name / ".vt"
        took = build(ledger, state, n)
        paths[name] = (ledger, state)
        mib = ledger.stat().st_size / 2**20
        print(f"built {n:>7} events ({mib:.1f} MiB) in {took:.2f}s")

    ledger, state = paths["large"]
    bare = min(bare_loop(ledger) for _ in range(3))
    # cold: a fresh .vt each time, so every line is parsed and every check runs
    cold = min(timed_verify(ledger, state.with_name(f".vt-cold{i}")) for i in range(3))
    # warm: the usual case: the prefix the appends trusted (verify itself remembers
    # nothing) is re-proved by its hash chain, only new lines are parsed
    warm = min(timed_verify(ledger, state) for _ in range(3))
    print(f"bare loop (json.loads + sha256 per line): {bare:.3f}s")
    print(f"verify_ledger, cold (full checks):        {cold:.3f}s  ratio {cold / bare:.2f}x")
    print(f"verify_ledger, warm (prefix re-proved):   {warm:.3f}s  ratio {warm / bare:.2f}x")
    print("goal: within 3x of the bare loop")

    for name, n in sizes.items():
        mem = memory_of(*paths[name])
        print(
            f"verify memory at {n:>7} events: python peak {mem['traced_peak'] / 2**20:.2f} MiB, "
            f"process maxrss {mem['maxrss_kib'] / 1024:.1f} MiB"
        )


if __name__ == "__main__":
    main()
