"""`vt validate`: check every review note of a vault (or the notes given).

Cold runs parse on every core (file_checks.py); warm runs reuse the cache in `.vt/`
(see cache.py), whose entries are keyed by each note's bytes and whose whole is
invalidated when the schemas, the knowledge base's folder or vt itself change. A note
added, removed or renamed elsewhere costs its own entry, and the entries of the notes
whose targets it may change (`ResultCache.drop_moved`).

A whole-vault run streams: the notes are checked in path order and each note's
findings go to a `Sink` as its result arrives (and, as piped text, to the cache's
memo), so memory stays flat as the vault grows; the cache is written as it goes too.
What a run keeps in memory per note: for the duplicate check, an 8-byte hash of its
claim_id (see duplicates.py), on a warm run the loaded index, and the vault's
listing (one string a file). The order of the findings: by path,
then line, code, message; the claim-id-duplicate findings of a whole-vault run come
last (they are known only when every note has been seen), sorted the same way
(sink.py has the sinks). An explicit run (notes given) is small and is sorted as one list.
`validate()` gives library callers a materialised, fully sorted `ValidateReport`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from vault_tools.checks.cache import CACHE_FILE, CacheCorrupt, ResultCache, results_key
from vault_tools.checks.context import CheckContext, context_for
from vault_tools.checks.duplicates import ClaimIds
from vault_tools.checks.file_checks import Progress, Tap, check_all, check_file
from vault_tools.checks.note_results import (
    CLAIM_ID,
    ERRORS,
    PACKED,
    PATH,
    WARNINGS,
    pack,
    plain_text,
    unpack_findings,
)
from vault_tools.checks.schemas import Schemas
from vault_tools.checks.sink import Block, Collector, Emitter, Sink, Summary, ValidateReport
from vault_tools.config import Settings
from vault_tools.findings import ERROR, Finding, error, sort_key
from vault_tools.infra.boundary import writable_path
from vault_tools.notes.identity import new_digest
from vault_tools.notes.kb import KnowledgeBase
from vault_tools.notes.vault import Listing, Paths, given_notes, in_batches, list_vault


def validate(
    settings: Settings,
    paths: list[Path] | None = None,
    progress: Progress | None = None,
    tap: Tap | None = None,
    listing: Listing | None = None,
) -> ValidateReport:
    """Every finding, materialised and sorted (the CLI streams with `validate_into`).
    `tap`: something else to make of each note a whole-vault run reads (file_checks.py);
    `listing`: the vault's, when the caller has listed it already."""
    collector = Collector()
    summary = validate_into(settings, collector, paths, progress, tap, listing)
    collector.findings.sort(key=sort_key)  # the duplicates, streamed last, into place
    return ValidateReport(summary.notes, collector.findings)


def validate_into(
    settings: Settings,
    sink: Sink,
    paths: list[Path] | None = None,
    progress: Progress | None = None,
    tap: Tap | None = None,
    listing: Listing | None = None,
) -> Summary:
    """Check the vault (or `paths`), giving the findings to `sink` as they are known.

    A payload record of the cache that cannot be read (never expected: its file is
    opened with the index) drops the cache and starts over, so a sink that already
    wrote some blocks would see them again.
    """
    listing = list_vault(settings.vault) if listing is None else listing
    try:
        return _validate_listed(settings, sink, paths, progress, listing, tap)
    except CacheCorrupt:
        (settings.state_dir / CACHE_FILE).unlink(missing_ok=True)
        return _validate_listed(settings, sink, paths, progress, listing, tap)


def _validate_listed(
    settings: Settings,
    sink: Sink,
    paths: list[Path] | None,
    progress: Progress | None,
    listing: Listing,
    tap: Tap | None = None,
) -> Summary:
    schemas = Schemas(settings.schemas_dir)
    kb = KnowledgeBase(listing, settings.kb_dir, settings.vault)
    ctx = context_for(settings, schemas, kb)
    before: dict[str, list[Finding]] = {}  # findings not from checking a note, by path
    targets: Paths
    if paths:
        targets = explicit = _explicit_targets(settings, paths, before)
    else:
        targets = listing.inside()  # never read outside; the listing's list when it can
        for finding in listing.findings(settings.claims_dir):
            before.setdefault(finding.path, []).append(finding)
    cache = ResultCache.read(writable_path(settings.vault, settings.state_dir))
    try:
        aliases = kb.load_aliases(cache.aliases, cache.fresh, cache.listing)
        cache.use_key(results_key(schemas, kb, settings))
        if cache.listing != kb.digest:
            cache.drop_moved(kb)
        if aliases != cache.aliases or cache.listing != kb.digest:
            cache.aliases, cache.listing, cache.dirty = aliases, kb.digest, True
        if paths:
            summary = _explicit_run(settings, ctx, explicit, cache, before, sink, progress)
        else:
            summary = _vault_run(settings, ctx, targets, cache, before, sink, progress, tap)
        cache.save()
    finally:
        cache.close()
    return summary._replace(cache_failure=cache.failure)


def _vault_run(
    settings: Settings,
    ctx: CheckContext,
    targets: Paths,
    cache: ResultCache,
    before: dict[str, list[Finding]],
    sink: Sink,
    progress: Progress | None,
    tap: Tap | None = None,
) -> Summary:
    """Every note of the vault, streamed to `sink` in path order, the duplicates last."""
    misses: Paths
    if cache.entries:
        hits, misses = cache.lookup_all(str(settings.vault), targets)
    else:
        hits, misses = {}, targets
    run = _run_digest(targets, before=before)  # the output is a function of these
    if not misses:
        memo = cache.open_memo(run)
        if memo is not None:
            with memo:
                if sink.text(memo):
                    return _memo_summary(targets, hits, before)
    if progress:
        progress(len(hits), len(targets))
    with ClaimIds() as claims:
        return _stream(
            settings, ctx, targets, (hits, misses), cache, before, sink, progress, claims, run, tap
        )


def _stream(
    settings: Settings,
    ctx: CheckContext,
    targets: Paths,
    looked_up: tuple[dict[str, tuple], Paths],
    cache: ResultCache,
    before: dict[str, list[Finding]],
    sink: Sink,
    progress: Progress | None,
    claims: ClaimIds,
    run: str,
    tap: Tap | None = None,
) -> Summary:
    """`_vault_run`'s loop: each target's findings out in path order, the duplicates last."""
    hits, misses = looked_up
    fresh = iter(check_all(settings, ctx, misses, len(hits), len(targets), progress, tap))
    memo_out = (
        None if not len(misses) and cache.memo and cache.memo[0] == run else cache.memo_writer()
    )
    out = Emitter(sink, memo_out)
    notes = 0
    outside = sorted(before)  # symlinks out of the vault: never among the targets
    for target in targets:
        entry = hits.get(target)
        if entry is None:
            entry = next(fresh)
            cache.store(entry)
            payload: tuple | None = entry[PACKED:]
        else:
            payload = None
        while outside and outside[0] < target:
            out.findings(outside[0], before.pop(outside.pop(0)))
        notes += claims.add(entry)
        if entry[ERRORS] + entry[WARNINGS]:
            out.block(
                Block(target, entry[ERRORS], entry[WARNINGS], payload or cache.findings_of(entry))
            )
    for _ in fresh:  # none left: this lets its pool finish
        raise AssertionError("a note checked but not a target")
    for path in outside:
        out.findings(path, before[path])
    for path, found in claims.duplicates(None):
        out.findings(path, found)
    if memo_out is not None:
        cache.finish_memo(run)
    return Summary(notes, out.errors, out.warnings)


def _run_digest(
    targets: Iterable[str], batch: int = 1024, before: dict[str, list[Finding]] | None = None
) -> str:
    """`content_digest` of the targets, one a line, fed a batch at a time (the whole
    text, built at once, is megabytes on a large vault), then of the findings known
    before any note is read (a FIFO or an unreadable folder changes no target)."""
    digest = new_digest()
    for start, part in enumerate(in_batches(targets, batch)):
        text = "\n".join(part)
        digest.update(f"\n{text}".encode() if start else text.encode())
    if before:
        digest.update(
            b"\0"
            + plain_text(sorted(f for found in before.values() for f in found)).encode(
                "utf-8", "surrogatepass"
            )
        )
    return digest.hexdigest()


def _memo_summary(
    targets: Paths, hits: dict[str, tuple], before: dict[str, list[Finding]]
) -> Summary:
    """The counts of an unchanged vault whose output is the memo."""
    notes = errors = warnings = 0
    with ClaimIds() as claims:
        for target in targets:
            entry = hits[target]
            notes += claims.add(entry)
            errors += entry[ERRORS]
            warnings += entry[WARNINGS]
        duplicates = claims.duplicates(None)
    extra = [f for found in before.values() for f in found]
    extra += [f for _, found in duplicates for f in found]
    extra_errors = sum(1 for f in extra if f.severity == ERROR)
    return Summary(notes, errors + extra_errors, warnings + len(extra) - extra_errors)


def _explicit_run(
    settings: Settings,
    ctx: CheckContext,
    targets: list[str],
    cache: ResultCache,
    before: dict[str, list[Finding]],
    sink: Sink,
    progress: Progress | None,
) -> Summary:
    """The notes given: few, so their findings are gathered and sorted as one list."""
    results = _results(settings, ctx, targets, cache, progress)
    others = _current_claim_ids(settings, ctx, cache, results)
    notes = 0
    with ClaimIds() as claims:
        for entry in results:
            if entry[CLAIM_ID] is None and not entry[ERRORS] + entry[WARNINGS]:
                before.setdefault(entry[PATH], []).append(
                    error(
                        entry[PATH],
                        None,
                        "not-review-note",
                        "not a review note (its frontmatter has no claim_id)",
                    )
                )
            notes += claims.add(entry)
        for entry in others:
            claims.add(entry)
        after = dict(claims.duplicates({r[PATH] for r in results}))
    out = Emitter(sink, None)
    by_path = {entry[PATH]: entry for entry in results}
    for path in sorted(by_path.keys() | before.keys() | after.keys()):
        if path not in before and path not in after:  # so one of the notes checked
            entry = by_path[path]
            if entry[ERRORS] + entry[WARNINGS]:
                out.block(Block(path, entry[ERRORS], entry[WARNINGS], _payload(entry, cache)))
            continue
        own = unpack_findings(_payload(by_path[path], cache)[0]) if path in by_path else []
        out.findings(path, [*before.get(path, ()), *own, *after.get(path, ())])
    return Summary(notes, out.errors, out.warnings)


def _payload(entry: tuple, cache: ResultCache) -> tuple:
    """(packed findings, piped text) of an entry: its own, or the cache's for an index entry."""
    return entry[PACKED:] if len(entry) > PACKED + 1 else cache.findings_of(entry)


def _explicit_targets(
    settings: Settings, paths: list[Path], before: dict[str, list[Finding]]
) -> list[str]:
    targets = []
    for relative, problem in given_notes(settings.vault, paths):
        if problem is None:
            targets.append(relative)
        else:
            before.setdefault(relative, []).append(problem)
    return sorted(targets)


def _results(
    settings: Settings,
    ctx: CheckContext,
    targets: list[str],
    cache: ResultCache,
    progress: Progress | None,
) -> list[tuple]:
    """Every target's entry (from the cache, or checked now)."""
    if cache.entries:
        results, misses = cache.lookup_all(str(settings.vault), targets)
    else:
        results, misses = {}, targets
    if progress:
        progress(len(results), len(targets))
    for entry in check_all(settings, ctx, misses, len(results), len(targets), progress):
        results[entry[PATH]] = entry
        cache.store(entry)
    return [results[t] for t in targets]


def _current_claim_ids(
    settings: Settings, ctx: CheckContext, cache: ResultCache, results: list[tuple]
) -> list[tuple]:
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
            fresh = pack(check_file(settings, ctx, entry[PATH]))
            cache.store(fresh)
        if fresh[CLAIM_ID] in wanted:
            current.append(fresh)
    return current
