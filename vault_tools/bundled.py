"""Where the files shipped with vt live: the JSON Schemas and the example vault.

A wheel installs them inside the package (`vault_tools/bundled_schemas/`,
`vault_tools/example_vault/`, see pyproject's package-dir). An editable install or
a source checkout keeps them at the repository root (`schemas/`, `examples/vault/`);
setuptools' editable finder cannot import data-only sub-packages, so we look on disk.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _first_existing(*candidates: Path) -> Path:
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def schema_dir() -> Path:
    return _first_existing(_PACKAGE / "bundled_schemas", _PACKAGE.parent / "schemas")


def example_vault_dir() -> Path:
    return _first_existing(_PACKAGE / "example_vault", _PACKAGE.parent / "examples" / "vault")
