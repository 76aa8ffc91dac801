"""A plain `pip install .` (a wheel, not the source tree) must give a working `vt`."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True)
    return next(out.glob("vault_tools-*.whl"))


def test_wheel_ships_every_module_schema_and_example_note(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "vault_tools").rglob("*.py")}
    schemas = {f"vault_tools/bundled_schemas/{p.name}" for p in (ROOT / "schemas").glob("*.json")}
    vault = ROOT / "examples" / "vault"
    example = {f"vault_tools/example_vault/{p.relative_to(vault).as_posix()}"
               for p in vault.rglob("*") if p.is_file() and ".vt" not in p.parts}
    assert modules - names == set()
    assert schemas - names == set()
    assert example - names == set()


def test_installed_wheel_validates_the_example_vault(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import vault_tools; "
            "assert vault_tools.__file__.startswith(sys.argv[1]), vault_tools.__file__; "
            "from vault_tools.bundled import example_vault_dir; "
            "sys.argv = ['vt', 'validate', '--vault', str(example_vault_dir())]; "
            "from vault_tools.cli import main; main()")
    result = subprocess.run([sys.executable, "-c", code, str(target)], cwd=tmp_path,
                            capture_output=True, text=True,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 0, result.stderr
    assert "0 errors" in result.stderr


def test_wheel_version_is_the_package_version(wheel: Path) -> None:
    from vault_tools import __version__
    assert wheel.name.startswith(f"vault_tools-{__version__}-")
    meta = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    assert f"\nVersion: {__version__}\n" in zipfile.ZipFile(wheel).read(meta).decode()
