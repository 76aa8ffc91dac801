"""The note merge driver: vt's bytes never conflict, the user's merge by `git merge-file`
(real git), a real content conflict is left to git with its markers."""

from __future__ import annotations

from tests.conftest import TEMPLATE_NOTE
from vault_tools.integrations.notemerge import merge_note
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
