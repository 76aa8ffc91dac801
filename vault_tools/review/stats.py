"""`vt stats`: what the decisions say about the extraction pipeline, the review and the
review assist (docs/stats.md).

Everything is counted from the Decision Ledger's events, so a `vt rebuild` (or a fresh
clone) gives the same numbers. Two facts the events do not hold are read from the review
note, and only these: a claim's section of its source article, and the V1 a `REPAIR`
changed when no earlier event of the claim records it (the note's V1 counts only when its
hash is the event's `base`, so it is the V1 the decision was made on).

Fields the pipeline adds to an event (`provenance`, `imported_at`, `assist`) are read
with `.get`: a ledger written before them counts its claims as "unknown run".
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import combinations
from typing import Any

from vault_tools.config import Settings
from vault_tools.infra.gcpause import gc_paused
from vault_tools.ledger.events import load_json, superseded_ids
from vault_tools.ledger.heads import ClaimState, claim_states
from vault_tools.ledger.reader import iter_lines
from vault_tools.notes.identity import Signature, stat_signature
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import read_file
from vault_tools.review.agreement import cohen_kappa, krippendorff_alpha
from vault_tools.review.claim_record import claim_base, v1_claim
from vault_tools.review.stats_cache import Facts, StatsCache
from vault_tools.store.changes import PARTS, changed_parts
from vault_tools.vocabulary import (
    ACCEPT,
    ACCEPTED,
    CHECK_KEYS,
    POLICY,
    REJECT,
    REJECTED,
    REPAIR,
    REPAIRED,
)

UNKNOWN = "unknown"
OUTCOMES = (ACCEPTED, REPAIRED, REJECTED)
DECISIONS = (ACCEPT, REPAIR, REJECT)
PROVENANCE_KEYS = ("run", "model", "prompt_version")
GROUPS = (*PROVENANCE_KEYS, "article", "section")
# Below this many claims an agreement figure is "too few to say": with 20 claims one
# claim decided the other way moves kappa by about 0.1, the width of a whole band of the
# usual reading (0.4-0.6 moderate, 0.6-0.8 substantial).
MIN_CLAIMS = 20
TOO_FEW = "too few to say"
_SECTION = re.compile(rb"^- Section:[ \t]*(.*?)[ \t]*\r?$", re.MULTILINE)


def reviewer_of(event: dict) -> str:
    """Who decided: the note's reviewer when a recorder recorded for them, else the actor."""
    return str(event.get("decided_by") or event["actor"])


def article_of(claim_id: str) -> str:
    """The source article as the claim id names it: the part before its last `-`
    (`SA260324R-0125` → `SA260324R`)."""
    head, dash, _ = claim_id.rpartition("-")
    return head if dash and head else UNKNOWN


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _seconds(start: str, end: str) -> float | None:
    try:
        a = datetime.fromisoformat(start)
        b = datetime.fromisoformat(end)
        if (a.tzinfo is None) != (b.tzinfo is None):
            return None  # a time without its zone cannot be placed beside one with
        return (b - a).total_seconds()
    except (TypeError, ValueError):
        return None


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank percentile of sorted `values` (p in 0..100): the smallest value
    at or below which p% of the values lie."""
    return values[max(0, math.ceil(p / 100 * len(values)) - 1)]


@dataclass(slots=True)
class _Rating:
    id: str
    reviewer: str
    action: str
    supersedes: tuple[str, ...]


@dataclass(slots=True)
class _ClaimTally:
    """What one pass over the ledger keeps of a claim beyond its state."""

    provenance: dict | None = None
    imported_at: str | None = None
    first_decision_ts: str | None = None
    # ACCEPT events record the V1 itself, and their `base` is its hash
    v1_by_base: dict[str, dict] = field(default_factory=dict)
    ratings: list[_Rating] = field(default_factory=list)
    supersedes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # by event id

    def saw(self, later: str, earlier: str) -> bool:
        """Did event `later` see event `earlier`: is it among what `later` superseded,
        or what those saw? Searched in a loop over the claim's own events, so a claim
        decided thousands of times in a row needs no deep recursion."""
        stack, visited = list(self.supersedes.get(later, ())), set()
        while stack:
            event = stack.pop()
            if event == earlier:
                return True
            if event not in visited:
                visited.add(event)
                stack.extend(self.supersedes.get(event, ()))
        return False


@dataclass(slots=True)
class NoteContext:
    """What a review note adds that its events do not hold."""

    section: str | None = None
    v1: dict | None = None


def read_note_facts(settings: Settings, path: str, want_v1: bool) -> tuple[Signature | None, Facts]:
    """The stat signature of the note at vault-relative `path` and what it adds: its
    section and, when asked, its V1 claim; (None, nothing) when the note is gone or
    unreadable."""
    try:
        raw, info = read_file(settings.vault / path, settings.max_note_bytes)
    except OSError:
        return None, (None, want_v1, None)
    note = parse_note(raw, path) if want_v1 else None
    return stat_signature(info), facts_of(raw, note)


def facts_of(raw: bytes, note: Note | None) -> Facts:
    """What a note's bytes add to the stats: its section, and its V1 claim when `note`
    (those bytes parsed) is given."""
    found = _SECTION.search(raw)
    section = found.group(1).decode("utf-8", "replace") if found and found.group(1) else None
    return (section, note is not None, v1_claim(note) if note is not None else None)


@dataclass(slots=True)
class Stats:
    """The figures, JSON-ready (docs/stats.md lists every field)."""

    events: int
    claims: int
    head: dict[str, Any]
    pipeline: dict[str, Any]
    review: dict[str, Any]
    assist: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stats:
        return cls(
            data["events"],
            data["claims"],
            data["ledger_head"],
            data["pipeline"],
            data["review"],
            data["assist"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "claims": self.claims,
            "ledger_head": self.head,
            "pipeline": self.pipeline,
            "review": self.review,
            "assist": self.assist,
        }


class _Pass:
    """One pass over the events: claim states, and what each claim keeps for the stats."""

    def __init__(self) -> None:
        self.events = 0
        self.seq = 0
        self.hash = ""
        self.claims: dict[str, _ClaimTally] = {}
        self.per_day: Counter[tuple[str, str]] = Counter()

    def feed(self, events: Iterable[dict]) -> Iterator[dict]:
        for ev in events:
            self.events += 1
            self.seq, self.hash = ev["seq"], ev["hash"]
            if ev["action"] != POLICY:
                self._keep(ev)
                yield ev

    def _keep(self, ev: dict) -> None:
        claim = self.claims.get(ev["claim_id"])
        if claim is None:
            claim = self.claims[ev["claim_id"]] = _ClaimTally()
        provenance = ev.get("provenance")
        if isinstance(provenance, dict):
            claim.provenance = provenance
        imported = ev.get("imported_at")
        if isinstance(imported, str) and claim.imported_at is None:
            claim.imported_at = imported
        supersedes = superseded_ids(ev["supersedes"])
        if supersedes:
            claim.supersedes[ev["id"]] = supersedes
        action = ev["action"]
        if action not in DECISIONS:
            return
        self.per_day[(ev["ts"][:10], reviewer_of(ev))] += 1
        if claim.first_decision_ts is None:
            claim.first_decision_ts = ev["ts"]
        if action == ACCEPT and isinstance(ev.get("claim"), dict):
            claim.v1_by_base.setdefault(ev["base"], ev["claim"])
        claim.ratings.append(_Rating(ev["id"], reviewer_of(ev), action, supersedes))


def first_ratings(claim: _ClaimTally) -> dict[str, _Rating]:
    """Each reviewer's first decision on the claim, in ledger order: their verdict."""
    first: dict[str, _Rating] = {}
    for rating in claim.ratings:
        first.setdefault(rating.reviewer, rating)
    return first


def unseen(claim: _ClaimTally, a: _Rating, b: _Rating) -> bool:
    """Were two decisions made without seeing each other (neither saw the other)?"""
    return not claim.saw(b.id, a.id) and not claim.saw(a.id, b.id)


# a claim with more reviewers than this is judged by its first ones only: the largest
# group is found by trying every subset, and 2^12 subsets is plenty for a review team
_MOST_REVIEWERS = 12


def blind_ratings(claim: _ClaimTally) -> dict[str, str]:
    """Reviewer → verdict for the largest group of reviewers whose first decisions on the
    claim saw none of each other's (concurrent heads, on two branches or in two clones);
    of groups as large, the one decided first. Empty when fewer than two."""
    first = list(first_ratings(claim).values())[:_MOST_REVIEWERS]
    for size in range(len(first), 1, -1):
        for group in combinations(first, size):
            if all(unseen(claim, a, b) for a, b in combinations(group, 2)):
                return {r.reviewer: r.action for r in group}
    return {}


def _figure(value: Any, claims: int, min_claims: int) -> dict[str, Any]:
    """An agreement figure with the claims behind it; none below `min_claims`."""
    if claims < min_claims:
        return {"claims": claims, "value": None, "verdict": TOO_FEW}
    if value is None:
        return {"claims": claims, "value": None, "verdict": "undefined (one verdict only)"}
    return {"claims": claims, "value": round(float(value), 4), "verdict": None}


def agreement_units(
    claims: Iterable[_ClaimTally],
) -> tuple[list[list[tuple[str, str]]], dict[tuple[str, str], list[tuple[str, str]]]]:
    """The verdicts agreement is computed on: each claim's largest unseen group (for
    alpha), and each pair of reviewers' verdicts where the two decided unseen (kappa)."""
    units: list[list[tuple[str, str]]] = []
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for claim in claims:
        if len(claim.ratings) < 2:
            continue
        blind = blind_ratings(claim)
        if blind:
            units.append(sorted(blind.items()))
        # a pair counts wherever the two decided unseen, whatever the others saw
        ordered = sorted(first_ratings(claim).items())
        for (a, ra), (b, rb) in combinations(ordered, 2):
            if unseen(claim, ra, rb):
                pairs.setdefault((a, b), []).append((ra.action, rb.action))
    return units, pairs


def agreement(
    units: list[list[tuple[str, str]]],
    pairs: dict[tuple[str, str], list[tuple[str, str]]],
    min_claims: int = MIN_CLAIMS,
) -> dict[str, Any]:
    """Cohen's kappa per pair of reviewers and Krippendorff's alpha over all, on the
    claims decided without seeing each other."""
    pair_rows = []
    for (a, b), verdicts in sorted(pairs.items()):
        same = sum(1 for x, y in verdicts if x == y)
        pair_rows.append(
            {
                "reviewers": [a, b],
                "agreed": same,
                "kappa": _figure(cohen_kappa(verdicts), len(verdicts), min_claims),
            }
        )
    return {
        "min_claims": min_claims,
        "claims": len(units),
        "pairs": pair_rows,
        "alpha": {
            "reviewers": len({r for unit in units for r, _ in unit}),
            **_figure(
                krippendorff_alpha([[v for _, v in u] for u in units]), len(units), min_claims
            ),  # fmt: skip
        },
    }


def _outcome_row(value: str, counts: Counter[str]) -> dict[str, Any]:
    decided = sum(counts[o] for o in OUTCOMES)
    return {
        "value": value,
        "claims": sum(counts.values()),
        "decided": decided,
        **{o.lower(): counts[o] for o in OUTCOMES},
        "open": sum(counts.values()) - decided,
        **{f"{o.lower()}_rate": _rate(counts[o], decided) for o in OUTCOMES},
    }


def _deciding_event(state: ClaimState) -> dict:
    # several heads only when they agree (else the status is CONFLICT): the last one
    return state.heads[-1]


@dataclass(slots=True)
class Tally:
    """The counts of a share of the claims: added up share by share (`merge`), then
    turned into figures (`figures`). Plain values only, so a helper process can send its
    share back (`pack`, `unpack`)."""

    events: int = 0
    claims: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    groups: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # group, value, status
    failed: Counter[tuple[str, str]] = field(default_factory=Counter)  # status, check
    parts: Counter[str] = field(default_factory=Counter)
    repairs: int = 0
    without_v1: int = 0
    waits: list[float] = field(default_factory=list)
    per_day: Counter[tuple[str, str]] = field(default_factory=Counter)
    codes: Counter[tuple[str, str]] = field(default_factory=Counter)  # code, status
    warned: int = 0
    missed: int = 0
    not_recorded: int = 0
    units: list[list[tuple[str, str]]] = field(default_factory=list)  # (reviewer, verdict)
    pairs: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)

    _COUNTERS = ("outcomes", "groups", "failed", "parts", "per_day", "codes")
    _NUMBERS = ("events", "claims", "repairs", "without_v1", "warned", "missed", "not_recorded")

    def merge(self, other: Tally) -> None:
        for name in self._COUNTERS:
            getattr(self, name).update(getattr(other, name))
        for name in self._NUMBERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.waits += other.waits
        self.units += other.units
        for pair, verdicts in other.pairs.items():
            self.pairs.setdefault(pair, []).extend(verdicts)

    def pack(self) -> tuple:
        counters = tuple(dict(getattr(self, name)) for name in self._COUNTERS)
        numbers = tuple(getattr(self, name) for name in self._NUMBERS)
        return counters, numbers, self.waits, self.units, self.pairs

    @classmethod
    def unpack(cls, packed: tuple) -> Tally:
        counters, numbers, waits, units, pairs = packed
        tally = cls(waits=list(waits), units=list(units), pairs=dict(pairs))
        for name, values in zip(cls._COUNTERS, counters, strict=True):
            getattr(tally, name).update(values)
        for name, value in zip(cls._NUMBERS, numbers, strict=True):
            setattr(tally, name, value)
        return tally


def compute(
    events: Iterable[dict],
    note_facts: Any = None,
    min_claims: int = MIN_CLAIMS,
) -> Stats:
    """The stats of a ledger's events (in ledger order). `note_facts(path, want_v1)`
    returns a NoteContext for a note path (None: notes are not read)."""
    run = _Pass()
    result = figures(tally(events, note_facts, run), min_claims)
    result.head = {"seq": run.seq, "hash": run.hash}
    return result


def tally(events: Iterable[dict], note_facts: Any = None, run: _Pass | None = None) -> Tally:
    """The counts of the claims of `events` (every event of each, in ledger order)."""
    # parsed events form no cycles (infra/gcpause.py): the many objects json.loads
    # creates and the tallies keep are not scanned again and again
    with gc_paused():
        return _tally(events, note_facts, run or _Pass())


def _tally(events: Iterable[dict], note_facts: Any, run: _Pass) -> Tally:
    states = claim_states(run.feed(events))
    t = Tally(per_day=run.per_day)
    for claim_id, state in states.items():
        kept = run.claims[claim_id]
        status = state.status
        t.outcomes[status] += 1
        want_v1 = False
        decider = _deciding_event(state) if status in OUTCOMES else None
        v1 = None
        if status == REPAIRED and decider is not None:
            v1 = kept.v1_by_base.get(decider["base"])
            want_v1 = v1 is None
        facts = (
            note_facts(state.latest["note"], want_v1) if note_facts is not None else NoteContext()
        )
        if want_v1 and facts.v1 is not None and decider is not None:
            v1 = facts.v1 if claim_base(facts.v1) == decider["base"] else None
        provenance = kept.provenance or {}
        for key in PROVENANCE_KEYS:
            value = provenance.get(key)
            t.groups[key, value if isinstance(value, str) and value else UNKNOWN, status] += 1
        t.groups["article", article_of(claim_id), status] += 1
        t.groups["section", facts.section or UNKNOWN, status] += 1
        if kept.imported_at and kept.first_decision_ts:
            wait = _seconds(kept.imported_at, kept.first_decision_ts)
            if wait is not None and wait >= 0:
                t.waits.append(wait)
        if decider is not None:
            _tally_decision(t, status, decider, v1)
    t.events, t.claims = run.events, len(states)
    t.units, t.pairs = agreement_units(run.claims.values())
    return t


def _tally_decision(t: Tally, status: str, decider: dict, v1: dict | None) -> None:
    if status in (REPAIRED, REJECTED):
        checks = decider.get("checks") or {}
        t.failed.update((status, k) for k in CHECK_KEYS if checks.get(k) is False)
    if status == REPAIRED:
        t.repairs += 1
        if v1 is None:
            t.without_v1 += 1
        else:
            t.parts.update(changed_parts(v1, decider.get("claim")))
    carried = decider.get("assist")
    if not isinstance(carried, list):
        t.not_recorded += 1
        return
    t.codes.update((str(code), status) for code in carried)
    if carried:
        t.warned += 1
    elif status != ACCEPTED:
        t.missed += 1


def figures(t: Tally, min_claims: int = MIN_CLAIMS) -> Stats:
    """The figures of the counts of every claim."""
    waits = sorted(t.waits)
    groups: dict[str, dict[str, Counter[str]]] = {g: {} for g in GROUPS}
    for (group, value, status), n in t.groups.items():
        groups[group].setdefault(value, Counter())[status] += n
    codes: dict[str, Counter[str]] = {}
    for (code, status), n in t.codes.items():
        codes.setdefault(code, Counter())[status] += n
    pipeline = {
        "outcomes": {s.lower(): n for s, n in sorted(t.outcomes.items())},
        "by": {g: [_outcome_row(v, c) for v, c in sorted(groups[g].items())] for g in GROUPS},
        "failed_checks": {
            o.lower(): {
                "claims": t.outcomes[o],
                "checks": {k: t.failed[o, k] for k in CHECK_KEYS},
            }
            for o in (REPAIRED, REJECTED)
        },
        "changed_parts": {
            "repairs": t.repairs,
            "without_v1": t.without_v1,
            "parts": {p: t.parts[p] for p in PARTS},
        },
    }
    review = {
        "decisions_per_day": [
            {"day": day, "reviewer": who, "decisions": n}
            for (day, who), n in sorted(t.per_day.items())
        ],
        "import_to_decision": {
            "claims": len(waits),
            "median_seconds": statistics.median(waits) if waits else None,
            "p90_seconds": percentile(waits, 90) if waits else None,
        },
        "agreement": agreement(t.units, t.pairs, min_claims),
    }
    assist = {
        "codes": [
            {
                "code": code,
                "notes": sum(c[o] for o in OUTCOMES),
                **{o.lower(): c[o] for o in OUTCOMES},
                "precision": _rate(c[REPAIRED] + c[REJECTED], sum(c[o] for o in OUTCOMES)),
            }
            for code, c in sorted(codes.items())
        ],
        "decided": {o.lower(): t.outcomes[o] for o in OUTCOMES},
        "warned": t.warned,
        "missed": t.missed,
        "not_recorded": t.not_recorded,
    }
    return Stats(t.events, t.claims, {}, pipeline, review, assist)


def ledger_events(settings: Settings, stop_seq: int) -> Iterator[dict]:
    """The ledger's events up to `stop_seq` (the head the gate trusted), in order."""
    if stop_seq <= 0:
        return
    for _end, raw in iter_lines(settings.ledger_path):
        # decoded here: json.loads of bytes first guesses their encoding, line by line
        ev = load_json(raw.decode("utf-8"))
        yield ev
        if ev["seq"] >= stop_seq:
            return


def vault_stats(
    settings: Settings,
    min_claims: int = MIN_CLAIMS,
    known: Mapping[str, tuple[Signature, Facts]] | None = None,
) -> Stats:
    """The stats of the vault's ledger, once the gate has trusted it; from the cache in
    `.vt/` when neither the ledger nor a note they read changed since. `known`: notes'
    facts (`facts_of`, under the stat signature of the bytes they were made from) that a
    run which read the notes already made, taken instead of reading those notes again."""
    from vault_tools import __version__
    from vault_tools.store.claims import ClaimStore

    with ClaimStore.open(settings) as store:
        store.catch_up()
        seq, head = store.head()
    cache = StatsCache.read(settings.state_dir)
    key = f"{__version__} {seq} {head} {min_claims}"
    kept = cache.figures_for(key, settings.vault)
    if kept is not None:
        return Stats.from_json(kept)

    def read(path: str, want_v1: bool) -> tuple[Signature | None, Facts]:
        made = known.get(path) if known is not None else None
        if made is not None and (made[1][1] or not want_v1):
            return made
        return read_note_facts(settings, path, want_v1)

    def facts(path: str, want_v1: bool) -> NoteContext:
        section, _, v1 = cache.facts(settings.vault, path, want_v1, read)
        return NoteContext(section, v1)

    result = compute(ledger_events(settings, seq), facts, min_claims)
    result.head = {"seq": seq, "hash": head}
    cache.save(key, result.to_json())
    return result
