"""The pre-commit hook's check of decisions a commit would carry without their events.

A decided note (APPROVE, APPROVE_REPAIR, REJECT) that is not marked APPLIED is a decision
the ledger does not record yet. Committing one is ordinary (the reviewer applies later),
as long as this clone can record it. A clone whose ledger does not verify cannot: its
`vt apply` refuses, and a commit of the note would hand the decision to teammates with no
event behind it. So the hook refuses such a commit and says how to get unblocked.
"""

from __future__ import annotations

from collections.abc import Mapping

from vault_tools.config import Settings
from vault_tools.findings import Finding, error
from vault_tools.vocabulary import APPLIED, LEDGER_ACTION_OF

UNRECORDED = "decision-unrecorded"
RESOLVE = "vt ledger resolve"
VERIFY = "vt ledger verify"


def unrecorded_decisions(settings: Settings, staged: Mapping[str, bytes | None]) -> list[Finding]:
    """One error per staged note whose decision has no event, when this clone's ledger
    does not verify; nothing when it does (or no staged note has such a decision)."""
    undecided = [(rel, line) for rel, raw in staged.items() for line in _unrecorded(rel, raw)]
    if not undecided:
        return []
    problem = _ledger_problem(settings)
    if problem is None:
        return []
    return [
        error(rel, line, UNRECORDED, f"this decision has no event, and {problem}")
        for rel, line in undecided
    ]


def _unrecorded(relative: str, raw: bytes | None) -> list[int]:
    """[the line of review_action] when the note decides something not marked APPLIED."""
    from vault_tools.notes.frontmatter import may_name

    if raw is None or not may_name(raw, b"review_action"):
        return []
    from vault_tools.notes.note import parse_note

    note = parse_note(raw, relative)
    props = note.properties
    if not note.is_review_note or str(props.get("review_action")) not in LEDGER_ACTION_OF:
        return []
    if props.get("review_state") == APPLIED and props.get("vt_event_id"):
        return []
    return [note.property_lines.get("review_action") or 1]


def _ledger_problem(settings: Settings) -> str | None:
    """Why this clone cannot record a decision, with the one command that unblocks it;
    None when the ledger verifies. Read-only: verify writes nothing."""
    from vault_tools.ledger.signatures import SignaturePolicy
    from vault_tools.ledger.verify import verify_ledger

    result = verify_ledger(settings.ledger_path, settings.state_dir, SignaturePolicy.of(settings))
    if result.ok:
        return None
    first = result.problems[0].message
    fix = RESOLVE if "conflict marker" in first else VERIFY
    return (
        f"this clone's ledger does not verify ({first}), so vt apply cannot record it: "
        f"run `{fix}`, which {'repairs the merge' if fix == RESOLVE else 'says what to do'}"
    )
