"""Benchmark the ledger gate (what every apply, revert, rebuild, export, status, history,
report and watcher refresh pays before it trusts the ledger) against hashing the file.

    python bench/bench_gate.py [--events 100000] [--repeat 7] [--dir DIR]

Builds a ledger of realistic events (the events of bench_ledger.py), then, in the same run:
- baseline: sha256 of the whole file with hashlib (hashlib.file_digest, one thread);
- the gate of a reader (`Ledger.trusted_head`) and of an appender (`Ledger.transaction`
  with nothing appended) on a ledger trusted in full and unchanged since: the file's stat
  signature proves it (once the signature is older than the racy window);
- the same with the signature distrusted (a copy, a checkout: the prefix digest is
  re-proved by hashing);
- the same after one event appended through another state dir (a pull): the prefix is
  re-proved and one new line verified, then remembered;
- the cold gate (no `.vt/`: the whole file verified, then remembered), for scale.
Goal: the trusted-prefix gate within 50 ms at 100,000 events. Stdlib only (plus
vault_tools). Best of `--repeat` runs each, in this process (bench/measure.py's
phase_clock), with the load average before and after.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ledger import build, decision  # noqa: E402
from measure import folder, load_text, phase_clock  # noqa: E402  (bench/measure.py)

from vault_tools.infra import filestat  # noqa: E402
from vault_tools.ledger.append import Ledger  # noqa: E402


def best(runs: int, work: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    """The shortest wall time of `runs` calls of `work`, in this process: a gate costs
    milliseconds, far below what a fresh process's start would let one see."""
    times = []
    for _ in range(runs):
        if setup is not None:
            setup()
        clock = phase_clock()
        work()
        times.append(clock()[0])
    return min(times)


def sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def transaction_gate(ledger: Ledger) -> None:
    with ledger.transaction():
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", type=folder, default=None)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench_gate_"))
    path, state = root / "decision_ledger.jsonl", root / ".vt"
    took = build(path, state, args.events)
    print(f"built {args.events} events ({path.stat().st_size / 2**20:.1f} MiB) in {took:.1f}s")
    ledger = Ledger(path, state)
    other = Ledger(path, root / ".vt-other")
    n = [args.events]

    def pull_one() -> None:  # one event appended elsewhere: new to `state`
        other.append([decision(n[0])])
        n[0] += 1

    load_before = os.getloadavg()
    base = best(args.repeat, lambda: sha256_file(path))
    time.sleep(filestat.RACY_NS / 1e9 + 0.1)  # the signature taken next is conclusive
    ledger.trusted_head()
    reader = best(args.repeat, ledger.trusted_head)
    appender = best(args.repeat, lambda: transaction_gate(ledger))
    racy, filestat.RACY_NS = filestat.RACY_NS, 1 << 62
    rehashed = best(args.repeat, ledger.trusted_head)
    filestat.RACY_NS = racy
    pulled = best(args.repeat, lambda: transaction_gate(ledger), setup=pull_one)

    def forget() -> None:
        shutil.rmtree(state, ignore_errors=True)

    cold = best(min(args.repeat, 2), ledger.trusted_head, setup=forget)
    print(f"sha256 of the file (hashlib, one thread):   {base * 1000:7.1f} ms")
    for name, value in (
        ("gate of a reader (trusted_head)", reader),
        ("gate of an appender (transaction)", appender),
        ("gate, signature distrusted (prefix hashed)", rehashed),
        ("gate after a pull of one event", pulled),
    ):
        print(f"{name + ':':<43} {value * 1000:7.1f} ms  ratio {value / base:.2f}x")
    print(f"{'cold gate (no .vt: full verify):':<43} {cold * 1000:7.1f} ms")
    print("goal: the gate of an unchanged, trusted ledger within 50 ms at 100,000 events")
    print(load_text(load_before, os.getloadavg()))
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
