"""What the Review Dashboard shows, gathered from the vault and the ledger, and kept up
to date note by note.

A `DashboardState` holds what each review note adds to the dashboard — its status in
the review (`review/status.py`'s `NoteInfo` and `NoteEntries`), `vt validate`'s findings
of it, and what `vt apply` would do with its decision — beside what the whole vault adds
(unreadable files, claim-id duplicates) and what the ledger adds (the Claim Store's
counts, conflicts, decisions and accepted claims). `vt watch` keeps one in memory and
hands it the notes that changed (`update`): the rule is

- a review note that stays a review note with the same claim_id, outside the knowledge
  base, sharing its claim_id with no other note, while the ledger's head stays where it
  was: only that note is made again (read, parsed, checked, asked of apply);
- anything else (a file added, removed or renamed, a knowledge-base note, a claim_id
  changed or shared, a git conflict, another ledger head): `update` says no, and the
  caller gathers everything again (`gather`), as `vt report` does.

Other notes' findings depend on a review note only through its name and its claim_id
(the knowledge base's targets, the duplicate check), which is why the first case may
skip them. tests/integrations/test_dashboard_state.py holds `update` to `gather`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from vault_tools import __version__
from vault_tools.checks.duplicates import DUPLICATE
from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.findings import Finding, sort_key
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.filestat import RACY_NS, Signature, stat_signature
from vault_tools.infra.gcpause import gc_paused
from vault_tools.infra.pool import map_chunks
from vault_tools.integrations.charts import Edge
from vault_tools.integrations.dashboard import (
    Dashboard,
    EntityCount,
    NeedItem,
    ReportResult,
    needs,
    render,
    write_dashboard,
    write_subnotes,
)
from vault_tools.notes import kb as kbmod
from vault_tools.notes import markdown
from vault_tools.notes.conflicts import GIT_CONFLICT
from vault_tools.notes.vault import (
    UNREAD_CODES,
    Listing,
    list_vault,
    may_be_review_note,
    read_file,
)
from vault_tools.review.stats import facts_of, vault_stats
from vault_tools.review.stats_cache import Facts
from vault_tools.review.stats_report import stats_section
from vault_tools.review.status import (
    NoteEntries,
    NoteInfo,
    assemble,
    fact_of,
    info_of,
    note_entries,
    recorder_of,
    status_tap,
    survey,
)
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import APPLIED

if TYPE_CHECKING:  # the checks are imported when a note needs them
    from vault_tools.checks.context import CheckContext
    from vault_tools.checks.file_checks import Tap
    from vault_tools.notes.facts import NoteFacts
    from vault_tools.notes.note import Note
    from vault_tools.review.candidates import Candidate

Progress = Callable[[int, int], None]

# `DashboardState._remade` of a file that is no review note and adds nothing
_UNCHANGED: tuple[NoteInfo, list[Finding]] = (NoteInfo("", "", "", "", False, None, None), [])
# what apply would do with a note's decision: (claim_id, action, reason); "" reason: ready
ApplyAnswer = tuple[str, str, str]
# what notes add to the quality numbers, by path, under their bytes' stat signature
StatsFacts = dict[str, tuple[Signature, Facts]]


@dataclass(slots=True)
class DashboardState:
    """Everything `Dashboard` is made of, by note where a note is the unit."""

    infos: dict[str, NoteInfo] = field(default_factory=dict)  # review notes, by path
    entries: dict[str, NoteEntries] = field(default_factory=dict)
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # validate's, by path
    verdicts: dict[str, ApplyAnswer] = field(default_factory=dict)  # the notes apply would record
    unreadable: list[Finding] = field(default_factory=list)  # status's (git conflicts too)
    head: tuple[int, str] = (0, "")
    kb_prefix: str = ""
    edges: list[Edge] = field(default_factory=list)
    entities: list[EntityCount] = field(default_factory=list)
    decisions: list[tuple[str, str, str, int]] = field(default_factory=list)
    quality: list[str] | None = None  # as gathered; None: read at `dashboard` (its cache)
    checker: CheckContext | None = None  # made on the first `update`
    asker: CheckContext | None = None

    def dashboard(self, settings: Settings, store: ClaimStore) -> Dashboard:
        """The dashboard of this state (the quality section read now, from its cache)."""
        paths = sorted(self.infos)
        report = assemble(
            [self.infos[p] for p in paths],
            [self.entries[p] for p in paths],
            list(self.unreadable),
            store,
        )
        findings = sorted((f for found in self.findings.values() for f in found), key=sort_key)
        refused, ready = [], []
        for path in sorted(self.verdicts):
            claim_id, action, reason = self.verdicts[path]
            if reason:
                refused.append(NeedItem(path, claim_id, f"{action}: {reason}"))
            else:
                ready.append(NeedItem(path, claim_id, action))
        return Dashboard(
            needs=needs(report, findings, refused, ready),
            by_action_and_state=report.by_action_and_state,
            claims=report.claims,
            decisions=self.decisions,
            entities=self.entities,
            edges=self.edges,
            findings=dict(Counter(f.code for f in findings)),
            unreadable=sum(f.code in UNREAD_CODES for f in findings),
            quality=quality_lines(settings) if self.quality is None else self.quality,
        )

    def update(self, settings: Settings, store: ClaimStore, changed: Iterable[str]) -> bool:
        """Make the notes of `changed` again; False (and the state left as it was) when
        the rule of the module's docstring asks for everything to be gathered again."""
        if store.head() != self.head or any(f.code == GIT_CONFLICT for f in self.unreadable):
            return False
        paths = sorted(set(changed))
        made: dict[str, tuple[NoteInfo, list[Finding]]] = {}
        for path in paths:
            redone = self._remade(settings, path)
            if redone is None:
                return False
            if redone is not _UNCHANGED:
                made[path] = redone
        if paths:
            self.quality = None  # a note it read may have changed
        recorder = recorder_of(settings)
        for path, (info, found) in made.items():
            self.infos[path] = info
            self.entries[path] = entries = note_entries(info, store, recorder)
            self._set_findings(path, found)
            self.verdicts.pop(path, None)
            if entries.to_record:
                verdict = _verdict(settings, self._asker(settings), path)
                if verdict is not None:
                    self.verdicts[path] = verdict
        return True

    def _remade(self, settings: Settings, path: str) -> tuple[NoteInfo, list[Finding]] | None:
        """The note's info and findings now; `_UNCHANGED` for a file that is no review
        note and adds nothing, then as now; None when it no longer fits the rule."""
        from vault_tools.checks.file_checks import check_file

        old = self.infos.get(path)
        if path.startswith(self.kb_prefix) or self.findings.get(path) and old is None:
            return None
        if any(f.code == DUPLICATE for f in self.findings.get(path, ())):
            return None
        try:
            raw, _ = read_file(os.path.join(settings.vault, path), settings.max_note_bytes)
        except OSError:
            return None
        if old is None:  # e.g. the dashboard's own notes, rewritten on every change
            if not may_be_review_note(path, raw, settings.claims_dir):
                return _UNCHANGED
            if info_of(path, raw) is not None:
                return None
            result = check_file(settings, self._checker(settings), path)
            return _UNCHANGED if result.claim_id is None and not result.findings else None
        info = info_of(path, raw)
        if not isinstance(info, NoteInfo) or info.claim_id != old.claim_id:
            return None
        result = check_file(settings, self._checker(settings), path)
        if result.claim_id != old.claim_id:
            return None  # changed again between the two reads: gather it all again
        return info, list(result.findings)

    def _set_findings(self, path: str, found: list[Finding]) -> None:
        if found:
            self.findings[path] = found
        else:
            self.findings.pop(path, None)

    def _checker(self, settings: Settings) -> CheckContext:
        from vault_tools.checks.context import make_context

        if self.checker is None:
            self.checker = make_context(settings)
        return self.checker

    def _asker(self, settings: Settings) -> CheckContext:
        from vault_tools.checks.context import make_context

        if self.asker is None:
            self.asker = make_context(settings, assist=False)
        return self.asker


def gather(
    settings: Settings,
    store: ClaimStore,
    progress: Progress | None = None,
    listing: Listing | None = None,
) -> DashboardState:
    """The state of the whole vault; `store` must be caught up by the caller. `listing`:
    the vault's, when the caller has listed it already."""
    # what it makes of every note forms no cycles (infra/gcpause.py): the collector's
    # scans, ever longer as the facts pile up, would find nothing to free
    with gc_paused():
        return _gathered(settings, store, progress, listing)


def _gathered(
    settings: Settings, store: ClaimStore, progress: Progress | None, listing: Listing | None
) -> DashboardState:
    from vault_tools.checks.context import make_context
    from vault_tools.checks.validate import validate

    listing = list_vault(settings.vault) if listing is None else listing
    asker = make_context(settings, listing, assist=False)
    tap, facts, tapped = _tap(settings, asker)  # one read and parse of a note for all
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in validate(settings, progress=progress, tap=tap, listing=listing).findings:
        by_path[finding.path].append(finding)
    facts.save()
    infos, entries, unreadable = survey(settings, store, kept=facts, listing=listing)
    state = DashboardState(unreadable=unreadable, head=store.head())
    state.kb_prefix = settings.kb_dir.strip("/") + "/"
    state.infos = {i.path: i for i in infos}
    state.entries = {i.path: e for i, e in zip(infos, entries, strict=True)}
    state.findings = dict(by_path)
    to_record = [i.path for i, e in zip(infos, entries, strict=True) if e.to_record]
    state.verdicts = _verdicts(settings, asker, to_record, tapped.answers)
    kb = kbmod.KnowledgeBase(listing, settings.kb_dir)
    state.edges = _edges(store, kb)
    state.entities = _entities(state.edges, kb)
    state.decisions = store.decision_counts()
    state.quality = quality_lines(settings, tapped.stats)
    return state


def collect(settings: Settings, store: ClaimStore, progress: Progress | None = None) -> Dashboard:
    """Everything the dashboard shows; `store` must be caught up by the caller."""
    return gather(settings, store, progress).dashboard(settings, store)


def quality_lines(settings: Settings, known: StatsFacts | None = None) -> list[str]:
    """`vt stats`'s section, none while the ledger holds no decision to count; `known`:
    as `vault_stats` takes it."""
    stats = vault_stats(settings, known=known)
    return stats_section(stats) if stats.claims else []


@dataclass(slots=True)
class _Tapped:
    """What the dashboard's tap (`_tap`) kept of the notes validate read."""

    answers: dict[str, ApplyAnswer | None] = field(default_factory=dict)  # those asked
    stats: StatsFacts = field(default_factory=dict)


def _tap(settings: Settings, asker: CheckContext) -> tuple[Tap, NoteFacts, _Tapped]:
    """A tap for validate's run that makes, of each note it reads: status's fact (kept in
    the NoteFacts), what apply would do with a decision not applied yet (apply's answer,
    asked where the note is parsed: in a worker, on a large run), and what the note adds
    to the quality numbers, for a note apply has marked."""
    from vault_tools.checks.file_checks import Tap
    from vault_tools.review.candidates import judge as judged

    status, facts = status_tap(settings)
    tapped = _Tapped()
    judge = partial(judged, explicit=False, assist=False)

    def make(relative: str, raw: bytes, note: Note | None) -> tuple:
        info = info_of(relative, raw, note)
        fact = fact_of(info)
        if note is None or not isinstance(info, NoteInfo):
            return fact, False, None, None
        # what to_record asks first of a note (see `note_entries`); any other note apply
        # would record is asked afterwards, in `_verdicts`
        asked = info.decision is not None and info.state != APPLIED
        answer = _answer(judge(settings, asker, relative, raw, note=note)) if asked else None
        marked = info.state == APPLIED or info.event_id is not None
        return fact, asked, answer, facts_of(raw, None) if marked else None

    def keep(relative: str, signature: tuple, digest: str, made: object) -> None:
        assert isinstance(made, tuple)
        fact, asked, answer, stats = made
        status.keep(relative, signature, digest, fact)
        if asked:
            tapped.answers[relative] = answer
        if stats is not None:
            tapped.stats[relative] = (signature, stats)

    return Tap(make, keep), facts, tapped


def _verdicts(
    settings: Settings,
    ctx: CheckContext,
    paths: list[str],
    answered: dict[str, ApplyAnswer | None] | None = None,
) -> dict[str, ApplyAnswer]:
    """What `vt apply` would do with each note of `paths`: apply's first phase, run
    without the ledger lock; `answered`: the answers asked already, by path."""
    answered = answered or {}
    asked = [path for path in paths if path not in answered]
    found = map_chunks(partial(_verdict_chunk, settings, ctx), asked, workers=settings.workers)
    answers = dict(zip(asked, found, strict=True))
    every = ((path, answered[path] if path in answered else answers[path]) for path in paths)
    return {path: answer for path, answer in every if answer}


def _verdict_chunk(
    settings: Settings, ctx: CheckContext, chunk: list[str]
) -> list[ApplyAnswer | None]:
    return [_verdict(settings, ctx, path) for path in chunk]


def _verdict(settings: Settings, ctx: CheckContext, path: str) -> ApplyAnswer | None:
    from vault_tools.review.candidates import examine

    return _answer(examine(settings, ctx, path, explicit=False, assist=False))


def _answer(cand: Candidate | None) -> ApplyAnswer | None:
    if cand is None or cand.skip:
        return None
    reason = cand.refuse or "; ".join(cand.problems)
    return (cand.claim_id or "", cand.review_action or "", reason)


def _edges(store: ClaimStore, kb: kbmod.KnowledgeBase) -> list[Edge]:
    edges = []
    for target, claim_id, _role, label, note in store.graph_rows():
        resolution = kb.resolve(target)
        if resolution.status == kbmod.OK and resolution.path is not None:
            entity = markdown.strip_md(resolution.path)
        else:
            entity = markdown.strip_md(kbmod.link_target(target))
        key = kbmod.normalise(kbmod.link_target(target))
        edges.append(Edge(claim_id, note, key, entity, label))
    edges.sort(key=lambda e: (e.entity_key, e.claim_id, e.label))
    return edges


def _entities(edges: list[Edge], kb: kbmod.KnowledgeBase) -> list[EntityCount]:
    """Accepted claims per entity: most used first, then by path."""
    claims: dict[str, set[str]] = defaultdict(set)
    names: dict[str, str] = {}
    for edge in edges:
        claims[edge.entity_key].add(edge.claim_id)
        names.setdefault(edge.entity_key, edge.entity)
    found = [
        EntityCount(names[k], kb.resolve(names[k]).status == kbmod.OK, len(claims[k]))
        for k in claims
    ]
    return sorted(found, key=lambda e: (-e.claims, e.entity.casefold(), e.entity))


# ---------------------------------------------------------------------------
# `vt report`: the state kept between runs in `.vt/` (derived, safe to delete)

STATE_FILE = "dashboard-state.marshal"
FORMAT = 1  # bump whenever the layout changes
Files = dict[str, Signature]  # the vault's `.md` files and their stat signatures


@dataclass(slots=True)
class VaultLook:
    """The vault's files as a run found them before reading any (see `look`)."""

    key: str
    taken_ns: int
    files: Files
    problems: list[Finding]  # the listing's own (unreadable folders, FIFOs, …)
    listing: Listing | None = None  # the listing itself, for the run that took it (not kept)


def look(settings: Settings) -> VaultLook:
    """What a kept state must have been made from to stand for the vault now: the
    settings and who runs vt (`state_key`), and every `.md` file's stat signature."""
    taken_ns = time.time_ns()
    listing = list_vault(settings.vault)
    prefix = str(settings.vault).rstrip(os.sep) + os.sep
    files: Files = {}
    for relative in listing.inside():
        try:
            files[relative] = stat_signature(os.stat(prefix + relative))
        except OSError:
            files[relative] = (0, 0, 0, 0, 0)  # never a file's: read and judged next time
    problems = listing.findings(settings.claims_dir)
    return VaultLook(state_key(settings), taken_ns, files, problems, listing)


def state_key(settings: Settings) -> str:
    """Everything besides the vault's notes and the ledger that the dashboard depends on."""
    plain = [
        f"{f.name}={sorted(value) if isinstance(value, frozenset) else value!r}"
        for f in dataclasses.fields(settings)
        if f.name not in ("workers", "warnings", "writes")  # how it runs, not what it shows
        for value in [getattr(settings, f.name)]
    ]
    who = "" if settings.record_for_reviewers else ",".join(sorted(_runner_names(settings)))
    extra = [settings.allowed_signers_path]
    if settings.schemas_dir is not None and settings.schemas_dir.is_dir():
        extra += sorted(settings.schemas_dir.iterdir())
    stats = [f"{p}:{_signature_of(p)}" for p in extra]
    return "\n".join([str(FORMAT), __version__, *plain, who, *stats])


def changed_since(kept: VaultLook, now: VaultLook) -> list[str] | None:
    """The files that may have changed since `kept` was taken, or None when what changed
    is more than files' bytes (another key, a file added or removed, the listing's
    problems): then nothing of the kept state is used."""
    if kept.key != now.key or kept.files.keys() != now.files.keys():
        return None
    if kept.problems != now.problems:
        return None
    changed = []
    for relative, signature in now.files.items():
        before = kept.files[relative]
        if before != signature or max(signature[0], signature[1]) >= kept.taken_ns - RACY_NS:
            changed.append(relative)
    return changed


def load(settings: Settings) -> tuple[DashboardState, VaultLook] | None:
    """The state `save` kept, with the snapshot it was made from; None when there is none
    that this vt can read (absent, torn, another format)."""
    try:
        path = writable_path(settings.vault, settings.state_dir) / STATE_FILE
        fmt, kept, data = marshal.loads(path.read_bytes())
        if fmt != FORMAT:
            return None
        key, taken_ns, files, problems = kept
        snapshot = VaultLook(key, taken_ns, files, [Finding(*f) for f in problems])
        return _state_of(data, settings), snapshot
    except (VtError, OSError, EOFError, ValueError, TypeError, AttributeError, LookupError):
        return None  # absent, torn, or not a state this vt wrote


def save(settings: Settings, state: DashboardState, snapshot: VaultLook) -> None:
    """Keep `state`, made from the vault as `snapshot` found it; a failure only costs the
    next run its speed."""
    try:
        folder = writable_path(settings.vault, settings.state_dir)
    except VtError:
        return
    kept = (snapshot.key, snapshot.taken_ns, snapshot.files, [tuple(f) for f in snapshot.problems])
    temp = folder / f".{STATE_FILE}-{os.getpid()}.tmp"
    try:
        data = marshal.dumps((FORMAT, kept, _data_of(state)))
        folder.mkdir(parents=True, exist_ok=True)
        temp.write_bytes(data)
        os.replace(temp, folder / STATE_FILE)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            temp.unlink()


def _data_of(state: DashboardState) -> tuple:
    # of a note's info, only what `dashboard` and `update` read of a note that did not
    # change: a note that changes is read again whole
    return (
        {p: (i.claim_id, i.action, i.state) for p, i in state.infos.items()},
        {p: tuple(e) for p, e in state.entries.items()},
        {p: [tuple(f) for f in found] for p, found in state.findings.items()},
        state.verdicts,
        [tuple(f) for f in state.unreadable],
        state.head,
        state.kb_prefix,
        [(e.claim_id, e.note, e.entity_key, e.entity, e.label) for e in state.edges],
        [(e.entity, e.resolved, e.claims) for e in state.entities],
        [tuple(d) for d in state.decisions],
    )


def _state_of(data: tuple, settings: Settings) -> DashboardState:
    infos, entries, findings, verdicts, unreadable, head, kb_prefix, edges, entities, days = data
    return DashboardState(
        infos={p: NoteInfo(p, i[0], i[1], i[2], False, None, None) for p, i in infos.items()},
        entries={p: NoteEntries(*e) for p, e in entries.items()},
        findings={p: [Finding(*f) for f in found] for p, found in findings.items()},
        verdicts=verdicts,
        unreadable=[Finding(*f) for f in unreadable],
        head=tuple(head),
        kb_prefix=kb_prefix,
        edges=[Edge(*e) for e in edges],
        entities=[EntityCount(*e) for e in entities],
        decisions=[tuple(d) for d in days],
    )


def _signature_of(path: Path) -> Signature | None:
    try:
        return stat_signature(os.stat(path))
    except OSError:
        return None


def _runner_names(settings: Settings) -> frozenset[str]:
    from vault_tools.errors import UsageError
    from vault_tools.review.actor import runner, runner_of

    try:
        return runner_of(settings).names
    except UsageError:  # no usable signing key: judged by the plain name, as status does
        return runner(settings).names


def current_state(
    settings: Settings, store: ClaimStore, progress: Progress | None = None
) -> DashboardState:
    """The state of the vault now: the one kept in `.vt/` brought up to date with the
    files whose stat changed since, else gathered whole; kept for the next run."""
    snapshot = look(settings)
    kept = load(settings)
    if kept is not None:
        state, before = kept
        changed = changed_since(before, snapshot)
        if changed is not None and state.update(settings, store, changed):
            if changed:  # kept again under the new snapshot, which settles them
                save(settings, state, snapshot)
            return state
    state = gather(settings, store, progress, snapshot.listing)
    save(settings, state, snapshot)
    return state


def report(
    settings: Settings, dry_run: bool = False, progress: Progress | None = None
) -> ReportResult:
    """`vt report`: bring the Claim Store up to date, then (re)write the dashboard and its
    sub-notes."""
    with ClaimStore.open(settings) as store:
        store.catch_up()
        dash = current_state(settings, store, progress).dashboard(settings, store)
    return write(settings, dash, dry_run)


def write(settings: Settings, dash: Dashboard, dry_run: bool = False) -> ReportResult:
    """Write `dash` into the dashboard note and its sub-notes."""
    result = write_dashboard(settings, render(dash), dry_run)
    write_subnotes(settings, dash, result)
    result.summary = dash.summary()
    return result


class LiveDashboard:
    """`vt watch`'s dashboard: the state kept in memory between refreshes."""

    def __init__(self) -> None:
        self.state: DashboardState | None = None

    def refresh(self, settings: Settings, changed: Iterable[str] = ()) -> bool:
        """Rewrite the dashboard (and its sub-notes) if what they show changed, after
        the files of `changed` (those the watcher handled since the last refresh); True
        when something was written.

        Raises VtError (IntegrityError for a broken ledger, RefusedError for a dashboard
        edited meanwhile); the next refresh simply tries again.
        """
        with ClaimStore.open(settings) as store:
            store.catch_up()
            state = self.state
            if state is None or not state.update(settings, store, changed):
                state = current_state(settings, store)
            self.state = state
            dash = state.dashboard(settings, store)
        result = write(settings, dash)
        return result.written or bool(result.subnotes_written)
