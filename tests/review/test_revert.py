"""`vt revert`: compensating REVERT events; nothing rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import render_note, settings_for
from vault_tools.errors import RefusedError, UsageError
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.apply import apply_notes
from vault_tools.review.revert import UnknownEventError, revert_event
from vault_tools.store.claims import ClaimStore

LEDGER = "05_ledger/decision_ledger.jsonl"


def applied_vault(make_vault) -> Path:
    vault = make_vault(
        {
            "A-1.md": render_note(claim_id="A-1"),
            "B-1.md": render_note(claim_id="B-1", review_action="REJECT"),
        }
    )
    apply_notes(settings_for(vault))
    return vault


def events(vault: Path) -> list[dict]:
    return list(iter_events(vault / LEDGER))


def test_revert_appends_a_revert_and_rewrites_nothing(make_vault) -> None:
    vault = applied_vault(make_vault)
    accept, reject = events(vault)
    before = (vault / LEDGER).read_bytes()
    notes = {p.name: p.read_bytes() for p in (vault / "03_claims").glob("*.md")}
    result = revert_event(settings_for(vault), accept["id"], comment="by mistake")
    after = (vault / LEDGER).read_bytes()
    assert after.startswith(before) and after.count(b"\n") == 3
    ev = events(vault)[-1]
    assert ev == result.event
    assert (ev["action"], ev["reverts"], ev["claim_id"], ev["claim"]) == (
        "REVERT",
        accept["id"],
        "A-1",
        None,
    )
    assert ev["supersedes"] == accept["id"] and ev["comment"] == "by mistake"
    assert ev["seq"] == 3 and ev["actor"]
    assert {p.name: p.read_bytes() for p in (vault / "03_claims").glob("*.md")} == notes
    assert verify_ledger(vault / LEDGER, vault / ".vt").ok
    with ClaimStore.open(settings_for(vault)) as store:
        record = store.claim("A-1")
    assert record is not None and record.status == "REVERTED"


def test_revert_twice_unknown_and_revert_of_a_revert_are_refused(make_vault) -> None:
    vault = applied_vault(make_vault)
    accept = events(vault)[0]
    settings = settings_for(vault)
    revert = revert_event(settings, accept["id"]).event
    size = (vault / LEDGER).stat().st_size
    with pytest.raises(RefusedError, match="already reverted"):
        revert_event(settings, accept["id"])
    with pytest.raises(RefusedError, match="itself a REVERT"):
        revert_event(settings, revert["id"])
    with pytest.raises(UnknownEventError) as unknown:
        revert_event(settings, "sha256:" + "0" * 64)
    assert unknown.value.exit_code == 1
    with pytest.raises(UsageError):
        revert_event(settings, "not-an-id")
    assert (vault / LEDGER).stat().st_size == size


def test_revert_accepts_bare_hex_and_a_dry_run_writes_nothing(make_vault) -> None:
    vault = applied_vault(make_vault)
    reject = events(vault)[1]
    before = (vault / LEDGER).read_bytes()
    result = revert_event(settings_for(vault), reject["id"][7:], dry_run=True)
    assert result.event["reverts"] == reject["id"] and result.event["seq"] == 3
    assert (vault / LEDGER).read_bytes() == before


def test_revert_on_a_vault_without_ledger_is_unknown(make_vault) -> None:
    vault = make_vault({})
    with pytest.raises(UnknownEventError):
        revert_event(settings_for(vault), "sha256:" + "1" * 64)
    assert not (vault / LEDGER).exists()


def _vault_with_ids_sharing_a_prefix(make_vault) -> tuple[Path, list[dict]]:
    """1,500 applied decisions: among 65,536 four-digit prefixes, two of their ids share
    one but for a chance of about e**-17 (the birthday bound)."""
    notes = {f"P-{n}.md": render_note(claim_id=f"P-{n}") for n in range(1500)}
    vault = make_vault(notes)
    apply_notes(settings_for(vault))
    return vault, events(vault)


@pytest.mark.slow  # 1,500 decisions applied
def test_revert_takes_a_unique_prefix_and_lists_an_ambiguous_one(make_vault) -> None:
    vault, decided = _vault_with_ids_sharing_a_prefix(make_vault)
    by_prefix: dict[str, list[dict]] = {}
    for ev in decided:
        by_prefix.setdefault(ev["id"][7:11], []).append(ev)
    shared = next(p for p, evs in sorted(by_prefix.items()) if len(evs) > 1)
    unique = next(p for p, evs in sorted(by_prefix.items()) if len(evs) == 1)
    settings = settings_for(vault)
    before = (vault / LEDGER).read_bytes()
    with pytest.raises(UsageError) as ambiguous:
        revert_event(settings, shared)
    assert ambiguous.value.exit_code == 2
    message = str(ambiguous.value)
    assert f"sha256:{shared} is ambiguous" in message
    assert all(ev["id"] in message for ev in by_prefix[shared])
    assert "\n" not in message
    assert (vault / LEDGER).read_bytes() == before
    # a unique prefix, bare or with sha256:, names its event
    [target] = by_prefix[unique]
    assert revert_event(settings, unique, dry_run=True).event["reverts"] == target["id"]
    longer = target["id"][:20]
    assert revert_event(settings, longer).event["reverts"] == target["id"]
    # a prefix no id starts with is unknown (refused), one too short a usage error
    absent = next(f"{n:04x}" for n in range(65536) if f"{n:04x}" not in by_prefix)
    with pytest.raises(UnknownEventError):
        revert_event(settings, absent)
    with pytest.raises(UsageError):
        revert_event(settings, target["id"][7:10])
