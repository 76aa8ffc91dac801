"""`vt draft`: give a review note its `⑤ V2 Draft` section, V1 copied into the three blocks.

The section is formatted as in the example notes (docs/note-format.md): the V1 claim text, the V1
Semantic Frame block copied verbatim (so its key order and layout stay the pipeline's),
and the revision metadata as indented JSON. It goes before `Human Review` (else at the
end); nothing else in the note changes. A note that already has drafts is refused: its
drafts may hold a reviewer's work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tools.config import CONFIG_FILE, Settings
from vault_tools.errors import IOFailure, RefusedError, UsageError, VtError
from vault_tools.findings import ERROR, Finding, error
from vault_tools.notes import writer
from vault_tools.notes.headings import atx_heading, fence_open, section_key
from vault_tools.notes.markdown import fence_for
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import given_notes
from vault_tools.vocabulary import REQUEST_REPAIR

# the seed notes' heading title (written as a level-2 heading) and the callout under it;
# a vault sets its own in vt.toml's [draft] table
HEADING = "⑤ V2 Draft（需要修正時直接編輯）"
BEFORE_HEADING = "Human Review"
TIP = (
    "> [!tip] Inline repair\n"
    f"> 只編輯以下三個 Draft 區塊。完成後將`review_action`設為`{REQUEST_REPAIR}`，"
    "再手動執行 Repair Preview。\n"
    "> 執行腳本前，Draft 不會寫入 Claim Store 或 Graph。\n"
)


def section_layout(settings: Settings) -> tuple[str, str]:
    """(heading title, callout) of the sections vt draft writes in this vault. A heading
    the parser would not read as the V2 Draft section, or a callout holding a heading or a
    code fence (which would end or swallow the section), is a usage error: a draft written
    with it would never be found again."""
    heading = HEADING if settings.draft_heading is None else settings.draft_heading.strip()
    if "\n" in heading or section_key(heading) != "drafts":
        raise UsageError(
            f"[draft] heading {heading!r}: not read as the V2 Draft section (its title, "
            "less a leading number and a trailing (…), must be 'V2 Draft')",
            CONFIG_FILE,
        )
    callout = TIP if settings.draft_callout is None else settings.draft_callout
    callout = callout.replace("\r\n", "\n").strip("\n") + "\n"
    for line in callout.split("\n"):
        if atx_heading(line) is not None or fence_open(line) is not None:
            raise UsageError(
                f"[draft] callout: {line!r} would start a heading or a code block in the "
                "V2 Draft section",
                CONFIG_FILE,
            )
    return heading, callout


@dataclass(slots=True)
class DraftResult:
    path: str
    claim_id: str | None = None
    section: str = ""  # the section added (or that would be added, on a dry run)
    written: bool = False
    findings: list[Finding] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "claim_id": self.claim_id,
            "drafted": not self.failed,
            "written": self.written,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(slots=True)
class DraftReport:
    notes: list[DraftResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(n.failed for n in self.notes)

    def to_json(self) -> dict[str, Any]:
        return {
            "notes": [n.to_json() for n in self.notes],
            "drafted": sum(not n.failed for n in self.notes),
            "errors": sum(n.failed for n in self.notes),
        }


def draft_section(note: Note, heading: str = HEADING, callout: str = TIP) -> str:
    """The V2 Draft section for `note` (LF endings), V1 copied into the three blocks,
    under `## heading` and `callout`."""
    assert note.claim is not None and note.frame is not None
    frame = note.frame.text
    claim = note.claim
    metadata = {
        "epistemic_mode": claim.epistemic_mode.value if claim.epistemic_mode else "",
        "mapping_status": claim.mapping_status.value if claim.mapping_status else "",
    }
    meta = json.dumps(metadata, ensure_ascii=False, indent=2)
    frame_fence, meta_fence = fence_for(frame), fence_for(meta)
    return (
        f"## {heading}\n{callout}\n"
        f"### V2 Atomic Claim Draft\n{claim.text.value}\n\n"
        f"### V2 Semantic Frame Draft\n{frame_fence}json\n{frame}\n{frame_fence}\n\n"
        f"### V2 Revision Metadata Draft\n{meta_fence}json\n{meta}\n{meta_fence}\n"
    )


def draft_note(settings: Settings, relative: str, *, dry_run: bool = False) -> DraftResult:
    """Add the V2 Draft section to one vault note (refusals become findings)."""
    heading, callout = section_layout(settings)
    result = DraftResult(relative)
    try:
        snapshot = writer.read_snapshot(settings.vault / relative, settings.max_note_bytes)
    except VtError as exc:
        code = "read-error" if exc.line is None else "encoding"
        result.findings.append(error(relative, exc.line, code, exc.message))
        return result
    note = parse_note(snapshot.raw, relative)
    result.claim_id = note.claim_id
    problem = _refusal(note)
    if problem is not None:
        result.findings.append(problem)
        return result
    result.section = draft_section(note, heading, callout)
    if dry_run:
        return result
    text = writer.insert_section_before(snapshot.text, BEFORE_HEADING, result.section)
    try:
        result.written = writer.write_if_changed(snapshot, text, root=settings.vault)
    except RefusedError as exc:
        result.findings.append(
            error(relative, exc.line, "write-refused", f"{exc.message}; run vt draft again")
        )
    except IOFailure:
        raise  # the disk, not the note: every other note would fail alike
    except VtError as exc:
        result.findings.append(error(relative, exc.line, "write-refused", exc.message))
    return result


def _refusal(note: Note) -> Finding | None:
    if not note.is_review_note:
        return error(
            note.path,
            None,
            "not-review-note",
            "not a review note (its frontmatter has no claim_id)",
        )
    drafts = note.section("drafts")
    if drafts is not None:
        return error(
            note.path,
            drafts.line,
            "drafts-exist",
            "the note already has a V2 Draft section; edit it, or delete it and run vt draft again",
        )
    if note.claim is None or note.frame is None:
        # nothing to copy: the parser says which section or block is missing
        missing = next(
            (f for f in note.findings if f.code in ("section-missing", "json-missing")), None
        )
        if missing is not None:
            return missing
        return error(
            note.path,
            note.body_line,
            "section-missing",
            "V1 has no Atomic Claim or Semantic Frame to copy",
        )
    return None


def draft_notes(settings: Settings, paths: list[Path], dry_run: bool = False) -> DraftReport:
    """`vt draft NOTE…`: every note given, in order; paths outside the vault are findings."""
    report = DraftReport()
    for relative, problem in given_notes(settings.vault, paths):
        report.notes.append(
            DraftResult(relative, findings=[problem])
            if problem
            else draft_note(settings, relative, dry_run=dry_run)
        )
    return report
