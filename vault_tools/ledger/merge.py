"""Merging ledgers (docs/ledger.md): the git merge driver's result, and a ledger left
with conflict markers resolved; both re-chain the events, keeping their ids.

A side may itself hold git conflict markers (a teammate without the driver committed
them): every section between the markers is read, so no event of either side is lost."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from vault_tools.errors import IntegrityError
from vault_tools.ledger.events import (
    GENESIS,
    canonical,
    decision_id,
    event_problems,
    line_hash,
    superseded_ids,
)
from vault_tools.ledger.problems import Problem
from vault_tools.ledger.reader import parse_line
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.ledger.verify import verify_ledger
from vault_tools.vocabulary import conflict_marker


def _checked_event(raw: bytes, n: int, where: str) -> dict:
    """Parse a line to merge. Its own hash and id must hold: re-chaining recomputes the
    hash, so an edited line must be refused here or it would be laundered."""
    ev = parse_line(raw, n, where)
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


def verify_bytes(data: bytes, policy: SignaturePolicy | None = None) -> list[Problem]:
    """The problems `vt ledger verify` finds in a ledger holding `data`: verify_ledger
    itself, on a private copy with a private memory (no vault's `.vt/` is read or
    touched); signatures are checked against `policy` (None: the chain alone)."""
    with tempfile.TemporaryDirectory(prefix="vt-verify-") as tmp:
        copy = Path(tmp) / "ledger.jsonl"
        copy.write_bytes(data)
        return verify_ledger(copy, Path(tmp) / "state", policy).problems


_LINE_PREFIX = re.compile(r"^line \d+: ")


def _refuse_unverified(where: str, data: bytes) -> None:
    """IntegrityError for the first problem of `data` as a ledger of its own: a side to
    merge must verify by verify's own rules (a side with conflict markers is read section
    by section instead, and its events are held to the rules in the merged result)."""
    if any(conflict_marker(raw) for raw in data.split(b"\n")):
        return
    problems = verify_bytes(data)
    if problems:
        first = problems[0]
        raise IntegrityError(
            f"{_LINE_PREFIX.sub('', first.message)}: {where} does not verify "
            "(`vt ledger verify` finds the same)", where, first.line,
        )  # fmt: skip


def _checked_result(merged: bytes, events: list[dict], sides: dict[str, set[str]]) -> bytes:
    """`merged` when it verifies by verify's rules; else IntegrityError naming the side
    whose event breaks them (an event superseding an id no side holds, for one)."""
    problems = verify_bytes(merged)
    if not problems:
        return merged
    first = problems[0]
    what = _LINE_PREFIX.sub("", first.message)
    event = events[first.line - 1] if first.line and first.line <= len(events) else None
    if event is None:
        raise IntegrityError(f"the merged ledger would not verify ({what})", "merged", None)
    where = next((name for name, ids in sides.items() if event["id"] in ids), "merged")
    raise IntegrityError(
        f"its event {event['id']} would not verify in the merged ledger ({what})", where
    )


def merge_ledgers(base: bytes, ours: bytes, theirs: bytes) -> bytes:
    """The git merge driver's result: ours (which starts with the common prefix), then
    theirs' events not already present, re-chained. Refuses a side that dropped an event
    of the merge base (the ledger is append-only, so that side rewrote history), a side
    that does not verify, and a result that would not: the driver never writes what
    `vt ledger verify` rejects."""
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
    _refuse_unverified("ours", ours)
    _refuse_unverified("theirs", theirs)
    return _merged([("ours", ours_ev), ("theirs", theirs_ev)])


def _merged(sides: list[tuple[str, list[dict]]]) -> bytes:
    """The sides' events in causal order, re-chained, held to verify's rules."""
    events = _causal_order([ev for _, side in sides for ev in side])  # each id once
    ids: dict[str, set[str]] = {}
    for name, side in sides:
        ids.setdefault(name, set()).update(ev["id"] for ev in side)
    return _checked_result(_rechain(events, dedupe=False), events, ids)


def union_ledgers(sides: Iterable[tuple[str, bytes]]) -> bytes:
    """Every event of every side (named for the error messages), in the order the sides
    come, each id once, re-chained: `vt ledger resolve` over the working file and the
    versions git holds of a merge in progress. A result that would not verify is
    refused, naming the side of the event that breaks verify's rules."""
    return _merged([(where, events_of(data, where)) for where, data in sides])


def resolve_ledger(text: bytes) -> bytes:
    """A ledger left with git conflict markers, or a `merge=union` result, turned into the
    merged ledger: events in file order (ours before theirs; a diff3 base section holds
    nothing new), duplicates by id dropped, re-chained."""
    return union_ledgers([("ledger", text)])
