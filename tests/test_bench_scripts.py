"""Every benchmark in bench/ runs from the repository alone: each answers `--help`
(fast, on every run of the suite), and each runs with its smallest options (marked
slow), so none breaks silently. Only that each exits 0 and prints its figures is
checked: a timing is never asserted (they are measured, as ratios, by running the
benchmarks)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

BENCH = REPO / "bench"
# script -> (its quickest options, where {tmp} is a folder not made yet, which a script
# writing there makes; a line of its output)
QUICK: dict[str, tuple[list[str], str]] = {
    "bench_validate.py": (["--sizes", "300", "--runs", "1", "--out", "{tmp}"], "vt cold"),
    # its own install as the baseline: the pairing runs, whatever the two versions
    "bench_cold.py": (
        ["--baseline", sys.prefix, "--notes", "60", "--rounds", "1", "--out", "{tmp}"],
        "B/A CPU",
    ),
    "bench_parts.py": (
        ["--baseline", sys.prefix, "--notes", "60", "--rounds", "1", "--out", "{tmp}"],
        "B/A review assist",
    ),
    "bench_preview.py": (["--notes", "60", "--runs", "1"], "preview / validate ="),
    "bench_report.py": (["--notes", "60", "--runs", "1"], "report --dry-run / validate"),
    "bench_apply.py": (["--notes", "40", "--dir", "{tmp}"], "apply"),
    "bench_memos.py": (["--notes", "60", "--rounds", "1", "--dir", "{tmp}"], "plain / memos"),
    "bench_apply_marking.py": (
        ["--notes", "80", "--rounds", "1", "--dir", "{tmp}"],
        "threads/forks",
    ),
    "bench_paired.py": (["--notes", "30", "--rounds", "1", "--dir", "{tmp}"], "wall B/A"),
    "bench_audit.py": (["--commits", "100", "--runs", "1", "--dir", "{tmp}"], "vt ledger audit"),
    "bench_hook.py": (["--notes", "40", "--staged", "2", "--runs", "1", "--dir", "{tmp}"], "hook"),
    "bench_watch.py": (
        ["--saves", "3", "--latency-notes", "30", "--notes", "50", "--idle", "0.5"]
        + ["--out", "{tmp}"],
        "idle CPU",
    ),
    "bench_ledger.py": (
        ["--events", "300", "--small", "100", "--rounds", "1", "--dir", "{tmp}"],
        "verify cold / bare",
    ),
    "bench_gate.py": (["--events", "300", "--repeat", "1", "--dir", "{tmp}"], "cold gate"),
    "bench_store.py": (
        ["--events", "300", "--claims", "50", "--rounds", "1", "--dir", "{tmp}"],
        "vt rebuild / bare loop",
    ),
    "bench_stats.py": (
        ["--notes", "60", "--events", "300", "--rounds", "1", "--dir", "{tmp}"],
        "vt stats warm",
    ),
    "bench_startup.py": (["--runs", "1", "--no-warmup"], "validate (empty vault)"),
    "bench_help.py": (["--runs", "1", "--no-warmup"], "slowest --help"),
    "bench_views.py": (
        ["--notes", "60", "--rounds", "1", "--saves", "1", "--quiet", "1", "--dir", "{tmp}"],
        "per save",
    ),
    "bench_versions.py": (
        ["--notes", "60", "--dir", "{tmp}", "--base", "HEAD", "--runs", "1"],
        "new/base CPU",
    ),
    "bench_signing.py": (
        ["--events", "200", "--runs", "1", "--sign", "5", "--dir", "{tmp}"],
        "signed / unsigned",
    ),
}


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
COMMAND = re.compile(r"python bench/(\w+\.py)([^`#|\n]*)")


def documented_commands() -> list[tuple[str, str, list[str]]]:
    """(page, script, its options) of every `python bench/X.py ...` the docs show; the
    words after a bare `--` belong to the commands a script runs, not to it."""
    found = []
    for page in DOCS:
        for match in COMMAND.finditer(page.read_text(encoding="utf-8")):
            words = match.group(2).split()
            if "--" in words:
                words = words[: words.index("--")]
            options = [w.split("=")[0] for w in words if w.startswith("--")]
            found.append((page.name, match.group(1), options))
    return found


def test_the_docs_show_bench_commands_that_exist(tmp_path: Path) -> None:
    """Every benchmark command of the docs names a script of bench/ and options that
    script takes, so a figure's command still reproduces it."""
    commands = documented_commands()
    assert any(page == "performance.md" for page, _, _ in commands)
    helps: dict[str, str] = {}
    for page, script, options in commands:
        assert (BENCH / script).is_file(), f"{page}: bench/{script} does not exist"
        if script not in helps:
            done = subprocess.run(
                [sys.executable, str(BENCH / script), "--help"],
                capture_output=True, text=True, cwd=tmp_path, timeout=60,
            )  # fmt: skip
            helps[script] = done.stdout
        taken = set(re.findall(r"--[\w-]+", helps[script]))
        unknown = [option for option in options if option not in taken]
        assert not unknown, f"{page}: bench/{script} takes no {unknown}"


def test_every_benchmark_has_quick_options() -> None:
    assert {p.name for p in BENCH.glob("bench_*.py")} == set(QUICK)


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_every_bench_script_answers_help(script: str, tmp_path: Path) -> None:
    """The command line of each script parses as documented, from anywhere; a script
    that fails to import (a helper renamed in measure.py, say) fails here."""
    command = [sys.executable, str(BENCH / script), "--help"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage:"), done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(QUICK))
def test_the_benchmark_runs_and_prints_its_figures(script: str, tmp_path: Path) -> None:
    options, expected = QUICK[script]
    work = tmp_path / "new" / "folder"
    command = [sys.executable, str(BENCH / script), *(o.format(tmp=work) for o in options)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout, done.stdout
    assert re.search(r"\d+\.\d+", done.stdout)  # figures, whatever they are
    assert "Traceback" not in done.stderr
