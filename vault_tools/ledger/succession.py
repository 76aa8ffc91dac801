"""The ledger through git history (docs/ledger.md#the-ledger-through-git-history): the
rule each commit's ledger must follow against its parents' ledgers, shared by the
pre-commit hook (the commit being made) and `vt ledger audit` (every commit that touched
the ledger), and the in-memory verifier the audit runs on each version of the ledger.

The rule. A commit with one parent may only append lines to the parent's ledger: the
parent's bytes are the start of the commit's. A merge keeps every event of every parent,
and the order of each: the first parent's events stand in its order, and so do each later
parent's events that the parents before it lack (the merge driver writes ours, then
theirs' new events, re-chained; `vt ledger resolve` keeps a conflicted file's order).
Events new in the merge itself may stand anywhere; `seq`, `prev` and `hash` are
recomputed, ids never change. A ledger that does not verify but whose every line is
itself a sound event (conflict markers committed by a clone without the merge driver, or
a `merge=union` result) is unresolved: it is held, and its child is held to it, by the
merge rule, since re-chaining it is the fix, not a rewrite.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from vault_tools.findings import Finding, counted, error
from vault_tools.ledger.events import (
    GENESIS,
    canonical,
    decision_id,
    event_problems,
    line_digests,
    line_hash,
    load_json,
    quick_ok,
    superseded_ids,
)
from vault_tools.vocabulary import POLICY, conflict_marker

if TYPE_CHECKING:  # the hook imports this module on a commit that stages the ledger
    from vault_tools.ledger.policy import PolicyChecker, PolicyStep
    from vault_tools.ledger.signatures import SignaturePolicy

# codes of the hook's ledger findings (the note findings use the CODES of findings.py)
LEDGER_REWRITTEN = "ledger-rewritten"
LEDGER_CONFLICT = "ledger-conflict-markers"
LEDGER_INVALID = "ledger-invalid"

HistoryProblem = tuple[int | None, str]  # (line of the ledger, message)
_S = TypeVar("_S", bytes, list[str])


# ---------------------------------------------------------------- one version, verified


class _Events:
    """The events (ids, claims) of ledger versions that share their first lines: a child
    that only appends extends its parent's lists in place, so a history of thousands of
    commits keeps one list per line of descent, not one per commit."""

    __slots__ = ("claims", "ends", "hashes", "ids", "judge", "steps", "where")

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.claims: list[str] = []
        self.where: dict[str, int] = {}  # id -> index of its first line
        # of a version that verifies, where each line ends and its hash: any of its
        # prefixes is then a version of its own at no cost (`prefix_version`)
        self.ends: list[int] = []
        self.hashes: list[str] = []
        # the POLICY events among them (policy.py), and the checker judging by them
        self.steps: list[PolicyStep] = []
        self.judge: PolicyChecker | None = None

    def fork(self, count: int) -> _Events:
        """A copy of the first `count` events, for a version that goes its own way."""
        copy = _Events()
        copy.ids, copy.claims = self.ids[:count], self.claims[:count]
        copy.ends, copy.hashes = self.ends[:count], self.hashes[:count]
        copy.where = {i: n for n, i in enumerate(copy.ids) if i not in copy.where}
        copy.steps = [s for s in self.steps if s.seq <= count]  # a verified version's seq
        return copy


@dataclass(slots=True, eq=False)
class Version:
    """One version of the ledger (a blob), as judged: whether it verifies (`ok`), or at
    least holds only sound events (`resolvable`: conflict markers or a broken chain that
    `vt ledger resolve` mends), its events (the first `count` of `events`, in file order,
    each id once), its head and its bytes (complete lines only). A prefix of a version
    that verifies (`within`) holds its bytes only once they are asked for."""

    raw: bytes | None
    events: _Events
    count: int = 0
    seq: int = 0
    head: str | None = GENESIS
    ok: bool = True
    resolvable: bool = True
    problems: list[HistoryProblem] = field(default_factory=list)
    within: Version | None = None
    size: int = 0  # of the prefix of `within`

    @property
    def data(self) -> bytes:
        if self.raw is None:
            assert self.within is not None
            self.raw = self.within.data[: self.size]
        return self.raw

    def has_lines(self) -> bool:
        return self.size > 0 if self.raw is None else bool(self.raw)

    def index(self, event_id: str) -> int | None:
        """The 0-based place of an event in this version, None when it is not there."""
        i = self.events.where.get(event_id)
        return i if i is not None and i < self.count else None

    def ids(self) -> list[str]:
        return self.events.ids[: self.count]

    def _events_to_extend(self) -> _Events:
        if len(self.events.ids) == self.count:
            return self.events  # nobody extended it yet: the child appends in place
        return self.events.fork(self.count)


def starts_with(child: Version, parent: Version) -> bool:
    """Whether `parent`'s bytes are the start of `child`'s (by their sizes alone when
    both are prefixes of one version)."""
    if child.within is not None and child.within is parent.within:
        return parent.size <= child.size
    return child.data.startswith(parent.data)


def prefix_version(version: Version, size: int) -> Version | None:
    """The first `size` bytes of a version that verifies, as a version of its own (it
    verifies too: every check of a line looks only at the lines before it), or None when
    `size` does not end one of its lines."""
    if size == 0:
        return Version(b"", _Events())
    if not version.ok or version.within is not None:
        return None
    k = bisect_left(version.events.ends, size, 0, version.count)
    if k >= version.count or version.events.ends[k] != size:
        return None
    return Version(None, version.events, k + 1, k + 1, version.events.hashes[k],
                   within=version, size=size)  # fmt: skip


def read_version(data: bytes | None, parents: Sequence[Version | None] = ()) -> Version:
    """`data` verified as a whole ledger. When it starts with (a line-aligned part of) a
    parent that verifies, only the lines after that part are checked, from that parent's
    head: the parent's own verdict covers the rest."""
    data = data or b""
    complete = data if data.endswith(b"\n") else data[: data.rfind(b"\n") + 1]
    base, start = _longest_shared(complete, parents)
    if base is None:
        version = Version(complete, _Events())
    else:
        count = base.count if start == len(base.data) else complete.count(b"\n", 0, start)
        if count == base.count:
            version = Version(complete, base._events_to_extend(), count, base.seq, base.head)
        else:
            head = _hash_of_line(complete[:start])
            version = Version(complete, base.events.fork(count), count, count, head)
    _check_lines(version, complete, start)
    if len(complete) != len(data):
        line = complete.count(b"\n") + 1
        _problem(version, line, f"line {line}: the last line has no final newline (torn)", False)
    return version


def _longest_shared(data: bytes, parents: Sequence[Version | None]) -> tuple[Version | None, int]:
    """The verified parent sharing the most whole lines with `data`, and how many bytes."""
    best: Version | None = None
    best_size = 0
    for parent in parents:
        if parent is None or not parent.ok or not parent.data:
            continue
        if len(data) >= len(parent.data) and data.startswith(parent.data):
            size = len(parent.data)
        else:
            size = _common_start(data, parent.data)
            size = data.rfind(b"\n", 0, size) + 1  # back to a line's start
        if size > best_size:
            best, best_size = parent, size
    return best, best_size


def _hash_of_line(data: bytes) -> str | None:
    """The `hash` of the last line of `data`, lines of a verified ledger."""
    last = data[data.rfind(b"\n", 0, len(data) - 1) + 1 : -1]
    try:
        return load_json(last)["hash"]
    except (ValueError, KeyError, TypeError):
        return None


def _problem(version: Version, line: int | None, message: str, sound: bool = True) -> None:
    version.ok = False
    version.resolvable = version.resolvable and sound
    if len(version.problems) < 100:  # the first ones name the commit well enough
        version.problems.append((line, message))


def _check_lines(version: Version, data: bytes, start: int) -> None:
    """Verify the lines of `data` from byte `start` on, continuing `version`'s chain: the
    checks of `vt ledger verify` on each line (signatures aside), duplicates, and every
    `supersedes` and `reverts` naming an earlier event of the same claim."""
    events = version.events
    ids, claims, where = events.ids, events.claims, events.where
    n = version.count if start and version.ok else data.count(b"\n", 0, start)
    end = start
    for body in data[start:].split(b"\n")[:-1]:
        n += 1
        end += len(body) + 1
        if conflict_marker(body):
            merged = "the ledger was merged without the vt merge driver"
            message = f"line {n}: a git conflict marker: {merged}; run `vt ledger resolve`"
            _problem(version, n, message)
            version.seq, version.head = version.seq + 1, None
            continue
        try:
            text = body.decode("utf-8")
            ev = load_json(text)
        except (UnicodeDecodeError, ValueError) as exc:
            _problem(version, n, f"line {n}: not valid JSON ({exc})", sound=False)
            version.seq, version.head = version.seq + 1, None
            continue
        if not quick_ok(ev) and (structural := event_problems(ev)):
            for message in structural:
                _problem(version, n, f"line {n}: {message}", sound=False)
            version.seq, version.head = version.seq + 1, None
            continue
        _check_event(version, n, body, text, ev)
        if events.steps or ev["action"] == POLICY:
            _judge_signature(version, n, ev)
        event_id = ev["id"]
        if version.index(event_id) is None:  # each id once: a duplicate is a problem
            where[event_id] = version.count
            ids.append(event_id)
            claims.append(ev["claim_id"])
            events.ends.append(end)
            events.hashes.append(ev["hash"])
            version.count += 1


def _judge_signature(version: Version, n: int, ev: dict) -> None:
    """The event's signature judged by the signing policy this version of the ledger
    records (policy.py): vt.toml and the allowed signers file are no part of a commit's
    verdict, so only the events after the first POLICY event are judged."""
    from vault_tools.ledger.policy import PolicyChecker, step_of
    from vault_tools.ledger.signatures import SignaturePolicy

    events = version.events
    if ev["action"] == POLICY and (step := step_of(ev)) is not None:
        events.steps.append(step)
    if not events.steps:
        return
    judge = events.judge
    if judge is None or len(judge.steps) != len(events.steps):
        kept = judge._judges if judge is not None else {}  # each step's parsed keys
        judge = events.judge = PolicyChecker(
            SignaturePolicy(), steps=tuple(events.steps), files=False, _judges=kept
        )
    if (wrong := judge.check(ev)) is not None:
        _problem(version, n, f"line {n}: {wrong}", sound=False)


def _check_event(version: Version, n: int, body: bytes, text: str, ev: dict) -> None:
    seq = ev["seq"]
    canonical_ok = canonical(ev) == text
    if not canonical_ok:
        _problem(version, n, f"line {n}: not canonical JSON (re-serialised or hand-edited?)",
                 sound=False)  # fmt: skip
    hash_, id_ = line_digests(body, ev) if canonical_ok else (line_hash(ev), decision_id(ev))
    if hash_ != ev["hash"]:
        _problem(version, n, f"line {n}: hash mismatch (edited line?)", sound=False)
    if id_ != ev["id"]:
        _problem(version, n, f"line {n}: id mismatch: the decision fields were edited after "
                             "it was made", sound=False)  # fmt: skip
    if seq != version.seq + 1:
        _problem(version, n, f"line {n}: seq {version.seq + 1} expected, found {seq} "
                             "(deleted or reordered line?)")  # fmt: skip
    prev = GENESIS if n == 1 else version.head
    if prev is not None and ev["prev"] != prev:
        what = "64 zeros on the first line" if n == 1 else f"the hash of line {n - 1}"
        _problem(version, n, f"line {n}: prev does not match {what}")
    first = version.index(ev["id"])
    if first is not None:
        _problem(version, n, f"line {n}: duplicate id {ev['id']} (first on line {first + 1})")
    for col, targets in (("supersedes", superseded_ids(ev["supersedes"])),
                         ("reverts", (ev["reverts"],) if "reverts" in ev else ())):  # fmt: skip
        for target in targets:
            i = version.index(target)
            if i is None or version.events.claims[i] != ev["claim_id"]:
                _problem(version, n, f"line {n}: {col} {target}, which is not an earlier "
                                     "event of the same claim")  # fmt: skip
    version.seq, version.head = seq, ev["hash"]


# ---------------------------------------------------------------- the rule


def extension_problems(
    child: Version, parents: Sequence[Version | None], names: Sequence[str] = ()
) -> list[HistoryProblem]:
    """How `child` breaks the rule against its parents' ledgers (None: a parent without
    one), each parent called by its name in `names` (default: "the ledger of parent N").
    Empty when it keeps the rule."""
    names = list(names) or [f"the ledger of parent {k}" for k in range(1, len(parents) + 1)]
    present = [(p, name) for p, name in zip(parents, names, strict=True) if p and p.has_lines()]
    if not present:
        return []
    if len(parents) == 1:
        parent, name = present[0]
        if starts_with(child, parent):
            return []
        if parent.ok:
            # sound lines left unchained (as a merge without the driver leaves them) are
            # no rewrite while they keep the parent's events in order
            if child.ok or not child.resolvable or _merge_problems(child, present):
                return [_first_difference(parent, child, name)]
            return []
    return _merge_problems(child, present)


def _first_difference(parent: Version, child: Version, name: str) -> HistoryProblem:
    """The first line of the parent's (verified) ledger that the child does not keep
    as it was: deleted when its event is gone and no new one stands in its place."""
    old, new = parent.data.split(b"\n")[:-1], child.data.split(b"\n")[:-1]
    pairs = zip(old, new, strict=False)
    n = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(old), len(new)))
    gone = n < parent.count and child.index(parent.events.ids[n]) is None
    # a new event in its place: the line was rewritten, not deleted
    replaced = n < child.count and parent.index(child.events.ids[n]) is None
    what = "deleted" if n >= len(new) or (gone and not replaced) else "changed"
    return (n + 1, f"line {n + 1} of {name} is {what}; the ledger is append-only "
                   "(only new lines at the end may be committed)")  # fmt: skip


def _merge_problems(child: Version, parents: list[tuple[Version, str]]) -> list[HistoryProblem]:
    """Every event of every parent kept, each parent's in its order (see the module's
    docstring)."""
    problems: list[HistoryProblem] = []
    earlier: list[Version] = []
    for parent, name in parents:
        if starts_with(child, parent):  # every event kept, in its place
            earlier.append(parent)
            continue
        ids = parent.ids()
        same = _common_start(ids, child.ids())  # events in the same places: kept, in order
        lost = [(k, i) for k, i in enumerate(ids[same:], same) if child.index(i) is None]
        if lost:
            k, first = lost[0]
            dropped = counted(len(lost), "event")
            problems.append((None, f"drops {dropped} of {name} (first: {first}, "
                                   f"its line {k + 1}); a merged ledger keeps every event "
                                   "of both sides"))  # fmt: skip
            continue
        moved = _moved(child, ids[same:], earlier, same - 1)
        if moved is not None:
            problems.append((moved + 1, f"line {moved + 1}: event {child.ids()[moved]} of "
                                        f"{name} is moved before events it followed there; "
                                        "a merge keeps each side's order"))  # fmt: skip
        earlier.append(parent)
    return problems


def _common_start(a: _S, b: _S) -> int:
    """How many first items (bytes, ids) `a` and `b` share: a binary search of slice
    comparisons, each done in C, rather than a Python loop over the items."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _moved(child: Version, ids: list[str], earlier: list[Version], last: int) -> int | None:
    """The place in `child` of the first of `ids` (a parent's events, in order, after
    those at `last` and before) that stands before one it followed, leaving out those an
    earlier parent holds."""
    for i in ids:
        if any(p.index(i) is not None for p in earlier):
            continue  # placed where an earlier parent has it
        place = child.index(i)
        if place is not None and place < last:
            return place
        last = max(last, place if place is not None else last)
    return None


# ---------------------------------------------------------------- the commit being made


def check_staged_ledger(
    path: str,
    staged: bytes | None,
    parents: Sequence[bytes | None],
    policy: SignaturePolicy | None = None,
) -> list[Finding]:
    """The ledger of the commit being made against the ledger of each of its parents
    (`parents[0]` is HEAD's, then each MERGE_HEAD's), as findings for the pre-commit hook:
    no conflict markers, no torn last line, the rule above, and a ledger that verifies
    (signatures checked against `policy`, a SignaturePolicy, when given)."""
    if staged is None:
        if any(parents):
            message = "the decision ledger is deleted in this commit; it is append-only"
            return [error(path, None, LEDGER_REWRITTEN, message)]
        return []
    markers = [n for n, raw in enumerate(staged.split(b"\n"), 1) if conflict_marker(raw)]
    if markers:
        return [
            error(
                path,
                n,
                LEDGER_CONFLICT,
                "git conflict marker in the decision ledger; "
                "run `vt ledger resolve`, then stage the ledger again",
            )  # fmt: skip
            for n in markers
        ]
    if staged and not staged.endswith(b"\n"):
        line = staged.count(b"\n") + 1
        message = "the last line of the decision ledger has no final newline (torn)"
        return [error(path, line, LEDGER_INVALID, message)]
    names = ["the committed decision ledger" if len(parents) == 1 else "parent 1 (HEAD)"]
    names += [f"parent {k} (MERGE_HEAD)" for k in range(2, len(parents) + 1)]
    if len(parents) == 1 and (not parents[0] or staged.startswith(parents[0])):
        problems: list[HistoryProblem] = []  # the usual commit: an append, no parent to verify
    else:
        versions = [read_version(p) if p else None for p in parents]
        problems = extension_problems(read_version(staged, versions), versions, names)
    if problems:
        return [error(path, line, LEDGER_REWRITTEN, message) for line, message in problems]
    return _verify_bytes(path, staged, policy)


def _verify_bytes(path: str, data: bytes, policy: SignaturePolicy | None) -> list[Finding]:
    """verify_ledger on a private copy, so the vault's `.vt/` memory is never touched;
    signatures are checked against `policy` (None: the chain alone)."""
    # imported here: tempfile (with shutil, bz2 and lzma) only for a commit that stages
    # the ledger
    from vault_tools.ledger.merge import verify_bytes

    return [error(path, p.line, LEDGER_INVALID, p.message) for p in verify_bytes(data, policy)]
