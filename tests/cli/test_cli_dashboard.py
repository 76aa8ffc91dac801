"""`vt report` and `vt export` through the Typer app and as real processes."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import run_vt
from tests.integrations.test_dashboard import decided_vault
from tests.store.test_store import decision, ledger_for
from vault_tools.cli import app
from vault_tools.config import load_settings
from vault_tools.integrations.dashboard import DASHBOARD
from vault_tools.store.export import FIELDS


def vt(*args: str):
    return CliRunner().invoke(app, list(args), env={"VT_VAULT": ""})


# an ASCII locale, and nothing in the environment that would make Python use UTF-8 anyway
C_LOCALE: dict[str, str | None] = {
    "LANG": "C",
    "LC_ALL": None,
    "LC_CTYPE": None,
    "PYTHONIOENCODING": None,
    "PYTHONUTF8": None,
}


def break_ledger(vault: Path) -> None:
    ledger = ledger_for(load_settings(vault))
    ledger.append([decision("A-1"), decision("A-2")])
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    ledger.path.write_bytes(lines[1] + lines[0])


@pytest.mark.parametrize("command", ["report", "export"])
def test_help_has_an_example(command: str) -> None:
    result = vt(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout and f"vt {command} " in result.stdout


# --- vt report -----------------------------------------------------------------------


def test_report_plain_then_up_to_date(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    first = vt("report", "--vault", str(vault))
    assert first.exit_code == 0, first.output
    lines = first.stdout.splitlines()
    assert lines[0] == f"created {DASHBOARD}"
    assert lines[1].startswith("6 review notes, 2 accepted claims on ")
    assert lines[1].endswith("graph: 6 of 6 edges shown")
    raw = (vault / DASHBOARD).read_bytes()
    again = vt("report", "--vault", str(vault))
    assert again.exit_code == 0
    assert again.stdout.splitlines()[0] == f"{DASHBOARD} is up to date (not rewritten)"
    assert (vault / DASHBOARD).read_bytes() == raw
    ledger_for(load_settings(vault)).append([decision("DV1-0004")])
    assert vt("report", "--vault", str(vault)).stdout.startswith(f"updated {DASHBOARD}\n")


def test_report_json(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    result = vt("report", "--vault", str(vault), "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["path"] == DASHBOARD and payload["written"] and payload["created"]
    assert payload["dry_run"] is False and payload["notes"] == 6
    assert payload["by_state"] == {"APPLIED": 3, "NEW": 2, "PREVIEW_READY": 1}
    assert payload["claims"] == {"ACCEPTED": 1, "REJECTED": 1, "REPAIRED": 1}
    assert payload["accepted_claims"] == 2 and payload["edges"] == 6
    assert all(code.startswith("assist-") for code in payload["findings"])
    assert payload["needs"] == {"Review-assist warnings": 2}
    assert payload["subnotes_changed"] == payload["subnotes_written"] == []
    second = json.loads(vt("report", "--vault", str(vault), "--json").stdout)
    assert second["written"] is False and second["changed"] is False


def test_report_dry_run(example_vault: Path) -> None:
    result = vt("report", "--vault", str(example_vault), "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"would write {DASHBOARD} (dry run, nothing written)\n")
    assert "## Needs you" in result.stdout and "| PENDING | 2 |" in result.stdout
    assert not (example_vault / DASHBOARD).exists()
    payload = json.loads(vt("report", "--vault", str(example_vault), "--dry-run", "--json").stdout)
    assert payload["dry_run"] and payload["changed"] and not payload["written"]
    assert not (example_vault / DASHBOARD).exists()
    vt("report", "--vault", str(example_vault))
    quiet = vt("report", "--vault", str(example_vault), "--dry-run")
    assert quiet.stdout.startswith("up to date, would not write")


def test_report_exit_codes(example_vault: Path, tmp_path: Path) -> None:
    path = example_vault / DASHBOARD
    path.write_text("<!-- vt:dashboard:start -->\n", encoding="utf-8")
    refused = vt("report", "--vault", str(example_vault))
    assert refused.exit_code == 1
    assert refused.stderr.startswith(f"vt: {DASHBOARD}:1: the vt:dashboard markers are broken")
    path.unlink()
    break_ledger(example_vault)
    broken = vt("report", "--vault", str(example_vault))
    assert broken.exit_code == 3 and ":1: the ledger changed since it was verified" in broken.stderr
    assert not path.exists()
    missing = vt("report", "--vault", str(tmp_path / "nowhere"))
    assert missing.exit_code == 2


def test_report_as_a_process_from_inside_the_vault(example_vault: Path) -> None:
    (example_vault / ".obsidian").mkdir(exist_ok=True)
    done = run_vt("report", cwd=example_vault / "03_claims", env=C_LOCALE, text=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"created {DASHBOARD}\n") and done.stderr == b""
    assert (example_vault / DASHBOARD).is_file()


def test_report_exits_1_when_a_file_could_not_be_read(example_vault: Path) -> None:
    """The dashboard is written and lists the file; the exit status says a note may have
    gone unchecked, as vt validate and vt status do."""
    os.mkfifo(example_vault / "03_claims" / "pipe.md")
    (example_vault / "03_claims" / "big.md").write_bytes(b"x" * 100_001)
    (example_vault / "vt.toml").write_text("[limits]\nmax_note_bytes = 100_000\n", encoding="utf-8")
    done = run_vt("report", "--json", vault=example_vault, env=C_LOCALE, text=False)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["written"] and summary["unreadable"] == 2
    assert summary["findings"]["not-a-file"] == 1 and summary["findings"]["note-too-large"] == 1
    dashboard = (example_vault / DASHBOARD).read_text(encoding="utf-8")
    assert "[[03_claims/pipe|pipe]]" in dashboard and "[[03_claims/big|big]]" in dashboard
    plain = run_vt("report", vault=example_vault, env=C_LOCALE, text=False)
    assert plain.returncode == 1, plain.stderr
    assert b"files or folders that could not be read: 2 " in plain.stdout

    (example_vault / "03_claims" / "pipe.md").unlink()
    (example_vault / "03_claims" / "big.md").unlink()
    again = run_vt("report", "--json", vault=example_vault, env=C_LOCALE, text=False)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["unreadable"] == 0


# --- vt export -----------------------------------------------------------------------


def test_export_to_stdout(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    result = vt("export", "--vault", str(vault))
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["claim_id"], o["status"]) for o in objects] == [
        ("DV1-0001", "ACCEPTED"),
        ("DV1-0002", "REJECTED"),
        ("DV1-0003", "REPAIRED"),
    ]
    only = vt("export", "--vault", str(vault), "--status", "REJECTED", "--status", "repaired")
    assert [json.loads(x)["claim_id"] for x in only.stdout.splitlines()] == ["DV1-0002", "DV1-0003"]


def test_export_csv_bytes_as_a_process(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    done = run_vt("export", "--format", "csv", vault=vault, env=C_LOCALE, text=False)
    assert done.returncode == 0, done.stderr
    # UTF-8 and CRLF rows whatever the locale (LANG=C here)
    text = done.stdout.decode("utf-8")
    assert text.startswith(",".join(FIELDS) + "\r\n") and "現代 parallel drafter" in text
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [r["claim_id"] for r in rows] == ["DV1-0001", "DV1-0002", "DV1-0003"]
    assert json.loads(rows[2]["semantic_frame"])["operator"] == "LESS_THAN"


def test_export_to_a_file(example_vault: Path, tmp_path: Path) -> None:
    vault = decided_vault(example_vault)
    out = tmp_path / "claims.jsonl"
    result = vt("export", "--vault", str(vault), "--output", str(out), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"claims": 3, "format": "jsonl", "output": str(out)}
    assert out.read_text(encoding="utf-8") == vt("export", "--vault", str(vault)).stdout
    plain = vt(
        "export",
        "--vault",
        str(vault),
        "-o",
        str(tmp_path / "a.csv"),
        "--format",
        "CSV",
        "--status",
        "ACCEPTED",
    )
    assert plain.exit_code == 0
    assert plain.stdout == f"exported 1 claim to {tmp_path / 'a.csv'} (csv)\n"


def test_export_exit_codes(example_vault: Path, tmp_path: Path) -> None:
    vault = str(example_vault)
    cases = {
        ("--status", "APPROVED"): "unknown status APPROVED",
        ("--format", "xml"): "unknown format 'xml'",
        ("--json",): "--json needs --output FILE",
        ("--output", str(tmp_path)): "is a folder",
    }
    for args, message in cases.items():
        result = vt("export", "--vault", vault, *args)
        assert result.exit_code == 2, args
        assert message in result.stderr and result.stdout == ""
    break_ledger(example_vault)
    broken = vt("export", "--vault", vault, "-o", str(tmp_path / "x.jsonl"))
    assert broken.exit_code == 3 and ":1: the ledger changed since it was verified" in broken.stderr
    assert not (tmp_path / "x.jsonl").exists()
