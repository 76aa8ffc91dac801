"""`vt revert EVENT_ID`: append a compensating REVERT event (docs/ledger.md).

The event is named by its id or, as git names a commit, by a prefix of it that no other
event's id shares (with or without `sha256:`, at least MIN_PREFIX hex digits).

Nothing is ever rewritten: the reverted event stays in the ledger, and the REVERT names
it (`reverts`) and supersedes the claim's latest event. Notes are not touched either: a
note still marked APPLIED for the reverted event is not applied again by `vt apply`
until its reviewer changes the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault_tools.config import Settings
from vault_tools.errors import RefusedError, UsageError, VtError
from vault_tools.findings import counted
from vault_tools.ledger.append import Ledger, Transaction
from vault_tools.ledger.events import load_json
from vault_tools.ledger.lost import check_not_lost
from vault_tools.ledger.reader import iter_lines
from vault_tools.review.actor import runner
from vault_tools.review.signer import signing_ledger
from vault_tools.store.refresh import RefreshResult, refresh
from vault_tools.vocabulary import POLICY, REVERT


class UnknownEventError(RefusedError):
    """No event of the ledger has this id (exit 1)."""


@dataclass(slots=True)
class RevertResult:
    event: dict  # the REVERT event appended (dry run: that would be appended)
    reverted: dict  # the event it reverts
    dry_run: bool = False
    refresh: RefreshResult | None = None
    refresh_error: VtError | None = None
    torn: Any = None  # ledger.TornInfo: a torn last line moved aside at the lock

    def to_json(self) -> dict[str, Any]:
        ev = self.event
        return {
            "reverted": self.reverted["id"],
            "claim_id": ev["claim_id"],
            "action": REVERT,
            "id": ev["id"],
            "seq": ev["seq"],
            "supersedes": ev["supersedes"],
            "dry_run": self.dry_run,
        }


MIN_PREFIX = 4  # hex digits, git's shortest abbreviation
_FULL = len("sha256:") + 64


def _normalised(event_id: str) -> str:
    """`event_id` as the ledger spells ids (`sha256:` and hex digits): a whole id, or a
    prefix of one."""
    event_id = event_id.strip()
    if not event_id.startswith("sha256:"):
        event_id = "sha256:" + event_id  # accept the bare hex a user copies from the log
    digits = event_id[7:]
    if not MIN_PREFIX <= len(digits) <= 64 or any(c not in "0123456789abcdef" for c in digits):
        raise UsageError(
            f"{event_id!r} is not an event id ('sha256:' and 64 hex digits, or the first "
            f"{MIN_PREFIX} or more of them)"
        )
    return event_id


def _resolved(txn: Transaction, prefix: str) -> str:
    """The one id of the ledger that starts with `prefix`; `prefix` itself when none does
    (refused later as unknown); a usage error naming them when several do."""
    needle = f'"id":"{prefix}'.encode()
    found: dict[str, dict] = {}
    for end, raw in iter_lines(txn.ledger.path):
        if end > txn.start.size:
            break
        if needle in raw:
            event = load_json(raw)
            if str(event.get("id", "")).startswith(prefix):
                found[event["id"]] = event
    if len(found) > 1:
        candidates = ", ".join(
            f"{ev['id']} (seq {ev['seq']}, {ev['claim_id']} {ev['action']})"
            for ev in sorted(found.values(), key=lambda ev: ev["seq"])
        )
        many = counted(len(found), "event")
        raise UsageError(f"{prefix} is ambiguous: the ids of {many} start with it: {candidates}")
    return next(iter(found), prefix)


def _find(txn: Transaction, event_id: str) -> tuple[dict | None, dict | None]:
    """(the event with this id, a REVERT that already reverts it), in one pass."""
    target: dict | None = None
    reverted_by: dict | None = None
    id_needle = f'"id":"{event_id}"'.encode()
    reverts_needle = f'"reverts":"{event_id}"'.encode()
    for end, raw in iter_lines(txn.ledger.path):
        if end > txn.start.size:
            break
        if id_needle in raw or reverts_needle in raw:
            event = load_json(raw)
            if not isinstance(event, dict):
                continue  # not an event: the gate has refused such a ledger already
            if event.get("id") == event_id:
                target = event
            elif event.get("reverts") == event_id:
                reverted_by = event
    return target, reverted_by


def revert_event(
    settings: Settings, event_id: str, comment: str = "", dry_run: bool = False
) -> RevertResult:
    """Append a REVERT of `event_id`; refused for an unknown id, a REVERT, or an event
    already reverted. Then brings the Claim Store up to date."""
    event_id = _normalised(event_id)
    ledger = signing_ledger(settings, root=settings.vault)
    if not ledger.path.exists():
        check_not_lost(ledger.path, ledger.state_dir)  # a ledger lost is not an empty one
        raise UnknownEventError(f"no event {event_id}: the ledger is empty", str(settings.ledger))
    result = _append(settings, ledger, event_id, comment, dry_run)
    if not dry_run:
        try:
            result.refresh = refresh(settings)
        except VtError as exc:
            result.refresh_error = exc
    return result


class _Abandon(Exception):
    """Raised inside a dry run's transaction so that it appends nothing."""


def _append(
    settings: Settings, ledger: Ledger, event_id: str, comment: str, dry_run: bool
) -> RevertResult:
    result: RevertResult | None = None
    try:
        with ledger.transaction() as txn:
            if len(event_id) < _FULL:
                event_id = _resolved(txn, event_id)
            target, reverted_by = _find(txn, event_id)
            _refusal(settings, event_id, target, reverted_by)
            assert target is not None
            event = txn.append(
                {
                    "action": REVERT,
                    "actor": runner(settings, ledger.signer).name,
                    "base": target["base"],
                    "checks": target["checks"],
                    "claim": None,
                    "claim_id": target["claim_id"],
                    "comment": comment,
                    "note": target["note"],
                    "preview": None,
                    "reverts": event_id,
                    "v": 1,
                }
            )
            result = RevertResult(event, target, dry_run, torn=txn.torn)
            if dry_run:
                raise _Abandon
    except _Abandon:
        pass
    assert result is not None
    return result


def _refusal(
    settings: Settings, event_id: str, target: dict | None, reverted_by: dict | None
) -> None:
    where = str(settings.ledger)
    if target is None:
        raise UnknownEventError(f"no event {event_id} in the ledger (see vt ledger log)", where)
    if target["action"] == POLICY:
        raise RefusedError(
            f"{event_id} is the signing policy, not a decision: change it with `vt signers`",
            where,
        )
    if target["action"] == REVERT:
        raise RefusedError(
            f"{event_id} is itself a REVERT; make a new decision instead of reverting a revert",
            where,
        )
    if reverted_by is not None:
        raise RefusedError(
            f"{event_id} is already reverted (by {reverted_by['id']}, seq {reverted_by['seq']})",
            where,
        )
