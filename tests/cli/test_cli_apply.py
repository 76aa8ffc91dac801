"""`vt apply`, `vt revert` and `vt demo` through the Typer app and as processes."""

from __future__ import annotations

import io
import json
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import render_note, run_vt
from vault_tools.cli import app
from vault_tools.cli.output import Reporter
from vault_tools.integrations.demo import STEPS
from vault_tools.ledger.reader import iter_events

runner = CliRunner()
LEDGER = "05_ledger/decision_ledger.jsonl"


def vt(*args: str):
    return runner.invoke(app, list(args))


def test_help_has_an_example() -> None:
    for command in ("apply", "revert", "demo"):
        result = vt(command, "--help")
        assert result.exit_code == 0
        assert "Example:" in result.stdout and f"vt {command}" in result.stdout


def test_apply_json_shape_and_exit_codes(example_vault: Path) -> None:
    result = vt("apply", "--vault", str(example_vault), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # written entry by entry, the same bytes as the whole object dumped at once
    assert result.stdout == json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    assert set(data) >= {"applied", "skipped", "refused"}
    assert [set(a) >= {"path", "claim_id", "action", "id", "seq"} for a in data["applied"]] == [
        True,
        True,
    ]
    assert all(set(s) == {"path", "claim_id", "reason"} for s in data["skipped"])
    assert data["refused"] == []
    again = json.loads(vt("apply", "--vault", str(example_vault), "--json").stdout)
    assert again["applied"] == []


def test_refused_decision_exits_1_with_path_on_stderr(make_vault) -> None:
    vault = make_vault({"A-1.md": render_note(claim_id="A-1", checks=False)})
    done = run_vt("apply", vault=vault)
    assert done.returncode == 1
    assert "03_claims/A-1.md (A-1): refused: unchecked: check_source_claim" in done.stderr


def test_dry_run_prints_the_events_and_writes_nothing(example_vault: Path) -> None:
    result = vt("apply", "--vault", str(example_vault), "--dry-run")
    assert result.exit_code == 0
    lines = [line for line in result.stdout.splitlines() if line.startswith("would append: ")]
    assert [json.loads(line[len("would append: ") :])["action"] for line in lines] == [
        "ACCEPT",
        "REJECT",
    ]
    assert not (example_vault / LEDGER).exists()


def test_revert_cli(example_vault: Path) -> None:
    assert vt("apply", "--vault", str(example_vault)).exit_code == 0
    accept = next(iter_events(example_vault / LEDGER))
    result = vt(
        "revert", accept["id"], "--vault", str(example_vault), "--json", "--comment", "oops"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["reverted"] == accept["id"] and data["action"] == "REVERT"
    assert list(iter_events(example_vault / LEDGER))[-1]["comment"] == "oops"
    twice = run_vt("revert", accept["id"], vault=example_vault)
    assert twice.returncode == 1 and "already reverted" in twice.stderr
    unknown = run_vt("revert", "sha256:" + "0" * 64, vault=example_vault)
    assert unknown.returncode == 1 and "no event" in unknown.stderr


def test_demo_json(tmp_path: Path) -> None:
    result = vt("demo", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["ok"] is True and len(data["steps"]) == len(STEPS) and data["vault"] is None
    assert data["steps"][0]["title"] == "Set the vault up for vt and git"


def test_apply_moves_a_torn_tail_aside_and_says_so(example_vault: Path) -> None:
    note = example_vault / "03_claims" / "DV1-0002.md"
    assert vt("apply", str(note), "--vault", str(example_vault)).exit_code == 0
    ledger = example_vault / LEDGER
    whole = ledger.read_bytes()
    with open(ledger, "ab") as f:
        f.write(b'{"action":"ACC')  # an append interrupted mid-line
    verified = vt("ledger", "verify", "--vault", str(example_vault))
    assert "the next `vt apply` or `vt revert` moves it" in verified.stderr
    result = vt("apply", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    assert (
        f"vt: {LEDGER}: torn last line (14 bytes at offset {len(whole)}, an interrupted "
        f"write) moved to {LEDGER}.torn"
    ) in result.stderr.splitlines()
    assert (example_vault / f"{LEDGER}.torn").read_bytes() == b'{"action":"ACC\n'
    assert ledger.read_bytes().startswith(whole) and len(ledger.read_bytes()) > len(whole)


def test_the_summary_counts_the_notes_it_marked(example_vault: Path) -> None:
    """Two decisions: two events and two notes marked APPLIED (not "0 notes completed")."""
    result = vt("apply", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    assert "2 events appended, 2 notes marked APPLIED, " in result.output
    marked = [
        p
        for p in (example_vault / "03_claims").glob("*.md")
        if "review_state: APPLIED" in p.read_text(encoding="utf-8")
    ]
    assert len(marked) == 2


def test_a_vault_run_counts_skipped_notes_in_one_line(example_vault: Path) -> None:
    assert vt("apply", "--vault", str(example_vault)).exit_code == 0
    again = vt("apply", "--vault", str(example_vault))
    assert again.exit_code == 0, again.output
    assert "skipped: " not in again.stdout  # no line per note
    skipped = [line for line in again.stdout.splitlines() if line.startswith("skipped ")]
    assert skipped == [
        "skipped 4 notes: 2 already applied, 2 preview, then set APPROVE_REPAIR "
        "(vt apply -v lists them)"
    ]
    verbose = vt("apply", "--vault", str(example_vault), "-v")
    listed = [line for line in verbose.stdout.splitlines() if ": skipped: " in line]
    assert len(listed) == 4
    assert any(line.startswith("03_claims/DV1-0001.md (DV1-0001): skipped: already applied: ")
               for line in listed)  # fmt: skip
    named = vt("apply", "--vault", str(example_vault), str(example_vault / "03_claims/DV1-0001.md"))
    assert "03_claims/DV1-0001.md (DV1-0001): skipped: already applied: " in named.stdout


def test_streamed_json_is_byte_for_byte_the_json_of_the_whole_object() -> None:
    entries = [
        {"path": "03_claims/é 1.md", "reason": 'a "quoted"\nline', "n": [1, {"x": None}]},
        {"path": "03_claims/二.md", "new": True, "nested": {"empty": [], "also": {}}},
    ]
    payloads = [
        {"applied": entries, "skipped": [], "refused": entries[:1], "dry_run": False},
        {"only": 1},
        {"scalar": "x", "list": [1, 2], "dict": {"a": [1]}},
    ]
    for payload in payloads:
        whole, streamed = io.StringIO(), io.StringIO()
        Reporter(as_json=True, out=whole).json(payload)
        lazily = {k: iter(v) if k in ("applied", "skipped", "refused") else v
                  for k, v in payload.items()}  # fmt: skip
        Reporter(as_json=True, out=streamed).json_streamed(lazily)
        assert streamed.getvalue() == whole.getvalue()
