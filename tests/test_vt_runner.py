"""Tests start `vt` one way: `run_vt` / `start_vt` in tests/conftest.py. A module that
builds its own `python -m vault_tools` command, finds the console script itself or
filters VT_* out of the environment by hand brings back the drift this replaced (helpers
that disagreed on VT_VAULT, the working folder and the timeout)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HOME = TESTS / "conftest.py"


def _own_runners(source: str) -> list[tuple[int, str]]:
    """(line, what) for each way `source` starts vt without the shared helper."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        items: list[ast.expr] = []
        if isinstance(node, ast.List | ast.Tuple):
            items = list(node.elts)
        elif isinstance(node, ast.Call):
            items = list(node.args)
        words = [item.value if isinstance(item, ast.Constant) else None for item in items]
        if any(a == "-m" and b == "vault_tools" for a, b in zip(words, words[1:], strict=False)):
            found.append((node.lineno, "a `-m vault_tools` command of its own"))
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == "vt"
        ):
            found.append((node.lineno, "the console script found by hand (use VT_SCRIPT)"))
        by_hand = isinstance(node, ast.DictComp) and any(
            "os.environ" in ast.unparse(g.iter) for g in node.generators
        )
        if by_hand and "VT_" in ast.unparse(node):
            found.append((node.lineno, "VT_* filtered out by hand (use vt_env)"))
    return found


def test_no_test_module_starts_vt_its_own_way() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}:{line}: {what}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != HOME
        for line, what in _own_runners(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "\n".join(offenders)


def test_the_check_finds_each_kind_of_own_runner() -> None:
    helper = (
        "import os, subprocess, sys\n"
        "def vt(*args):\n"
        "    env = {k: v for k, v in os.environ.items() if k != 'VT_VAULT'}\n"
        "    return subprocess.run([sys.executable, '-m', 'vault_tools', *args], env=env)\n"
        "def python(*args): ...\n"
        "python('-m', 'vault_tools', 'demo')\n"
        "VT = Path(sys.executable).parent / 'vt'\n"
    )
    assert sorted(line for line, _ in _own_runners(helper)) == [3, 4, 6, 7]
    # and the home of the helper is where the one command line is built
    assert _own_runners(HOME.read_text(encoding="utf-8"))
