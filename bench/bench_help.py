#!/usr/bin/env python3
"""Time every `--help` of vt and its shell completion against `vt validate` of an empty
vault, measured in the same rounds (the goal: each within 1.5x of that validate).

    python bench/bench_help.py [--runs 7] [--no-warmup]

Each round runs every command once, in an order shuffled afresh each round (a fixed
order showed a place-in-the-round effect of up to 25%), so a slow spell of the machine
falls on all of them; a command's figure is the median over the rounds of its time
divided by the round's validate, by wall and by CPU time (bench/measure.py, the
benchmarks' harness, which also gives the load average before and after). Two variants
show what the choices of cli/root.py cost, each paired with the same runs as shipped:
Typer's rich help (`rich_markup_mode` "markdown", which imports rich.markdown and
markdown-it) and the app without Typer's completion options. Every process starts the
same way (`python -c`), so the figures compare like with like. Stdlib only.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from measure import Measured, interleaved, run_measured  # bench/measure.py

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


def once(cmd: list[str]) -> Measured:
    return run_measured(cmd, memory=False)


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
        shuffle = random.Random(15).shuffle

        def shuffled(names: Sequence[str], _: int) -> list[str]:
            order = list(names)
            shuffle(order)
            return order

        figures = interleaved(
            {name: (lambda c=cmd: once(c)) for name, cmd in jobs.items()},
            args.runs,
            warmup=not args.no_warmup,  # the OS caches
            order=shuffled,
        )
    base = "validate (empty vault)"
    print(f"median of {args.runs} rounds; ratio: to the same round's empty-vault validate")
    print(f"  {'':<44} {'wall ms':>7}  {'wall':>5}  {'CPU':>5}")
    ratios = {name: statistics.median(figures.ratios(name, base, "wall")) for name in jobs}
    for name in jobs:
        ms = figures.median(name, "wall") * 1000
        cpu = statistics.median(figures.ratios(name, base, "cpu"))
        print(f"  {name:<44} {ms:7.1f} ms {ratios[name]:5.2f}x {cpu:5.2f}x")
    shipped = [r for name, r in ratios.items() if "--help" in name and "," not in name]
    print(f"slowest --help as shipped: {max(shipped):.2f}x the empty-vault validate (goal <= 1.5)")
    print(figures.load())


if __name__ == "__main__":
    main()
