"""Repair Preview core: validation of the drafts, V1 → V2 changes, the note write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import (
    DEFAULT_CLAIM,
    DEFAULT_FRAME,
    build_vault,
    line_of_text,
    render_drafts,
    render_frontmatter,
    render_note,
    run_vt,
    settings_for,
)
from vault_tools.checks.context import make_context
from vault_tools.notes import writer
from vault_tools.notes.note import parse_note
from vault_tools.review import preview as previewmod
from vault_tools.review.diff import Change
from vault_tools.review.fingerprint import preview_hash
from vault_tools.review.preview import NO_CHANGES, preview_note, preview_vault
from vault_tools.review.preview_cache import CACHE_FILE
from vault_tools.vocabulary import PREVIEW_FAILED, PREVIEW_READY

START, END = "<!-- vt:preview:start -->", "<!-- vt:preview:end -->"
EDITED_CLAIM = DEFAULT_CLAIM.replace("表現優於", "速度略低於")  # a repair of something


def run(
    vault: Path, paths: list[Path] | None = None, dry_run: bool = False, workers: int = 1
) -> previewmod.PreviewReport:
    return preview_vault(settings_for(vault, workers), paths, dry_run)


def by_path(report: previewmod.PreviewReport) -> dict[str, previewmod.PreviewResult]:
    return {p.path: p for p in report.previews}


def all_bytes(root: Path) -> dict[str, bytes]:
    """Every file under `root` (dot-folders included) and its bytes, but the preview's
    own cache (derived state in `.vt/`, tested in test_preview_cache.py)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() != f".vt/{CACHE_FILE}"
    }


def block_of(text: str) -> str:
    return text[text.index(START) : text.index(END) + len(END)]


def repair_note(
    claim: str = DEFAULT_CLAIM,
    frame: object = None,
    metadata: object = None,
    action: str = "REQUEST_REPAIR",
    **kwargs: object,
) -> str:
    return render_note(review_action=action, drafts=render_drafts(claim, frame, metadata), **kwargs)


# --- the example notes -------------------------------------------------------------


SA = "03_claims/SA260324R-0125.md"
SA_V1 = "為了驗證 draft token，main model 只需要對 k 個新 token 做一次 warm prefill"
SA_ADDED = "，在 k 遠小於 context 的 N 個 token 時"  # what the example's V2 claim adds
SA_V2 = SA_V1.replace("，", SA_ADDED + "，", 1)


def test_seed_note_shows_its_claim_diff_inline_and_in_full(example_vault: Path) -> None:
    result = by_path(run(example_vault))[SA]
    assert result.state == PREVIEW_READY and result.findings == [] and result.written
    assert [(c.field, c.pointer) for c in result.changes] == [("claim", "")]
    assert ("insert", SA_ADDED) in result.claim_segments
    text = (example_vault / SA).read_text(encoding="utf-8")
    assert "review_state: PREVIEW_READY\n" in text
    assert f'vt_preview_hash: "{result.preview_hash}"\n' in text
    block = block_of(text)
    assert "## Repair Preview" in block and "> [!success] Preview valid" in block
    assert f"draft token<mark>{SA_ADDED}</mark>，main model" in block
    assert f"```diff\n- {SA_V1}" in block and f"\n+ {SA_V2}" in block
    # the block sits between the drafts and Human Review
    assert text.index("### V2 Revision Metadata Draft") < text.index(START)
    assert text.index(END) < text.index("## ⑥ Human Review")


def test_drafts_equal_to_v1_fail_with_nothing_to_repair(example_vault: Path) -> None:
    path = example_vault / SA
    text = path.read_text(encoding="utf-8")
    assert text.count(SA_V2) == 1
    path.write_text(text.replace(SA_V2, SA_V1), encoding="utf-8")
    result = by_path(run(example_vault))[SA]
    assert result.state == PREVIEW_FAILED and result.changes == [] and result.unchanged
    assert [(f.code, f.severity) for f in result.findings] == [("repair-unchanged", "error")]
    text = path.read_text(encoding="utf-8")
    assert result.findings[0].line == line_of_text(text, "## ⑤ V2 Draft")
    assert "review_state: PREVIEW_FAILED\n" in text
    block = block_of(text)
    assert "> [!failure] Preview failed" in block and NO_CHANGES in block
    assert "`repair-unchanged` the V2 drafts equal V1: there is nothing to repair" in block
    # a finding vt.toml cannot silence: apply refuses such a repair whatever it says
    (example_vault / "vt.toml").write_text(
        '[findings]\ndisable = ["repair-unchanged"]\n', encoding="utf-8"
    )
    again = by_path(run(example_vault))[SA]
    assert [f.code for f in again.findings] == ["repair-unchanged"]


def test_dv1_0003_shows_the_operator_change_and_the_added_entity(example_vault: Path) -> None:
    result = by_path(run(example_vault))["03_claims/DV1-0003.md"]
    assert result.state == PREVIEW_READY and result.findings == []
    frame = [(c.op, c.pointer, c.old, c.new) for c in result.changes if c.field == "frame"]
    assert ("replace", "/operator", "UNSPECIFIED_COMPARISON", "LESS_THAN") in frame
    assert (
        "add",
        "/entities/2",
        None,
        {"id": "04_knowledge_base/Likelihood Loss", "label": "Likelihood loss"},
    ) in frame
    metadata = [c for c in result.changes if c.field == "metadata"]
    assert metadata == [Change("metadata", "replace", "/mapping_status", "PARTIAL", "COMPLETE")]
    text = (example_vault / "03_claims/DV1-0003.md").read_text(encoding="utf-8")
    block = block_of(text)
    assert '| frame | replace | `/operator` | `"UNSPECIFIED_COMPARISON"` | `"LESS_THAN"` |' in block
    assert "```diff\n- 標準 KL-divergence" in block and "\n+ 標準 KL-divergence" in block


def test_only_marked_notes_are_previewed_in_a_vault_run(example_vault: Path) -> None:
    before = all_bytes(example_vault)
    report = run(example_vault)
    assert sorted(by_path(report)) == ["03_claims/DV1-0003.md", "03_claims/SA260324R-0125.md"]
    after = all_bytes(example_vault)
    changed = sorted(k for k in before if before[k] != after[k])
    # writes nothing else: no ledger, no .vt store, no other note, no new file
    assert changed == ["03_claims/DV1-0003.md", "03_claims/SA260324R-0125.md"]
    assert sorted(after) == sorted(before)
    assert not (example_vault / ".vt").exists() or all(
        k not in after or before.get(k) == after[k] for k in after if k.startswith(".vt/")
    )


# --- a repair that changes operator, adds an entity, edits Chinese text ------------


def test_repair_changes_are_exact(make_vault) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["operator"] = "LESS_THAN"
    frame["entities"].append({"id": "04_knowledge_base/Draft Model", "label": "drafter"})
    claim = DEFAULT_CLAIM.replace("表現優於", "速度略低於")
    vault = make_vault({"R.md": repair_note(claim, frame)})
    result = run(vault).previews[0]
    assert result.state == PREVIEW_READY, result.findings
    assert result.changes == [
        Change("claim", "replace", "", DEFAULT_CLAIM, claim),
        Change(
            "frame",
            "add",
            "/entities/3",
            None,
            {"id": "04_knowledge_base/Draft Model", "label": "drafter"},
        ),
        Change("frame", "replace", "/operator", "GREATER_THAN", "LESS_THAN"),
    ]
    head, tail = DEFAULT_CLAIM.split("表現優於")
    assert result.claim_segments == [
        ("equal", head),
        ("delete", "表現優"),
        ("insert", "速度略低"),
        ("equal", "於" + tail),
    ]


def test_reordered_entities_are_not_a_change(make_vault) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["entities"].reverse()
    vault = make_vault({"R.md": repair_note(frame=frame)})
    result = run(vault).previews[0]
    # nothing else changed: a repair of nothing
    assert result.changes == [] and [f.code for f in result.findings] == ["repair-unchanged"]


# --- failures -------------------------------------------------------------------------


def test_broken_draft_json_fails_with_its_line(make_vault) -> None:
    broken = json.dumps(DEFAULT_FRAME, ensure_ascii=False, indent=2).replace(
        '"frame_type": "COMPARISON",', '"frame_type": "COMPARISON"', 1
    )
    vault = make_vault({"R.md": repair_note(frame=broken)})
    result = run(vault).previews[0]
    assert result.state == PREVIEW_FAILED and result.failed
    [finding] = result.findings
    text = (vault / "03_claims/R.md").read_text(encoding="utf-8")
    # the line after the missing comma, as the written note numbers it
    assert finding.code == "json-syntax"
    assert finding.line == line_of_text(text, '"metric"', occurrence=2)
    assert "review_state: PREVIEW_FAILED" in text
    block = block_of(text)
    assert "> [!failure] Preview failed" in block
    assert f"> - line {finding.line}: `json-syntax`" in block
    # no frame row from a frame that does not parse; the claim is unchanged
    assert result.changes == []
    # and the note never claims the drafts equal V1: they could not be read
    assert not result.unchanged and NO_CHANGES not in block
    assert (
        "No changes shown: the V2 Semantic Frame Draft could not be read (see the findings)."
        in block
    )


def test_a_preview_with_both_json_drafts_unreadable_says_so_on_the_terminal(make_vault) -> None:
    vault = make_vault({"R.md": repair_note(claim="changed claim", frame="{", metadata="[1,")})
    done = run_vt("preview", vault=vault)
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert "drafts equal V1" not in out
    assert (
        "No other changes shown: the V2 Semantic Frame Draft and the V2 Revision Metadata "
        "Draft could not be read (see the findings)." in out
    )
    block = block_of((vault / "03_claims/R.md").read_text(encoding="utf-8"))
    assert "No other changes shown" in block and NO_CHANGES not in block


def test_draft_entity_that_does_not_resolve_fails(make_vault) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["entities"][0]["id"] = "04_knowledge_base/Nowhere"
    vault = make_vault({"R.md": repair_note(frame=frame)})
    result = run(vault).previews[0]
    text = (vault / "03_claims/R.md").read_text(encoding="utf-8")
    codes = {(f.code, f.line) for f in result.findings}
    assert ("kb-target-missing", line_of_text(text, "Nowhere")) in codes
    # the draft metadata says COMPLETE while an entity does not resolve
    assert (
        "mapping-complete-unresolved",
        line_of_text(text, '"mapping_status": "COMPLETE"'),
    ) in codes
    assert result.state == PREVIEW_FAILED


def test_v1_problems_do_not_fail_the_preview(make_vault) -> None:
    """The mapping table is V1's: a repair adding an entity is not a mapping mismatch."""
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["entities"] = frame["entities"][:1]
    vault = make_vault({"R.md": repair_note(frame=frame)})
    result = run(vault).previews[0]
    assert result.state == PREVIEW_READY and result.findings == []


def test_lines_stay_right_when_the_block_above_the_drafts_changes_size(make_vault) -> None:
    """A reviewer moved the preview block above the drafts: its new size moves their lines."""
    broken = '{"frame_type": "COMPARISON" "metric": 1}'
    old_block = f"{START}\n## Repair Preview\nold\nold\nold\nold\nold\nold\nold\nold\n{END}\n\n"
    note = render_note(
        review_action="REQUEST_REPAIR",
        extra_sections="",
        drafts=old_block + render_drafts(frame=broken),
    )
    vault = make_vault({"R.md": note})
    result = run(vault).previews[0]
    text = (vault / "03_claims/R.md").read_text(encoding="utf-8")
    [finding] = result.findings
    assert finding.line == line_of_text(text, '"frame_type": "COMPARISON" "metric"')
    assert f"line {finding.line}:" in block_of(text)
    again = run(vault).previews[0]
    assert not again.written and again.findings == result.findings


def test_note_without_drafts_not_review_note_and_outside_path_are_errors(
    example_vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("---\nclaim_id: X\n---\n", encoding="utf-8")
    before = all_bytes(example_vault)
    report = run(
        example_vault,
        [
            example_vault / "03_claims/IX2-0328.md",
            example_vault / "04_knowledge_base/Prefill.md",
            outside,
            example_vault / "03_claims/missing.md",
        ],
    )
    codes = {p.path: [f.code for f in p.findings] for p in report.previews}
    assert codes == {
        "03_claims/IX2-0328.md": ["drafts-missing"],
        "04_knowledge_base/Prefill.md": ["not-review-note"],
        str(outside): ["path-outside-vault"],
        "03_claims/missing.md": ["read-error"],
    }
    missing = by_path(report)["03_claims/IX2-0328.md"].findings[0]
    assert "vt draft 03_claims/IX2-0328.md" in missing.message
    assert report.failed and all(p.state is None for p in report.previews)
    assert all_bytes(example_vault) == before


def test_nothing_marked_means_nothing_to_preview(make_vault) -> None:
    vault = make_vault({"A.md": render_note(review_action="PENDING")})
    report = run(vault)
    assert report.previews == [] and not report.failed


# --- which notes are written ---------------------------------------------------------


@pytest.mark.parametrize("action", ["PENDING", "APPROVE", "APPROVE_REPAIR"])
def test_unmarked_notes_given_explicitly_are_shown_not_written(make_vault, action: str) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["operator"] = "LESS_THAN"
    vault = make_vault({"R.md": repair_note(frame=frame, action=action)})
    before = all_bytes(vault)
    result = run(vault, [vault / "03_claims/R.md"]).previews[0]
    assert result.state == PREVIEW_READY and not result.written
    assert [c.pointer for c in result.changes] == ["/operator"]
    assert "not written" in result.remark
    assert all_bytes(vault) == before
    assert run(vault).previews == []  # a vault run does not even look at it


def test_dry_run_writes_nothing(example_vault: Path) -> None:
    before = all_bytes(example_vault)
    report = run(example_vault, dry_run=True)
    assert len(report.previews) == 2 and not any(p.written for p in report.previews)
    assert all_bytes(example_vault) == before


def test_second_run_writes_nothing(example_vault: Path) -> None:
    assert all(p.written for p in run(example_vault).previews)
    paths = sorted((example_vault / "03_claims").glob("*.md"))
    stats = {p: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for p in paths}
    again = run(example_vault)
    assert len(again.previews) == 2 and not any(p.written for p in again.previews)
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino) for p in paths} == stats


def test_editing_a_draft_updates_the_preview_and_the_hash(example_vault: Path) -> None:
    path = example_vault / "03_claims/SA260324R-0125.md"
    first = by_path(run(example_vault))["03_claims/SA260324R-0125.md"]
    text = path.read_text(encoding="utf-8")
    draft_at = text.index("### V2 Semantic Frame Draft")
    edited = text[:draft_at] + text[draft_at:].replace('"APPROX_EQUAL"', '"LESS_THAN"', 1)
    path.write_text(edited, encoding="utf-8")
    second = by_path(run(example_vault))["03_claims/SA260324R-0125.md"]
    assert second.written and second.preview_hash != first.preview_hash
    assert [c.pointer for c in first.changes] == [""]
    assert [c.pointer for c in second.changes] == ["", "/operator"]
    new_text = path.read_text(encoding="utf-8")
    assert "`/operator`" in new_text and new_text.count(START) == 1
    assert f'vt_preview_hash: "{second.preview_hash}"' in new_text


# --- the hash ------------------------------------------------------------------------


def test_preview_hash_is_of_the_drafts_content_not_their_layout() -> None:
    note = parse_note(repair_note().encode(), "03_claims/R.md")
    compact = json.dumps(DEFAULT_FRAME, ensure_ascii=False)
    same = parse_note(repair_note(frame=compact).encode(), "03_claims/R.md")
    assert preview_hash(note) == preview_hash(same)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", preview_hash(note))
    frame = json.loads(compact)
    frame["metric"] = "THROUGHPUT"
    other = parse_note(repair_note(frame=frame).encode(), "03_claims/R.md")
    assert preview_hash(other) != preview_hash(note)
    claim = parse_note(repair_note(claim=DEFAULT_CLAIM + "。").encode(), "03_claims/R.md")
    assert preview_hash(claim) != preview_hash(note)
    with pytest.raises(ValueError):
        preview_hash(parse_note(render_note().encode(), "03_claims/R.md"))


# --- byte preservation ---------------------------------------------------------------

ODD_FRONTMATTER = (
    "---\r\n"
    "# a comment the reviewer wrote\r\n"
    "claim_id: DV1-0001\r\n"
    "review_action: REQUEST_REPAIR   # asked on Monday\r\n"
    "review_state: 'NEW'  # vt sets this\r\n"
    "summary: >-\r\n"
    "  a folded scalar\r\n"
    "  review_state: not a key\r\n"
    'related: "[[04_knowledge_base/Prefill|prefill]]"\r\n'
    "check_source_claim: true\r\n"
    "check_claim_frame: true\r\n"
    "check_entity_mapping: true\r\n"
    "check_epistemic_mode: true\r\n"
    'reviewer: "alice"\r\n'
    "review_comment: ''\r\n"
    'tags: [claim-review, "odd, one"]\r\n'
    "---\r\n"
)


def test_every_byte_outside_the_owned_lines_and_block_is_kept(make_vault) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["operator"] = "LESS_THAN"
    body = repair_note(frame=frame).split("---\n", 2)[2]
    original = b"\xef\xbb\xbf" + (ODD_FRONTMATTER + body.replace("\n", "\r\n")).encode()
    vault = make_vault({"R.md": original})
    result = run(vault).previews[0]
    assert result.written and result.state == PREVIEW_READY, result.findings
    raw = (vault / "03_claims/R.md").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\n" not in raw.replace(b"\r\n", b"")
    text = raw.decode("utf-8")
    # undo exactly vt's edits: the state value, the appended hash line, the block
    hash_line = f'vt_preview_hash: "{result.preview_hash}"\r\n'
    assert text.count(hash_line) == 1
    undone = text.replace(hash_line, "")
    undone = undone.replace(
        "review_state: PREVIEW_READY  # vt sets this", "review_state: 'NEW'  # vt sets this"
    )
    block = block_of(undone)
    undone = undone.replace(block + "\r\n\r\n", "")
    assert undone.encode() == original
    assert "\r\n" + block + "\r\n\r\n## ⑥ Human Review" in text
    # the other keys still read as before
    note = parse_note(raw, "03_claims/R.md")
    assert note.properties["summary"] == "a folded scalar review_state: not a key"
    assert note.properties["related"] == "[[04_knowledge_base/Prefill|prefill]]"
    assert note.properties["review_state"] == "PREVIEW_READY"


# --- refusing to overwrite a concurrent save -------------------------------------------


def test_a_note_changed_between_read_and_write_is_refused(make_vault, monkeypatch) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["operator"] = "LESS_THAN"
    vault = make_vault(
        {
            "A.md": repair_note(frame=frame, claim_id="DV1-0001"),
            "B.md": repair_note(frame=frame, claim_id="DV1-0002"),
        }
    )
    target = vault / "03_claims/A.md"
    saved = target.read_bytes() + b"\nA line the reviewer just typed in Obsidian.\n"
    real_read = writer.read_snapshot

    def read_then_save(path: Path, *limit: int | None) -> writer.Snapshot:
        snapshot = real_read(path, *limit)
        if Path(path) == target:
            target.write_bytes(saved)  # Obsidian saves the note while vt works on it
        return snapshot

    monkeypatch.setattr(writer, "read_snapshot", read_then_save)
    report = run(vault)
    results = by_path(report)
    refused = results["03_claims/A.md"]
    assert [f.code for f in refused.findings] == ["write-refused"]
    assert not refused.written and report.failed
    assert target.read_bytes() == saved  # the save survived
    assert results["03_claims/B.md"].written  # the other note was still processed


def test_broken_markers_are_refused_not_rewritten(make_vault) -> None:
    note = repair_note(EDITED_CLAIM, extra_sections=f"{START}\nhalf a block\n\n")
    vault = make_vault({"R.md": note})
    before = all_bytes(vault)
    result = run(vault).previews[0]
    assert [f.code for f in result.findings] == ["write-refused"]
    assert all_bytes(vault) == before


# --- the parallel path and the single-note entry point ---------------------------------


def test_the_process_pool_gives_the_same_results(tmp_path: Path, monkeypatch) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["operator"] = "LESS_THAN"
    notes = {f"N{i}.md": repair_note(frame=frame, claim_id=f"DV1-{i:04d}") for i in range(6)}
    notes["P.md"] = render_note(claim_id="DV1-0100", review_action="PENDING")
    serial = build_vault(tmp_path / "serial", notes)
    parallel = build_vault(tmp_path / "parallel", notes)
    monkeypatch.setattr(previewmod, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(previewmod, "CHUNK", 2)
    one = run(serial, workers=1)
    two = run(parallel, workers=2)
    assert [p.to_json() for p in one.previews] == [p.to_json() for p in two.previews]
    assert len(two.previews) == 6 and all(p.written for p in two.previews)
    assert all_bytes(serial) == all_bytes(parallel)


def test_preview_note_is_the_single_note_entry_point(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    ctx = make_context(settings)
    result = preview_note(settings, ctx, "03_claims/DV1-0003.md", dry_run=True)
    assert result.state == PREVIEW_READY and not result.written and result.marked
    written = preview_note(settings, ctx, "03_claims/DV1-0003.md")
    assert written.written and written.to_json()["changes"] == result.to_json()["changes"]
    assert set(written.to_json()) >= {"path", "claim_id", "state", "findings", "changes"}


def test_markdown_table_escapes_pipes_and_backticks(make_vault) -> None:
    frame = json.loads(json.dumps(DEFAULT_FRAME))
    frame["qualifiers"]["condition_text"] = "a | b with `code`"
    vault = make_vault({"R.md": repair_note(frame=frame)})
    run(vault)
    text = (vault / "03_claims/R.md").read_text(encoding="utf-8")
    row = next(line for line in block_of(text).splitlines() if "condition_text" in line)
    assert "a \\| b with `code`" in row and row.startswith("| frame | replace | ")
    assert row.count(" | ") == 4  # five cells: no unescaped pipe splits a value


def test_missing_vt_key_is_added_before_the_closing_line(make_vault) -> None:
    vault = make_vault({"R.md": repair_note(EDITED_CLAIM)})
    result = run(vault).previews[0]
    text = (vault / "03_claims/R.md").read_text(encoding="utf-8")
    head = render_frontmatter(review_action="REQUEST_REPAIR", review_state="PREVIEW_READY")
    assert text.startswith(head[:-4] + f'vt_preview_hash: "{result.preview_hash}"\n---\n')


def test_claim_draft_as_the_last_draft_block_is_stable(make_vault) -> None:
    frame = json.dumps(DEFAULT_FRAME, ensure_ascii=False)
    drafts = (
        "## ⑤ V2 Draft\n"
        f"### V2 Semantic Frame Draft\n```json\n{frame}\n```\n\n"
        "### V2 Revision Metadata Draft\n```json\n"
        '{"epistemic_mode": "ASSERTED", "mapping_status": "COMPLETE"}\n```\n\n'
        f"### V2 Atomic Claim Draft\n{DEFAULT_CLAIM}\n\n"
    )
    vault = make_vault({"R.md": render_note(review_action="REQUEST_REPAIR", drafts=drafts)})
    first = run(vault).previews[0]
    second = run(vault).previews[0]
    assert first.changes == [] and second.changes == [] and not second.written


def test_a_note_marked_through_a_yaml_escape_is_previewed_by_a_vault_run(
    example_vault: Path,
) -> None:
    """A vault run passes over the notes whose bytes cannot name REQUEST_REPAIR
    (`may_name`); one whose property spells it through a double-quoted escape, and whose
    text says it nowhere else, is marked all the same, and previewed as when given."""
    note = example_vault / "03_claims" / "DV1-0003.md"
    raw = note.read_bytes().replace(b"`REQUEST_REPAIR`", b"`the repair`")
    raw = raw.replace(b"review_action: REQUEST_REPAIR", b'review_action: "REQUEST\\x5FREPAIR"')
    assert b"REQUEST_REPAIR" not in raw
    note.write_bytes(raw)
    settings = settings_for(example_vault)
    given = preview_vault(settings, [note], dry_run=True).previews
    assert [p.state for p in given] == [PREVIEW_READY]
    run = {p.path: p for p in preview_vault(settings, dry_run=True).previews}
    assert run["03_claims/DV1-0003.md"].preview_hash == given[0].preview_hash
