"""The note merge driver: vt's bytes never conflict, the user's merge by `git merge-file`
(real git), a real content conflict is left to git with its markers."""

from __future__ import annotations

from tests.conftest import TEMPLATE_NOTE
from vault_tools.integrations.git.notemerge import merge_note
from vault_tools.notes.note import parse_note
from vault_tools.notes.owned_properties import set_properties
from vault_tools.notes.writer import set_block

BASE = TEMPLATE_NOTE.read_text(encoding="utf-8")
PATH = "03_claims/DV1-0001.md"
KB = "# DFlash\n\nA parallel drafter.\n"


def applied(text: str, event: str, ts: str) -> str:
    return set_properties(
        text, {"review_state": "APPLIED", "vt_event_id": event, "vt_applied_at": ts}
    )


def line_set(text: str, key: str, value: str) -> str:
    start = text.index(f"\n{key}:") + 1
    end = text.index("\n", start)
    return text[:start] + f"{key}: {value}" + text[end:]


def merged(base: str, ours: str, theirs: str, path: str = PATH) -> tuple[str, bool]:
    out, clean = merge_note(base.encode(), ours.encode(), theirs.encode(), path)
    return out.decode(), clean


def test_vt_bytes_of_both_sides_never_conflict_and_the_users_merge() -> None:
    ours = applied(
        line_set(BASE, "reviewer", '"bob"'), "sha256:" + "b" * 64, "2026-01-02T00:00:00Z"
    )
    theirs = applied(BASE, "sha256:" + "a" * 64, "2026-01-01T00:00:00Z")
    theirs += "\nChecked twice against the article.\n"
    text, clean = merged(BASE, ours, theirs)
    assert clean and "<<<<<<<" not in text
    assert text.endswith("\nChecked twice against the article.\n")
    props = parse_note(text.encode(), PATH).properties
    assert props["reviewer"] == "bob"
    # both changed vt's bytes: ours stands until vt recomputes them from the ledger
    assert props["vt_event_id"] == "sha256:" + "b" * 64 and props["review_state"] == "APPLIED"


def test_vt_bytes_changed_on_one_side_come_from_that_side() -> None:
    theirs = applied(BASE, "sha256:" + "a" * 64, "2026-01-01T00:00:00Z")
    ours = line_set(BASE, "review_comment", '"mine"')
    text, clean = merged(BASE, ours, theirs)
    assert clean
    props = parse_note(text.encode(), PATH).properties
    assert props["vt_event_id"] == "sha256:" + "a" * 64 and props["review_comment"] == "mine"


def test_a_real_disagreement_is_left_to_git() -> None:
    ours = applied(
        line_set(BASE, "review_action", "REJECT"), "sha256:" + "b" * 64, "2026-01-02T00:00:00Z"
    )
    theirs = line_set(BASE, "review_action", "REQUEST_REPAIR")
    text, clean = merged(BASE, ours, theirs)
    assert not clean
    assert (
        "<<<<<<< ours\nreview_action: REJECT\n=======\n"
        "review_action: REQUEST_REPAIR\n>>>>>>> theirs" in text
    )
    assert text.count("<<<<<<<") == 1  # vt's bytes are not part of the conflict


def test_knowledge_base_blocks_never_conflict() -> None:
    ours = set_block(KB, "claims", "- [[03_claims/A|A]] — subject\n")
    theirs = set_block(KB + "\nSee also EAGLE-3.\n", "claims", "- [[03_claims/B|B]] — object\n")
    text, clean = merged(KB, ours, theirs, "04_knowledge_base/DFlash.md")
    assert clean and "See also EAGLE-3." in text and "[[03_claims/A|A]]" in text
    assert "[[03_claims/B|B]]" not in text  # vt's block: the post-merge refresh rewrites it


def test_a_side_with_committed_markers_is_merged_as_bytes() -> None:
    broken = BASE.replace(
        "review_action: APPROVE",
        "<<<<<<< a\nreview_action: APPROVE\n=======\nreview_action: REJECT\n>>>>>>> b",
    )
    text, clean = merged(BASE, broken, BASE)
    assert clean and text == broken  # only ours changed: git keeps it, markers and all


REPAIR_BASE = (TEMPLATE_NOTE.parent / "DV1-0003.md").read_text(encoding="utf-8")
REPAIR_PATH = "03_claims/DV1-0003.md"
DRAFT = "標準 KL-divergence training 對 speculative decoding 並非最佳"


def reviewed(text: str, reviewer: str, comment: str, check: str) -> str:
    text = line_set(text, "reviewer", reviewer)
    text = line_set(text, "review_comment", comment)
    return line_set(text, "check_entity_mapping", check)


def test_two_reviewers_who_agree_merge_cleanly_and_ours_stands() -> None:
    """Two APPROVEs that differ in everything beside the decision: who, the comment, a
    check. Nothing to settle, so no markers; each line both changed is ours (as written)."""
    base = line_set(line_set(BASE, "reviewer", '""'), "check_entity_mapping", "false")
    ours = applied(
        reviewed(base, "'bob'  # me", '"fine by me"', "true"),
        "sha256:" + "b" * 64,
        "2026-01-02T00:00:00Z",
    )
    theirs = applied(
        reviewed(base, '"carol"', '"checked the source twice"', "yes  # twice"),
        "sha256:" + "c" * 64,
        "2026-01-01T00:00:00Z",
    )
    text, clean = merged(base, ours, theirs)
    assert clean and "<<<<<<<" not in text
    assert "\nreviewer: 'bob'  # me\n" in text  # ours' raw line, its quoting and comment
    props = parse_note(text.encode(), PATH).properties
    assert (props["reviewer"], props["review_comment"]) == ("bob", "fine by me")
    assert "\ncheck_entity_mapping: true\n" in text and props["review_action"] == "APPROVE"
    # the other way round, theirs' lines stand: the rule is "ours", not "bob's"
    text, clean = merged(base, theirs, ours)
    assert clean and parse_note(text.encode(), PATH).properties["reviewer"] == "carol"


def test_agreeing_sides_that_each_changed_a_neighbouring_line_keep_both() -> None:
    """Adjacent lines changed on two sides are a conflict to `git merge-file`; beside an
    agreed decision each line is taken from the side that changed it."""
    base = line_set(BASE, "reviewer", '""')
    ours = line_set(base, "reviewer", '"bob"')
    theirs = line_set(base, "review_comment", '"carol was here"')
    text, clean = merged(base, ours, theirs)
    assert clean
    props = parse_note(text.encode(), PATH).properties
    assert (props["reviewer"], props["review_comment"]) == ("bob", "carol was here")


def test_a_different_action_still_stops_the_merge_whoever_reviewed() -> None:
    base = line_set(line_set(BASE, "reviewer", '""'), "review_action", "PENDING")
    ours = line_set(reviewed(base, '"bob"', '"yes"', "true"), "review_action", "APPROVE")
    theirs = line_set(reviewed(base, '"carol"', '"no"', "true"), "review_action", "REJECT")
    text, clean = merged(base, ours, theirs)
    assert not clean
    assert "<<<<<<< ours\nreview_action: APPROVE\n" in text
    assert "review_action: REJECT\n" in text.split("=======")[1]


def test_approved_repairs_of_different_drafts_are_no_agreement() -> None:
    """Two APPROVE_REPAIRs agree only on the same drafts: otherwise the reviewers' lines
    are left to git, which stops on them as on any disagreement."""
    base = line_set(line_set(REPAIR_BASE, "review_action", "APPROVE_REPAIR"), "reviewer", '""')
    ours = line_set(base, "reviewer", '"bob"')
    theirs = line_set(base, "reviewer", '"carol"')
    text, clean = merged(base, ours, theirs, REPAIR_PATH)
    assert clean and 'reviewer: "bob"' in text  # the same drafts: agreement
    edited = theirs.replace(DRAFT, DRAFT + "（修訂）")
    assert edited != theirs
    text, clean = merged(base, ours, edited, REPAIR_PATH)
    assert not clean and '<<<<<<< ours\nreviewer: "bob"' in text
