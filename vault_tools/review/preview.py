"""Repair Preview (docs/workflow.md): validate a note's V2 drafts and show the V1 → V2 changes.

`preview_note` handles one note: it validates the three drafts, diffs them against V1
and — only for a note whose `review_action` is REQUEST_REPAIR — writes the result into
the note as vt's `preview` block and sets `review_state` and `vt_preview_hash`. It writes
nothing else (no ledger, no claim store, no other note), and nothing at all when the
result is byte-identical to the note, so a second run over unchanged drafts is silent.
`preview_vault` runs it over the marked notes of a vault (or the notes given); `vt watch`
calls `preview_note` for one saved note.

Plain data in, plain data out: the CLI renders `PreviewResult` for the terminal.
"""

from __future__ import annotations

import json
import marshal
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from vault_tools.checks.cache import results_key
from vault_tools.checks.context import CheckContext, make_context
from vault_tools.checks.rules import check_drafts
from vault_tools.config import Settings
from vault_tools.errors import IOFailure, RefusedError, VtError
from vault_tools.findings import ERROR, Finding, error, sort_key
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.filestat import stat_signature
from vault_tools.infra.pool import map_chunks
from vault_tools.notes import kb as kbmod
from vault_tools.notes import markdown, writer
from vault_tools.notes.frontmatter import may_name
from vault_tools.notes.identity import content_digest
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.owned_properties import set_properties
from vault_tools.notes.positions import line_of
from vault_tools.notes.vault import (
    given_notes,
    list_vault,
    read_file,
    read_finding,
)
from vault_tools.review.diff import (
    CLAIM,
    NOTHING_TO_REPAIR,
    REPAIR_UNCHANGED,
    Change,
    diff_text_lines,
    note_changes,
    repairs_nothing,
    text_diff,
    unread_drafts,
)
from vault_tools.review.fingerprint import PREVIEW_HASH, preview_hash
from vault_tools.review.preview_cache import PreviewCache, Record
from vault_tools.vocabulary import (
    APPROVE_REPAIR,
    PREVIEW_FAILED,
    PREVIEW_READY,
    REQUEST_REPAIR,
)

Progress = Callable[[int, int], None]

BLOCK = "preview"  # vt's block name: <!-- vt:preview:start --> … <!-- vt:preview:end -->
BEFORE_HEADING = "Human Review"
NO_CHANGES = "No changes: the drafts equal V1."
UP_TO_DATE = "up to date: nothing written"

# below this many candidate notes a process pool costs more than it saves
PARALLEL_THRESHOLD = 200
CHUNK = 32


@dataclass(slots=True)
class PreviewResult:
    """The preview of one note (or why there is none: `state` None and a finding)."""

    path: str
    claim_id: str | None = None
    review_action: str | None = None
    state: str | None = None  # PREVIEW_READY | PREVIEW_FAILED | None (no preview made)
    findings: list[Finding] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    # the claim's character diff: ("equal" | "delete" | "insert", text) segments
    claim_segments: list[tuple[str, str]] = field(default_factory=list)
    preview_hash: str | None = None
    written: bool = False
    remark: str = ""  # why a computed preview was not written, for the reader
    would_write: bool = False  # a dry run: the note would have been written
    # the draft blocks missing or not parsing: what they change cannot be shown
    unread: list[str] = field(default_factory=list)

    @property
    def marked(self) -> bool:
        return self.review_action == REQUEST_REPAIR

    @property
    def failed(self) -> bool:
        return self.state == PREVIEW_FAILED or any(f.severity == ERROR for f in self.findings)

    @property
    def up_to_date(self) -> bool:
        """The note already holds this preview: the run wrote (or would write) nothing."""
        return self.remark in (UP_TO_DATE, f"dry run: {UP_TO_DATE}")

    @property
    def unchanged(self) -> bool:
        """The drafts were read, all of them, and equal V1."""
        return self.state is not None and not self.changes and not self.unread

    @property
    def unread_text(self) -> str:
        """What a preview with unreadable drafts says instead of "No changes"."""
        blocks = " and the ".join(self.unread)
        shown = "No other changes shown" if self.changes else "No changes shown"
        return f"{shown}: the {blocks} could not be read (see the findings)."

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "claim_id": self.claim_id,
            "state": self.state,
            "findings": [f.to_json() for f in self.findings],
            "changes": [c.to_json() for c in self.changes],
            "review_action": self.review_action,
            "written": self.written,
            "preview_hash": self.preview_hash,
        }


@dataclass(slots=True)
class PreviewReport:
    previews: list[PreviewResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(p.failed for p in self.previews)

    def to_json(self) -> dict[str, Any]:
        return {"previews": [p.to_json() for p in self.previews]}


# ---------------------------------------------------------------------------
# one note


def preview_note(
    settings: Settings, ctx: CheckContext, relative: str, *, dry_run: bool = False
) -> PreviewResult:
    """Preview one vault note; write it back only when it is marked REQUEST_REPAIR.

    Never raises for a bad note: read errors, a note that is not a review note, a note
    without drafts and a refused write all become findings on the result.
    """
    loaded = _load(settings, relative)
    if isinstance(loaded, PreviewResult):
        return loaded
    snapshot, note = loaded
    return _preview_loaded(ctx, snapshot, note, dry_run, settings.vault)[0]


def _load(settings: Settings, relative: str) -> tuple[writer.Snapshot, Note] | PreviewResult:
    try:
        snapshot = writer.read_snapshot(settings.vault / relative, settings.max_note_bytes)
    except VtError as exc:
        code = "read-error" if exc.line is None else "encoding"
        return PreviewResult(relative, findings=[error(relative, exc.line, code, exc.message)])
    return snapshot, parse_note(snapshot.raw, relative)


def _preview_loaded(
    ctx: CheckContext, snapshot: writer.Snapshot, note: Note, dry_run: bool, vault: Path
) -> tuple[PreviewResult, bytes | None]:
    """The preview of a parsed note, and the bytes written over it (None: none)."""
    result = PreviewResult(note.path, note.claim_id)
    action = note.properties.get("review_action")
    result.review_action = str(action) if action is not None else None
    if not note.is_review_note:
        result.findings.append(
            error(
                note.path,
                None,
                "not-review-note",
                "not a review note (its frontmatter has no claim_id)",
            )
        )
        return result, None
    if note.drafts is None:
        result.findings.append(
            error(
                note.path,
                note.body_line,
                "drafts-missing",
                f"the note has no '## V2 Draft' section: run `vt draft {note.path}` first",
            )
        )
        return result, None
    result.findings = draft_findings(note, ctx)
    result.state = (
        PREVIEW_FAILED if any(f.severity == ERROR for f in result.findings) else PREVIEW_READY
    )
    result.preview_hash = preview_hash(note)
    result.changes, result.claim_segments = note_changes(note)
    result.unread = unread_drafts(note)
    if result.review_action == APPROVE_REPAIR:
        result.remark = "approved notes are never re-previewed: shown, not written"
    elif not result.marked:
        result.remark = (
            f"review_action is {result.review_action or '(unset)'}, not "
            f"{REQUEST_REPAIR}: shown, not written"
        )
    elif dry_run:
        result.would_write, result.remark = _would_write(snapshot, result)
    else:
        return result, _write(snapshot, result, vault)
    return result, None


def draft_findings(note: Note, ctx: CheckContext) -> list[Finding]:
    """What is wrong with the V2 drafts: parse findings inside the V2 Draft section, the
    schemas, the knowledge base, and COMPLETE mapping with an unresolved draft entity.

    V1's own problems are not the draft's (a repair may be fixing them), and the mapping
    table describes V1 only, so it is not compared with the draft frame.
    """
    ranges = [(s.line, s.end) for s in note.sections if s.key == "drafts"]
    findings = [
        f for f in note.findings if f.line is not None and any(a <= f.line <= b for a, b in ranges)
    ]
    findings += check_drafts(note, ctx)
    findings += _complete_but_unresolved(note, ctx)
    if ctx.disabled:
        findings = [f for f in findings if f.code not in ctx.disabled]
    if repairs_nothing(note):  # never silenced: apply refuses such a repair whatever vt.toml says
        assert note.drafts is not None
        findings.append(error(note.path, note.drafts.line, REPAIR_UNCHANGED, NOTHING_TO_REPAIR))
    return sorted(set(findings), key=sort_key)


def _complete_but_unresolved(note: Note, ctx: CheckContext) -> list[Finding]:
    drafts = note.drafts
    if drafts is None or drafts.metadata is None or not drafts.metadata.ok:
        return []
    metadata, frame = drafts.metadata.data, drafts.frame
    if not isinstance(metadata, dict) or metadata.get("mapping_status") != "COMPLETE":
        return []
    if frame is None or not frame.ok or not isinstance(frame.data, dict):
        return []
    entities = frame.data.get("entities")
    targets = (
        [e["id"] for e in entities if isinstance(e, dict) and isinstance(e.get("id"), str)]
        if isinstance(entities, list)
        else []
    )
    if all(ctx.kb.resolve(target).status == kbmod.OK for target in targets):
        return []
    line = line_of(drafts.metadata.text, ("mapping_status",), drafts.metadata.line)
    return [
        error(
            note.path,
            line,
            "mapping-complete-unresolved",
            "V2 Revision Metadata Draft: mapping_status is COMPLETE but an entity "
            "target of the V2 Semantic Frame Draft does not resolve",
        )
    ]


# ---------------------------------------------------------------------------
# writing the note


def _write(snapshot: writer.Snapshot, result: PreviewResult, vault: Path) -> bytes | None:
    """Set the owned properties and the preview block; a refusal becomes a finding.
    Returns the bytes written (None: nothing written)."""
    assert result.state is not None and result.preview_hash is not None
    try:
        text, findings = note_text_with_preview(snapshot.text, result)
        result.written = writer.write_if_changed(snapshot, text, root=vault)
    except RefusedError as exc:
        result.findings.append(
            error(result.path, exc.line, "write-refused", f"{exc.message}; run vt preview again")
        )
        result.remark = "not written"
        return None
    except IOFailure:
        raise  # the disk, not the note: every other note would fail alike
    except VtError as exc:
        result.findings.append(error(result.path, exc.line, "write-refused", exc.message))
        result.remark = "not written"
        return None
    result.findings = findings
    if not result.written:
        result.remark = UP_TO_DATE
        return None
    return writer.encode_note(text, snapshot.bom)


def _would_write(snapshot: writer.Snapshot, result: PreviewResult) -> tuple[bool, str]:
    """What a dry run says instead of writing: whether the preview would change the note,
    and the remark saying so."""
    try:
        text, _ = note_text_with_preview(snapshot.text, result)
    except VtError as exc:
        return False, f"dry run: would not write ({exc.message})"
    if text == snapshot.text:
        return False, f"dry run: {UP_TO_DATE}"
    return True, "dry run: would write the preview into the note"


def note_text_with_preview(text: str, result: PreviewResult) -> tuple[str, list[Finding]]:
    """The note's new text, and the findings with their lines as they are in that text.

    The block quotes note lines, and writing the properties and the block can move the
    draft lines; the lines are mapped through both edits so that the written block (and
    a second run over it) names the lines as they are on disk.
    """
    assert result.state is not None and result.preview_hash is not None
    with_properties = set_properties(
        text, {"review_state": result.state, PREVIEW_HASH: result.preview_hash}
    )
    first = _line_map(text, with_properties)
    moved = [_moved(f, first) for f in result.findings]
    draft = writer.set_block(
        with_properties, BLOCK, render_block(result, moved), before_heading=BEFORE_HEADING
    )
    if all(f.line is None for f in moved):
        return draft, moved  # no line quoted: nothing to map (the common case)
    second = _line_map(with_properties, draft)
    final = [_moved(f, second) for f in moved]
    # the block's line count does not depend on the line numbers it quotes
    return writer.set_block(
        with_properties, BLOCK, render_block(result, final), before_heading=BEFORE_HEADING
    ), final


def _moved(finding: Finding, line_map: Callable[[int], int]) -> Finding:
    return finding if finding.line is None else finding._replace(line=line_map(finding.line))


def _line_map(before: str, after: str) -> Callable[[int], int]:
    """Map 1-based line numbers of `before` to `after`, for an edit in one region.

    Lines in the common prefix keep their number, lines in the common suffix move by the
    difference in length; lines inside the edited region keep theirs (none is quoted).
    """
    old, new = before.split("\n"), after.split("\n")
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    delta = len(new) - len(old)
    first_suffix_line = len(old) - suffix + 1

    def mapped(line: int) -> int:
        return line + delta if line >= first_suffix_line else line

    return mapped


# ---------------------------------------------------------------------------
# the Markdown of the preview block


def render_block(result: PreviewResult, findings: list[Finding] | None = None) -> str:
    """The text between vt's preview markers (deterministic: no timestamps)."""
    findings = result.findings if findings is None else findings
    out = ["## Repair Preview", ""]
    if result.state == PREVIEW_READY:
        out += [
            "> [!success] Preview valid",
            "> The V2 drafts validate. To apply them, set `review_action` to "
            f"`{APPROVE_REPAIR}` and run `vt apply`.",
        ]
    else:
        out += ["> [!failure] Preview failed", "> Fix the V2 drafts, then run `vt preview` again:"]
    for finding in findings:
        where = f"line {finding.line}" if finding.line else "note"
        out.append(f"> - {where}: `{finding.code}` {markdown.text(finding.message)}")
    out.append("")
    if result.unread:
        out += [result.unread_text, ""]
    if not result.changes:
        if not result.unread:
            out += [NO_CHANGES, ""]
        return "\n".join(out) + "\n"
    claim = next((c for c in result.changes if c.field == CLAIM), None)
    if claim is not None:
        # the changed words inline (struck, marked), as the terminal shows them; then
        # V1 and V2 whole, as they are written, line by line
        body = diff_text_lines(claim.old, claim.new)
        fence = markdown.fence_for(body)
        inline = markdown.diff_line(result.claim_segments or text_diff(claim.old, claim.new))
        out += ["### Atomic Claim", "", inline, "", f"{fence}diff", body.rstrip("\n"), fence, ""]
    rows = [c for c in result.changes if c.field != CLAIM]
    if rows:
        out += [
            "### Semantic Frame and Metadata",
            "",
            "| Field | Change | Pointer | V1 | V2 |",
            "|---|---|---|---|---|",
        ]
        out += [_table_row(change) for change in rows]
        out.append("")
    # a blank line before the end marker: a table or list must not run into it
    return "\n".join(out) + "\n"


def _table_row(change: Change) -> str:
    old = "" if change.op == "add" else markdown.code_span(_json(change.old))
    new = "" if change.op == "remove" else markdown.code_span(_json(change.new))
    pointer = markdown.code_span(change.pointer or "/")
    return f"| {change.field} | {change.op} | {pointer} | {old} | {new} |"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------
# a vault run


def preview_vault(
    settings: Settings,
    paths: list[Path] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> PreviewReport:
    """Preview the notes given, or every note of the vault marked REQUEST_REPAIR.

    A vault run (not a dry run) keeps what it made of each note in `.vt/`
    (preview_cache.py): the next one previews only the notes whose bytes changed."""
    listing = list_vault(settings.vault)
    ctx = make_context(settings, listing)
    report = PreviewReport()
    if paths:
        targets = _explicit_targets(settings, paths, report)
        report.previews += _run(settings, ctx, targets, True, dry_run, progress)
        return report
    report.previews += [
        PreviewResult(f.path, findings=[f]) for f in listing.findings(settings.claims_dir)
    ]
    targets = list(listing.inside())
    cache = None if dry_run else _open_cache(settings, ctx)
    if cache is None:
        report.previews += _run(settings, ctx, targets, False, dry_run, progress)
    else:
        report.previews += _run_cached(settings, ctx, targets, cache, progress)
    return report


def _explicit_targets(settings: Settings, paths: list[Path], report: PreviewReport) -> list[str]:
    targets: list[str] = []
    for relative, problem in given_notes(settings.vault, paths):
        if problem is None:
            targets.append(relative)
        else:
            report.previews.append(PreviewResult(relative, findings=[problem]))
    return targets


def _open_cache(settings: Settings, ctx: CheckContext) -> PreviewCache | None:
    """The cache of earlier vault runs, under this run's key (None: `.vt/` may not be
    written, as when it leads outside the vault)."""
    try:
        state_dir = writable_path(settings.vault, settings.state_dir)
    except VtError:
        return None
    cache = PreviewCache.read(state_dir)
    kb = ctx.kb
    aliases = kb.load_aliases(cache.aliases, cache.fresh, cache.listing)
    cache.use_key(results_key(ctx.schemas, kb, settings))
    if cache.listing != kb.digest:
        cache.drop_moved(kb)
    if aliases != cache.aliases or cache.listing != kb.digest:
        cache.aliases, cache.listing, cache.dirty = aliases, kb.digest, True
    return cache


def _run_cached(
    settings: Settings,
    ctx: CheckContext,
    targets: list[str],
    cache: PreviewCache,
    progress: Progress | None,
) -> list[PreviewResult]:
    """A vault run: the notes unchanged since the last one from the cache, the others
    previewed now (and kept), in the order of `targets`."""
    hits, misses = cache.lookup_all(str(settings.vault), targets)
    fresh = _outcomes(settings, ctx, misses, False, False, progress)
    results = []
    for target in targets:
        if target in hits:
            packed = hits[target]
            if packed is not None:
                results.append(_unpacked(target, packed))
            continue
        result, record = next(fresh)
        if record is not None:
            cache.store(record)
        if result is not None:
            results.append(result)
    for _ in fresh:  # none left: this lets its pool finish
        raise AssertionError("a note previewed but not a target")
    cache.forget_missing(targets)
    cache.save()
    return results


def _packed(result: PreviewResult) -> tuple:
    """What a later run shows for a note previewed (and written) now: plain data."""
    return (
        result.claim_id,
        result.review_action,
        result.state,
        tuple(map(tuple, result.findings)),
        tuple((c.field, c.op, c.pointer, c.old, c.new) for c in result.changes),
        tuple(map(tuple, result.claim_segments)),
        result.preview_hash,
    )


def _unpacked(path: str, packed: tuple) -> PreviewResult:
    """The preview of a note unchanged since it was previewed: up to date, not written."""
    claim_id, action, state, findings, changes, segments, digest = packed
    return PreviewResult(
        path,
        claim_id,
        action,
        state,
        [Finding(*finding) for finding in findings],
        [Change(*change) for change in changes],
        [(kind, text) for kind, text in segments],
        digest,
        written=False,
        remark=UP_TO_DATE,
    )


Outcome = tuple[PreviewResult | None, Record | None]  # a target's preview, its cache record


def _preview_target(
    settings: Settings, ctx: CheckContext, relative: str, explicit: bool, dry_run: bool
) -> Outcome:
    """A given note is always previewed; in a vault run only notes marked REQUEST_REPAIR.
    The record for the cache: only of a vault run that read the note's bytes once (the
    note did not change meanwhile) and ended with the note up to date."""
    if explicit:
        return preview_note(settings, ctx, relative, dry_run=dry_run), None
    try:
        raw, info = read_file(os.path.join(settings.vault, relative), settings.max_note_bytes)
    except OSError as exc:  # it may be marked: a failure, never passed over
        return PreviewResult(relative, findings=[read_finding(relative, exc)]), None
    unmarked: Record | None = (relative, stat_signature(info), content_digest(raw), None, ())
    if not may_name(raw, REQUEST_REPAIR.encode()):  # most notes are not marked: unparsed
        return None, unmarked
    loaded = _load(settings, relative)
    if isinstance(loaded, PreviewResult):
        return None, None
    snapshot, note = loaded
    if snapshot.raw != raw:  # changed since it was read above: the next run looks again
        unmarked = None
    if note.properties.get("review_action") != REQUEST_REPAIR:
        return None, unmarked
    asked: set[str] = set()
    ctx.kb.asked = asked
    try:
        result, written = _preview_loaded(ctx, snapshot, note, dry_run, settings.vault)
    finally:
        ctx.kb.asked = None
    if unmarked is None or (not written and result.remark != UP_TO_DATE):
        return result, None  # refused, or not the bytes read: not kept
    wide = ctx.kb.wide_facts(sorted(asked)) if asked else ()
    record: Record = (relative, *unmarked[1:3], _packed(result), wide)
    if written is not None:  # the bytes now on disk: the next run reads and compares them
        record = (relative, None, content_digest(written), record[3], wide)
    try:
        marshal.dumps(record)
    except ValueError:
        return result, None  # a value marshal cannot keep (never expected: JSON's)
    return result, record


def _run(
    settings: Settings,
    ctx: CheckContext,
    targets: list[str],
    explicit: bool,
    dry_run: bool,
    progress: Progress | None,
) -> list[PreviewResult]:
    outcomes = _outcomes(settings, ctx, targets, explicit, dry_run, progress)
    return [result for result, _ in outcomes if result is not None]


def _outcomes(
    settings: Settings,
    ctx: CheckContext,
    targets: list[str],
    explicit: bool,
    dry_run: bool,
    progress: Progress | None,
) -> Iterator[Outcome]:
    work = partial(_chunk, settings=settings, ctx=ctx, explicit=explicit, dry_run=dry_run)
    return map_chunks(
        work,
        targets,
        workers=settings.workers,
        progress=progress,
        threshold=PARALLEL_THRESHOLD,
        chunk=CHUNK,
    )


def _chunk(
    chunk: list[str], settings: Settings, ctx: CheckContext, explicit: bool, dry_run: bool
) -> list[Outcome]:
    return [_preview_target(settings, ctx, relative, explicit, dry_run) for relative in chunk]
