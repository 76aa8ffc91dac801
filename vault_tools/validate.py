"""`vt validate`: check every review note of a vault (or the notes given).

Cold runs parse on every core; warm runs reuse `.vt/validate-cache.pickle`, whose
entries are keyed by each note's bytes and whose whole is invalidated when the
schemas, the knowledge base's file list or vt itself change. Only small per-note
results are kept in memory, never the parsed notes.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from vault_tools import __version__
from vault_tools.cache import ResultCache, content_digest, read_with_stat
from vault_tools.checks import CheckContext, check_note
from vault_tools.config import Settings
from vault_tools.findings import ERROR, WARNING, Finding, error, sort_key
from vault_tools.kb import KnowledgeBase
from vault_tools.note import parse_note
from vault_tools.schemas import Schemas
from vault_tools.vault import markdown_files, relative_in_vault

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


@dataclass(slots=True)
class ValidateReport:
    notes: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == WARNING)

    def to_json(self) -> dict:
        return {"notes": self.notes, "errors": self.errors, "warnings": self.warnings,
                "findings": [f.to_json() for f in self.findings]}


def make_context(settings: Settings, files: Iterable | None = None,
                 assist: bool = True) -> CheckContext:
    """Schemas and knowledge base for checking notes; `assist=False` for errors only."""
    files = markdown_files(settings.vault) if files is None else files
    return CheckContext(Schemas(settings.schemas_dir),
                        KnowledgeBase(files, settings.kb_dir, settings.vault),
                        settings.disabled_findings, assist)


def validate(settings: Settings, paths: list[Path] | None = None,
             progress: Progress | None = None) -> ValidateReport:
    files = markdown_files(settings.vault)
    ctx = make_context(settings, files)
    report = ValidateReport()
    if paths:
        targets = _explicit_targets(settings, paths, report)
    else:
        targets = [f.relative for f in files if not f.escapes]  # never read outside
        report.findings.extend(_escaping_notes(settings, files))
    cache = ResultCache.load(settings.state_dir, _cache_key(ctx))
    results = _results(settings, ctx, targets, cache, progress)
    explicit = bool(paths)
    for result in results:
        if result.claim_id is None and explicit and not result.findings:
            report.findings.append(error(result.path, None, "not-review-note",
                                         "not a review note (its frontmatter has no claim_id)"))
        report.notes += result.claim_id is not None
        report.findings.extend(result.findings)
    others = _current_claim_ids(settings, ctx, cache, results) if explicit else []
    report.findings.extend(_duplicate_claim_ids(results, others))
    report.findings.sort(key=sort_key)
    cache.save()
    return report


def _escaping_notes(settings: Settings, files: list) -> list[Finding]:
    """Symlinks among the review notes that lead out of the vault: reported, never read."""
    prefix = settings.claims_dir.rstrip("/") + "/"
    return [error(f.relative, None, "read-error",
                  "a symlink that leads outside the vault (or loops); not read")
            for f in files if f.escapes and f.relative.startswith(prefix)]


def _explicit_targets(settings: Settings, paths: list[Path], report: ValidateReport) -> list[str]:
    targets = []
    for path in paths:
        relative = relative_in_vault(settings.vault, path)
        if relative is None:
            report.findings.append(error(str(path), None, "path-outside-vault",
                                         f"not inside the vault {settings.vault}"))
        elif not (settings.vault / relative).is_file():
            report.findings.append(error(relative, None, "read-error", "no such file"))
        else:
            targets.append(relative)
    return sorted(set(targets))


def _cache_key(ctx: CheckContext) -> str:
    parts = [__version__, ctx.schemas.digest, ctx.kb.digest, ctx.kb.aliases_digest(),
             ",".join(sorted(ctx.disabled))]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _results(settings: Settings, ctx: CheckContext, targets: list[str], cache: ResultCache,
             progress: Progress | None) -> list[NoteResult]:
    results: dict[str, NoteResult] = {}
    misses: list[str] = []
    if cache.entries:
        root = str(settings.vault)
        for relative in targets:
            try:
                hit = cache.lookup(os.path.join(root, relative), relative)
            except OSError:
                hit = None
            if hit is None:
                misses.append(relative)
            else:
                results[relative] = hit
    else:
        misses = targets
    if progress:
        progress(len(results), len(targets))
    for result in _run(settings, ctx, misses, len(results), len(targets), progress):
        results[result.path] = result
        cache.store(result)
    return [results[t] for t in targets]


def _run(settings: Settings, ctx: CheckContext, targets: list[str], done: int, total: int,
         progress: Progress | None) -> Iterable[NoteResult]:
    workers = settings.workers or os.cpu_count() or 1
    chunks = [targets[i:i + CHUNK] for i in range(0, len(targets), CHUNK)]
    if workers < 2 or len(targets) < PARALLEL_THRESHOLD or not _can_fork():
        mapped: Iterable[list[NoteResult]] = (_check_chunk(chunk, settings, ctx)
                                              for chunk in chunks)
        yield from _with_progress(mapped, done, total, progress)
        return
    global _WORKER_STATE
    _WORKER_STATE = (settings, ctx)  # inherited by the forked workers
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        yield from _with_progress(pool.imap(_check_chunk_in_worker, chunks), done, total,
                                  progress)


def _with_progress(batches: Iterable[list[NoteResult]], done: int, total: int,
                   progress: Progress | None) -> Iterable[NoteResult]:
    for batch in batches:
        yield from batch
        done += len(batch)
        if progress:
            progress(done, total)


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


_WORKER_STATE: tuple[Settings, CheckContext] | None = None


def _check_chunk_in_worker(chunk: list[str]) -> list[NoteResult]:
    assert _WORKER_STATE is not None
    return _check_chunk(chunk, *_WORKER_STATE)


def _check_chunk(chunk: list[str], settings: Settings, ctx: CheckContext) -> list[NoteResult]:
    return [check_file(settings, ctx, relative) for relative in chunk]


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
    note = parse_note(raw, relative)
    findings = check_note(note, ctx)
    if not note.is_review_note and not in_claims and b"claim_id" not in raw:
        findings = []
    return NoteResult(relative, digest, stat, note.claim_id, note.line_of_property("claim_id"),
                      tuple(findings))


def _current_claim_ids(settings: Settings, ctx: CheckContext, cache: ResultCache,
                       results: list[NoteResult]) -> list[NoteResult]:
    """Other notes (known from the cache) sharing a claim_id with the checked ones.

    Only those few are looked at, and each is re-checked if it changed since it was
    cached, so an explicit run never reports a duplicate that no longer exists.
    """
    checked = {r.path for r in results}
    wanted = {r.claim_id for r in results if r.claim_id is not None}
    current = []
    for entry in list(cache.claim_ids()):
        if entry.path in checked or entry.claim_id not in wanted:
            continue
        absolute = os.path.join(settings.vault, entry.path)
        try:
            fresh = cache.lookup(absolute, entry.path)
        except OSError:
            continue  # gone
        if fresh is None:
            fresh = check_file(settings, ctx, entry.path)
            cache.store(fresh)
        if fresh.claim_id in wanted:
            current.append(fresh)
    return current


def _duplicate_claim_ids(results: list[NoteResult], others: list[NoteResult]) -> list[Finding]:
    """A claim_id used by two notes is an error for each checked one."""
    owners: dict[str, list[tuple[str, int | None]]] = {}
    checked = {r.path for r in results}
    for result in [*results, *others]:
        if result.claim_id is not None:
            owners.setdefault(result.claim_id, []).append((result.path, result.claim_id_line))
    findings = []
    for claim_id, notes in owners.items():
        if len(notes) < 2:
            continue
        for path, line in notes:
            if path not in checked:
                continue
            others = ", ".join(p for p, _ in notes if p != path)
            findings.append(error(path, line, "claim-id-duplicate",
                                  f"claim_id {claim_id!r} is also used by {others}"))
    return findings
