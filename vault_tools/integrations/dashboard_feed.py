"""The Review Dashboard as `vt watch` refreshes it after each save.

A refresh after a save reads and checks again only the notes saved since the refresh
before (each checked as `vt validate` checks it, with the context of the last
gathering); what the dashboard shows of every other note (its place in the queue, its
findings) and of the Claim Store's graph is kept from that refresh. Whenever that could
be wrong, the refresh gathers everything as `vt report` does (`dashboard.collect`): the
first refresh, a note added, removed or renamed, a knowledge-base note changed, a
resync (all of which `changed(None)` says), a saved note that is no review note any more,
a claim id shared with another note before or after the save, and a ledger that moved on.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable

from vault_tools.checks.context import CheckContext, make_context
from vault_tools.checks.file_checks import check_file
from vault_tools.config import Settings
from vault_tools.findings import Finding, sort_key
from vault_tools.integrations.dashboard import (
    Dashboard,
    QueueItem,
    collect,
    queue_item,
    render,
    write_dashboard,
)
from vault_tools.store.claims import ClaimStore

DUPLICATE = "claim-id-duplicate"  # the one finding that spans notes


class Feed:
    """What one refresh keeps for the next, and the notes saved since."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.dash: Dashboard | None = None  # the last refresh's, None: gather everything
        self.head: tuple | None = None  # the Claim Store's head it was gathered at
        self.notes: dict[str, QueueItem] = {}
        self.findings: dict[str, list[Finding]] = {}
        self.pending: set[str] = set()
        self.ctx: CheckContext | None = None  # what the saved notes are checked with
        self.claim_ids: Counter[str] = Counter()  # of `notes`

    def changed(self, paths: Iterable[str] | None) -> None:
        """Notes saved since the last refresh; None: anything may have changed."""
        if paths is None:
            self.dash = None
        else:
            self.pending.update(paths)

    def refresh(self) -> bool:
        """Rewrite the dashboard when what it shows changed; True when written."""
        with ClaimStore.open(self.settings) as store:
            store.catch_up()
            dash = self._update(store) if self.dash is not None else None
            if dash is None:
                dash = self._gather(store)
        self.pending.clear()
        return write_dashboard(self.settings, render(dash)).written

    def _gather(self, store: ClaimStore) -> Dashboard:
        self.dash = None  # until it is whole
        dash = collect(self.settings, store)
        self.ctx = make_context(self.settings)
        self.notes = {item.path: item for item in dash.notes}
        self.claim_ids = Counter(item.claim_id for item in dash.notes)
        self.findings = {}
        for finding in dash.findings:
            self.findings.setdefault(finding.path, []).append(finding)
        self.head, self.dash = store.head(), dash
        return dash

    def _update(self, store: ClaimStore) -> Dashboard | None:
        """The last refresh's dashboard with the saved notes read and checked again (as
        `vt validate` checks a note); None when only gathering everything is surely right."""
        assert self.dash is not None and self.ctx is not None
        if store.head() != self.head:
            return None
        items: dict[str, QueueItem] = {}
        found: dict[str, list[Finding]] = {}
        claim_ids = self.claim_ids.copy()
        for path in sorted(self.pending):
            before = self.notes.get(path)
            if before is None or any(f.code == DUPLICATE for f in self.findings.get(path, ())):
                return None
            item = queue_item(self.settings, path)
            result = check_file(self.settings, self.ctx, path)
            if item is None or not result.digest or result.claim_id != item.claim_id:
                return None  # gone, unreadable, no review note, or a claim_id not plain
            claim_ids[before.claim_id] -= 1
            claim_ids[item.claim_id] += 1
            if claim_ids[item.claim_id] > 1:
                return None  # its claim_id now shared: the duplicate's finding spans notes
            items[path], found[path] = item, sorted(result.findings, key=sort_key)
        self.notes.update(items)
        self.findings.update(found)
        self.claim_ids = claim_ids
        self.dash = dataclasses.replace(
            self.dash,
            notes=list(self.notes.values()),
            claims=store.status_counts(),
            conflicts=store.conflicts(),
            findings=[f for path in sorted(self.findings) for f in self.findings[path]],
        )
        return self.dash
