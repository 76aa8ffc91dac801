"""`vt demo`: the whole review cycle on a throw-away copy of the bundled example vault.

It calls the same core functions as the commands (validate, draft, preview, apply, the
Claim Store, verify), and does what a reviewer would do in Obsidian as small text edits
of the copy — clearly apart from vt's own writer. Each step reports what it did and
whether it did what it should; the demo stops at the first step that did not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tools.bundled import example_vault_dir
from vault_tools.config import Settings, load_settings
from vault_tools.errors import VtError
from vault_tools.findings import counted
from vault_tools.vocabulary import (
    ACCEPT,
    APPROVE,
    APPROVE_REPAIR,
    CHECK_KEYS,
    PREVIEW_READY,
    REPAIR,
    REPAIRED,
    REQUEST_REPAIR,
)

REPAIRED_NOTE = "03_claims/IX2-0328.md"
APPROVED_NOTE = "03_claims/DV1-0001.md"
WRONG_TARGET = "04_knowledge_base/IC design verification"
RIGHT_TARGET = "04_knowledge_base/Draft Verification"


class StepFailed(Exception):
    """A step did not do what it should; the message says what happened instead."""


@dataclass(slots=True)
class Step:
    number: int
    title: str
    why: str  # one or two sentences for a newcomer: what happens and why
    lines: list[str] = field(default_factory=list)  # the result
    ok: bool = True
    problem: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "ok": self.ok,
            "problem": self.problem,
            "lines": self.lines,
        }


@dataclass(slots=True)
class DemoResult:
    steps: list[Step] = field(default_factory=list)
    kept: Path | None = None  # the demo vault, when --keep

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "vault": str(self.kept) if self.kept else None,
            "steps": [s.to_json() for s in self.steps],
        }


# ---------------------------------------------------------------------------
DEMO_REVIEWER = "alice"  # the reviewer the example notes name, and who the demo runs as

# what a reviewer does in Obsidian: small text edits, not vt's writer


def reviewer_edit(path: Path, old: str, new: str, after: str | None = None) -> None:
    """Replace the first `old` (after the first `after`, if given) in the note's text."""
    text = path.read_text(encoding="utf-8")
    start = 0
    if after is not None:
        start = text.find(after)
        if start < 0:
            raise StepFailed(f"{path.name}: {after!r} not found")
    at = text.find(old, start)
    if at < 0:
        raise StepFailed(f"{path.name}: {old!r} not found")
    path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")


def set_property_line(path: Path, key: str, value: str) -> str:
    """Rewrite the frontmatter line `key: …` as `key: value`; returns the old line."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(f"{key}:"):
            lines[i] = f"{key}: {value}"
            path.write_text("\n".join(lines), encoding="utf-8")
            return line
    raise StepFailed(f"{path.name}: no {key} property")


def change_line(change: Any) -> str:
    """One V1 → V2 change on one line, as vt preview prints it when piped."""
    pointer = change.pointer or "/"
    if change.op == "add":
        return f"{change.field} + {pointer}: {_json(change.new)}"
    if change.op == "remove":
        return f"{change.field} - {pointer}: {_json(change.old)}"
    return f"{change.field} {pointer}: {_json(change.old)} → {_json(change.new)}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------
# the steps


class _Demo:
    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.settings: Settings = load_settings(vault)
        # an event names whoever runs vt apply; the demo runs as its notes' reviewer
        self.settings.actor = DEMO_REVIEWER

    def init(self, step: Step) -> None:
        from vault_tools.integrations.git.hook import DRIVER
        from vault_tools.integrations.git.repo import GitRepo
        from vault_tools.integrations.init import init_vault

        if shutil.which("git") is not None:
            subprocess.run(["git", "init", "-q", str(self.vault)], check=True, capture_output=True)
            step.lines.append("$ git init  →  the vault is a git repository, nothing committed yet")
        else:
            step.lines.append("git is not installed here: run `vt init` again after `git init`")
        result = init_vault(self.settings)
        step.lines.append("$ vt init")
        step.lines.extend(f"  {change}" for change in result.changes)
        ignored = (self.vault / ".gitignore").read_text(encoding="utf-8").splitlines()
        if ".vt/" not in ignored:
            raise StepFailed(".vt/ is not in the vault's .gitignore")
        repo = GitRepo.find(self.vault) if result.git else None
        if repo is not None and repo.config_get(f"merge.{DRIVER}.driver") is None:
            raise StepFailed("the ledger's merge driver was not set")

    def validate(self, step: Step) -> None:
        from vault_tools.checks.validate import validate

        report = validate(self.settings)
        step.lines.append(
            f"$ vt validate  →  {counted(report.notes, 'review note')}: "
            f"{counted(report.errors, 'error')}, {counted(report.warnings, 'warning')}"
        )
        for finding in report.findings:
            if finding.path == REPAIRED_NOTE:
                step.lines.append(
                    f"{finding.path}:{finding.line}: {finding.code}: {finding.message}"
                )
        if report.errors:
            raise StepFailed(f"the example vault has {counted(report.errors, 'error')}")

    def draft(self, step: Step) -> None:
        from vault_tools.review.draft import draft_note

        result = draft_note(self.settings, REPAIRED_NOTE)
        if result.failed or not result.written:
            raise StepFailed("; ".join(f.message for f in result.findings) or "not written")
        step.lines.append(
            f"$ vt draft {REPAIRED_NOTE}  →  V2 Draft section added "
            "(V1 copied into the three draft blocks)"
        )

    def edit(self, step: Step) -> None:
        note = self.vault / REPAIRED_NOTE
        reviewer_edit(note, WRONG_TARGET, RIGHT_TARGET, after="### V2 Semantic Frame Draft")
        step.lines.append(f'V2 Semantic Frame Draft: "{WRONG_TARGET}" → "{RIGHT_TARGET}"')
        old = set_property_line(note, "review_action", REQUEST_REPAIR)
        step.lines.append(f"frontmatter: {old}  →  review_action: REQUEST_REPAIR")

    def preview(self, step: Step) -> None:
        from vault_tools.checks.context import make_context
        from vault_tools.review.preview import preview_note

        result = preview_note(self.settings, make_context(self.settings), REPAIRED_NOTE)
        step.lines.append(
            f"$ vt preview {REPAIRED_NOTE}  →  {result.state}, "
            f"vt_preview_hash {result.preview_hash}"
        )
        step.lines.extend("  " + change_line(change) for change in result.changes)
        if result.state != PREVIEW_READY or not result.written:
            problems = "; ".join(f.message for f in result.findings)
            raise StepFailed(f"preview is {result.state}: {problems or 'not written'}")
        if not any(RIGHT_TARGET in json.dumps(c.new) for c in result.changes):
            raise StepFailed("the preview does not show the repaired entity")

    def approve(self, step: Step) -> None:
        note = self.vault / REPAIRED_NOTE
        for key, value in (
            ("review_action", APPROVE_REPAIR),
            *((c, "true") for c in CHECK_KEYS),
            ("reviewer", f'"{DEMO_REVIEWER}"'),
        ):
            old = set_property_line(note, key, value)
            step.lines.append(f"{REPAIRED_NOTE}: {old}  →  {key}: {value}")
        from vault_tools.notes.note import parse_note

        other = parse_note((self.vault / APPROVED_NOTE).read_bytes(), APPROVED_NOTE)
        props = other.properties
        if props.get("review_action") != APPROVE or not all(
            props.get(c) is True for c in CHECK_KEYS
        ):
            raise StepFailed(f"{APPROVED_NOTE} is not approved with its four checks")
        step.lines.append(
            f"{APPROVED_NOTE}: already review_action: APPROVE, four checks true, "
            f"reviewer {props.get('reviewer')!r}"
        )

    def apply(self, step: Step) -> None:
        from vault_tools.review.apply import apply_notes

        report = apply_notes(self.settings)
        step.lines.append("$ vt apply")
        for item in report.applied:
            step.lines.append(
                f"  {item.path}: {item.action} appended as seq {item.seq}, {item.id[:19]}…"
            )
        for entry in report.skipped:
            step.lines.append(f"  {entry.path}: skipped: {entry.reason}")
        for entry in report.refused:
            step.lines.append(f"  {entry.path}: REFUSED: {entry.reason}")
        if report.refused or report.refresh_error:
            raise StepFailed(str(report.refresh_error or "a decision was refused"))
        done = {(a.path, a.action) for a in report.applied if a.marked}
        if not {(REPAIRED_NOTE, REPAIR), (APPROVED_NOTE, ACCEPT)} <= done:
            raise StepFailed("IX2-0328's REPAIR and DV1-0001's ACCEPT were not both applied")
        if report.refresh is not None:
            step.lines.append(
                "  claim store updated; "
                f"{counted(len(report.refresh.kb_notes_written), 'knowledge-base note')} "
                "now list the accepted claims that use them"
            )
        for line in (self.vault / REPAIRED_NOTE).read_text(encoding="utf-8").split("\n"):
            if line.startswith(("review_state:", "vt_event_id:", "vt_applied_at:")):
                step.lines.append(f"  {REPAIRED_NOTE}: {line}")
        again = apply_notes(self.settings)
        step.lines.append(
            f"$ vt apply  (again)  →  {counted(len(again.events), 'event')} appended: "
            "a decision is recorded once"
        )
        if again.events or again.refused:
            raise StepFailed("the second run was not a no-op")

    def status(self, step: Step) -> None:
        from vault_tools.store.claims import ClaimStore

        with ClaimStore.open(self.settings) as store:
            counts = store.status_counts()
            record = store.claim("IX2-0328")
        step.lines.append("claims by status: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        if record is None or record.status != REPAIRED:
            raise StepFailed(f"IX2-0328 is {record.status if record else 'unknown'}, not REPAIRED")
        targets = [
            e.get("id") for e in (record.claim or {}).get("semantic_frame", {}).get("entities", [])
        ]
        step.lines.append(f"IX2-0328: {record.status}; its entities now: {', '.join(targets)}")

    def verify(self, step: Step) -> None:
        from vault_tools.ledger.signatures import SignaturePolicy
        from vault_tools.ledger.verify import verify_ledger

        result = verify_ledger(self.settings.ledger_path, self.settings.state_dir,
                               SignaturePolicy.of(self.settings))  # fmt: skip
        step.lines.append(
            f"$ vt ledger verify  →  {'ok' if result.ok else 'FAILED'}: "
            f"{counted(result.events, 'event')}, head {result.head[:19]}…"
        )
        if not result.ok:
            raise StepFailed("; ".join(p.message for p in result.problems))

    def history(self, step: Step) -> None:
        from vault_tools.review.diff import repair_changes
        from vault_tools.store.claims import ClaimStore

        with ClaimStore.open(self.settings) as store:
            events = store.history("IX2-0328")
        v1 = _v1_claim(self.vault / REPAIRED_NOTE)
        for ev in events:
            step.lines.append(
                f"seq {ev['seq']}  {ev['ts']}  {ev['actor']}  {ev['action']}  ({ev['note']})"
            )
            claim = ev.get("claim")
            if ev["action"] == REPAIR and claim:
                for change in repair_changes(
                    v1["atomic_claim"],
                    claim["atomic_claim"],
                    v1["semantic_frame"],
                    claim["semantic_frame"],
                    {k: v1[k] for k in ("epistemic_mode", "mapping_status")},
                    {k: claim[k] for k in ("epistemic_mode", "mapping_status")},
                ):
                    step.lines.append("    V1 → V2 " + change_line(change))
        if [ev["action"] for ev in events] != [REPAIR]:
            raise StepFailed(f"IX2-0328's history is {[ev['action'] for ev in events]}")


def _v1_claim(path: Path) -> dict[str, Any]:
    from vault_tools.notes.note import parse_note
    from vault_tools.review.claim_record import v1_claim

    return v1_claim(parse_note(path.read_bytes(), path.name))


STEPS: list[tuple[str, str, str]] = [
    (
        "init",
        "Set the vault up for vt and git",
        "Before the first commit: vt init writes vt.toml, puts .vt/ (vt's derived state, "
        "rebuilt from the ledger; never committed) in .gitignore and, in a git repository, "
        "installs the pre-commit hook and the ledger's merge driver, so two reviewers' "
        "ledgers merge without a conflict.",
    ),
    (
        "validate",
        "Validate the vault",
        "vt validate parses every review note and checks it against the JSON Schemas and the "
        "knowledge base. Errors would block an approval; warnings are hints for the reviewer, "
        "like the suspicious mapping of IX2-0328 below.",
    ),
    (
        "draft",
        "Draft a repair of IX2-0328",
        "vt draft adds a ⑤ V2 Draft section to the note, copying the V1 claim, frame and "
        "metadata into three blocks the reviewer can edit.",
    ),
    (
        "edit",
        "Edit the draft, as a reviewer would in Obsidian",
        "The reviewer fixes the mis-mapped entity in the V2 frame draft and sets review_action "
        "to REQUEST_REPAIR. (The demo edits the note's text directly, like Obsidian does; "
        "this is not vt writing.)",
    ),
    (
        "preview",
        "Preview the repair",
        "vt preview validates the V2 drafts and writes the V1 → V2 diff into the note, with "
        "review_state PREVIEW_READY and vt_preview_hash, the fingerprint of the drafts just "
        "shown. Nothing is decided yet.",
    ),
    (
        "approve",
        "Approve",
        "The reviewer ticks the four checks, names herself as reviewer (alice, who the demo "
        "runs as: an event names whoever runs vt apply) and sets APPROVE_REPAIR on "
        "IX2-0328; DV1-0001 was already approved. The Markdown alone is not a decision yet.",
    ),
    (
        "apply",
        "Apply the decisions",
        "vt apply turns each approved decision into an event in the Decision Ledger (one fsync "
        "for the run), then marks the notes APPLIED and updates the Claim Store. Running it "
        "again appends nothing.",
    ),
    (
        "status",
        "Look at the Claim Store",
        "The Claim Store (.vt/claims.sqlite) is a projection of the ledger: each claim's "
        "current status and accepted version, rebuilt from the ledger at any time.",
    ),
    (
        "verify",
        "Verify the ledger",
        "vt ledger verify re-checks every line's hash, the chain linking the lines and every "
        "event id, so an edited, deleted or reordered decision is caught.",
    ),
    (
        "history",
        "History of IX2-0328",
        "Every decision on a claim, who made it and when, with the V1 → V2 changes of a repair.",
    ),
]


def run_demo(
    keep: bool = False, on_step: Callable[[Step], None] | None = None, workdir: Path | None = None
) -> DemoResult:
    """Copy the example vault to a temporary folder and run the cycle there."""
    root = Path(tempfile.mkdtemp(prefix="vt-demo-", dir=workdir))
    vault = root / "vault"
    result = DemoResult()
    try:
        shutil.copytree(example_vault_dir(), vault, ignore=shutil.ignore_patterns(".vt"))
        (vault / ".obsidian").mkdir(exist_ok=True)
        demo = _Demo(vault)
        for number, (name, title, why) in enumerate(STEPS, 1):
            step = Step(number, title, why)
            _run_step(getattr(demo, name), step)
            result.steps.append(step)
            if on_step is not None:
                on_step(step)
            if not step.ok:
                break
    finally:
        if keep:
            result.kept = vault
        else:
            shutil.rmtree(root, ignore_errors=True)
    return result


def _run_step(action: Callable[[Step], None], step: Step) -> None:
    try:
        action(step)
    except StepFailed as exc:
        step.ok, step.problem = False, str(exc)
    except VtError as exc:
        step.ok, step.problem = False, str(exc)
