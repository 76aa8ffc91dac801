"""Benchmark `vt apply` over a vault of approved notes against its I/O floor.

    python bench/bench_apply.py [--notes 10000] [--dir DIR] [--out FILE]

Builds a synthetic vault (bench/synthetic.py), turns every note into
`review_action: APPROVE` with its four checks true (editing the generated text), then,
in the same run:
- `vt apply`: the whole process (`python -m vault_tools apply --vault … --json`), timed
  from spawn to exit: examine every note, append one event per note (one fsync), mark
  every note APPLIED (one atomic rewrite each), refresh the Claim Store and the KB blocks;
- the floor: a bare script, also a fresh process, doing the same number of fsync'd atomic
  note rewrites (temp file, fsync, os.replace) on a copy of the vault's notes, plus one
  fsync'd append of as many lines, as many bytes, as the ledger vt wrote.
Goal: apply within 1.5x of the floor. Peak memory is reported for both apply runs: the
largest resident size of vt's process and every worker it forked (wait4's figure), to
compare between --notes sizes. Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import make_vault  # the project's own generator, bench/synthetic.py

REPO = Path(__file__).resolve().parents[1]
LEDGER = "05_ledger/decision_ledger.jsonl"
GOAL = 1.5

_ACTION = re.compile(r"^review_action: \S+$", re.M)
_CHECK = re.compile(r"^(check_[a-z_]+): false$", re.M)


def make_approved_vault(root: Path, notes: int) -> Path:
    vault = make_vault(root / "vault", notes)
    (vault / ".obsidian").mkdir(exist_ok=True)
    for path in (vault / "03_claims").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        text = _CHECK.sub(r"\1: true", _ACTION.sub("review_action: APPROVE", text, count=1))
        path.write_text(text, encoding="utf-8")
    return vault


def floor(notes_dir: str, ledger_bytes: int, lines: int) -> None:
    """The bare script: what apply cannot avoid doing on disk."""
    paths = sorted(Path(notes_dir).glob("*.md"))
    extra = b'review_state: APPLIED\nvt_event_id: "sha256:' + b"0" * 64 + b'"\n'
    for path in paths:
        data = path.read_bytes() + extra
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    line = b"x" * (ledger_bytes // lines - 1) + b"\n"
    fd = os.open(
        Path(notes_dir).parent / "ledger.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
    )
    try:
        os.write(fd, line * lines)
        os.fsync(fd)
    finally:
        os.close(fd)


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess, float]:
    """Wall seconds, the finished process and its peak RSS in MiB: the largest of the
    process and every process it waited for (its workers), as wait4 reports it."""
    os.sync()  # start clean: no write-back of the previous step's files during this one
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(
            cmd, process.returncode, out.read().decode(), err.read().decode()
        )
    return elapsed, done, usage.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10000)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    ap.add_argument(
        "--floor", nargs=3, metavar=("NOTES_DIR", "BYTES", "LINES"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args.floor:
        floor(args.floor[0], int(args.floor[1]), int(args.floor[2]))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-apply-", dir=args.dir) as work:
        root = Path(work)
        vault = make_approved_vault(root, args.notes)
        shutil.copytree(vault / "03_claims", root / "floor" / "03_claims")
        apply_s, done, apply_mib = timed(
            [sys.executable, "-m", "vault_tools", "apply", "--vault", str(vault), "--json"]
        )
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        report = json.loads(done.stdout)
        ledger = vault / LEDGER
        events = sum(1 for _ in ledger.open("rb"))
        floor_s, fdone, _ = timed(
            [
                sys.executable,
                __file__,
                "--floor",
                str(root / "floor" / "03_claims"),
                str(ledger.stat().st_size),
                str(events),
            ]
        )
        if fdone.returncode != 0:
            print(fdone.stderr, file=sys.stderr)
            return 1
        again_s, _, again_mib = timed(
            [sys.executable, "-m", "vault_tools", "apply", "--vault", str(vault), "--json"]
        )
    figures = {
        "notes": args.notes,
        "events": events,
        "applied": len(report["applied"]),
        "refused": len(report["refused"]),
        "cpus": os.cpu_count(),
        "apply_s": round(apply_s, 2),
        "floor_s": round(floor_s, 2),
        "ratio": round(apply_s / floor_s, 2),
        "goal": GOAL,
        "goal_met": apply_s / floor_s <= GOAL,
        "second_run_s": round(again_s, 2),
        # the largest of vt's process and its workers (wait4), MiB
        "apply_peak_rss_mib": round(apply_mib, 1),
        "second_run_peak_rss_mib": round(again_mib, 1),
    }
    print(json.dumps(figures, indent=2))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    # the exit code says whether apply did its work; whether it was fast enough is a
    # figure, read above (a busy machine must not make a benchmark run fail)
    return 0 if events == args.notes else 1


if __name__ == "__main__":
    sys.exit(main())
