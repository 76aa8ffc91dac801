"""`vt ledger verify` and `vt ledger log` through the Typer app: output, JSON, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.store.test_store import decision, ledger_for
from vault_tools.cli import app
from vault_tools.config import load_settings
from vault_tools.ledger.append import Ledger

LEDGER = "05_ledger/decision_ledger.jsonl"


def vt(*args: str):
    return CliRunner().invoke(app, list(args), env={"VT_VAULT": ""})


def filled(vault: Path) -> Ledger:
    ledger = ledger_for(load_settings(vault))
    ledger.append(
        [
            decision("DV1-0001", ts="2026-11-01T09:00:00Z"),
            decision(
                "DV1-0002",
                "REJECT",
                actor="bob",
                ts="2026-11-02T10:00:00Z",
                comment="source unreadable",
            ),
        ]
    )
    ledger.append([decision("DV1-0001", "REJECT", actor="bob", ts="2026-11-03T11:00:00Z")])
    return ledger


@pytest.mark.parametrize("command", [("ledger",), ("ledger", "verify"), ("ledger", "log")])
def test_help_has_an_example(command: tuple[str, ...]) -> None:
    result = vt(*command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout and "vt ledger " in result.stdout


def test_verify_without_a_ledger(example_vault: Path) -> None:
    result = vt("ledger", "verify", "--vault", str(example_vault))
    assert result.exit_code == 0 and "no ledger yet (0 events)" in result.stdout
    payload = json.loads(vt("ledger", "verify", "--vault", str(example_vault), "--json").stdout)
    assert payload["ok"] is True and payload["events"] == 0 and payload["problems"] == []


def test_verify_ok_plain_and_json(example_vault: Path) -> None:
    ledger = filled(example_vault)
    result = vt("ledger", "verify", "--vault", str(example_vault))
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ledger ok: 3 events, head {ledger.head().hash}"
    payload = json.loads(vt("ledger", "verify", "--vault", str(example_vault), "--json").stdout)
    assert {k: payload[k] for k in ("ok", "events", "head", "problems")} == {
        "ok": True,
        "events": 3,
        "head": ledger.head().hash,
        "problems": [],
    }


def test_verify_tampered_ledger_exits_3(example_vault: Path) -> None:
    ledger = filled(example_vault)
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"source unreadable", b"source readable!!")
    ledger.path.write_bytes(b"".join(lines))
    result = vt("ledger", "verify", "--vault", str(example_vault))
    assert result.exit_code == 3
    assert f"{LEDGER}:2: hash mismatch (edited line?)" in result.stderr.splitlines()
    assert "ledger does not verify" in result.stderr
    payload = json.loads(vt("ledger", "verify", "--vault", str(example_vault), "--json").stdout)
    assert payload["ok"] is False
    assert {"seq": 2, "line": 2, "message": "line 2: hash mismatch (edited line?)"} in payload[
        "problems"
    ]
    assert vt("ledger", "verify", "--vault", str(example_vault), "--json").exit_code == 3


def test_verify_reports_a_torn_tail_and_leaves_it_to_apply(example_vault: Path) -> None:
    ledger = filled(example_vault)
    with open(ledger.path, "ab") as f:
        f.write(b'{"action":"ACCEPT","act')
    before = ledger.path.read_bytes()
    result = vt("ledger", "verify", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    assert f"{LEDGER}: torn last line (23 bytes" in result.stderr
    assert f"the next `vt apply` or `vt revert` moves it to {LEDGER}.torn" in result.stderr
    assert "ledger ok: 3 events" in result.stdout
    assert ledger.path.read_bytes() == before
    assert not (example_vault / f"{LEDGER}.torn").exists()


def log(vault: Path, *args: str) -> list[dict]:
    result = vt("ledger", "log", "--vault", str(vault), "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["events"]


def test_log_newest_first_with_filters(example_vault: Path) -> None:
    filled(example_vault)
    assert [e["seq"] for e in log(example_vault)] == [3, 2, 1]
    assert [e["seq"] for e in log(example_vault, "--claim", "DV1-0001")] == [3, 1]
    assert [e["seq"] for e in log(example_vault, "--actor", "bob")] == [3, 2]
    assert [e["seq"] for e in log(example_vault, "--action", "reject")] == [3, 2]
    assert [e["seq"] for e in log(example_vault, "--since", "2026-11-02")] == [3, 2]
    assert [e["seq"] for e in log(example_vault, "--until", "2026-11-02")] == [2, 1]
    assert [e["seq"] for e in log(example_vault, "--until", "2026-11-02T09:59:59Z")] == [1]
    assert [e["seq"] for e in log(example_vault, "--limit", "1")] == [3]
    assert log(example_vault, "--claim", "NOPE") == []


def test_log_plain(example_vault: Path) -> None:
    ledger = filled(example_vault)
    result = vt("ledger", "log", "--vault", str(example_vault), "--actor", "bob")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].split()[:4] == ["3", "2026-11-03T11:00:00Z", "REJECT", "DV1-0001"]
    second = ledger.path.read_bytes().splitlines()[1]
    assert json.loads(second)["id"] in lines[1] and lines[1].endswith("source unreadable")
    empty = vt("ledger", "log", "--vault", str(example_vault), "--claim", "NOPE")
    assert empty.exit_code == 0 and empty.stdout == "" and "no events match" in empty.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--action", "APPROVE"),
        ("--since", "yesterday"),
        ("--until", "2026-13-01"),
        ("--limit", "0"),
    ],
)
def test_log_usage_errors_exit_2(example_vault: Path, args: tuple[str, str]) -> None:
    result = vt("ledger", "log", "--vault", str(example_vault), *args)
    assert result.exit_code == 2


def test_log_of_a_broken_ledger_exits_3(example_vault: Path) -> None:
    ledger = filled(example_vault)
    with open(ledger.path, "ab") as f:
        f.write(b"not json\n")
    result = vt("ledger", "log", "--vault", str(example_vault))
    assert result.exit_code == 3 and "vt ledger verify" in result.stderr
