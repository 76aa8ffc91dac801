"""Who records a decision (review/actor.py): an event's actor is whoever ran the command
that appended it; a note whose reviewer names a teammate is left for the teammate's own
run; a vault that records for its reviewers names both. Real vaults, real git config,
real ssh-keygen keys, the CLI through real subprocesses where its output is the point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, render_note, run_vt, settings_for
from tests.ledger.test_signing import allow, keygen, public, use_git_key
from vault_tools.config import load_settings
from vault_tools.errors import UsageError
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.actor import runner
from vault_tools.review.apply import apply_notes
from vault_tools.review.status import OTHERS, status
from vault_tools.store.claims import ClaimStore

LEDGER = "05_ledger/decision_ledger.jsonl"
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.usefixtures("isolated_git")


def team_vault(make_vault, **reviewers: str) -> Path:
    """A git vault with one approved note per claim id, each naming its reviewer."""
    notes = {f"{cid}.md": render_note(claim_id=cid, reviewer=who) for cid, who in reviewers.items()}
    vault = make_vault(notes)
    git(vault, "init", "-q", "-b", "main")
    return vault


def as_user(vault: Path, name: str) -> None:
    git(vault, "config", "user.name", name)
    git(vault, "config", "user.email", f"{name}@example.org")


def events(vault: Path) -> list[dict]:
    return list(iter_events(vault / LEDGER))


def test_apply_records_only_the_runners_own_decisions(make_vault) -> None:
    vault = team_vault(make_vault, **{"A-1": "alice", "B-1": "bob", "N-1": ""})
    as_user(vault, "alice")
    report = apply_notes(settings_for(vault))
    assert sorted(a.claim_id for a in report.applied) == ["A-1", "N-1"]
    assert [(o.claim_id, o.reason) for o in report.others] == [
        ("B-1", "decided by bob in the note; bob's vt apply records it")
    ]
    assert not report.failed  # a teammate's decision is not a refusal
    assert {e["actor"] for e in events(vault)} == {"alice"}
    as_user(vault, "bob")
    report = apply_notes(settings_for(vault))
    assert [a.claim_id for a in report.applied] == ["B-1"] and not report.others
    assert [(e["claim_id"], e["actor"]) for e in events(vault)][-1] == ("B-1", "bob")


def test_the_reviewer_matches_the_runners_name_or_email_in_any_case(make_vault) -> None:
    vault = team_vault(make_vault, **{"A-1": "ALICE", "A-2": "alice@example.org"})
    as_user(vault, "alice")
    report = apply_notes(settings_for(vault))
    assert len(report.applied) == 2 and not report.others
    assert {e["actor"] for e in events(vault)} == {"alice"}  # the runner's name, as configured


def test_a_teammates_reversal_is_not_recorded_by_whoever_applies_next(make_vault) -> None:
    """bob reverses alice's approval in the note (a pull brought it); alice's apply must not
    record bob's REJECT in anyone's name, and bob's own apply does."""
    vault = team_vault(make_vault, **{"A-1": "alice"})
    as_user(vault, "alice")
    apply_notes(settings_for(vault))
    note = vault / "03_claims/A-1.md"
    text = note.read_text(encoding="utf-8")
    note.write_text(
        text.replace("review_action: APPROVE", "review_action: REJECT").replace(
            'reviewer: "alice"', 'reviewer: "bob"'
        ),
        encoding="utf-8",
    )
    report = apply_notes(settings_for(vault))
    assert not report.events and [o.claim_id for o in report.others] == ["A-1"]
    as_user(vault, "bob")
    apply_notes(settings_for(vault))
    assert [(e["action"], e["actor"]) for e in events(vault)] == [
        ("ACCEPT", "alice"),
        ("REJECT", "bob"),
    ]


def test_status_lists_a_teammates_decision_and_never_advises_recording_it(make_vault) -> None:
    vault = team_vault(make_vault, **{"A-1": "alice"})
    as_user(vault, "alice")
    apply_notes(settings_for(vault))
    note = vault / "03_claims/A-1.md"
    text = note.read_text(encoding="utf-8").replace(
        "review_action: APPROVE", "review_action: REJECT"
    )
    note.write_text(text.replace('reviewer: "alice"', 'reviewer: "bob"'), encoding="utf-8")
    settings = settings_for(vault)
    with ClaimStore.open(settings) as store:
        store.catch_up()
        (entry,) = status(settings, store).disagreements
    assert entry["kind"] == OTHERS
    assert entry["reason"] == (
        "review_action is REJECT; decided by bob in the note; bob's vt apply records it"
    )
    shown = run_vt("status", vault=vault)
    assert "decided by bob" in shown.stdout and "run vt apply" not in shown.stdout
    as_user(vault, "bob")
    with ClaimStore.open(settings_for(vault)) as store:
        (entry,) = status(settings_for(vault), store).disagreements
    assert entry["kind"] == "differs" and "run vt apply to record REJECT" in entry["reason"]


def test_a_vault_that_records_for_its_reviewers_names_both(make_vault) -> None:
    vault = team_vault(make_vault, **{"B-1": "bob"})
    (vault / "vt.toml").write_text("[review]\nrecord_for_reviewers = true\n", encoding="utf-8")
    as_user(vault, "watcher")
    report = apply_notes(load_settings(vault))
    assert [a.claim_id for a in report.applied] == ["B-1"] and not report.others
    (event,) = events(vault)
    assert (event["actor"], event["decided_by"]) == ("watcher", "bob")
    settings = load_settings(vault)
    assert verify_ledger(settings.ledger_path, settings.state_dir).ok
    shown = run_vt("history", "B-1", vault=vault)
    assert "by bob (recorded by watcher)" in shown.stdout, shown.stdout + shown.stderr
    as_json = json.loads(run_vt("history", "B-1", "--json", vault=vault).stdout)
    (entry,) = as_json["events"]
    assert (entry["actor"], entry["decided_by"]) == ("watcher", "bob")
    assert (
        subprocess.run(
            [sys.executable, str(REPO / "docs/examples/verify_ledger.py"), str(vault / LEDGER)],
            capture_output=True,
        ).returncode
        == 0
    )


def test_a_signing_run_is_the_principal_its_key_signs_for(tmp_path: Path, make_vault) -> None:
    alice_key, bob_key = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "bob")
    vault = team_vault(make_vault, **{"A-1": "alice@example.org", "B-1": "bob"})
    (vault / "vt.toml").write_text("[signing]\nrequired = true\n", encoding="utf-8")
    allow(vault, f"alice@example.org {public(alice_key)}", f"bob {public(bob_key)}")
    as_user(vault, "Alice Liddell")  # git's name is not what a signature proves
    use_git_key(vault, alice_key)
    settings = load_settings(vault)
    assert runner(settings).name == "Alice Liddell"
    report = apply_notes(settings)
    assert [a.claim_id for a in report.applied] == ["A-1"]
    assert [o.claim_id for o in report.others] == ["B-1"]
    (event,) = events(vault)
    assert event["actor"] == "alice@example.org" and "sig" in event
    assert run_vt("ledger", "verify", vault=vault).returncode == 0


def test_a_signing_key_the_allowed_signers_do_not_know_creates_nothing(
    tmp_path: Path, make_vault
) -> None:
    key = keygen(tmp_path / "keys", "mallory")
    vault = team_vault(make_vault, **{"A-1": "alice"})
    (vault / "vt.toml").write_text("[signing]\nrequired = true\n", encoding="utf-8")
    allow(vault, f"alice {public(keygen(tmp_path / 'keys', 'alice'))}")
    use_git_key(vault, key)
    with pytest.raises(UsageError, match="is not in the allowed signers"):
        apply_notes(load_settings(vault))
    assert not (vault / LEDGER).exists()
    done = run_vt("apply", vault=vault)
    assert done.returncode == 2 and "is not in the allowed signers" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_apply_that_records_nothing_creates_no_ledger(make_vault) -> None:
    """Only a teammate's decision and a refused one of the runner's: `05_ledger/` appears
    with the first decision, not as an empty file of a run that recorded none."""
    unchecked = render_note(claim_id="A-1").replace(
        "check_claim_frame: true", "check_claim_frame: false"
    )
    vault = team_vault(make_vault, **{"B-1": "bob"})
    (vault / "03_claims/A-1.md").write_text(unchecked, encoding="utf-8")
    folder_before = (vault / LEDGER).parent.exists()
    as_user(vault, "alice")
    report = apply_notes(settings_for(vault))
    assert [o.claim_id for o in report.others] == ["B-1"]
    assert [r.claim_id for r in report.refused] == ["A-1"] and "unchecked" in report.refused[
        0
    ].reason
    assert not (vault / LEDGER).exists()
    assert (vault / LEDGER).parent.exists() == folder_before
