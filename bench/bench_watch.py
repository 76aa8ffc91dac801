#!/usr/bin/env python3
"""Benchmark `vt watch`: save → preview latency, and idle CPU on a 10k-note vault.

    python bench/bench_watch.py [--saves 200] [--notes 10000] [--idle 30]

1. Latency. A synthetic vault (bench/synthetic.py, --latency-notes notes) is watched by
   the real `vt watch --json` (default debounce, 150 ms). Each of --saves saves edits the V2
   claim draft of a REQUEST_REPAIR note (round robin over its marked notes): the new
   text is written to a temp file and renamed over the note, as editors do. The time
   from that os.replace to the new claim text appearing inside the note's Repair
   Preview block (the file is polled every millisecond) is the latency; p50 and p95
   are reported. Goal: p95 <= 300 ms, debounce included.
2. Idle CPU. The watcher runs on a --notes vault; once its startup scan has finished
   (the `ready` event, plus one second for the catch-up resync), the process's
   utime + stime from /proc/<pid>/stat are sampled over --idle seconds with no change
   in the vault. Goal: <= 1% of one core.
Both are timed around a long-running watcher, not as runs of a command; the load average
before and after is printed (bench/measure.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from measure import folder, load_text  # bench/measure.py
from synthetic import make_vault  # the project's own generator, bench/synthetic.py

ROOT = Path(__file__).resolve().parents[1]
DRAFT_HEADING = "### V2 Atomic Claim Draft"
PREVIEW_START = "<!-- vt:preview:start -->"
PREVIEW_END = "<!-- vt:preview:end -->"
POLL = 0.001
DEADLINE = 10.0


class Watch:
    """`vt watch --json` on a vault; its stdout is drained on a thread (a full pipe would
    block the watcher), and the `ready` event is waited for."""

    def __init__(self, vault: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "vault_tools", "watch", "--vault", str(vault), "--json"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.ready = threading.Event()
        self.ready_event: dict = {}
        self.counts: dict[str, int] = {}
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            self.counts[event["event"]] = self.counts.get(event["event"], 0) + 1
            if event["event"] == "ready":
                self.ready_event = event
                self.ready.set()

    def wait_ready(self, timeout: float) -> dict:
        if not self.ready.wait(timeout):
            self.stop()
            raise SystemExit(
                f"vt watch not ready after {timeout} s: "
                f"{self.proc.stderr.read() if self.proc.stderr else ''}"
            )
        return self.ready_event

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of stat(5)
        return (utime + stime) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def marked_notes(vault: Path) -> list[Path]:
    return sorted(
        p
        for p in (vault / "03_claims").glob("*.md")
        if b"review_action: REQUEST_REPAIR" in p.read_bytes()
        and DRAFT_HEADING.encode() in p.read_bytes()
    )


def with_new_draft(text: str, marker: str) -> str:
    """The note with `marker` appended to its V2 claim draft (the paragraph after the heading)."""
    lines = text.split("\n")
    at = lines.index(DRAFT_HEADING) + 1
    while not lines[at].strip():
        at += 1
    lines[at] = lines[at].rstrip() + marker
    return "\n".join(lines)


def in_preview(path: Path, marker: str) -> bool:
    text = path.read_text(encoding="utf-8")
    start = text.find(PREVIEW_START)
    return start >= 0 and marker in text[start : text.find(PREVIEW_END, start)]


def save_to_preview(path: Path, marker: str) -> float:
    text = with_new_draft(path.read_text(encoding="utf-8"), marker)
    temp = path.with_name(f".{path.name}.bench.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    saved = time.perf_counter()
    deadline = saved + DEADLINE
    while not in_preview(path, marker):
        if time.perf_counter() > deadline:
            raise SystemExit(f"no preview for {marker!r} in {path} after {DEADLINE} s")
        time.sleep(POLL)
    return time.perf_counter() - saved


def latency(work: Path, notes: int, saves: int) -> dict:
    vault = make_vault(work / "latency", notes)
    targets = marked_notes(vault)
    watch = Watch(vault)
    watch.wait_ready(120)
    try:
        times = [save_to_preview(targets[i % len(targets)], f"（bench {i}）") for i in range(saves)]
    finally:
        code = watch.stop()
    times.sort()
    return {
        "saves": saves,
        "notes": notes,
        "marked": len(targets),
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
        "exit": code,
        "events": dict(watch.counts),
    }


def idle_cpu(work: Path, notes: int, seconds: float) -> dict:
    vault = make_vault(work / "idle", notes)
    watch = Watch(vault)
    ready = watch.wait_ready(600)
    time.sleep(1.0)  # the catch-up resync right after `ready` (a stat per note)
    before = watch.cpu_seconds()
    time.sleep(seconds)
    used = watch.cpu_seconds() - before
    code = watch.stop()
    return {
        "notes": notes,
        "startup_s": ready.get("seconds"),
        "idle_s": seconds,
        "cpu_s": round(used, 3),
        "cpu_percent": round(100 * used / seconds, 3),
        "exit": code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--latency-notes", type=int, default=300)
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--out", type=folder, default=ROOT / "bench" / "out", help="for watch.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        work = Path(tmp)
        lat = latency(work, args.latency_notes, args.saves)
        print(
            f"save → preview written: {lat['saves']} saves over {lat['marked']} "
            f"REQUEST_REPAIR notes ({lat['notes']}-note vault), debounce 150 ms"
        )
        print(
            f"  p50 {lat['p50_ms']} ms   p95 {lat['p95_ms']} ms   max {lat['max_ms']} ms"
            f"   (goal p95 <= 300 ms)   events {lat['events']}"
        )
        idle = idle_cpu(work, args.notes, args.idle)
        print(
            f"idle CPU, {idle['notes']}-note vault: {idle['cpu_s']} s of CPU in "
            f"{idle['idle_s']:.0f} s = {idle['cpu_percent']}% of a core (goal <= 1%); "
            f"startup scan {idle['startup_s']} s"
        )
    print(load_text(load_before, os.getloadavg()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "watch.json").write_text(
        json.dumps({"latency": lat, "idle": idle}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
