"""The linters and the type checker run as part of the test suite, so that the README's
test command (and CI, which runs it) fails on a lint or type error like on a failing test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = ["vault_tools", "tests", "bench"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # the tools of this interpreter's environment (the test extra), not whatever is on PATH
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def _passes(result: subprocess.CompletedProcess[str]) -> None:
    command = " ".join(result.args[2:])
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}{result.stderr}"


def test_ruff_check_passes() -> None:
    _passes(_run("ruff", "check", *SOURCES))


def test_ruff_format_check_passes() -> None:
    _passes(_run("ruff", "format", "--check", *SOURCES))


def test_mypy_passes() -> None:
    # configured in pyproject.toml ([tool.mypy]: the files and the settings); its cache in
    # .mypy_cache keeps a second run to a few seconds
    _passes(_run("mypy"))
