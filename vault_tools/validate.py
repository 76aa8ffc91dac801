"""`vt validate`: check every review note of a vault (or the notes given).

Cold runs parse on every core; warm runs reuse `.vt/validate-cache.pickle`, whose
entries are keyed by each note's bytes and whose whole is invalidated when the
schemas, the knowledge base's file list or vt itself change. Only small per-note
results are kept in memory, never the parsed notes.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from vault_tools import __version__
from vault_tools.cache import (
    CACHE_FILE,
    CacheCorrupt,
    ResultCache,
    content_digest,
    read_with_stat,
)
from vault_tools.config import Settings
from vault_tools.findings import ERROR, WARNING, Finding, error, sort_key
from vault_tools.kb import KnowledgeBase
from vault_tools.schemas import Schemas
from vault_tools.vault import markdown_files, relative_in_vault

if TYPE_CHECKING:  # the parser and the checks are imported when a note is read
    from vault_tools.checks import CheckContext

Progress = Callable[[int, int], None]
# below this many notes to parse, a process pool costs more than it saves
PARALLEL_THRESHOLD = 400
CHUNK = 64


class NoteResult(NamedTuple):
    """What one note contributes to a vault run (small, cacheable; a tuple so that the
    pool and the cache move thousands of them cheaply)."""

    path: str
    digest: str  # of the note's bytes: what the cache entry stands for
    stat: tuple[int, ...]  # (mtime_ns, ctime_ns, size, inode) when the bytes were read
    claim_id: str | None
    claim_id_line: int | None
    findings: tuple[Finding, ...]


class ValidateReport:
    """The notes checked and their findings, sorted by (path, line, code, message).

    Findings are kept per note in the packed form the workers and the cache use and
    become `Finding`s only when asked for: a piped run prints the pre-rendered lines of
    tens of thousands of warnings without building them.
    """

    def __init__(self, notes: int = 0, blocks: list[_Block] | None = None,
                 text: str | None = None,
                 lazy: tuple[Callable[[], list[_Block]], int, int] | None = None):
        # lazy: (make the blocks, errors, warnings), for a run whose output is `text`
        self.notes = notes
        self._blocks = blocks
        self._lazy = lazy
        self._text = text  # the piped output when known already (an unchanged vault's)
        self._findings: list[Finding] | None = None

    @property
    def blocks(self) -> list[_Block]:
        if self._blocks is None:
            self._blocks = self._lazy[0]() if self._lazy else []
        return self._blocks

    @property
    def findings(self) -> list[Finding]:
        if self._findings is None:
            self._findings = [f for block in self.blocks for f in block.findings()]
        return self._findings

    @property
    def errors(self) -> int:
        if self._blocks is None and self._lazy:
            return self._lazy[1]
        return sum(block.errors for block in self.blocks)

    @property
    def warnings(self) -> int:
        if self._blocks is None and self._lazy:
            return self._lazy[2]
        return sum(block.warnings for block in self.blocks)

    def plain(self) -> str:
        """Every finding as a `path:line: code: message` line (the piped output)."""
        if self._text is None:
            self._text = "".join(block.plain() for block in self.blocks)
        return self._text

    def to_json(self) -> dict:
        return {"notes": self.notes, "errors": self.errors, "warnings": self.warnings,
                "findings": [f.to_json() for f in self.findings]}


class _Block:
    """The sorted findings of one path: a packed entry's, or a list of Findings."""

    __slots__ = ("errors", "warnings", "_entry", "_cached", "_list")

    def __init__(self, entry: tuple | None = None,
                 cached: Callable[[str], tuple] | None = None,
                 findings: list[Finding] | None = None):
        if entry is not None:
            self.errors, self.warnings = entry[ERRORS], entry[WARNINGS]
            self._entry, self._cached, self._list = entry, cached, None
        else:
            assert findings is not None
            self.errors = sum(1 for f in findings if f.severity == ERROR)
            self.warnings = sum(1 for f in findings if f.severity == WARNING)
            self._entry, self._cached, self._list = (), None, findings

    def findings(self) -> list[Finding]:
        if self._list is None:
            return unpack_findings(_payload(self._entry, self._cached)[0])
        return self._list

    def plain(self) -> str:
        if self._list is None:
            return _payload(self._entry, self._cached)[1]
        return _plain_text(self._list)


def _payload(entry: tuple, cached: Callable[[str], tuple] | None) -> tuple:
    """(packed findings, piped text) of an entry: its own, or the cache's for an index entry."""
    if len(entry) > PACKED:
        return entry[PACKED:]
    assert cached is not None
    return cached(entry[PATH])


def make_context(settings: Settings, files: Iterable | None = None,
                 assist: bool = True) -> CheckContext:
    """Schemas and knowledge base for checking notes; `assist=False` for errors only."""
    files = markdown_files(settings.vault) if files is None else files
    return _context(settings, Schemas(settings.schemas_dir),
                    KnowledgeBase(files, settings.kb_dir, settings.vault), assist)


def _context(settings: Settings, schemas: Schemas, kb: KnowledgeBase,
             assist: bool = True) -> CheckContext:
    from vault_tools.checks import CheckContext

    return CheckContext(schemas, kb, settings.disabled_findings, assist)


class _LazyContext:
    """The CheckContext, made only when a note has to be checked (never on a warm run)."""

    def __init__(self, settings: Settings, schemas: Schemas, kb: KnowledgeBase):
        self.args = (settings, schemas, kb)
        self._ctx: CheckContext | None = None

    def get(self) -> CheckContext:
        if self._ctx is None:
            self._ctx = _context(*self.args)
        return self._ctx


def validate(settings: Settings, paths: list[Path] | None = None,
             progress: Progress | None = None) -> ValidateReport:
    try:
        return _validate(settings, paths, progress)
    except CacheCorrupt:
        (settings.state_dir / CACHE_FILE).unlink(missing_ok=True)
        return _validate(settings, paths, progress)


def _validate(settings: Settings, paths: list[Path] | None,
              progress: Progress | None) -> ValidateReport:
    files = markdown_files(settings.vault)
    schemas = Schemas(settings.schemas_dir)
    kb = KnowledgeBase(files, settings.kb_dir, settings.vault)
    ctx = _LazyContext(settings, schemas, kb)
    before: dict[str, list[Finding]] = {}  # findings not from checking a note, by path
    if paths:
        targets = _explicit_targets(settings, paths, before)
    else:
        targets = [f.relative for f in files if not f.escapes]  # never read outside
        for finding in _escaping_notes(settings, files):
            before.setdefault(finding.path, []).append(finding)
    cache = ResultCache.read(settings.state_dir)
    aliases = kb.load_aliases(cache.aliases, cache.fresh, cache.listing)
    if aliases != cache.aliases or cache.listing != kb.digest:
        cache.aliases, cache.listing, cache.dirty = aliases, kb.digest, True
    cache.use_key(_cache_key(schemas, kb, settings))
    results, checked = _results(settings, ctx, targets, cache, progress)
    explicit = bool(paths)
    notes = 0
    for entry in results:
        if entry[CLAIM_ID] is None and explicit and not entry[ERRORS] + entry[WARNINGS]:
            before.setdefault(entry[PATH], []).append(
                error(entry[PATH], None, "not-review-note",
                      "not a review note (its frontmatter has no claim_id)"))
        notes += entry[CLAIM_ID] is not None
    others = _current_claim_ids(settings, ctx, cache, results) if explicit else []
    after: dict[str, list[Finding]] = {}
    for finding in _duplicate_claim_ids(results, others):
        after.setdefault(finding.path, []).append(finding)
    def blocks() -> list[_Block]:
        return _blocks(results, before, after, cache.findings_of)

    if explicit:
        report = ValidateReport(notes, blocks())
    else:
        # the whole vault's output is a function of the entries: unchanged when every
        # note was a cache hit and the notes are the same ones
        run = content_digest("\n".join(targets).encode())
        memo = cache.memo
        if checked or memo is None or memo[0] != run:
            report = ValidateReport(notes, blocks())
            cache.memo, cache.dirty = (run, report.plain()), True
        else:
            extra = [f for found in (*before.values(), *after.values()) for f in found]
            errors = sum(entry[ERRORS] for entry in results)
            errors += sum(1 for f in extra if f.severity == ERROR)
            warnings = sum(entry[WARNINGS] for entry in results)
            warnings += sum(1 for f in extra if f.severity == WARNING)
            report = ValidateReport(notes, text=memo[1], lazy=(blocks, errors, warnings))
    cache.save()
    return report


def _blocks(results: list[tuple], before: dict[str, list[Finding]],
            after: dict[str, list[Finding]], cached: Callable[[str], tuple]) -> list[_Block]:
    """The report's findings path by path, in the order one sort of them all would give.

    A note's entry comes sorted from its worker; only a path with findings from
    elsewhere (duplicates, symlinks, paths given) is sorted again, in the order the
    findings would have been listed: those from elsewhere, the note's, the duplicates.
    """
    if not before and not after:
        return [_Block(entry, cached) for entry in results if entry[ERRORS] + entry[WARNINGS]]
    by_path = {entry[PATH]: entry for entry in results}
    blocks = []
    for path in sorted(by_path.keys() | before.keys() | after.keys()):
        entry = by_path.get(path)
        if path not in before and path not in after:
            if entry[ERRORS] + entry[WARNINGS]:
                blocks.append(_Block(entry, cached))
            continue
        own = unpack_findings(_payload(entry, cached)[0]) if entry else []
        found = [*before.get(path, ()), *own, *after.get(path, ())]
        found.sort(key=sort_key)
        blocks.append(_Block(findings=found))
    return blocks


def _escaping_notes(settings: Settings, files: list) -> list[Finding]:
    """Symlinks among the review notes that lead out of the vault: reported, never read."""
    prefix = settings.claims_dir.rstrip("/") + "/"
    return [error(f.relative, None, "read-error",
                  "a symlink that leads outside the vault (or loops); not read")
            for f in files if f.escapes and f.relative.startswith(prefix)]


def _explicit_targets(settings: Settings, paths: list[Path],
                      before: dict[str, list[Finding]]) -> list[str]:
    targets = []
    for path in paths:
        relative = relative_in_vault(settings.vault, path)
        if relative is None:
            before.setdefault(str(path), []).append(
                error(str(path), None, "path-outside-vault",
                      f"not inside the vault {settings.vault}"))
        elif not (settings.vault / relative).is_file():
            before.setdefault(relative, []).append(
                error(relative, None, "read-error", "no such file"))
        else:
            targets.append(relative)
    return sorted(set(targets))


def _cache_key(schemas: Schemas, kb: KnowledgeBase, settings: Settings) -> str:
    """What every cached result depends on besides the note's own bytes."""
    parts = [__version__, schemas.digest, kb.digest, kb.aliases_digest(),
             ",".join(sorted(settings.disabled_findings)), settings.claims_dir]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# --- packed results: what workers send back and the cache keeps ------------------------
# (path, digest, stat, claim_id, claim_id_line, errors, warnings, findings, text): plain
# tuples, the findings sorted and marshalled, `text` their piped output lines
PATH, DIGEST, STAT, CLAIM_ID, CLAIM_ID_LINE, ERRORS, WARNINGS, PACKED, TEXT = range(9)


def pack(result: NoteResult) -> tuple:
    """A NoteResult in the packed form (cheap to send between processes and to cache)."""
    findings = sorted(result.findings, key=sort_key)
    errors = sum(1 for f in findings if f.severity == ERROR)
    return (result.path, result.digest, result.stat, result.claim_id, result.claim_id_line,
            errors, len(findings) - errors, marshal.dumps(tuple(map(tuple, findings))),
            _plain_text(findings))


def unpack_findings(packed: bytes) -> list[Finding]:
    return list(map(Finding._make, marshal.loads(packed)))


def _plain_text(findings: list[Finding]) -> str:
    return "".join([f"{f.path}:{f.line}: {f.code}: {f.message}\n" if f.line
                    else f"{f.path}: {f.code}: {f.message}\n" for f in findings])


def _results(settings: Settings, ctx: _LazyContext, targets: list[str], cache: ResultCache,
             progress: Progress | None) -> tuple[list[tuple], int]:
    """Every target's entry (from the cache, or checked now), and how many were checked."""
    if cache.entries:
        results, misses = cache.lookup_all(str(settings.vault), targets)
    else:
        results, misses = {}, targets
    if progress:
        progress(len(results), len(targets))
    if misses:
        for entry in _run(settings, ctx.get(), misses, len(results), len(targets), progress):
            results[entry[PATH]] = entry
            cache.store(entry)
    return [results[t] for t in targets], len(misses)


def _run(settings: Settings, ctx: CheckContext, targets: list[str], done: int, total: int,
         progress: Progress | None) -> Iterable[tuple]:
    workers = settings.workers or os.cpu_count() or 1
    chunks = [targets[i:i + CHUNK] for i in range(0, len(targets), CHUNK)]
    if workers < 2 or len(targets) < PARALLEL_THRESHOLD or not _can_fork():
        mapped: Iterable[list[tuple]] = (_check_chunk(chunk, settings, ctx) for chunk in chunks)
        yield from _with_progress(mapped, done, total, progress)
        return
    import multiprocessing

    global _WORKER_STATE
    _WORKER_STATE = (settings, ctx)  # inherited by the forked workers
    with multiprocessing.get_context("fork").Pool(workers, initializer=_worker_gc) as pool:
        yield from _with_progress(pool.imap_unordered(_check_chunk_in_worker, chunks), done,
                                  total, progress)


def _with_progress(batches: Iterable[list[tuple]], done: int, total: int,
                   progress: Progress | None) -> Iterable[tuple]:
    for batch in batches:
        yield from batch
        done += len(batch)
        if progress:
            progress(done, total)


def _worker_gc() -> None:
    """Collections in a worker need not walk (and so copy) what it inherited."""
    import gc

    gc.freeze()


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


_WORKER_STATE: tuple[Settings, CheckContext] | None = None


def _check_chunk_in_worker(chunk: list[str]) -> list[tuple]:
    assert _WORKER_STATE is not None
    return _check_chunk(chunk, *_WORKER_STATE)


def _check_chunk(chunk: list[str], settings: Settings, ctx: CheckContext) -> list[tuple]:
    return [pack(check_file(settings, ctx, relative)) for relative in chunk]


def check_file(settings: Settings, ctx: CheckContext, relative: str) -> NoteResult:
    """Read, parse and check one vault file."""
    try:
        raw, stat = read_with_stat(os.path.join(settings.vault, relative))
    except OSError as exc:
        finding = error(relative, None, "read-error", f"cannot read: {exc.strerror or exc}")
        return NoteResult(relative, "", (), None, None, (finding,))
    digest = content_digest(raw)
    in_claims = relative.startswith(settings.claims_dir.rstrip("/") + "/")
    if b"claim_id" not in raw and not in_claims:
        return NoteResult(relative, digest, stat, None, None, ())  # not a review note
    from vault_tools.checks import check_note  # imported once, then a dict look-up
    from vault_tools.note import parse_note

    note = parse_note(raw, relative)
    findings = check_note(note, ctx)
    if not note.is_review_note and not in_claims and b"claim_id" not in raw:
        findings = []
    return NoteResult(relative, digest, stat, note.claim_id, note.line_of_property("claim_id"),
                      tuple(findings))


def _current_claim_ids(settings: Settings, ctx: _LazyContext, cache: ResultCache,
                       results: list[tuple]) -> list[tuple]:
    """Other notes (known from the cache) sharing a claim_id with the checked ones.

    Only those few are looked at, and each is re-checked if it changed since it was
    cached, so an explicit run never reports a duplicate that no longer exists.
    """
    checked = {r[PATH] for r in results}
    wanted = {r[CLAIM_ID] for r in results if r[CLAIM_ID] is not None}
    current = []
    for entry in list(cache.claim_ids()):
        if entry[PATH] in checked or entry[CLAIM_ID] not in wanted:
            continue
        absolute = os.path.join(settings.vault, entry[PATH])
        try:
            fresh = cache.lookup(absolute, entry[PATH])
        except OSError:
            continue  # gone
        if fresh is None:
            fresh = pack(check_file(settings, ctx.get(), entry[PATH]))
            cache.store(fresh)
        if fresh[CLAIM_ID] in wanted:
            current.append(fresh)
    return current


def _duplicate_claim_ids(results: list[tuple], others: list[tuple]) -> list[Finding]:
    """A claim_id used by two notes is an error for each checked one."""
    first: dict[str, tuple] = {}
    owners: dict[str, list[tuple]] = {}  # only the claim_ids seen more than once
    for entry in [*results, *others]:
        claim_id = entry[CLAIM_ID]
        if claim_id is None:
            continue
        if claim_id in owners:
            owners[claim_id].append(entry)
        elif claim_id in first:
            owners[claim_id] = [first[claim_id], entry]
        else:
            first[claim_id] = entry
    findings = []
    checked = {r[PATH] for r in results} if owners else set()
    for claim_id, entries in owners.items():
        for entry in entries:
            path = entry[PATH]
            if path not in checked:
                continue
            names = ", ".join(e[PATH] for e in entries if e[PATH] != path)
            findings.append(error(path, entry[CLAIM_ID_LINE], "claim-id-duplicate",
                                  f"claim_id {claim_id!r} is also used by {names}"))
    return findings
