"""What vt's memos (`functools.lru_cache` and `cache`) buy a cold `vt validate`, paired.

    python bench/bench_memos.py [--notes 2000] [--rounds 5] [--dir DIR]

Writes a synthetic vault (bench/synthetic.py) and alternates two fresh processes, each
validating it cold (no `.vt/`, one process, the review assist on): A with the memos as
they are, B with every memo of the package replaced, wherever a module binds it, by the
function it memoizes. Each child prints its validate's own wall and CPU; the harness
(bench/measure.py) takes the whole process's. Prints each variant's median and the ratio
B/A, min/median/max, with the load average. Stdlib only (plus vault_tools).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import Measured, folder, interleaved, phase_clock, run_checked  # noqa: E402
from synthetic import make_vault  # noqa: E402


def _unmemoized() -> int:
    """Every memo of the loaded vault_tools modules replaced by its function; how many."""
    import functools
    import inspect

    modules = [m for name, m in sorted(sys.modules.items()) if name.startswith("vault_tools")]
    memos = {
        id(value): value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, functools._lru_cache_wrapper)
    }
    for module in modules:
        for name, value in list(vars(module).items()):
            if id(value) in memos:
                setattr(module, name, inspect.unwrap(value))
    return len(memos)


def child(mode: str, vault: str) -> None:
    """Validate `vault` cold in this fresh process; prints `PHASE wall cpu`."""
    from vault_tools.checks import validate as validate_module
    from vault_tools.checks.assist import run  # noqa: F401 - loaded, so its memos are too
    from vault_tools.config import load_settings

    settings = load_settings(Path(vault))
    settings.workers = 1
    if mode == "plain":
        print(f"memos replaced: {_unmemoized()}")
    clock = phase_clock()
    validate_module.validate(settings)
    wall, cpu = clock()
    print(f"PHASE {wall:.4f} {cpu:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=folder, default=None)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    root = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        vault = root / "vault"
        make_vault(vault, args.notes)

        def prepare() -> None:
            shutil.rmtree(vault / ".vt", ignore_errors=True)

        script = str(Path(__file__).resolve())

        def side(mode: str) -> Measured:
            return run_checked([sys.executable, script, "--child", mode, str(vault)])

        figures = interleaved(
            {"memos": lambda: side("memos"), "plain": lambda: side("plain")},
            args.rounds,
            prepare,
        )
        print(f"cold validate of {args.notes} notes, assist on, one process")
        print("\n".join(figures.table("plain", "memos")))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
