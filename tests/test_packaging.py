"""A plain `pip install .` (a wheel, not the source tree) must give a working `vt`."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("vault_tools-*.whl"))


def test_wheel_ships_every_module_schema_and_example_note(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "vault_tools").rglob("*.py")}
    schemas = {f"vault_tools/bundled_schemas/{p.name}" for p in (ROOT / "schemas").glob("*.json")}
    vault = ROOT / "examples" / "vault"
    example = {
        f"vault_tools/example_vault/{p.relative_to(vault).as_posix()}"
        for p in vault.rglob("*")
        if p.is_file() and ".vt" not in p.parts
    }
    assert modules - names == set()
    assert schemas - names == set()
    assert example - names == set()
    assert "vault_tools/py.typed" in names  # type checkers read the package's hints


def test_installed_wheel_validates_the_example_vault(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import vault_tools; "
        "assert vault_tools.__file__.startswith(sys.argv[1]), vault_tools.__file__; "
        "from vault_tools.bundled import example_vault_dir; "
        "sys.argv = ['vt', 'validate', '--vault', str(example_vault_dir())]; "
        "from vault_tools.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(target)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert "0 errors" in result.stderr


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_modules() -> set[str]:
    """The top-level modules vault_tools imports, anywhere in its source (lazily or not)."""
    modules: set[str] = set()
    for path in (ROOT / "vault_tools").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])
    return modules


def test_declared_dependencies_are_the_imported_ones() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    # a requirement is its name, then a version, extras or a marker
    declared = {
        _normalised(re.split(r"[\s;<>=!~\[]", spec, maxsplit=1)[0])
        for spec in project["dependencies"]
    }
    # the distribution of each installed top-level module; one not installed here (tomli on
    # Python 3.11+) is taken to be named like its module
    owners = importlib.metadata.packages_distributions()
    third_party = _imported_modules() - set(sys.stdlib_module_names) - {"vault_tools"}
    imported = {_normalised(owners.get(module, [module])[0]) for module in third_party}
    assert imported - declared == set(), "imported by vault_tools but not declared"
    assert declared - imported == set(), "declared but never imported by vault_tools"
    assert {"typer", "pyyaml", "tomli"} <= declared  # the names were read, not nothing


def test_wheel_version_is_the_package_version(wheel: Path) -> None:
    from vault_tools import __version__

    assert wheel.name.startswith(f"vault_tools-{__version__}-")
    meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    assert f"\nVersion: {__version__}\n" in zipfile.ZipFile(wheel).read(meta).decode()
