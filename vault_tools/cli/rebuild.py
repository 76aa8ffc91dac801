"""`vt rebuild`: replay the Decision Ledger into the Claim Store."""

from __future__ import annotations

from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, VtError
from vault_tools.findings import counted


@app.command()
def rebuild(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Replay the Decision Ledger from scratch into the Claim Store.

    The store is .vt/claims.sqlite; rebuild also brings the knowledge-base claims blocks
    up to date. Never needed in normal use:
    every command catches up by itself; rebuild when in doubt.

    Example:

        vt rebuild --vault ~/my-vault

        vt rebuild --json
    """
    from vault_tools.store.claims import ClaimStore
    from vault_tools.store.graph import sync_kb_blocks

    reporter = Reporter(as_json)
    settings = settings_for(vault, writes=True)
    problems: list[str] = []
    try:
        with ClaimStore.open(settings) as store:
            events = store.rebuild()
            claims = store.claim_count()
            seq, head = store.head()
            written = sync_kb_blocks(settings, store, problems)
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
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
    reporter.text(
        f"claim store rebuilt from the ledger: {counted(events, 'event')}, "
        f"{counted(claims, 'claim')}"
    )
    reporter.text(f"{counted(len(written), 'knowledge-base note')} updated")
    finish(ExitCode.OK)
