"""Benchmark `vt ledger audit`: the whole git history of a ledger checked, in a fresh clone.

    python bench/bench_audit.py [--commits 1000 5000] [--merge-every 10] [--runs 3] [--dir DIR]

For each size, builds (once, with `git fast-import`) a repository whose main branch has
that many commits, each appending one decision to the ledger, every `--merge-every`-th
of them a merge of a side branch that appended one too (the merged ledger as the merge
driver writes it); clones it (a fresh clone: packed, no `.vt/`), then times the whole
`vt ledger audit` process and `vt ledger audit --since HEAD~10`, `--runs` rounds of
both, the order turning (bench/measure.py, the benchmarks' harness), and prints the
medians of wall and CPU time (vt's and its git processes'; on a busy machine the CPU
time is the steadier figure) with the load average. Stdlib only (plus vault_tools, for
the events).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import folder, interleaved, run_checked  # noqa: E402  (bench/measure.py)

from vault_tools.ledger.events import GENESIS, canonical, decision_id, line_hash  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LEDGER = "05_ledger/decision_ledger.jsonl"
GIT_ENV = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def _decision(n: int, actor: str) -> dict:
    return {
        "action": "REJECT",
        "actor": actor,
        "base": "sha256:" + f"{n:064x}",
        "checks": {"check_source_claim": True},
        "claim": None,
        "claim_id": f"C-{n}",
        "comment": f"decision {n}",
        "note": f"03_claims/C-{n}.md",
        "preview": None,
        "supersedes": None,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_780_000_000 + n)),
        "v": 1,
    }


def _chained(decisions: list[dict]) -> list[bytes]:
    """The ledger lines of these decisions, in this order, chained from line 1."""
    lines, prev = [], GENESIS
    for seq, ev in enumerate(decisions, 1):
        ev = dict(ev, id=decision_id(ev), seq=seq, prev=prev)
        ev["hash"] = prev = line_hash(ev)
        lines.append((canonical(ev) + "\n").encode())
    return lines


def _append(lines: list[bytes], decision: dict) -> list[bytes]:
    """`lines` and one more line: `decision` chained after the last."""
    prev = json_field(lines[-1], "hash") if lines else GENESIS
    ev = dict(decision, id=decision_id(decision), seq=len(lines) + 1, prev=prev)
    ev["hash"] = line_hash(ev)
    return [*lines, (canonical(ev) + "\n").encode()]


def json_field(line: bytes, name: str) -> str:
    import json

    return json.loads(line)[name]


def history_stream(commits: int, merge_every: int = 0, path: str = LEDGER) -> bytes:
    """A `git fast-import` stream: `commits` commits on main, each appending one event;
    every `merge_every`-th a merge of a side branch forked one commit earlier."""
    out: list[bytes] = []
    main: list[dict] = []  # the decisions of main's ledger, in its order
    lines: list[bytes] = []
    mark = 0

    def commit(ref: str, parents: list[int], data: bytes, when: int) -> int:
        nonlocal mark
        mark += 1
        message = f"commit {mark}\n".encode()
        head = [f"commit {ref}", f"mark :{mark}",
                f"author Alice <alice@example.org> {when} +0000",
                f"committer Alice <alice@example.org> {when} +0000",
                f"data {len(message)}"]  # fmt: skip
        out.append(("\n".join(head) + "\n").encode() + message)
        if parents:
            out.append(f"from :{parents[0]}\n".encode())
        out.extend(f"merge :{p}\n".encode() for p in parents[1:])
        out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
        return mark

    head = 0
    n = 0
    while n < commits:
        when = 1_780_000_000 + n * 60
        if merge_every and n and n % merge_every == 0 and n + 2 <= commits:
            fork = head
            side = _decision(10_000_000 + n, "bob")
            side_mark = commit("refs/heads/side", [fork], b"".join(_append(lines, side)), when)
            mine = _decision(n, "alice")
            main.append(mine)
            lines = _append(lines, mine)
            head = commit("refs/heads/main", [head], b"".join(lines), when + 1)
            main.append(side)  # the driver's merge: ours, then theirs' new event
            lines = _append(lines, side)
            head = commit("refs/heads/main", [head, side_mark], b"".join(lines), when + 2)
            n += 2
            continue
        mine = _decision(n, "alice")
        main.append(mine)
        lines = _append(lines, mine)
        head = commit("refs/heads/main", [head] if head else [], b"".join(lines), when)
        n += 1
    assert b"".join(lines) == b"".join(_chained(main))
    return b"".join(out)


def build_history(root: Path, commits: int, merge_every: int = 0) -> Path:
    """A repository at `root` holding that history, branch main checked out."""
    root.mkdir(parents=True, exist_ok=True)
    run(root, "git", "init", "-q", "-b", "main")
    stream = history_stream(commits, merge_every)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=stream, check=True,
                   env=GIT_ENV)  # fmt: skip
    run(root, "git", "checkout", "-q", "-f", "main")
    return root


def run(cwd: Path, *cmd: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, env=GIT_ENV)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--merge-every", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=folder, default=ROOT / "bench" / "out")
    args = parser.parse_args()
    vt = [sys.executable, "-m", "vault_tools", "ledger", "audit", "--vault", "."]
    since = [*vt, "--since", "HEAD~10"]
    for commits in args.commits:
        origin = args.dir / f"audit-{commits}-{args.merge_every}"
        if not (origin / ".git").exists():
            start = time.perf_counter()
            build_history(origin, commits, args.merge_every)
            print(f"built {commits} commits with fast-import in "
                  f"{time.perf_counter() - start:.2f} s", flush=True)  # fmt: skip
        clone = args.dir / f"audit-{commits}-{args.merge_every}-clone"
        if not (clone / ".git").exists():
            run(args.dir, "git", "clone", "-q", str(origin), str(clone))
        (clone / "vt.toml").touch()  # a vault: the ledger at its default place
        size = (clone / LEDGER).stat().st_size
        figures = interleaved(
            {
                "full": lambda c=clone: run_checked(vt, cwd=c, env=GIT_ENV),
                "recent": lambda c=clone: run_checked(since, cwd=c, env=GIT_ENV),
            },
            args.runs,
        )
        full = figures.median("full", "wall"), figures.median("full")
        recent = figures.median("recent", "wall"), figures.median("recent")
        print(f"{commits} commits, ledger {size / 1e6:.2f} MB, median of {args.runs}; "
              f"{figures.load(1)}")  # fmt: skip
        print(f"  vt ledger audit                 : {full[0]:7.2f} s wall, {full[1]:7.2f} s CPU")
        print(f"  vt ledger audit --since HEAD~10 : {recent[0]:7.2f} s wall, "
              f"{recent[1]:7.2f} s CPU")  # fmt: skip


if __name__ == "__main__":
    main()
