"""The Apply bridge core: decisions → ledger events, notes marked APPLIED, idempotence."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import (
    DEFAULT_CLAIM,
    DEFAULT_FRAME,
    render_drafts,
    render_note,
    run_vt,
    settings_for,
)
from vault_tools.ledger.events import canonical
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.notes.note import parse_note
from vault_tools.review.apply import ApplyReport, apply_notes
from vault_tools.review.candidates import DRAFTS_CHANGED, SKIP_REQUEST_REPAIR
from vault_tools.review.claim_record import claim_base, v1_claim, v2_claim
from vault_tools.review.fingerprint import preview_hash
from vault_tools.review.marking import mark_note
from vault_tools.review.preview import preview_vault
from vault_tools.review.revert import revert_event
from vault_tools.vocabulary import APPLIED

LEDGER = "05_ledger/decision_ledger.jsonl"
V2_CLAIM = "現代 parallel drafter 一次 pass 生成整個 block。"


def run(
    vault: Path, paths: list[Path] | None = None, dry_run: bool = False, workers: int = 1
) -> ApplyReport:
    return apply_notes(settings_for(vault, workers), paths, dry_run)


def events(vault: Path) -> list[dict]:
    return list(iter_events(vault / LEDGER))


def props(vault: Path, name: str) -> dict:
    path = vault / "03_claims" / name
    return parse_note(path.read_bytes(), name).properties


def all_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def set_line(path: Path, key: str, value: str) -> None:
    """Edit one frontmatter line the way a reviewer does in Obsidian."""
    lines = path.read_text(encoding="utf-8").split("\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    lines[index] = f"{key}: {value}"
    path.write_text("\n".join(lines), encoding="utf-8")


def previewed_repair(make_vault, name: str = "R-1.md", claim: str = V2_CLAIM) -> Path:
    """A vault with one note whose repair was previewed, then approved."""
    vault = make_vault(
        {
            name: render_note(
                claim_id=name[:-3], review_action="REQUEST_REPAIR", drafts=render_drafts(claim)
            )
        }
    )
    report = preview_vault(settings_for(vault))
    assert [p.state for p in report.previews] == ["PREVIEW_READY"]
    set_line(vault / "03_claims" / name, "review_action", "APPROVE_REPAIR")
    return vault


# --- the events ------------------------------------------------------------------


def test_example_vault_accept_and_reject_events(example_vault: Path) -> None:
    report = run(example_vault)
    assert not report.refused
    assert [(a.path, a.action, a.seq) for a in report.applied] == [
        ("03_claims/DV1-0001.md", "ACCEPT", 1),
        ("03_claims/DV1-0002.md", "REJECT", 2),
    ]
    accept, reject = events(example_vault)
    note = parse_note((example_vault / "03_claims/DV1-0001.md").read_bytes(), "x")
    v1 = v1_claim(note)
    assert accept["claim"] == v1 and set(v1) == {
        "atomic_claim",
        "epistemic_mode",
        "mapping_status",
        "semantic_frame",
    }
    assert accept["base"] == claim_base(v1)
    assert accept["actor"] == "alice" and accept["note"] == "03_claims/DV1-0001.md"
    assert accept["checks"] == {
        "check_source_claim": True,
        "check_claim_frame": True,
        "check_entity_mapping": True,
        "check_epistemic_mode": True,
    }
    assert accept["preview"] is None and accept["supersedes"] is None and accept["v"] == 1
    assert accept["comment"] == ""
    assert reject["claim"] is None and reject["checks"]["check_source_claim"] is False
    assert verify_ledger(example_vault / LEDGER, example_vault / ".vt").ok
    for name, ev in (("DV1-0001.md", accept), ("DV1-0002.md", reject)):
        p = props(example_vault, name)
        assert p["review_state"] == APPLIED
        assert p["vt_event_id"] == ev["id"] and p["vt_applied_at"] == ev["ts"]
    skipped = {s.path: s.reason for s in report.skipped}
    assert skipped["03_claims/DV1-0003.md"] == SKIP_REQUEST_REPAIR


def test_claim_base_is_sha256_of_canonical_json() -> None:
    import hashlib

    claim = {"b": 1, "a": "é"}
    expected = hashlib.sha256('{"a":"é","b":1}'.encode()).hexdigest()
    assert claim_base(claim) == "sha256:" + expected
    assert claim_base(claim) == "sha256:" + hashlib.sha256(canonical(claim).encode()).hexdigest()


def test_second_run_appends_nothing_and_touches_nothing(example_vault: Path) -> None:
    run(example_vault)
    before = all_bytes(example_vault)
    before = {k: v for k, v in before.items() if not k.startswith(".vt/")}
    report = run(example_vault)
    after = {k: v for k, v in all_bytes(example_vault).items() if not k.startswith(".vt/")}
    assert report.applied == [] and not report.events
    assert after == before
    assert {
        s.reason.split(":")[0] for s in report.skipped if s.path.endswith(("0001.md", "0002.md"))
    } == {"already applied"}


def test_crash_after_append_is_completed_by_the_next_run(example_vault: Path) -> None:
    note = example_vault / "03_claims/DV1-0001.md"
    original = note.read_bytes()
    first = run(example_vault)
    event = events(example_vault)[0]
    note.write_bytes(original)  # as if vt died after the fsync, before marking the note
    second = run(example_vault)
    assert second.events == []
    assert [(a.path, a.id, a.new, a.marked) for a in second.applied] == [
        ("03_claims/DV1-0001.md", event["id"], False, True)
    ]
    p = props(example_vault, "DV1-0001.md")
    assert (p["review_state"], p["vt_event_id"], p["vt_applied_at"]) == (
        APPLIED,
        event["id"],
        event["ts"],
    )
    assert len(events(example_vault)) == len(first.events)


def test_actor_falls_back_to_config_then_git_then_os_user(
    make_vault, monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no global git identity
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("USER", "os-user")
    monkeypatch.setenv("LOGNAME", "os-user")
    note = render_note(claim_id="A-1", reviewer="")
    toml = make_vault({"A-1.md": note}, name="toml")
    (toml / "vt.toml").write_text('[review]\nactor = "toml-actor"\n', encoding="utf-8")
    git = make_vault({"A-1.md": note}, name="git")
    subprocess.run(["git", "init", "-q", str(git)], check=True)
    subprocess.run(["git", "-C", str(git), "config", "user.name", "Git Person"], check=True)
    email = make_vault({"A-1.md": note}, name="email")
    subprocess.run(["git", "init", "-q", str(email)], check=True)
    subprocess.run(["git", "-C", str(email), "config", "user.email", "e@x.org"], check=True)
    plain = make_vault({"A-1.md": note}, name="plain")
    for vault, actor in (
        (toml, "toml-actor"), (git, "Git Person"), (email, "e@x.org"), (plain, "os-user")
    ):  # fmt: skip
        run(vault)
        assert events(vault)[0]["actor"] == actor


# --- refusals ---------------------------------------------------------------------


def test_unchecked_approval_is_refused_naming_the_checks(make_vault) -> None:
    text = render_note(claim_id="A-1").replace(
        "check_claim_frame: true", "check_claim_frame: false"
    )
    text = text.replace("check_epistemic_mode: true", "check_epistemic_mode: false")
    vault = make_vault({"A-1.md": text})
    before = all_bytes(vault)
    report = run(vault)
    assert [r.path for r in report.refused] == ["03_claims/A-1.md"] and report.failed
    reason = report.refused[0].reason
    assert "check_claim_frame" in reason and "check_epistemic_mode" in reason
    assert "check_source_claim" not in reason
    assert not (vault / LEDGER).exists() or events(vault) == []
    assert (vault / "03_claims/A-1.md").read_bytes() == before["03_claims/A-1.md"]


def test_required_checks_policy_comes_from_vt_toml(make_vault) -> None:
    text = render_note(claim_id="A-1").replace(
        "check_claim_frame: true", "check_claim_frame: false"
    )
    vault = make_vault({"A-1.md": text})
    (vault / "vt.toml").write_text(
        '[policy]\nrequired_checks = ["check_source_claim"]\n', encoding="utf-8"
    )
    report = run(vault)
    assert not report.refused and [a.action for a in report.applied] == ["ACCEPT"]
    assert events(vault)[0]["checks"]["check_claim_frame"] is False


def test_approval_of_a_note_with_errors_is_refused_naming_the_finding(make_vault) -> None:
    frame = {**DEFAULT_FRAME, "entities": [{"id": "04_knowledge_base/Nowhere", "label": "x"}]}
    vault = make_vault({"A-1.md": render_note(claim_id="A-1", frame=frame)})
    report = run(vault)
    assert len(report.refused) == 1 and "kb-target-missing" in report.refused[0].reason
    assert "vt validate" in report.refused[0].reason


def test_an_approval_after_an_earlier_apply_is_still_checked(make_vault) -> None:
    frame = {**DEFAULT_FRAME, "entities": [{"id": "04_knowledge_base/Nowhere", "label": "x"}]}
    vault = make_vault({"A-1.md": render_note(claim_id="A-1", review_action="REJECT", frame=frame)})
    assert [a.action for a in run(vault).applied] == ["REJECT"]
    set_line(vault / "03_claims/A-1.md", "review_action", "APPROVE")
    report = run(vault)
    assert report.events == [] and "kb-target-missing" in report.refused[0].reason


def test_reject_needs_no_checks_and_no_valid_note(make_vault) -> None:
    frame = {**DEFAULT_FRAME, "entities": [{"id": "04_knowledge_base/Nowhere", "label": "x"}]}
    vault = make_vault(
        {"A-1.md": render_note(claim_id="A-1", review_action="REJECT", checks=False, frame=frame)}
    )
    report = run(vault)
    assert [a.action for a in report.applied] == ["REJECT"] and not report.refused


def test_unknown_review_action_and_duplicate_claim_ids_are_refused(make_vault) -> None:
    vault = make_vault(
        {
            "A-1.md": render_note(claim_id="A-1", review_action="MAYBE"),
            "B-1.md": render_note(claim_id="B-1"),
            "B-1-copy.md": render_note(claim_id="B-1", review_action="REJECT"),
        }
    )
    report = run(vault)
    reasons = {r.path: r.reason for r in report.refused}
    assert "MAYBE" in reasons["03_claims/A-1.md"]
    assert "03_claims/B-1-copy.md" in reasons["03_claims/B-1.md"]
    assert "03_claims/B-1.md" in reasons["03_claims/B-1-copy.md"]
    assert report.applied == []


def test_pending_is_ignored_unless_named(make_vault) -> None:
    vault = make_vault({"P-1.md": render_note(claim_id="P-1", review_action="PENDING")})
    assert run(vault).to_json() == {
        "applied": [], "skipped": [], "refused": [], "others": [], "dry_run": False
    }  # fmt: skip
    named = run(vault, [vault / "03_claims/P-1.md"])
    assert [s.reason for s in named.skipped] == ["review_action is PENDING: nothing to apply"]


def test_named_paths_outside_the_vault_or_missing_are_refused(
    example_vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("x", encoding="utf-8")
    report = run(
        example_vault,
        [outside, example_vault / "03_claims/none.md", example_vault / "03_claims/DV1-0001.md"],
    )
    assert len(report.refused) == 2
    assert [a.path for a in report.applied] == ["03_claims/DV1-0001.md"]


# --- repairs ----------------------------------------------------------------------


def test_approve_repair_appends_the_v2_claim_with_the_preview_hash(make_vault) -> None:
    vault = previewed_repair(make_vault)
    note = parse_note((vault / "03_claims/R-1.md").read_bytes(), "R-1.md")
    report = run(vault)
    assert [a.action for a in report.applied] == ["REPAIR"] and not report.refused
    (event,) = events(vault)
    assert event["claim"] == v2_claim(note) and event["claim"]["atomic_claim"] == V2_CLAIM
    assert event["preview"] == preview_hash(note) == note.properties["vt_preview_hash"]
    assert event["base"] == claim_base(v1_claim(note))
    assert v1_claim(note)["atomic_claim"] == DEFAULT_CLAIM
    assert props(vault, "R-1.md")["review_state"] == APPLIED
    assert run(vault).events == []  # idempotent although review_state is now APPLIED


def test_drafts_changed_since_the_preview_are_refused(make_vault) -> None:
    vault = previewed_repair(make_vault)
    path = vault / "03_claims/R-1.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace(V2_CLAIM, V2_CLAIM + "!"), encoding="utf-8"
    )
    report = run(vault)
    assert [r.reason for r in report.refused] == [DRAFTS_CHANGED]
    assert not (vault / LEDGER).exists() or events(vault) == []


def test_approve_repair_without_a_preview_is_refused(make_vault) -> None:
    vault = make_vault(
        {
            "R-1.md": render_note(
                claim_id="R-1", review_action="APPROVE_REPAIR", drafts=render_drafts(V2_CLAIM)
            )
        }
    )
    report = run(vault)
    assert len(report.refused) == 1 and "vt preview" in report.refused[0].reason


def test_a_repair_of_nothing_is_refused_whatever_its_preview_said(make_vault) -> None:
    """Drafts equal to V1: the preview fails (PREVIEW_FAILED), and an APPROVE_REPAIR of
    such a note is refused, also with a READY preview of the same drafts (as vt made
    before it knew better), by `vt apply` itself."""
    unchanged = render_drafts()  # the drafts vt draft makes: V1 as it is
    vault = make_vault(
        {"R-1.md": render_note(claim_id="R-1", review_action="REQUEST_REPAIR", drafts=unchanged)}
    )
    [result] = preview_vault(settings_for(vault)).previews
    assert result.state == "PREVIEW_FAILED"
    path = vault / "03_claims/R-1.md"
    set_line(path, "review_action", "APPROVE_REPAIR")
    refused = run_vt("apply", vault=vault, check=1)
    assert "03_claims/R-1.md (R-1): refused: repair-unchanged: the V2 drafts equal V1: " in (
        refused.stderr
    )
    # a READY preview with the drafts' own hash: refused all the same
    set_line(path, "review_state", "PREVIEW_READY")
    note = parse_note(path.read_bytes(), "03_claims/R-1.md")
    assert note.properties["vt_preview_hash"] == preview_hash(note)
    again = run_vt("apply", vault=vault, check=1)
    assert "03_claims/R-1.md (R-1): refused: repair-unchanged: " in again.stderr
    assert not (vault / LEDGER).exists()
    assert props(vault, "R-1.md")["review_state"] == "PREVIEW_READY"  # not marked


def test_request_repair_is_skipped(make_vault) -> None:
    vault = make_vault(
        {
            "R-1.md": render_note(
                claim_id="R-1", review_action="REQUEST_REPAIR", drafts=render_drafts(V2_CLAIM)
            )
        }
    )
    report = run(vault)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("03_claims/R-1.md", "preview, then set APPROVE_REPAIR")
    ]


# --- changing one's mind, reverts ---------------------------------------------------


def test_a_reviewer_who_changes_their_mind_gets_a_superseding_event(make_vault) -> None:
    vault = make_vault({"A-1.md": render_note(claim_id="A-1")})
    path = vault / "03_claims/A-1.md"
    run(vault)
    set_line(path, "review_action", "REJECT")
    run(vault)
    set_line(path, "review_action", "APPROVE")
    run(vault)
    accept, reject, again = events(vault)
    assert [e["action"] for e in (accept, reject, again)] == ["ACCEPT", "REJECT", "ACCEPT"]
    assert reject["supersedes"] == accept["id"] and again["supersedes"] == reject["id"]
    assert again["id"] != accept["id"]
    assert props(vault, "A-1.md")["vt_event_id"] == again["id"]
    assert run(vault).events == []


def test_comment_or_reviewer_edits_after_apply_make_no_new_event(make_vault) -> None:
    vault = make_vault({"A-1.md": render_note(claim_id="A-1")})
    run(vault)
    set_line(vault / "03_claims/A-1.md", "review_comment", '"looks right"')
    set_line(vault / "03_claims/A-1.md", "reviewer", '"bob"')
    report = run(vault)
    assert report.events == [] and len(events(vault)) == 1


def test_a_reverted_decision_is_not_applied_again(make_vault) -> None:
    vault = make_vault({"A-1.md": render_note(claim_id="A-1")})
    run(vault)
    (accept,) = events(vault)
    revert_event(settings_for(vault), accept["id"])
    report = run(vault)
    assert report.events == []
    assert "reverted" in report.skipped[0].reason
    set_line(vault / "03_claims/A-1.md", "review_action", "REJECT")
    assert [e["action"] for e in run(vault).events] == ["REJECT"]
    assert events(vault)[-1]["supersedes"] == events(vault)[1]["id"]  # the REVERT


# --- dry run, marking, the pool ------------------------------------------------------


def test_dry_run_reports_the_events_and_writes_nothing(example_vault: Path) -> None:
    before = all_bytes(example_vault)
    report = run(example_vault, dry_run=True)
    assert [(e["action"], e["seq"]) for e in report.events] == [("ACCEPT", 1), ("REJECT", 2)]
    assert all_bytes(example_vault) == before
    run(example_vault)
    before = all_bytes(example_vault)
    set_line(example_vault / "03_claims/DV1-0001.md", "review_action", "REJECT")
    edited = all_bytes(example_vault)
    report = run(example_vault, dry_run=True)
    assert [(e["action"], e["seq"]) for e in report.events] == [("REJECT", 3)]
    assert all_bytes(example_vault).keys() == edited.keys()
    assert {k: v for k, v in all_bytes(example_vault).items() if not k.startswith(".vt/")} == {
        k: v for k, v in edited.items() if not k.startswith(".vt/")
    }
    assert before != edited


def test_mark_note_refuses_a_note_changed_since_it_was_read(make_vault) -> None:
    vault = make_vault({"A-1.md": render_note(claim_id="A-1")})
    path = vault / "03_claims/A-1.md"
    raw = path.read_bytes()
    import os

    from vault_tools.infra.filestat import stat_signature
    from vault_tools.notes.identity import content_digest

    signature = stat_signature(os.stat(path))
    digest = content_digest(raw)
    event_id = "sha256:" + "a" * 64
    path.write_bytes(raw.replace(b'review_comment: ""', b'review_comment: "edited"'))
    edited = path.read_bytes()
    reason = mark_note(
        settings_for(vault), "03_claims/A-1.md", digest, signature, event_id, "2026-01-01T00:00:00Z"
    )
    assert reason is not None and "changed on disk" in reason
    assert path.read_bytes() == edited
    fresh = stat_signature(os.stat(path))
    assert (
        mark_note(
            settings_for(vault),
            "03_claims/A-1.md",
            content_digest(edited),
            fresh,
            event_id,
            "2026-01-01T00:00:00Z",
        )
        is None
    )
    assert props(vault, "A-1.md")["vt_event_id"] == event_id


@pytest.mark.parametrize("workers", [1, 2])
def test_many_notes_through_the_pool_give_the_same_ledger(
    make_vault, monkeypatch, workers: int
) -> None:
    monkeypatch.setattr("vault_tools.infra.pool.PARALLEL_THRESHOLD", 100)
    notes = {
        f"M-{i:03}.md": render_note(
            claim_id=f"M-{i:03}", review_action="REJECT" if i % 3 == 0 else "APPROVE"
        )
        for i in range(240)
    }
    vault = make_vault(notes, name=f"pool{workers}")
    report = run(vault, workers=workers)
    assert len(report.applied) == 240 and not report.refused
    assert all(a.marked for a in report.applied)
    got = events(vault)
    assert [e["claim_id"] for e in got] == sorted(f"M-{i:03}" for i in range(240))
    assert sum(e["action"] == "REJECT" for e in got) == 80
    assert all(props(vault, f"M-{i:03}.md")["review_state"] == APPLIED for i in range(240))


def test_a_raised_size_limit_holds_at_every_read_of_the_note(make_vault) -> None:
    """A note over the default limit, under a limit raised in vt.toml: examined, applied
    and marked (each read of it takes the vault's limit, not the default)."""
    from vault_tools.config import MAX_NOTE_BYTES

    padding = "\n## Notes\n\n" + "x" * (MAX_NOTE_BYTES + 1) + "\n"
    vault = make_vault({"B-1.md": render_note(claim_id="B-1", extra_sections=padding)})
    (vault / "vt.toml").write_text("[limits]\nmax_note_bytes = 10_000_000\n", encoding="utf-8")
    report = run(vault)
    assert not report.refused, report.refused
    assert [a.path for a in report.applied] == ["03_claims/B-1.md"]
    assert props(vault, "B-1.md")["review_state"] == APPLIED


def test_a_note_whose_claim_id_is_spelt_through_a_yaml_escape_is_applied(
    example_vault: Path,
) -> None:
    """Apply passes over the notes whose bytes cannot name `claim_id` (`may_name`); a
    note naming it through a double-quoted escape is a review note all the same, decided
    and marked APPLIED as any other."""
    note = example_vault / "03_claims" / "DV1-0004.md"
    raw = note.read_bytes().replace(b"review_action: PENDING", b"review_action: REJECT")
    raw = raw.replace(b"claim_id: DV1-0004", b'"claim\\x5Fid": DV1-0004')
    assert b"claim_id" not in raw and parse_note(raw, "n.md").properties["claim_id"] == "DV1-0004"
    note.write_bytes(raw)
    report = apply_notes(settings_for(example_vault))
    assert "DV1-0004" in [a.claim_id for a in report.applied], report
    assert parse_note(note.read_bytes(), "n.md").properties["review_state"] == APPLIED
