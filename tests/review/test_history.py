"""vt history core: every decision on a claim, the V1 → V2 diff of repairs, V1 lookup."""

from __future__ import annotations

from pathlib import Path

from tests.store.test_store import decision, ledger_for
from vault_tools.config import load_settings
from vault_tools.notes.note import parse_note
from vault_tools.review.claim_record import claim_base, v1_claim, v2_claim
from vault_tools.review.history import ClaimHistory, claim_history
from vault_tools.store.claims import ClaimStore

DV3 = "03_claims/DV1-0003.md"


def history_of(vault: Path, claim_id: str) -> ClaimHistory | None:
    settings = load_settings(vault)
    with ClaimStore.open(settings) as store:
        store.catch_up()
        return claim_history(settings, store, claim_id)


def claims_of(vault: Path) -> tuple[dict, dict]:
    note = parse_note((vault / DV3).read_bytes(), DV3)
    v2 = v2_claim(note)
    assert v2 is not None
    return v1_claim(note), v2


def test_unknown_claim(example_vault: Path) -> None:
    assert history_of(example_vault, "NOPE") is None


def test_repair_diff_with_v1_from_the_note(example_vault: Path) -> None:
    v1, v2 = claims_of(example_vault)
    settings = load_settings(example_vault)
    (repair,) = ledger_for(settings).append(
        [
            decision(
                "DV1-0003",
                "REPAIR",
                claim=v2,
                base=claim_base(v1),
                note=DV3,
                actor="bob",
                comment="operator was unspecified",
            )
        ]
    )
    found = history_of(example_vault, "DV1-0003")
    assert found is not None and found.status == "REPAIRED"
    (entry,) = found.entries
    assert entry.v1_source == f"note {DV3}"
    pointers = {(c.field, c.op, c.pointer) for c in entry.changes}
    assert ("frame", "replace", "/operator") in pointers
    assert ("frame", "add", "/entities/2") in pointers
    assert ("metadata", "replace", "/mapping_status") in pointers
    assert ("insert", "或 Likelihood ") in entry.claim_segments
    payload = found.to_json()["events"][0]
    assert {k: payload[k] for k in ("seq", "id", "actor", "action", "comment", "supersedes")} == {
        "seq": 1,
        "id": repair["id"],
        "actor": "bob",
        "action": "REPAIR",
        "comment": "operator was unspecified",
        "supersedes": None,
    }
    assert payload["claim"] == v2 and payload["v1"] == f"note {DV3}"
    assert {
        "field": "frame",
        "op": "replace",
        "pointer": "/operator",
        "old": "UNSPECIFIED_COMPARISON",
        "new": "LESS_THAN",
    } in payload["changes"]


def test_v1_from_an_earlier_accept_when_the_note_changed(example_vault: Path) -> None:
    v1, v2 = claims_of(example_vault)
    settings = load_settings(example_vault)
    accept, repair = ledger_for(settings).append(
        [
            decision("DV1-0003", claim=v1, base=claim_base(v1), note=DV3),
            decision("DV1-0003", "REPAIR", claim=v2, base=claim_base(v1), note=DV3),
        ]
    )
    # the note's V1 is edited later: the earlier ACCEPT still holds the V1 repaired
    path = example_vault / DV3
    path.write_text(path.read_text(encoding="utf-8").replace("標準", "一般", 1), encoding="utf-8")
    found = history_of(example_vault, "DV1-0003")
    assert found is not None
    assert [e.event["action"] for e in found.entries] == ["ACCEPT", "REPAIR"]
    assert found.entries[1].event["supersedes"] == accept["id"]
    assert found.entries[1].v1_source == f"event {accept['id']}"
    assert found.entries[1].changes
    assert "v1" not in found.to_json()["events"][0]  # only repairs carry a diff


def test_v1_not_available(example_vault: Path) -> None:
    _, v2 = claims_of(example_vault)
    settings = load_settings(example_vault)
    ledger_for(settings).append([decision("DV1-0003", "REPAIR", claim=v2, note=DV3)])
    found = history_of(example_vault, "DV1-0003")
    assert found is not None
    (entry,) = found.entries
    assert entry.v1_source is None and entry.changes == []
    assert found.to_json()["events"][0]["v1"] is None
    assert found.to_json()["events"][0]["changes"] is None


def test_reject_and_revert_are_listed_in_order(example_vault: Path) -> None:
    settings = load_settings(example_vault)
    ledger = ledger_for(settings)
    (accepted,) = ledger.append([decision("DV1-0001")])
    ledger.append([decision("DV1-0001", "REVERT", reverts=accepted["id"], actor="carol")])
    ledger.append([decision("DV1-0001", "REJECT", comment="source unreadable")])
    found = history_of(example_vault, "DV1-0001")
    assert found is not None and found.status == "REJECTED"
    events = found.to_json()["events"]
    assert [(e["seq"], e["action"], e["actor"]) for e in events] == [
        (1, "ACCEPT", "ann"),
        (2, "REVERT", "carol"),
        (3, "REJECT", "ann"),
    ]
    assert events[1]["reverts"] == accepted["id"] and events[1]["claim"] is None
    assert events[2]["supersedes"] == events[1]["id"]
