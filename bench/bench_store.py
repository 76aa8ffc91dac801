"""Benchmark `vt rebuild` (whole process) against a bare loop over the same ledger.

    python bench/bench_store.py [--events 100000] [--claims 40000] [--dir DIR]

Builds a vault with a 100,000-event ledger (realistic events: a seed-sized semantic frame,
claims decided several times, ACCEPT / REPAIR / REJECT / REVERT) and a knowledge base for
the entities the frames name, then, in the same run:
- baseline: read the file, `json.loads` + sha256 every line;
- `vt rebuild --json` as a subprocess (interpreter start, imports, replaying the ledger into
  .vt/claims.sqlite, and syncing the knowledge-base blocks) (goal: within 5x of the baseline);
- `ClaimStore.catch_up` after 100 more events were appended (the usual case after a pull).
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ledger import bare_loop  # noqa: E402  (the same baseline as verify's)

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


def vt_rebuild(vault: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "vault_tools", "rebuild", "--vault", str(vault), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, json.loads(out.stdout)


def catch_up_after_append(vault: Path, n: int, claims: int) -> tuple[float, int]:
    settings = Settings(vault=vault)
    with Ledger(settings.ledger_path, settings.state_dir).transaction() as txn:
        for i in range(n):
            d = decision(i, claims, {})
            d["action"], d["comment"] = "REJECT", f"pulled #{i}"
            d["claim"] = None
            d.pop("reverts", None)
            txn.append(d)
    start = time.perf_counter()
    with ClaimStore.open(settings) as store:
        caught = store.catch_up()
    assert not caught.rebuilt
    return time.perf_counter() - start, caught.new_events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=40_000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    vault = (args.dir or Path(tempfile.mkdtemp(prefix="bench_store_"))) / "vault"
    took = build(vault, args.events, args.claims)
    ledger = Settings(vault=vault).ledger_path
    print(
        f"built {args.events} events on {args.claims} claims "
        f"({ledger.stat().st_size / 2**20:.1f} MiB) in {took:.2f}s"
    )

    bare = min(bare_loop(ledger) for _ in range(3))
    runs = [vt_rebuild(vault) for _ in range(3)]
    rebuild, payload = min(runs, key=lambda r: r[0])
    first_written = len(runs[0][1]["kb_notes_written"])
    print(f"bare loop (json.loads + sha256 per line): {bare:.3f}s")
    print(
        f"vt rebuild (whole process):               {rebuild:.3f}s  "
        f"ratio {rebuild / bare:.2f}x  (goal: within 5x)"
    )
    print(
        f"  {payload['events']} events, {payload['claims']} claims; "
        f"{first_written} knowledge-base notes written by the first run"
    )
    seconds, new = catch_up_after_append(vault, 100, args.claims)
    print(f"catch_up after {new} appended events (incremental): {seconds * 1000:.1f} ms")


if __name__ == "__main__":
    main()
