"""`vt entities` counts accepted claims from the Claim Store, caught up with the ledger."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.cli import app
from vault_tools.config import load_settings


def vt(*args: str):
    return CliRunner().invoke(app, list(args), env={"VT_VAULT": ""})


def accepted(vault: Path) -> dict[str, int]:
    result = vt("entities", "--vault", str(vault), "--json")
    assert result.exit_code == 0, result.output
    return {e["title"]: e["accepted_claims"] for e in json.loads(result.stdout)["entities"]}


def test_accepted_claims_come_from_the_ledger(example_vault: Path) -> None:
    assert set(accepted(example_vault).values()) == {0}
    ledger = ledger_for(load_settings(example_vault))
    repaired = v1_claim("A-2", ("Prefill",))
    # a target in wikilink form names the same note
    repaired["semantic_frame"]["entities"][0]["id"] = "[[04_knowledge_base/Prefill|prefill]]"
    ledger.append(
        [
            decision("A-1", claim=v1_claim("A-1", ("Prefill", "Decode"))),
            decision("A-2", "REPAIR", claim=repaired),
            decision("A-3", "REJECT"),
        ]
    )
    counts = accepted(example_vault)
    assert counts["Prefill"] == 2 and counts["Decode"] == 1 and counts["LPU"] == 0
    # the ledger grew (a later decision, or a git pull): the store catches up first
    ledger.append([decision("A-1", "REJECT")])
    counts = accepted(example_vault)
    assert counts["Prefill"] == 1 and counts["Decode"] == 0


def test_plain_output_shows_the_accepted_column(example_vault: Path) -> None:
    ledger_for(load_settings(example_vault)).append([decision("A-1")])
    result = vt("entities", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    rows = {
        line.split()[0]: line.split()[-1]
        for line in result.stdout.splitlines()
        if line.startswith(("Prefill ", "LPU "))
    }
    assert rows == {"Prefill": "1", "LPU": "0"}


def test_a_broken_ledger_exits_3(example_vault: Path) -> None:
    ledger = ledger_for(load_settings(example_vault))
    ledger.append([decision("A-1"), decision("A-2")])
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    ledger.path.write_bytes(lines[1] + lines[0])
    result = vt("entities", "--vault", str(example_vault))
    assert result.exit_code == 3
    assert ":1: the ledger changed since it was verified" in result.stderr
