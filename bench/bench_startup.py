"""Benchmark what the CLI's function-level imports buy: `vt --help` and `vt validate` on an
empty vault, with the imports lazy (as shipped) and with the modules they name imported
up front, as top-level imports would (paired: the variants alternate, run by run).
`vt --help` imports every command's module, so it would pay for every group below; a
command run imports only its own module.

    python bench/bench_startup.py [--runs 20] [--no-warmup]

Prints the median of each variant and the extra time of each group of modules against
the lazy run, wall and CPU, with the load average (bench/measure.py, the benchmarks'
harness; the order of the variants turns each round). Stdlib only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from measure import Measured, interleaved, run_measured  # bench/measure.py

# the modules the commands of vault_tools/cli/ import inside their functions, by group
GROUPS = {
    "command cores": [
        "vault_tools.checks.validate",
        "vault_tools.review.apply",
        "vault_tools.review.draft",
        "vault_tools.review.preview",
        "vault_tools.review.diff",
        "vault_tools.review.revert",
        "vault_tools.review.status",
        "vault_tools.review.history",
        "vault_tools.store.claims",
        "vault_tools.store.graph",
        "vault_tools.store.export",
        "vault_tools.ledger.verify",
        "vault_tools.ledger.merge",
        "vault_tools.integrations.dashboard",
        "vault_tools.integrations.demo",
        "vault_tools.integrations.entities",
        "vault_tools.integrations.git.hook",
        "vault_tools.integrations.importer",
        "vault_tools.integrations.init",
        "vault_tools.integrations.watch",
    ],
    "rich": [
        "rich.console",
        "rich.live",
        "rich.markup",
        "rich.progress",
        "rich.table",
        "rich.text",
    ],
    "crash report": ["vault_tools.cli.crash"],  # run_app's handler of a bug
}


def command(preload: list[str], args: list[str]) -> list[str]:
    imports = "".join(f"import {module}; " for module in preload)
    return [
        sys.executable,
        "-c",
        f"import sys; {imports}sys.argv = ['vt', *{args!r}]; "
        "from vault_tools.cli import main; main()",
    ]


def once(cmd: list[str]) -> Measured:
    return run_measured(cmd, memory=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="skip the first pass that warms the OS caches (for a quick check that it runs)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vt-bench-") as tmp:
        vault = Path(tmp) / "vault"
        (vault / ".obsidian").mkdir(parents=True)
        runs = {"--help": ["--help"], "validate (empty vault)": ["validate", "--vault", str(vault)]}
        variants = {"lazy": [], **GROUPS, "all top-level": sum(GROUPS.values(), [])}
        for label, cli_args in runs.items():
            figures = interleaved(
                {
                    name: (lambda p=preload, a=cli_args: once(command(p, a)))
                    for name, preload in variants.items()
                },
                args.runs,
                warmup=not args.no_warmup,  # the OS caches
            )
            lazy, lazy_cpu = figures.median("lazy", "wall") * 1000, figures.median("lazy") * 1000
            print(f"vt {label}: median of {args.runs} rounds; {figures.load()}")
            for name in variants:
                ms, cpu = figures.median(name, "wall") * 1000, figures.median(name) * 1000
                print(f"  {name:<16} {ms:7.1f} ms  ({(ms - lazy) / lazy:+6.1%} against lazy), "
                      f"CPU {cpu:6.1f} ms ({(cpu - lazy_cpu) / lazy_cpu:+6.1%})")  # fmt: skip


if __name__ == "__main__":
    main()
