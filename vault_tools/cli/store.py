"""`vt rebuild`, `vt status`, `vt history`: the Claim Store and what it tells."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from vault_tools.cli import app
from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.ledger import fail
from vault_tools.errors import ExitCode, VtError


@app.command()
def rebuild(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Replay the Decision Ledger from scratch into the Claim Store.

    The store is .vt/claims.sqlite; rebuild also brings the knowledge-base claims blocks
    up to date. Never needed in normal use:
    every command catches up by itself; rebuild when in doubt.

    Example:

        vt rebuild --vault examples/vault

        vt rebuild --json
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.store.claims import ClaimStore
    from vault_tools.store.graph import sync_kb_blocks

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    problems: list[str] = []
    try:
        with ClaimStore.open(settings) as store:
            events = store.rebuild()
            claims = store.claim_count()
            seq, head = store.head()
            written = sync_kb_blocks(settings, store, problems)
    except VtError as exc:
        fail(exc)
    if reporter.mode == "json":
        reporter.json(
            {
                "events": events,
                "claims": claims,
                "ledger_head": {"seq": seq, "hash": head},
                "kb_notes_written": written,
                "kb_problems": problems,
            }
        )
        finish(ExitCode.OK)
    for problem in problems:
        reporter.error(f"{problem} (knowledge-base block not updated)")
    reporter.text(f"claim store rebuilt from the ledger: {events} events, {claims} claims")
    reporter.text(f"{len(written)} knowledge-base notes updated")
    finish(ExitCode.OK)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


@app.command()
def status(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """The review queue at a glance.

    Notes by review_action and review_state, previews gone stale, notes applied but
    edited since, notes whose decision the ledger does not record yet, claims in
    CONFLICT with their heads, the ledger head.

    Example:

        vt status --vault examples/vault

        vt status --json
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.review.status import status as run_status
    from vault_tools.store.claims import ClaimStore

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        with ClaimStore.open(settings) as store, reporter.progress("Reading notes") as progress:
            store.catch_up()
            report = run_status(settings, store, progress)
    except VtError as exc:
        fail(exc)
    failed = ExitCode.FINDINGS if report.unreadable else ExitCode.OK
    if reporter.mode == "json":
        reporter.json(report.to_json())
        finish(failed)
    reporter.text(f"{report.notes} review notes")
    reporter.text(f"  by review_action: {_counts(report.by_action)}")
    reporter.text(f"  by review_state:  {_counts(report.by_state)}")
    reporter.text(f"claims in the ledger: {_counts(report.claims)}")
    if report.stale_previews:
        reporter.text(
            "previews gone stale (drafts changed since vt preview; set "
            "REQUEST_REPAIR and run vt preview):",
            "yellow",
        )
        for item in report.stale_previews:
            reporter.text(f"  {item['path']} ({item['claim_id']}, {item['review_action']})")
    if report.edited_since_apply:
        reporter.text(
            "applied, but edited since (run vt apply to record the new decision):", "yellow"
        )
        for item in report.edited_since_apply:
            reporter.text(f"  {item['path']} ({item['claim_id']}): {item['reason']}")
    if report.disagreements:
        reporter.text("notes the ledger disagrees with (run vt apply):", "yellow")
        for item in report.disagreements:
            reporter.text(f"  {item['path']} ({item['claim_id']}): {item['reason']}")
    if report.conflicts:
        reporter.text("claims in CONFLICT (decided differently without seeing each other):", "red")
        for item in report.conflicts:
            reporter.text(f"  {item['claim_id']} ({item['note']}):")
            for head in item["heads"]:
                seen = (
                    " (not seen by the latest decision)"
                    if head["id"] in item["unseen"]
                    else " (latest)"
                )
                reporter.text(f"    {head['actor']} {head['action']} {head['id']}{seen}")
            reporter.text(f"    to settle: {item['settle']}")
    head = report.ledger_head
    reporter.text(f"ledger head: seq {head['seq']}, {head['hash']}")
    if report.unreadable:
        reporter.text("not read (each may be a review note; see vt validate):", "red")
        for finding in report.unreadable:
            reporter.text(f"  {finding.plain()}")
    finish(failed)


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _entry_lines(entry: Any) -> list[str]:
    from vault_tools.ledger.events import superseded_ids

    ev = entry.event
    lines = [f"#{ev['seq']}  {ev['ts']}  {ev['action']}  by {ev['actor']}  {ev['id']}"]
    if ev.get("supersedes"):
        lines.append(f"    supersedes {', '.join(superseded_ids(ev['supersedes']))}")
    if ev.get("reverts"):
        lines.append(f"    reverts {ev['reverts']}")
    if ev.get("comment"):
        lines.append(f"    comment: {ev['comment']}")
    claim = ev.get("claim")
    if isinstance(claim, dict):
        lines.append(
            f"    claim: {claim.get('atomic_claim')}  ({claim.get('epistemic_mode')}, "
            f"{claim.get('mapping_status')})"
        )
    if entry.is_repair:
        lines += _repair_lines(entry)
    return lines


def _repair_lines(entry: Any) -> list[str]:
    from vault_tools.review.history import V1_NOT_AVAILABLE

    if entry.v1_source is None:
        return [f"    V1 → V2: {V1_NOT_AVAILABLE}"]
    lines = [f"    V1 → V2 (V1 from {entry.v1_source}):"]
    from vault_tools.review.diff import plain_change_lines

    lines += [f"      {line}" for line in plain_change_lines(entry.claim_segments, entry.changes)]
    if not entry.changes:
        lines.append("      no changes")
    return lines


@app.command()
def history(
    claim_id: Annotated[
        str, typer.Argument(help="The claim, e.g. SA260324R-0125.", show_default=False)
    ],
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Every decision on a claim, oldest first.

    Who, when, action, comment, the event it superseded and the claim as it stood, with
    the V1 → V2 diff of each repair.

    Example:

        vt history SA260324R-0125 --vault examples/vault

        vt history DV1-0003 --json
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.review.history import claim_history
    from vault_tools.store.claims import ClaimStore

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        with ClaimStore.open(settings) as store:
            store.catch_up()
            found = claim_history(settings, store, claim_id)
    except VtError as exc:
        fail(exc)
    if found is None:
        reporter.error(
            f"vt: no decision on claim {claim_id} in the ledger "
            f"({settings.ledger}); see vt ledger log"
        )
        finish(ExitCode.FINDINGS)
    if reporter.mode == "json":
        reporter.json(found.to_json())
        finish(ExitCode.OK)
    reporter.text(
        f"{found.claim_id}: {found.status} ({found.note}), {len(found.entries)} decision(s)"
    )
    if len(found.heads) > 1:
        alike = "alike" if found.status != "CONFLICT" else "differently"
        reporter.text(
            f"  decided {alike} without seeing each other: "
            + "; ".join(f"{h['actor']} {h['action']} {h['id']}" for h in found.heads)
        )
    for entry in found.entries:
        for line in _entry_lines(entry):
            reporter.text(line)
    finish(ExitCode.OK)
