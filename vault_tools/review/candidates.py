"""Phase 1 of `vt apply` (review/apply.py): what one note asks apply to do, read and
checked before the ledger lock is taken (in a worker of the process pool for big runs).
A `Candidate` is small and picklable: it crosses from the workers to the parent, and
waits in a spool (infra/spool.py) until its turn to be decided.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vault_tools.checks.context import CheckContext
from vault_tools.checks.rules import check_note, review_assist
from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.findings import ERROR
from vault_tools.infra.filestat import Signature, stat_signature
from vault_tools.notes import writer
from vault_tools.notes.conflicts import has_conflict
from vault_tools.notes.frontmatter import may_name
from vault_tools.notes.identity import content_digest
from vault_tools.notes.note import LINE_ENDINGS, Note, parse_note
from vault_tools.notes.vault import read_file
from vault_tools.review.claim_record import (
    claim_base,
    claim_complete,
    decision_content,
    note_origin,
    v1_claim,
)
from vault_tools.review.diff import NOTHING_TO_REPAIR, REPAIR_UNCHANGED, repairs_nothing
from vault_tools.review.fingerprint import preview_current
from vault_tools.vocabulary import (
    ACCEPT,
    APPLIED,
    APPROVE_REPAIR,
    CHECK_KEYS,
    LEDGER_ACTION_OF,
    PENDING,
    PREVIEW_FAILED,
    PREVIEW_READY,
    REJECT,
    REQUEST_REPAIR,
    REVIEW_ACTIONS,
    review_action,
)

SKIP_REQUEST_REPAIR = f"preview, then set {APPROVE_REPAIR}"
# parse findings of text that must never reach the ledger, whatever the decision
NEVER_RECORDED = frozenset({"control-character", "number-too-large"})
DRAFTS_CHANGED = (
    f"drafts changed since the preview; set review_action to {REQUEST_REPAIR} and run vt preview"
)


@dataclass(slots=True)
class Candidate:
    """What one note asks for, read before the lock. Small and picklable."""

    path: str
    claim_id: str | None = None
    review_action: str | None = None
    decision: dict[str, Any] | None = None  # decision fields but actor/ts/supersedes
    reviewer: str = ""  # the note's `reviewer`: whose decision it is ("": the runner's)
    problems: list[str] = field(default_factory=list)  # why a NEW decision would be refused
    skip: str | None = None  # nothing to decide, and why
    refuse: str | None = None  # cannot be decided at all, and why
    review_state: str | None = None
    event_id: str | None = None  # vt_event_id
    applied_at: str | None = None  # vt_applied_at: the ts of the event vt_event_id names
    digest: str = ""  # of the bytes read: the note is marked only if it still has them
    signature: Signature = (0, 0, 0, 0, 0)
    check_later: bool = False  # check_note not run yet (see _fill_decision)
    assist_later: bool = False  # the decision's `assist` not found yet (see _fill_decision)


def examine(
    settings: Settings,
    ctx: CheckContext,
    relative: str,
    explicit: bool = True,
    assist: bool = True,
) -> Candidate | None:
    """What `relative` asks apply to do; None for a note with nothing to say in a vault run.
    `assist=False` leaves out the decision's `assist` codes (for a caller that only asks
    whether apply would refuse, as the dashboard does: the codes never refuse a note)."""
    try:
        raw, info = read_file(settings.vault / relative, settings.max_note_bytes)
    except OSError as exc:
        if not explicit and not _mentions_claim(settings, relative):
            return None
        return Candidate(relative, refuse=f"cannot read: {exc.strerror or exc}")
    return judge(settings, ctx, relative, raw, stat_signature(info), explicit, assist)


def judge(
    settings: Settings,
    ctx: CheckContext,
    relative: str,
    raw: bytes,
    signature: Signature = (0, 0, 0, 0, 0),
    explicit: bool = True,
    assist: bool = True,
    note: Note | None = None,
) -> Candidate | None:
    """`examine` of bytes read already (`signature`: theirs; `note`: them parsed, when
    the caller parsed them), as a validate run that reads every note can ask."""
    try:
        writer.decode_note(raw, relative)  # a note vt could not rewrite is no decision
    except VtError as exc:
        if not explicit and not may_name(raw, b"claim_id"):
            return None
        return Candidate(relative, refuse=f"cannot read: {exc.message}")
    if not explicit and not may_name(raw, b"claim_id"):
        return None
    if note is None:
        note = parse_note(raw, relative)
    conflict = has_conflict(note.findings)
    if conflict is not None:  # never a decision read from half of a merge
        return Candidate(relative, note.claim_id, refuse=f"{conflict.code}: {conflict.message}")
    misread = next((f for f in note.findings if f.code == LINE_ENDINGS), None)
    if misread is not None:  # lines vt would split otherwise than Obsidian shows them
        return Candidate(relative, note.claim_id, refuse=f"{misread.code}: {misread.message}")
    if not note.is_review_note:
        return (
            Candidate(relative, refuse="not a review note (its frontmatter has no claim_id)")
            if explicit
            else None
        )
    props = note.properties
    action = review_action(props)
    cand = Candidate(
        relative,
        note.claim_id,
        action,
        review_state=_str_or_none(props.get("review_state")),
        event_id=_str_or_none(props.get("vt_event_id")),
        applied_at=_str_or_none(props.get("vt_applied_at")),
        digest=content_digest(raw),
        signature=signature,
    )
    if action == PENDING:
        if not explicit:
            return None
        cand.skip = "review_action is PENDING: nothing to apply"
    elif action == REQUEST_REPAIR:
        cand.skip = SKIP_REQUEST_REPAIR
    elif action not in LEDGER_ACTION_OF:
        what = f"review_action {action!r}" if action else "review_action is unset:"
        cand.refuse = f"{what} is not one of {', '.join(REVIEW_ACTIONS)}"
    elif unfit := [f for f in note.findings if f.code in NEVER_RECORDED]:
        # whatever the decision, such text must never reach the ledger
        cand.refuse = _errors_reason(unfit)
    else:
        _fill_decision(settings, ctx, note, cand, assist)
    return cand


def _mentions_claim(settings: Settings, relative: str) -> bool:
    """Whether an unreadable note may hold a decision: its bytes mention claim_id, or
    they cannot be read at all (not a regular file, too large, no permission)."""
    try:
        raw, _ = read_file(settings.vault / relative, settings.max_note_bytes)
    except OSError:
        return True
    return may_name(raw, b"claim_id")


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _fill_decision(
    settings: Settings, ctx: CheckContext, note: Note, cand: Candidate, assist: bool
) -> None:
    props = note.properties
    content = decision_content(note, str(cand.review_action))
    assert content is not None
    action = content["action"]
    checks = {key: props.get(key) is True for key in CHECK_KEYS}
    v1 = content["claim"] if action == ACCEPT else v1_claim(note)
    reviewer = props.get("reviewer")
    comment = props.get("review_comment")
    cand.reviewer = str(reviewer).strip() if reviewer is not None else ""
    cand.decision = {
        **content,
        "base": claim_base(v1),
        "checks": checks,
        "claim_id": note.claim_id,
        "comment": "" if comment is None else str(comment),
        "note": cand.path,
        "v": 1,
        **note_origin(props),
    }
    if cand.review_state == APPLIED and cand.event_id:
        # almost surely recorded already: the assist runs only for a new decision
        cand.assist_later = True
    elif assist:
        cand.decision["assist"] = assist_codes(note, ctx)
    if action == REJECT:
        return
    unchecked = [key for key in settings.required_checks if props.get(key) is not True]
    if unchecked:
        cand.problems.append(
            f"unchecked: {', '.join(unchecked)} (every required check must be true to approve)"
        )
    if action == ACCEPT:
        if cand.review_state == APPLIED and cand.event_id:
            # almost surely applied already: check only if it turns out to be a new decision
            cand.check_later = True
        else:
            cand.problems += note_errors(note, ctx)
    else:
        _fill_repair(note, cand)


def assist_codes(note: Note, ctx: CheckContext) -> list[str]:
    """The review-assist codes the note shows its reviewer (on V1 and the V2 drafts, less
    those its `assist_ignore` and vt.toml's `[findings] disable` silence), sorted, each
    once: what the decision event records as `assist`, whatever `ctx.assist` says."""
    found = review_assist()(note, ctx)
    return sorted({f.code for f in found if f.code.startswith("assist-")} - ctx.disabled)


def note_errors(note: Note, ctx: CheckContext) -> list[str]:
    """Why an approval of `note` must be refused for its error findings (empty: none)."""
    errors = [f for f in check_note(note, ctx) if f.severity == ERROR]
    return [_errors_reason(errors)] if errors else []


def _errors_reason(errors: list) -> str:
    shown = "; ".join(f"line {f.line or '-'}: {f.code} {f.message}" for f in errors[:2])
    more = f" (and {len(errors) - 2} more)" if len(errors) > 2 else ""
    return f"the note has errors: {shown}{more}; run vt validate"


def _fill_repair(note: Note, cand: Candidate) -> None:
    assert cand.decision is not None
    v2 = cand.decision["claim"]
    if v2 is None:
        cand.problems.append(
            "the note has no V2 Draft section: run vt draft, edit the drafts, "
            f"set {REQUEST_REPAIR} and run vt preview"
        )
        return
    stated = cand.decision["preview"]
    if repairs_nothing(note):  # whatever its preview said: it would record no change
        cand.problems.append(f"{REPAIR_UNCHANGED}: {NOTHING_TO_REPAIR}")
    elif cand.review_state == PREVIEW_FAILED:
        cand.problems.append(
            "the preview failed: fix the drafts, set review_action to "
            f"{REQUEST_REPAIR} and run vt preview"
        )
    elif cand.review_state not in (PREVIEW_READY, APPLIED) or stated is None:
        cand.problems.append(
            f"no valid preview: set review_action to {REQUEST_REPAIR} and run "
            f"vt preview, then {APPROVE_REPAIR}"
        )
    elif not preview_current(note):
        cand.problems.append(DRAFTS_CHANGED)
    elif cand.review_state == APPLIED:
        # a preview is approved once: after an apply the reviewer previews again
        cand.problems.append(
            "no valid preview since the last apply: set review_action to "
            f"{REQUEST_REPAIR} and run vt preview, then {APPROVE_REPAIR}"
        )
    elif not claim_complete(v2):
        cand.problems.append(
            f"the V2 drafts do not parse; set review_action to {REQUEST_REPAIR} and run vt preview"
        )
