"""The synthetic vaults the benchmarks run on, written by the project's shared
`make_vault.py` (beside the repository in `../shared/bench/`, or where the environment
variable VT_MAKE_VAULT points)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCRIPT = ROOT.parent / "shared" / "bench" / "make_vault.py"


def make_vault_script() -> Path:
    """make_vault.py, or exit with one line saying where it was looked for."""
    script = Path(os.environ.get("VT_MAKE_VAULT") or DEFAULT_SCRIPT)
    if not script.is_file():
        raise SystemExit(
            f"make_vault.py not found at {script}: run the benchmark from a "
            "checkout beside shared/, or set VT_MAKE_VAULT to the script"
        )
    return script


def make_vault(target: Path, notes: int) -> Path:
    """A synthetic vault of `notes` review notes at `target`."""
    subprocess.run(
        [sys.executable, str(make_vault_script()), str(target), "--notes", str(notes)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return target
