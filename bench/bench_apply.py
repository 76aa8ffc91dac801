"""Benchmark `vt apply` over a vault of approved notes: its speed against its I/O floor,
and its peak memory as the vault grows.

    python bench/bench_apply.py [--notes 1000 5000 50000] [--no-floor] [--dir DIR] [--out FILE]

For each size: builds a synthetic vault (bench/synthetic.py), turns every note into
`review_action: APPROVE` with its four checks true (editing the generated text), then,
in the same run:
- `vt apply`: the whole process (`python -m vault_tools apply --vault … --json`, run
  outside the repository, so that it is the vault_tools installed), timed from spawn
  to exit: examine every note, append one event per note, mark every note APPLIED (one
  atomic rewrite each), refresh the Claim Store and the KB blocks;
- the floor (unless --no-floor): a bare script, also a fresh process, doing the same
  number of fsync'd atomic note rewrites (temp file, fsync, os.replace) on a copy of the
  vault's notes, plus one fsync'd append of as many lines, as many bytes, as the ledger
  vt wrote;
- `vt apply` again, with nothing left to do.
Goal: apply within 1.5x of the floor. Peak memory of each apply run: the peaks of vt's
process and of every worker it forked, summed (bench/measure.py: an upper bound, pages
a worker shares with its parent count twice), and the largest single process (wait4's
figure). Memory goal: flat, the summed peak at 5k notes within 1.25x of 1k, at 50k
within 1.5x; with several sizes, each size's ratio to the first is printed.
Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from measure import Measured, folder, load_text, run_measured  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

LEDGER = "05_ledger/decision_ledger.jsonl"
GOAL = 1.5

_ACTION = re.compile(r"^review_action: \S+$", re.M)
_CHECK = re.compile(r"^(check_[a-z_]+): false$", re.M)
_REVIEWER = re.compile(r"^reviewer: .*$", re.M)
REVIEWER = "alice"


def make_approved_vault(root: Path, notes: int) -> Path:
    """Every note approved by one reviewer, who runs the apply: vt records only the
    runner's own decisions (a note naming a teammate is left for the teammate)."""
    vault = make_vault(root / "vault", notes)
    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / "vt.toml").write_text(f'[review]\nactor = "{REVIEWER}"\n', encoding="utf-8")
    for path in (vault / "03_claims").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        text = _CHECK.sub(r"\1: true", _ACTION.sub("review_action: APPROVE", text, count=1))
        text = _REVIEWER.sub(f'reviewer: "{REVIEWER}"', text, count=1)
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


def timed(cmd: list[str], cwd: Path) -> tuple[Measured, str, str]:
    """The measured run of `cmd` (bench/measure.py), its stdout and its stderr."""
    os.sync()  # start clean: no write-back of the previous step's files during this one
    measured = run_measured(cmd, cwd=cwd, capture=True)
    return measured, measured.out, measured.err


def mib(kib: int) -> float:
    return round(kib / 1024, 1)


def one_size(notes: int, work: Path, with_floor: bool) -> dict | None:
    """The figures of one vault size; None when apply failed."""
    root = Path(tempfile.mkdtemp(prefix=f"n{notes}-", dir=work))
    vault = make_approved_vault(root, notes)
    if with_floor:
        shutil.copytree(vault / "03_claims", root / "floor" / "03_claims")
    vt = [sys.executable, "-m", "vault_tools", "apply", "--vault", str(vault), "--json"]
    load_before = os.getloadavg()
    first, out, err = timed(vt, root)
    if first.code != 0:
        print(err[-2000:], file=sys.stderr)
        return None
    report = json.loads(out)
    ledger = vault / LEDGER
    events = sum(1 for _ in ledger.open("rb"))
    figures: dict = {
        "notes": notes,
        "events": events,
        "applied": len(report["applied"]),
        "refused": len(report["refused"]),
        "cpus": os.cpu_count(),
        "apply_s": round(first.wall, 2),
        "apply_cpu_s": round(first.cpu, 2),
    }
    if with_floor:
        floor_cmd = [sys.executable, __file__, "--floor", str(root / "floor" / "03_claims")]
        floor_run, _, ferr = timed([*floor_cmd, str(ledger.stat().st_size), str(events)], root)
        if floor_run.code != 0:
            print(ferr, file=sys.stderr)
            return None
        ratio = first.wall / floor_run.wall
        figures |= {
            "floor_s": round(floor_run.wall, 2),
            "floor_cpu_s": round(floor_run.cpu, 2),
            "ratio": round(ratio, 2),
            "goal": GOAL,
            "goal_met": ratio <= GOAL,
        }
    again, _, _ = timed(vt, root)
    figures |= {
        "second_run_s": round(again.wall, 2),
        # summed over vt's process and its workers (measure.py), and the largest one
        "apply_peak_mib": mib(first.peak_kib),
        "apply_processes": first.processes,
        "apply_largest_mib": mib(first.largest_kib),
        "second_run_peak_mib": mib(again.peak_kib),
        "second_run_largest_mib": mib(again.largest_kib),
        "load": load_text(load_before, os.getloadavg()),
    }
    shutil.rmtree(root, ignore_errors=True)
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, nargs="+", default=[10000], help="vault sizes")
    ap.add_argument("--no-floor", action="store_true", help="memory only: skip the floor")
    ap.add_argument("--dir", type=folder, default=None, help="work folder (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    ap.add_argument(
        "--floor", nargs=3, metavar=("NOTES_DIR", "BYTES", "LINES"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args.floor:
        floor(args.floor[0], int(args.floor[1]), int(args.floor[2]))
        return 0
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-apply-", dir=args.dir) as work:
        for notes in args.notes:
            figures = one_size(notes, Path(work), not args.no_floor)
            if figures is None:
                return 1
            if runs:  # memory as the vault grows: this size's peaks over the first size's
                first = runs[0]
                figures["peak_vs_first"] = round(
                    figures["apply_peak_mib"] / first["apply_peak_mib"], 2
                )
                figures["largest_vs_first"] = round(
                    figures["apply_largest_mib"] / first["apply_largest_mib"], 2
                )
            print(json.dumps(figures, indent=2), flush=True)
            runs.append(figures)
    if args.out:
        args.out.write_text(json.dumps(runs, indent=2) + "\n", encoding="utf-8")
    # the exit code says whether apply did its work; whether it was fast enough, or lean
    # enough, is a figure, read above (a busy machine must not make a benchmark run fail)
    return 0 if all(r["events"] == r["notes"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
