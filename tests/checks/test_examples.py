"""Acceptance examples (after check-jsonschema's tests/acceptance/test_example_files.py).

Every file in tests/examples/valid/ must validate without a finding; every file in
tests/examples/invalid/ must produce exactly the findings its `<!-- expect: CODE LINE -->`
markers name (one marker per expected finding, the last line of the file is one).
Each file is checked as `03_claims/<name>.md` in a vault holding the example
knowledge base.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import build_vault, single_file_codes, validate_vault
from vault_tools.findings import CODES

HERE = Path(__file__).resolve().parents[1] / "examples"
VALID = sorted((HERE / "valid").glob("*.md"))
INVALID = sorted((HERE / "invalid").glob("*.md"))
MARKER = re.compile(rb"<!-- expect: ([a-z][a-z-]*) (\d+) -->")


def _expected(raw: bytes) -> set[tuple[str, int]]:
    return {(code.decode(), int(line)) for code, line in MARKER.findall(raw)}


def _findings_for(tmp_path: Path, example: Path) -> set[tuple[str, int | None]]:
    vault = build_vault(tmp_path / "vault", {example.name: example.read_bytes()})
    report = validate_vault(vault)
    assert all(f.path == f"03_claims/{example.name}" for f in report.findings), report.findings
    return {(f.code, f.line) for f in report.findings}


@pytest.mark.parametrize("example", VALID, ids=[p.stem for p in VALID])
def test_valid_example_has_no_finding(tmp_path: Path, example: Path) -> None:
    assert _findings_for(tmp_path, example) == set()


@pytest.mark.parametrize("example", INVALID, ids=[p.stem for p in INVALID])
def test_invalid_example_gives_exactly_its_expected_findings(tmp_path: Path, example: Path) -> None:
    raw = example.read_bytes()
    last_line = raw.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    assert MARKER.fullmatch(last_line.strip()), "the last line must be an expect marker"
    expected = _expected(raw)
    assert all(code in CODES for code, _ in expected)
    assert _findings_for(tmp_path, example) == expected


def test_examples_cover_every_single_file_code() -> None:
    covered = set()
    for example in INVALID:
        covered |= {code for code, _ in _expected(example.read_bytes())}
    # a new code in CODES lands here: give it an example in tests/examples/invalid/, or
    # list it in conftest.NOT_FROM_ONE_FILE / OTHER_COMMAND_CODES
    assert covered == single_file_codes()


def test_there_are_enough_valid_examples() -> None:
    assert len(VALID) >= 6
    raw = {p.stem: p.read_bytes() for p in VALID}
    assert raw["crlf_bom"].startswith(b"\xef\xbb\xbf") and b"\r\n" in raw["crlf_bom"]
    assert b"\t" in raw["tabs"]
