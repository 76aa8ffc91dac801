#!/usr/bin/env python3
"""Time every `--help` of vt and its shell completion against `vt validate` of an empty
vault, measured in the same rounds (the goal: each within 1.5x of that validate).

    python bench/bench_help.py [--runs 7] [--no-warmup]

Each round runs every command once, in an order shuffled afresh each round (a fixed
order showed a place-in-the-round effect of up to 25%), so a slow spell of the machine
falls on all of them; a command's figure is the median over the rounds of its time
divided by the round's validate. Two variants show what the choices of cli/root.py
cost, each paired with the same runs as shipped: Typer's rich help (`rich_markup_mode`
"markdown", which imports rich.markdown and markdown-it) and the app without Typer's
completion options. Every process starts the same way (`python -c`), so the figures
compare like with like. Stdlib only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETUPS = {
    "as shipped": "",
    "rich help": "root.app.rich_markup_mode = 'markdown'; ",
    "no completion": "root.app._add_completion = False; ",
}


def command(setup: str, args: list[str]) -> list[str]:
    return [
        sys.executable,
        "-c",
        f"import sys; import vault_tools.cli.root as root; {setup}"
        f"sys.argv = ['vt', *{args!r}]; from vault_tools.cli import main; main()",
    ]


def once(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def every_help() -> list[list[str]]:
    """`vt --help`, each command's and each group's subcommands'."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from vault_tools.cli import load_all

    app = load_all()
    runs = [["--help"]]
    for info in app.registered_commands:
        runs.append([info.name or info.callback.__name__.replace("_", "-"), "--help"])  # type: ignore[union-attr]
    for group in app.registered_groups:
        runs.append([str(group.name), "--help"])
        for sub in group.typer_instance.registered_commands:  # type: ignore[union-attr]
            name = sub.name or sub.callback.__name__.replace("_", "-")  # type: ignore[union-attr]
            runs.append([str(group.name), name, "--help"])
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the first pass that warms the OS caches (for a quick check that it runs)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vt-bench-") as tmp:
        vault = Path(tmp) / "vault"
        (vault / ".obsidian").mkdir(parents=True)
        validate = ["validate", "--vault", str(vault)]
        jobs: dict[str, list[str]] = {"validate (empty vault)": command("", validate)}
        for help_args in every_help():
            jobs["vt " + " ".join(help_args)] = command("", help_args)
        for name, setup in list(SETUPS.items())[1:]:
            jobs[f"vt --help, {name}"] = command(setup, ["--help"])
            jobs[f"validate (empty vault), {name}"] = command(setup, validate)
        ratios: dict[str, list[float]] = {name: [] for name in jobs}
        seconds: dict[str, list[float]] = {name: [] for name in jobs}
        for cmd in [] if args.no_warmup else jobs.values():
            once(cmd)  # warm the OS caches
        shuffle = random.Random(15).shuffle
        for _ in range(args.runs):
            order = list(jobs)
            shuffle(order)
            times = {name: once(jobs[name]) for name in order}
            base = times["validate (empty vault)"]
            for name, elapsed in times.items():
                seconds[name].append(elapsed)
                ratios[name].append(elapsed / base)
    print(f"median of {args.runs} rounds; ratio: to the same round's empty-vault validate")
    for name in jobs:
        ms = statistics.median(seconds[name]) * 1000
        print(f"  {name:<44} {ms:7.1f} ms  {statistics.median(ratios[name]):5.2f}x")
    shipped = [r for name, r in ratios.items() if "--help" in name and "," not in name]
    worst = max(statistics.median(r) for r in shipped)
    print(f"slowest --help as shipped: {worst:.2f}x the empty-vault validate (goal <= 1.5)")


if __name__ == "__main__":
    main()
