"""After the ledger changed: the Claim Store caught up, then the knowledge-base blocks
(docs/claim-store.md). Both are derived from the ledger alone; the store first, since
the blocks are read from it."""

from __future__ import annotations

from dataclasses import dataclass, field

from vault_tools.config import Settings
from vault_tools.store.claims import CatchUp, ClaimStore
from vault_tools.store.graph import sync_kb_blocks


@dataclass(slots=True)
class RefreshResult:
    catch_up: CatchUp
    kb_notes_written: list[str] = field(default_factory=list)
    kb_problems: list[str] = field(default_factory=list)  # e.g. a KB note edited meanwhile


def refresh(settings: Settings) -> RefreshResult:
    """Bring the store up to date with the ledger, then the knowledge-base blocks."""
    with ClaimStore.open(settings) as store:
        caught = store.catch_up()
        problems: list[str] = []
        written = sync_kb_blocks(settings, store, problems)
    return RefreshResult(caught, written, problems)
