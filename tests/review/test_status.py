"""vt status core: counts, stale previews, applied-then-edited notes, conflicts, head."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.test_store import decision, ledger_for
from vault_tools.checks.validate import validate
from vault_tools.config import load_settings
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.reader import iter_events
from vault_tools.notes.facts import DIGEST, FACT, NoteFacts
from vault_tools.notes.identity import content_digest
from vault_tools.notes.note import parse_note
from vault_tools.notes.owned_properties import set_properties
from vault_tools.notes.vault import list_vault
from vault_tools.review.claim_record import claim_base, v1_claim
from vault_tools.review.fingerprint import preview_hash
from vault_tools.review.status import STATUS_FACTS, StatusReport, status, status_fact, status_tap
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import REVIEW_ACTIONS

DV1 = "03_claims/DV1-0001.md"
DV3 = "03_claims/DV1-0003.md"
SA = "03_claims/SA260324R-0125.md"


def ledger_events(ledger: Ledger) -> list[dict]:
    return list(iter_events(ledger.path))


def run(vault: Path, workers: int = 1) -> StatusReport:
    settings = load_settings(vault)
    settings.workers = workers
    with ClaimStore.open(settings) as store:
        store.catch_up()
        return status(settings, store)


def set_props(vault: Path, relative: str, **values: str) -> None:
    path = vault / relative
    path.write_text(set_properties(path.read_text(encoding="utf-8"), values), encoding="utf-8")


def replace_in(vault: Path, relative: str, old: str, new: str) -> None:
    path = vault / relative
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def note_of(vault: Path, relative: str):
    return parse_note((vault / relative).read_bytes(), relative)


def test_counts_of_the_example_vault(example_vault: Path) -> None:
    report = run(example_vault)
    assert report.to_json() == {
        "notes": 6,
        "by_action": {"APPROVE": 1, "PENDING": 2, "REJECT": 1, "REQUEST_REPAIR": 2},
        "by_state": {"NEW": 6},
        "claims": {},
        "unknown_actions": [],
        "stale_previews": [],
        "edited_since_apply": [],
        "disagreements": [],
        "conflicts": [],
        "ledger_head": {"seq": 0, "hash": "0" * 64},
        "unreadable": [],
        "git_conflicts": [],
    }


def test_what_the_dashboard_reads_beside_the_json(example_vault: Path) -> None:
    """action × state, failed previews and the notes apply would record: for the
    dashboard, not in `vt status --json`."""
    set_props(example_vault, "03_claims/SA260324R-0125.md", review_state="PREVIEW_FAILED")
    ledger_for(load_settings(example_vault)).append([decision("DV1-0002", "ACCEPT")])
    report = run(example_vault)
    assert report.by_action_and_state == {
        "APPROVE": {"NEW": 1},
        "PENDING": {"NEW": 2},
        "REJECT": {"NEW": 1},
        "REQUEST_REPAIR": {"NEW": 1, "PREVIEW_FAILED": 1},
    }
    assert [e["path"] for e in report.failed_previews] == ["03_claims/SA260324R-0125.md"]
    # DV1-0001: never decided; DV1-0002: REJECT against the ledger's ACCEPT
    assert report.to_record == ["03_claims/DV1-0001.md", "03_claims/DV1-0002.md"]
    keys = set(report.to_json())
    assert not keys & {"by_action_and_state", "failed_previews", "to_record"}


def test_stale_preview(example_vault: Path) -> None:
    set_props(
        example_vault,
        DV3,
        review_state="PREVIEW_READY",
        vt_preview_hash=preview_hash(note_of(example_vault, DV3)),
    )
    set_props(
        example_vault,
        SA,
        review_state="PREVIEW_READY",
        vt_preview_hash=preview_hash(note_of(example_vault, SA)),
    )
    report = run(example_vault)
    assert report.stale_previews == []
    assert report.by_state == {"NEW": 4, "PREVIEW_READY": 2}
    # the reviewer edits a draft after the preview, then approves
    replace_in(
        example_vault,
        SA,
        "### V2 Atomic Claim Draft\n為了驗證",
        "### V2 Atomic Claim Draft\n為了快速驗證",
    )
    replace_in(example_vault, SA, "review_action: REQUEST_REPAIR", "review_action: APPROVE_REPAIR")
    report = run(example_vault)
    assert report.stale_previews == [
        {"path": SA, "claim_id": "SA260324R-0125", "review_action": "APPROVE_REPAIR"}
    ]


def _apply_by_hand(vault: Path, relative: str, claim_id: str) -> dict:
    """What `vt apply` leaves: an ACCEPT event with V1, and the note marked APPLIED."""
    settings = load_settings(vault)
    v1 = v1_claim(note_of(vault, relative))
    (event,) = ledger_for(settings).append(
        [decision(claim_id, claim=v1, base=claim_base(v1), note=relative)]
    )
    set_props(
        vault, relative, review_state="APPLIED", vt_event_id=event["id"], vt_applied_at=event["ts"]
    )
    return event


def test_applied_then_edited(example_vault: Path) -> None:
    event = _apply_by_hand(example_vault, DV1, "DV1-0001")
    report = run(example_vault)
    assert report.edited_since_apply == []
    assert report.claims == {"ACCEPTED": 1}
    assert report.ledger_head["seq"] == 1

    replace_in(example_vault, DV1, "## ② Atomic Claim\n現代", "## ② Atomic Claim\n當代")
    (item,) = run(example_vault).edited_since_apply
    assert item == {
        "path": DV1,
        "claim_id": "DV1-0001",
        "event_id": event["id"],
        "reason": "the claim changed since ACCEPT was applied",
    }

    replace_in(example_vault, DV1, "review_action: APPROVE", "review_action: REJECT")
    (item,) = run(example_vault).edited_since_apply
    assert item["reason"] == "review_action is now REJECT; ACCEPT was applied"

    set_props(example_vault, DV1, vt_event_id="sha256:" + "0" * 64)
    (item,) = run(example_vault).edited_since_apply
    assert item["reason"] == f"vt_event_id sha256:{'0' * 64} is not in the ledger"


def test_conflicts_and_head(example_vault: Path) -> None:
    settings = load_settings(example_vault)
    ledger = ledger_for(settings)
    (first,) = ledger.append([decision("DV1-0004")])
    ledger.append(
        [
            decision("DV1-0004", "REJECT", supersedes=first["id"]),
            decision("DV1-0004", "REPAIR", supersedes=first["id"]),
        ]
    )
    report = run(example_vault)
    (conflict,) = report.conflicts
    reject, repair = (ev for ev in ledger_events(ledger) if ev["seq"] > 1)
    assert conflict == {
        "claim_id": "DV1-0004",
        "note": "03_claims/DV1-0004.md",
        "heads": [
            {k: ev[k] for k in ("id", "action", "actor", "ts", "note")} for ev in (reject, repair)
        ],
        "unseen": [reject["id"]],
        "settle": "resolve the note, set review_action to the final decision (reviewer: "
        "yourself) and run vt apply: one new event in your name then supersedes every head",
    }
    assert report.claims == {"CONFLICT": 1}
    assert report.ledger_head == {"seq": 3, "hash": ledger.head().hash}


def test_pool_gives_the_same_report(example_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _apply_by_hand(example_vault, DV1, "DV1-0001")
    replace_in(example_vault, DV1, "review_action: APPROVE", "review_action: PENDING")
    serial = run(example_vault).to_json()
    monkeypatch.setattr("vault_tools.infra.pool.PARALLEL_THRESHOLD", 1)
    assert run(example_vault, workers=2).to_json() == serial
    assert serial["edited_since_apply"][0]["reason"].startswith("review_action is now PENDING")


def test_a_decision_that_saw_one_head_leaves_the_other_named(example_vault: Path) -> None:
    settings = load_settings(example_vault)
    ledger = ledger_for(settings)
    (first,) = ledger.append([decision("DV1-0004")])
    reject, accept = ledger.append(
        [
            decision("DV1-0004", "REJECT", actor="bob", supersedes=first["id"]),
            decision("DV1-0004", "ACCEPT", actor="cy", comment="b", supersedes=first["id"]),
        ]
    )
    # dee saw cy's ACCEPT only (bob's REJECT had not reached her clone) and accepts again
    (again,) = ledger.append([decision("DV1-0004", "ACCEPT", actor="dee", supersedes=accept["id"])])
    report = run(example_vault)
    assert report.claims == {"CONFLICT": 1}
    (conflict,) = report.conflicts
    assert [(h["actor"], h["action"]) for h in conflict["heads"]] == [
        ("bob", "REJECT"),
        ("dee", "ACCEPT"),
    ]
    assert conflict["unseen"] == [reject["id"]]
    # superseding both heads settles it
    ledger.append(
        [
            decision(
                "DV1-0004", "REJECT", actor="eve", supersedes=sorted([reject["id"], again["id"]])
            )
        ]
    )
    report = run(example_vault)
    assert report.claims == {"REJECTED": 1} and report.conflicts == []


def test_a_reverted_decision_is_listed_until_the_reviewer_decides_again(
    example_vault: Path,
) -> None:
    from vault_tools.review.apply import apply_notes
    from vault_tools.review.revert import revert_event

    settings = load_settings(example_vault)
    (applied,) = apply_notes(settings, [example_vault / DV1]).applied
    assert run(example_vault).disagreements == []
    revert = revert_event(settings, applied.id).event
    (entry,) = run(example_vault).disagreements
    assert (entry["path"], entry["kind"], [h["id"] for h in entry["heads"]]) == (
        DV1,
        "reverted",
        [revert["id"]],
    )
    assert entry["reason"].endswith("change review_action to decide again")
    replace_in(example_vault, DV1, "review_action: APPROVE", "review_action: REJECT")
    (entry,) = run(example_vault).disagreements
    assert entry["kind"] == "differs"
    apply_notes(settings, [example_vault / DV1])
    assert run(example_vault).disagreements == []


def test_an_unknown_review_action_is_flagged(example_vault: Path) -> None:
    """A mistyped action decides nothing: status names the note, text and JSON, exit 1."""
    from typer.testing import CliRunner

    from vault_tools.cli import app

    replace_in(example_vault, SA, "review_action: REQUEST_REPAIR", "review_action: APROVE")
    report = run(example_vault)
    assert report.unknown_actions == [
        {"path": SA, "claim_id": "SA260324R-0125", "review_action": "APROVE"}
    ]
    assert unknown_action_counts(report) == {"APROVE": 1}
    text = CliRunner().invoke(app, ["status", "--vault", str(example_vault)])
    assert text.exit_code == 1 and "unknown review_action" in text.stdout
    assert f"{SA} (SA260324R-0125, APROVE)" in text.stdout
    as_json = CliRunner().invoke(app, ["status", "--vault", str(example_vault), "--json"])
    assert as_json.exit_code == 1
    assert json.loads(as_json.stdout)["unknown_actions"] == report.unknown_actions


def unknown_action_counts(report: StatusReport) -> dict[str, int]:
    """How many notes carry each action that is not a review action."""
    return {a: n for a, n in report.by_action.items() if a not in REVIEW_ACTIONS}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_validate_tapped_for_status_leaves_status_nothing_to_parse(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The facts a tapped `vt validate` keeps are status's own, made from the same
    bytes, in worker processes too; a status after it parses no note."""
    monkeypatch.setattr("vault_tools.checks.file_checks.PARALLEL_THRESHOLD", 1)
    settings = load_settings(example_vault)
    settings.workers = workers
    tap, facts = status_tap(settings)
    validate(settings, tap=tap)
    facts.save()
    kept = NoteFacts.open(settings, STATUS_FACTS).entries
    listed = list_vault(example_vault).inside()
    assert sorted(kept) == sorted(listed)
    for relative in listed:
        raw = (example_vault / relative).read_bytes()
        assert kept[relative][FACT] == status_fact(relative, raw)
        assert kept[relative][DIGEST] == content_digest(raw)

    def parse(relative: str, raw: bytes) -> None:
        raise AssertionError(f"{relative} parsed again")

    again = NoteFacts.open(settings, STATUS_FACTS)
    assert len(list(again.survey(example_vault, listed, parse, parse))) == len(listed)
