"""Merging ledgers (docs/ledger.md): the git merge driver's result, and a ledger left
with conflict markers resolved; both re-chain the events, keeping their ids.

A side may itself hold git conflict markers (a teammate without the driver committed
them): every section between the markers is read, so no event of either side is lost."""

from __future__ import annotations

from collections.abc import Iterable

from vault_tools.errors import IntegrityError
from vault_tools.ledger.events import (
    GENESIS,
    canonical,
    decision_id,
    event_problems,
    line_hash,
    superseded_ids,
)
from vault_tools.ledger.lines import _parse_line
from vault_tools.vocabulary import conflict_marker


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


def event_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(line number, bytes) of every event line, whichever side of git conflict markers
    it stands on (ours, theirs, and a diff3 base section alike): markers and blank lines
    are all that is left out. Every line there is a whole event with its own hash and id."""
    return [
        (n, raw)
        for n, raw in enumerate(data.split(b"\n"), 1)
        if raw.strip() and conflict_marker(raw) is None
    ]


def events_of(data: bytes, where: str) -> list[dict]:
    """The checked events of a ledger, conflict markers or not, in file order."""
    return [_checked_event(raw, n, where) for n, raw in event_lines(data)]


def _causal_order(events: list[dict]) -> list[dict]:
    """The events in the given order, except that one superseding or reverting another
    comes after it (a section read out of order must not break verify's rule that
    `supersedes` names earlier events). Repeated ids: the first is kept."""
    by_id: dict[str, dict] = {}
    for ev in events:
        by_id.setdefault(ev["id"], ev)
    placed: set[str] = set()
    out: list[dict] = []

    def place(ev: dict) -> None:
        placed.add(ev["id"])  # before its dependencies: a cycle cannot loop forever
        for dep in (*superseded_ids(ev["supersedes"]), ev.get("reverts")):
            if dep in by_id and dep not in placed:
                place(by_id[dep])
        out.append(ev)

    for ev in by_id.values():
        if ev["id"] not in placed:
            place(ev)
    return out


def _rechain(events: Iterable[dict], dedupe: bool = True) -> bytes:
    """Drop repeated ids, then recompute seq/prev/hash from line 1 (ids and ts kept)."""
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
    base_ev = events_of(base, "base")
    ours_ev, theirs_ev = events_of(ours, "ours"), events_of(theirs, "theirs")
    for name, side in (("ours", ours_ev), ("theirs", theirs_ev)):
        ids = {ev["id"] for ev in side}
        for ev in base_ev:
            if ev["id"] not in ids:
                raise IntegrityError(
                    f"{name} no longer holds event {ev['id']} of the merge base: "
                    "ledger shortened or rewritten", name, None,
                )  # fmt: skip
    return _rechain(_causal_order(ours_ev + theirs_ev))


def union_ledgers(sides: Iterable[tuple[str, bytes]]) -> bytes:
    """Every event of every side (named for the error messages), in the order the sides
    come, each id once, re-chained: `vt ledger resolve` over the working file and the
    versions git holds of a merge in progress."""
    events: list[dict] = []
    for where, data in sides:
        events += events_of(data, where)
    return _rechain(_causal_order(events))


def resolve_ledger(text: bytes) -> bytes:
    """A ledger left with git conflict markers, or a `merge=union` result, turned into the
    merged ledger: events in file order (ours before theirs; a diff3 base section holds
    nothing new), duplicates by id dropped, re-chained."""
    return union_ledgers([("ledger", text)])
