"""Benchmark `vt rebuild` (whole process) against a bare loop over the same ledger.

    python bench/bench_store.py [--events 100000] [--claims 40000] [--rounds 3] [--dir DIR]

Builds a vault with a 100,000-event ledger (realistic events: a seed-sized semantic frame,
claims decided several times, ACCEPT / REPAIR / REJECT / REVERT) and a knowledge base for
the entities the frames name, then, `--rounds` rounds, the order turning each round
(bench/measure.py, the benchmarks' harness):
- baseline: read the file, `json.loads` + sha256 every line (bench_ledger.py's bare loop,
  in a fresh process that times the loop alone);
- `vt rebuild --json` as a subprocess (interpreter start, imports, replaying the ledger into
  .vt/claims.sqlite, and syncing the knowledge-base blocks) (goal: within 5x of the
  baseline, the median of the rounds' ratios, wall and CPU);
then `ClaimStore.catch_up` after 100 more events were appended (the usual case after a
pull), in this process.
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Measured, folder, interleaved, phase_clock, run_checked, spread  # noqa: E402

from vault_tools.config import Settings  # noqa: E402
from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.store.claims import ClaimStore  # noqa: E402
from vault_tools.vocabulary import CHECK_KEYS  # noqa: E402

ENTITIES = ["Prefill", "Decode", "Draft Token", "KV Cache", "Main Model", "Target Model"]


def frame(i: int) -> dict:
    picked = [ENTITIES[(i + k) % len(ENTITIES)] for k in range(3)]
    return {
        "comparison_expression": "warm prefill of k tokens ≈ one decode step",
        "entities": [{"id": f"04_knowledge_base/{e}", "label": e.lower()} for e in picked],
        "frame_type": "COMPARISON",
        "metric": "LATENCY_COST",
        "operator": "APPROX_EQUAL",
        "qualifiers": {
            "condition_text": "for a decoding step of context N tokens",
            "numeric_mentions": ["1", "k"],
            "temporal_mentions": [],
        },
    }


def decision(i: int, claims: int, latest: dict[int, str]) -> dict:
    c = i % claims
    action = ("ACCEPT", "REPAIR", "REJECT", "ACCEPT", "REVERT")[(i // claims) % 5]
    claim = None
    if action in ("ACCEPT", "REPAIR"):
        claim = {
            "atomic_claim": f"為了驗證 draft token，main model 只需要做一次 warm prefill #{i}",
            "epistemic_mode": "ASSERTED",
            "mapping_status": "PARTIAL",
            "semantic_frame": frame(c),
        }
    d = {
        "action": action,
        "actor": "reviewer",
        "base": "sha256:" + hashlib.sha256(str(c).encode()).hexdigest(),
        "checks": dict.fromkeys(CHECK_KEYS, True),
        "claim": claim,
        "claim_id": f"SA260324R-{c:06d}",
        "comment": "",
        "note": f"03_claims/SA260324R-{c:06d}.md",
        "preview": None,
        "ts": "2026-11-29T10:00:00Z",
    }
    if action == "REVERT":
        d["reverts"] = latest[c]
    return d


def build(vault: Path, n: int, claims: int) -> float:
    settings = Settings(vault=vault)
    kb = vault / "04_knowledge_base"
    kb.mkdir(parents=True, exist_ok=True)
    for name in ENTITIES:
        (kb / f"{name}.md").write_text(f"---\ntags: [entity]\n---\n# {name}\n", encoding="utf-8")
    start = time.perf_counter()
    latest: dict[int, str] = {}
    with Ledger(settings.ledger_path, settings.state_dir).transaction() as txn:
        for i in range(n):
            ev = txn.append(decision(i, claims, latest))
            latest[i % claims] = ev["id"]
    return time.perf_counter() - start


def vt_rebuild(vault: Path) -> Measured:
    command = [sys.executable, "-m", "vault_tools", "rebuild", "--vault", str(vault), "--json"]
    return run_checked(command)


def bare(ledger: Path) -> Measured:
    """bench_ledger.py's bare loop over `ledger`, in a fresh process timing the loop."""
    here = Path(__file__).resolve().parent
    return run_checked([sys.executable, str(here / "bench_ledger.py"), "--child", "bare",
                        str(ledger), str(ledger.parent)])  # fmt: skip


def catch_up_after_append(vault: Path, n: int, claims: int) -> tuple[float, int]:
    settings = Settings(vault=vault)
    with Ledger(settings.ledger_path, settings.state_dir).transaction() as txn:
        for i in range(n):
            d = decision(i, claims, {})
            d["action"], d["comment"] = "REJECT", f"pulled #{i}"
            d["claim"] = None
            d.pop("reverts", None)
            txn.append(d)
    clock = phase_clock()
    with ClaimStore.open(settings) as store:
        caught = store.catch_up()
    assert not caught.rebuilt
    return clock()[0], caught.new_events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=folder, default=None)
    args = parser.parse_args()
    vault = (args.dir or Path(tempfile.mkdtemp(prefix="bench_store_"))) / "vault"
    took = build(vault, args.events, args.claims)
    ledger = Settings(vault=vault).ledger_path
    print(
        f"built {args.events} events on {args.claims} claims "
        f"({ledger.stat().st_size / 2**20:.1f} MiB) in {took:.2f}s"
    )

    figures = interleaved(
        {"bare": lambda: bare(ledger), "rebuild": lambda: vt_rebuild(vault)}, args.rounds
    )
    loops = [m.phase() or (m.wall, m.cpu) for m in figures.runs["bare"]]
    rebuilds = figures.runs["rebuild"]
    walls = [r.wall / loop[0] for r, loop in zip(rebuilds, loops, strict=True)]
    cpus = [r.cpu / loop[1] for r, loop in zip(rebuilds, loops, strict=True)]
    first, last = json.loads(rebuilds[0].out), json.loads(rebuilds[-1].out)
    print(f"{args.rounds} rounds, order turning; {figures.load()}")
    print(f"bare loop (json.loads + sha256 per line): {spread([w for w, _ in loops])} s")
    print(f"vt rebuild (whole process):               {spread([r.wall for r in rebuilds])} s")
    print(f"  vt rebuild / bare loop, min / median / max: wall {spread(walls, 2)}x, "
          f"CPU {spread(cpus, 2)}x  (goal: within 5x)")  # fmt: skip
    print(
        f"  {last['events']} events, {last['claims']} claims; "
        f"{len(first['kb_notes_written'])} knowledge-base notes written by the first run"
    )
    seconds, new = catch_up_after_append(vault, 100, args.claims)
    print(f"catch_up after {new} appended events (incremental): {seconds * 1000:.1f} ms")


if __name__ == "__main__":
    main()
