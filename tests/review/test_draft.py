"""`vt draft` core: the V2 Draft section, V1 copied, formatted like the example notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import (
    DEFAULT_CLAIM,
    DEFAULT_FRAME,
    SEED_NOTE,
    render_drafts,
    render_note,
    settings_for,
)
from vault_tools.errors import UsageError
from vault_tools.notes.note import parse_note
from vault_tools.review.draft import HEADING, TIP, draft_notes, draft_section, section_layout
from vault_tools.review.preview import preview_vault
from vault_tools.vocabulary import PREVIEW_FAILED, PREVIEW_READY


def without_drafts(text: str) -> str:
    start, end = text.index("## ⑤ V2 Draft"), text.index("## ⑥ Human Review")
    return text[:start] + text[end:]


def test_draft_of_the_seed_note_reproduces_the_example_byte_for_byte(example_vault: Path) -> None:
    path = example_vault / "03_claims/SA260324R-0125.md"
    seed = SEED_NOTE.read_text(encoding="utf-8")
    path.write_bytes(without_drafts(seed).encode())
    report = draft_notes(settings_for(example_vault), [path])
    assert [n.written for n in report.notes] == [True] and not report.failed
    # the example's reviewer has since edited one draft, the V2 claim: drafted, it is V1
    v1 = seed.split("## ② Atomic Claim\n", 1)[1].split("\n", 1)[0]
    edited = seed.split("### V2 Atomic Claim Draft\n", 1)[1].split("\n", 1)[0]
    assert edited != v1
    assert path.read_bytes() == seed.replace(edited, v1, 1).encode()


def test_the_drafted_note_previews_as_nothing_to_repair(make_vault) -> None:
    vault = make_vault({"R.md": render_note(review_action="REQUEST_REPAIR")})
    path = vault / "03_claims/R.md"
    draft_notes(settings_for(vault), [path])
    note = parse_note(path.read_bytes(), "03_claims/R.md")
    assert note.findings == [] and note.drafts is not None
    assert note.drafts.claim.value == DEFAULT_CLAIM
    assert note.drafts.frame.data == DEFAULT_FRAME
    assert note.drafts.metadata.data == {"epistemic_mode": "ASSERTED", "mapping_status": "COMPLETE"}
    [result] = preview_vault(settings_for(vault)).previews
    # drafts as vt draft makes them repair nothing yet: the preview says so, and fails
    assert result.state == PREVIEW_FAILED and result.changes == [] and result.written
    assert [f.code for f in result.findings] == ["repair-unchanged"]


def test_draft_then_edit_then_preview_round_trip(example_vault: Path) -> None:
    path = example_vault / "03_claims/IX2-0328.md"
    assert draft_notes(settings_for(example_vault), [path]).notes[0].written
    text = path.read_text(encoding="utf-8")
    at = text.index("### V2 Revision Metadata Draft")
    text = text[:at] + text[at:].replace('"HYPOTHETICAL"', '"ASSERTED"', 1)
    path.write_text(
        text.replace("review_action: PENDING", "review_action: REQUEST_REPAIR"), encoding="utf-8"
    )
    [result] = preview_vault(settings_for(example_vault), [path]).previews
    assert result.state == PREVIEW_READY and result.written, result.findings
    assert [(c.field, c.pointer, c.old, c.new) for c in result.changes] == [
        ("metadata", "/epistemic_mode", "HYPOTHETICAL", "ASSERTED")
    ]


def test_frame_block_is_copied_verbatim_and_metadata_is_indented() -> None:
    frame_text = '{"operator": "LESS_THAN",   "entities": [], "frame_type": "COMPARISON"}'
    note = parse_note(render_note(frame=frame_text, rows=[]).encode(), "03_claims/R.md")
    section = draft_section(note)
    assert f"### V2 Semantic Frame Draft\n```json\n{frame_text}\n```\n" in section
    meta = json.dumps({"epistemic_mode": "ASSERTED", "mapping_status": "COMPLETE"}, indent=2)
    assert section.endswith(f"### V2 Revision Metadata Draft\n```json\n{meta}\n```\n")
    assert section.startswith("## ⑤ V2 Draft（需要修正時直接編輯）\n> [!tip] Inline repair\n")


def test_refuses_notes_with_drafts_and_non_review_notes(make_vault, tmp_path: Path) -> None:
    with_drafts = render_note(drafts=render_drafts(claim="edited by a reviewer"))
    vault = make_vault({"D.md": with_drafts, "K.md": "# not a review note\n"})
    outside = tmp_path / "outside.md"
    outside.write_text(render_note(), encoding="utf-8")
    report = draft_notes(
        settings_for(vault), [vault / "03_claims/D.md", vault / "03_claims/K.md", outside]
    )
    codes = [[f.code for f in n.findings] for n in report.notes]
    assert codes == [["drafts-exist"], ["not-review-note"], ["path-outside-vault"]]
    assert (
        report.notes[0].findings[0].line
        == with_drafts.splitlines().index("## ⑤ V2 Draft（需要修正時直接編輯）") + 1
    )
    assert (vault / "03_claims/D.md").read_text(encoding="utf-8") == with_drafts
    assert report.failed and report.to_json()["errors"] == 3


def test_dry_run_returns_the_section_and_writes_nothing(make_vault) -> None:
    vault = make_vault({"R.md": render_note()})
    path = vault / "03_claims/R.md"
    before = path.read_bytes()
    [result] = draft_notes(settings_for(vault), [path], dry_run=True).notes
    assert not result.written and "### V2 Atomic Claim Draft" in result.section
    assert path.read_bytes() == before


def test_crlf_bom_note_gets_a_crlf_section_and_keeps_every_other_byte(make_vault) -> None:
    original = b"\xef\xbb\xbf" + render_note().replace("\n", "\r\n").encode()
    vault = make_vault({"R.md": original})
    path = vault / "03_claims/R.md"
    [result] = draft_notes(settings_for(vault), [path]).notes
    raw = path.read_bytes()
    section = result.section.replace("\n", "\r\n").encode()
    assert raw == original.replace(
        b"## \xe2\x91\xa4 Human Review", section + b"\r\n## \xe2\x91\xa4 Human Review", 1
    )


def test_note_without_human_review_gets_the_section_at_the_end(make_vault) -> None:
    text = render_note().split("## ⑤ Human Review")[0].rstrip("\n")  # no final newline
    vault = make_vault({"R.md": text})
    path = vault / "03_claims/R.md"
    draft_notes(settings_for(vault), [path])
    new = path.read_text(encoding="utf-8")
    assert new.startswith(text + "\n\n## ⑤ V2 Draft")
    assert parse_note(new.encode(), "03_claims/R.md").drafts.frame.data == DEFAULT_FRAME


def test_the_seed_layout_is_the_default(make_vault) -> None:
    vault = make_vault({})
    assert section_layout(settings_for(vault)) == (HEADING, TIP)
    assert HEADING == "⑤ V2 Draft（需要修正時直接編輯）"


def test_a_vault_sets_its_own_heading_and_callout(make_vault) -> None:
    vault = make_vault({"R.md": render_note(claim_id="R-1")})
    (vault / "vt.toml").write_text(
        '[draft]\nheading = "V2 Draft (edit the blocks below)"\n'
        'callout = """\n> [!note] Repair here\n> Edit the three blocks, then preview.\n"""\n',
        encoding="utf-8",
    )
    settings = settings_for(vault)
    report = draft_notes(settings, [vault / "03_claims/R.md"])
    assert not report.failed, report.notes[0].findings
    text = (vault / "03_claims/R.md").read_text(encoding="utf-8")
    assert (
        "## V2 Draft (edit the blocks below)\n> [!note] Repair here\n"
        "> Edit the three blocks, then preview.\n\n### V2 Atomic Claim Draft\n"
    ) in text
    assert "Inline repair" not in text
    # the parser finds the drafts under that heading: a second draft is refused
    again = draft_notes(settings, [vault / "03_claims/R.md"])
    assert [f.code for f in again.notes[0].findings] == ["drafts-exist"]


@pytest.mark.parametrize(
    "table",
    [
        '[draft]\nheading = "Repairs"\n',
        '[draft]\ncallout = "> [!tip] ok\\n## a heading"\n',
        '[draft]\ncallout = "```\\ncode"\n',
    ],
)
def test_a_layout_the_parser_would_not_read_back_is_a_usage_error(make_vault, table: str) -> None:
    vault = make_vault({"R.md": render_note(claim_id="R-1")})
    before = (vault / "03_claims/R.md").read_bytes()
    (vault / "vt.toml").write_text(table, encoding="utf-8")
    with pytest.raises(UsageError) as refused:
        draft_notes(settings_for(vault), [vault / "03_claims/R.md"])
    assert refused.value.exit_code == 2 and "[draft]" in refused.value.message
    assert (vault / "03_claims/R.md").read_bytes() == before
