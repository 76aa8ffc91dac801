"""Benchmark `vt ledger verify` against a bare loop, and show its memory stays flat.

    python bench/bench_ledger.py [--events 100000] [--small 10000] [--rounds 5] [--dir DIR]

Builds ledgers of realistic events (a seed-sized semantic frame), each in a folder laid
out as a vault (`05_ledger/decision_ledger.jsonl`, the appends' state in `.vt/`), then
runs, interleaved round after round (bench/measure.py, the benchmarks' harness), each a
fresh process on the large ledger:
- bare: read the file, `json.loads` + sha256 every line;
- verify cold: `verify_ledger` with a fresh state folder (every line parsed and checked);
- verify warm: `verify_ledger` with the state the appends left (the prefix they trusted,
  re-proved by its hash chain);
- `vt ledger verify`: the command a user runs, cold (it reads no state here).
Each child times its own step (`PHASE`); the ratios against the bare loop are of those
steps, round by round (goal: verify within 3x), and of whole processes for the command.
Then the peak memory of verify at the small and the large size, each in a fresh
subprocess (tracemalloc peak for Python objects, VmHWM for the whole process).
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from measure import (  # noqa: E402  (bench/measure.py)
    ROOT,
    Measured,
    folder,
    interleaved,
    phase_clock,
    run_checked,
    spread,
    tree_env,
)

from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.ledger.verify import verify_ledger  # noqa: E402
from vault_tools.vocabulary import CHECK_KEYS  # noqa: E402

LEDGER = "05_ledger/decision_ledger.jsonl"
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


def bare_loop(path: Path) -> None:
    """The baseline: what any reader of the ledger does, and no check."""
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
            hashlib.sha256(line).hexdigest()


def child(step: str, path: str, state: str) -> None:
    """In a fresh process: the bare loop or one verify; prints `PHASE wall cpu`."""
    clock = phase_clock()
    if step == "bare":
        bare_loop(Path(path))
    else:
        result = verify_ledger(path, state)
        if not result.ok:
            raise SystemExit(f"{path}: {result.problems[:3]}")
    wall, cpu = clock()
    print(f"PHASE {wall:.4f} {cpu:.4f}")


def memory_child(path: str, state: str) -> None:
    """In a fresh process: one verify, its peak memory as JSON."""
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


def memory_of(vault: Path) -> dict:
    command = [sys.executable, __file__, "--memory", str(vault / LEDGER), str(vault / ".vt")]
    return json.loads(run_checked(command).out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=folder, default=None)
    parser.add_argument("--child", nargs=3, metavar=("STEP", "LEDGER", "STATE"))
    parser.add_argument("--memory", nargs=2, metavar=("LEDGER", "STATE"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.memory:
        memory_child(*args.memory)
        return
    root = Path(tempfile.mkdtemp(prefix="bench_ledger_", dir=args.dir))
    try:
        run(root, args.events, args.small, args.rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root: Path, events: int, small: int, rounds: int) -> None:
    sizes = {"small": small, "large": events}
    for name, n in sizes.items():
        took = build(root / name / LEDGER, root / name / ".vt", n)
        mib = (root / name / LEDGER).stat().st_size / 2**20
        print(f"built {n:>7} events ({mib:.1f} MiB) in {took:.2f}s")

    vault = root / "large"
    ledger, warm_state, cold_state = vault / LEDGER, vault / ".vt", root / "cold-state"
    me = [sys.executable, __file__, "--child"]

    def step(name: str, state: Path) -> Measured:
        shutil.rmtree(cold_state, ignore_errors=True)
        return run_checked([*me, name, str(ledger), str(state)])

    def command() -> Measured:
        hidden = vault / ".vt-kept"  # the command cold: no state of the appends to trust
        warm_state.rename(hidden)
        try:
            return run_checked(
                [sys.executable, "-m", "vault_tools", "ledger", "verify", "--vault", str(vault)],
                env=tree_env(ROOT),
            )
        finally:
            hidden.rename(warm_state)

    sides = {
        "bare": lambda: step("bare", cold_state),
        "verify cold": lambda: step("verify", cold_state),
        "verify warm": lambda: step("verify", warm_state),
        "vt ledger verify": command,
    }
    figures = interleaved(sides, rounds, warmup=True)
    print(f"{events} events, {rounds} rounds, order turning; {figures.load()}")
    print("  (each figure: min / median / max of the rounds)")
    phases = {name: [m.phase() or (m.wall, m.cpu) for m in figures.runs[name]] for name in sides}
    for name in ("bare", "verify cold", "verify warm"):
        walls = [p[0] for p in phases[name]]
        cpus = [p[1] for p in phases[name]]
        print(f"  {name:<12} step wall {spread(walls)} s, CPU {spread(cpus)} s")
    for name in ("verify cold", "verify warm"):
        pairs = list(zip(phases[name], phases["bare"], strict=True))
        wall = [a[0] / b[0] for a, b in pairs]
        cpu = [a[1] / b[1] for a, b in pairs]
        print(f"  {name} / bare: wall {spread(wall)}, CPU {spread(cpu)} (goal: within 3x)")
    runs = figures.runs["vt ledger verify"]
    print(
        f"  vt ledger verify, cold, whole process: wall {spread([m.wall for m in runs])} s, "
        f"CPU {spread([m.cpu for m in runs])} s; / bare's process: CPU "
        f"{spread(figures.ratios('vt ledger verify', 'bare'))}"
    )
    for name, n in sizes.items():
        mem = memory_of(root / name)
        print(
            f"verify memory at {n:>7} events: python peak {mem['traced_peak'] / 2**20:.2f} MiB, "
            f"process maxrss {mem['maxrss_kib'] / 1024:.1f} MiB"
        )
    print(f"{os.cpu_count()} cores")


if __name__ == "__main__":
    main()
