"""Merging ledgers (docs/ledger.md): the git merge driver's result, and a ledger left
with conflict markers resolved; both re-chain the events, keeping their ids."""

from __future__ import annotations

from collections.abc import Iterable

from vault_tools.errors import IntegrityError
from vault_tools.ledger.events import GENESIS, canonical, decision_id, event_problems, line_hash
from vault_tools.ledger.lines import _parse_line
from vault_tools.vocabulary import BASE_MARKER, conflict_marker


def _checked_event(raw: bytes, n: int, where: str) -> dict:
    """Parse a line to merge. Its own hash and id must hold: re-chaining recomputes the
    hash, so an edited line must be refused here or it would be laundered."""
    ev = _parse_line(raw, n, where)
    problems = event_problems(ev)
    if problems:
        raise IntegrityError(f"{where} line {n}: {problems[0]}", where, n)
    if line_hash(ev) != ev["hash"]:
        raise IntegrityError(f"{where} line {n}: hash mismatch (edited line?)", where, n)
    if decision_id(ev) != ev["id"]:
        raise IntegrityError(f"{where} line {n}: id mismatch (edited decision?)", where, n)
    return ev


def _events_of(data: bytes, where: str) -> list[dict]:
    lines = [ln for ln in data.split(b"\n") if ln.strip()]
    return [_checked_event(raw, n, where) for n, raw in enumerate(lines, 1)]


def _rechain(events: Iterable[dict], dedupe: bool = True) -> bytes:
    """Drop repeated ids, then recompute seq/prev/hash from line 1 (ids are kept)."""
    out: list[bytes] = []
    seen: set[str] = set()
    prev = GENESIS
    for ev in events:
        if dedupe and ev["id"] in seen:
            continue
        seen.add(ev["id"])
        ev = dict(ev, seq=len(out) + 1, prev=prev)
        ev.pop("hash", None)
        ev["hash"] = prev = line_hash(ev)
        out.append((canonical(ev) + "\n").encode())
    return b"".join(out)


def merge_ledgers(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """The git merge driver's result: ours (which starts with the common prefix), then
    theirs' events not already present, re-chained. Refuses a side that dropped an event
    of the merge base: the ledger is append-only, so that side rewrote history."""
    base_ev = _events_of(base, "base")
    ours_ev, theirs_ev = _events_of(ours, "ours"), _events_of(theirs, "theirs")
    for name, side in (("ours", ours_ev), ("theirs", theirs_ev)):
        ids = {ev["id"] for ev in side}
        for ev in base_ev:
            if ev["id"] not in ids:
                raise IntegrityError(
                    f"{name} no longer holds event {ev['id']} of the merge base: "
                    "ledger shortened or rewritten", name, None,
                )  # fmt: skip
    return _rechain(ours_ev + theirs_ev)


def resolve_ledger(text: bytes) -> bytes:
    """A ledger left with git conflict markers, or a `merge=union` result, turned into the
    merged ledger: events in file order (ours before theirs), the base section of a diff3
    conflict dropped, duplicates by id dropped, re-chained."""
    kept: list[bytes] = []
    in_base = False
    for raw in text.split(b"\n"):
        marker = conflict_marker(raw)
        if marker is not None:
            in_base = marker == BASE_MARKER
            continue
        if in_base or not raw.strip():
            continue
        kept.append(raw)
    events = [_checked_event(raw, n, "ledger") for n, raw in enumerate(kept, 1)]
    return _rechain(events)
