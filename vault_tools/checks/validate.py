"""`vt validate`: check every review note of a vault (or the notes given).

Cold runs parse on every core; warm runs reuse the cache in `.vt/` (see cache.py),
whose entries are keyed by each note's bytes and whose whole is invalidated when the
schemas, the knowledge base's file list or vt itself change.

A whole-vault run streams: the notes are checked in path order and each note's
findings go to a `Sink` as its result arrives (and, as piped text, to the cache's
memo), so memory stays flat as the vault grows; the cache is written as it goes too.
What a run keeps in memory per note: for the duplicate check, an 8-byte hash of its
claim_id (the rest of its record goes to a temporary file), and on a warm run the
loaded index; a large vault's listing is in a temporary file too (see vault.py). The
order of the findings:
by path, then line, code, message; the claim-id-duplicate findings of a whole-vault
run come last (they are known only when every note has been seen), sorted the same
way. An explicit run (notes given) is small and is sorted as one list.
`validate()` gives library callers a materialised, fully sorted `ValidateReport`.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
import tempfile
from array import array
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, Protocol

from vault_tools import __version__
from vault_tools.checks.cache import (
    CACHE_FILE,
    CacheCorrupt,
    ResultCache,
    content_digest,
    read_with_stat,
)
from vault_tools.checks.context import CheckContext
from vault_tools.checks.schemas import Schemas
from vault_tools.config import Settings
from vault_tools.findings import ERROR, Finding, error, severity_counts, sort_key
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.sortedruns import in_batches
from vault_tools.notes.kb import KnowledgeBase
from vault_tools.notes.vault import (
    Listing,
    Paths,
    given_notes,
    list_vault,
    may_be_review_note,
    read_finding,
)

if TYPE_CHECKING:  # the parser and the checks are imported when a note is read
    from vault_tools.notes.note import Note

Progress = Callable[[int, int], None]
# below this many notes to parse, a process pool costs more than it saves
PARALLEL_THRESHOLD = 400


class NoteResult(NamedTuple):
    """What one note contributes to a vault run (small, cacheable; a tuple so that the
    pool and the cache move thousands of them cheaply)."""

    path: str
    digest: str  # of the note's bytes: what the cache entry stands for
    stat: tuple[int, ...]  # (mtime_ns, ctime_ns, size, inode) when the bytes were read
    claim_id: str | None
    claim_id_line: int | None
    findings: tuple[Finding, ...]


class Summary(NamedTuple):
    notes: int
    errors: int
    warnings: int


class Block:
    """The sorted findings of one path: packed (with their piped text), or Findings."""

    __slots__ = ("path", "errors", "warnings", "_payload", "_list")

    def __init__(
        self,
        path: str,
        errors: int,
        warnings: int,
        payload: tuple | None = None,
        findings: list[Finding] | None = None,
    ):
        self.path, self.errors, self.warnings = path, errors, warnings
        self._payload, self._list = payload, findings

    @classmethod
    def of(cls, path: str, findings: list[Finding]) -> Block:
        errors = sum(1 for f in findings if f.severity == ERROR)
        return cls(path, errors, len(findings) - errors, findings=findings)

    def findings(self) -> list[Finding]:
        if self._list is None:
            assert self._payload is not None
            return unpack_findings(self._payload[0])
        return self._list

    def plain(self) -> str:
        """The piped output lines of the findings."""
        if self._list is None:
            assert self._payload is not None
            return self._payload[1]
        return _plain_text(self._list)


class Sink(Protocol):
    """Where a run's findings go, path by path, as they are known."""

    def block(self, block: Block) -> None: ...

    def text(self, memo: BinaryIO) -> bool:
        """Take the whole piped output of an unchanged vault (UTF-8) instead of its
        blocks: True if taken, False to be given the blocks."""
        ...


class ValidateReport:
    """The notes checked and their findings, sorted by (path, line, code, message)."""

    def __init__(self, notes: int = 0, findings: list[Finding] | None = None):
        self.notes = notes
        self.findings = findings if findings is not None else []

    @property
    def errors(self) -> int:
        return severity_counts(self.findings)[0]

    @property
    def warnings(self) -> int:
        return severity_counts(self.findings)[1]

    def plain(self) -> str:
        """Every finding as a `path:line: code: message` line (the piped output)."""
        return _plain_text(self.findings)

    def to_json(self) -> dict:
        return {
            "notes": self.notes,
            "errors": self.errors,
            "warnings": self.warnings,
            "findings": [f.to_json() for f in self.findings],
        }


class _Collector:
    """A sink keeping every finding (for library callers)."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def block(self, block: Block) -> None:
        self.findings.extend(block.findings())

    def text(self, memo: BinaryIO) -> bool:
        return False


def make_context(
    settings: Settings, files: Listing | Iterable | None = None, assist: bool = True
) -> CheckContext:
    """Schemas and knowledge base for checking notes; `assist=False` for errors only.

    `files`: the vault's listing, or its `MarkdownFile`s (listed now when None)."""
    files = list_vault(settings.vault) if files is None else files
    return _context(
        settings,
        Schemas(settings.schemas_dir),
        KnowledgeBase(files, settings.kb_dir, settings.vault),
        assist,
    )


def _context(
    settings: Settings, schemas: Schemas, kb: KnowledgeBase, assist: bool = True
) -> CheckContext:
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


def validate(
    settings: Settings, paths: list[Path] | None = None, progress: Progress | None = None
) -> ValidateReport:
    """Every finding, materialised and sorted (the CLI streams with `validate_into`)."""
    collector = _Collector()
    summary = validate_into(settings, collector, paths, progress)
    collector.findings.sort(key=sort_key)  # the duplicates, streamed last, into place
    return ValidateReport(summary.notes, collector.findings)


def validate_into(
    settings: Settings,
    sink: Sink,
    paths: list[Path] | None = None,
    progress: Progress | None = None,
) -> Summary:
    """Check the vault (or `paths`), giving the findings to `sink` as they are known.

    A payload record of the cache that cannot be read (never expected: its file is
    opened with the index) drops the cache and starts over, so a sink that already
    wrote some blocks would see them again.
    """
    try:
        return _validate(settings, sink, paths, progress)
    except CacheCorrupt:
        (settings.state_dir / CACHE_FILE).unlink(missing_ok=True)
        return _validate(settings, sink, paths, progress)


def _validate(
    settings: Settings, sink: Sink, paths: list[Path] | None, progress: Progress | None
) -> Summary:
    listing = list_vault(settings.vault, spill=not paths)  # a large one in a temporary file
    try:
        return _validate_listed(settings, sink, paths, progress, listing)
    finally:
        listing.close()


def _validate_listed(
    settings: Settings,
    sink: Sink,
    paths: list[Path] | None,
    progress: Progress | None,
    listing: Listing,
) -> Summary:
    schemas = Schemas(settings.schemas_dir)
    kb = KnowledgeBase(listing, settings.kb_dir, settings.vault)
    ctx = _LazyContext(settings, schemas, kb)
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
        if aliases != cache.aliases or cache.listing != kb.digest:
            cache.aliases, cache.listing, cache.dirty = aliases, kb.digest, True
        cache.use_key(_cache_key(schemas, kb, settings))
        if paths:
            summary = _explicit_run(settings, ctx, explicit, cache, before, sink, progress)
        else:
            summary = _vault_run(settings, ctx, targets, cache, before, sink, progress)
        cache.save()
    finally:
        cache.close()
    return summary


def _vault_run(
    settings: Settings,
    ctx: _LazyContext,
    targets: Paths,
    cache: ResultCache,
    before: dict[str, list[Finding]],
    sink: Sink,
    progress: Progress | None,
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
    with _ClaimIds() as claims:
        return _stream(
            settings, ctx, targets, (hits, misses), cache, before, sink, progress, claims, run
        )


def _stream(
    settings: Settings,
    ctx: _LazyContext,
    targets: Paths,
    looked_up: tuple[dict[str, tuple], Paths],
    cache: ResultCache,
    before: dict[str, list[Finding]],
    sink: Sink,
    progress: Progress | None,
    claims: _ClaimIds,
    run: str,
) -> Summary:
    """`_vault_run`'s loop: each target's findings out in path order, the duplicates last."""
    hits, misses = looked_up
    fresh = iter(_check_all(settings, ctx, misses, len(hits), len(targets), progress))
    memo_out = (
        None if not len(misses) and cache.memo and cache.memo[0] == run else cache.memo_writer()
    )
    out = _Emitter(sink, memo_out)
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
    digest = hashlib.blake2b(digest_size=16)  # as content_digest
    for start, part in enumerate(in_batches(targets, batch)):
        text = "\n".join(part)
        digest.update(f"\n{text}".encode() if start else text.encode())
    if before:
        digest.update(
            b"\0"
            + _plain_text(sorted(f for found in before.values() for f in found)).encode(
                "utf-8", "surrogatepass"
            )
        )
    return digest.hexdigest()


def _memo_summary(
    targets: Paths, hits: dict[str, tuple], before: dict[str, list[Finding]]
) -> Summary:
    """The counts of an unchanged vault whose output is the memo."""
    notes = errors = warnings = 0
    with _ClaimIds() as claims:
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


class _Emitter:
    """Blocks to the sink (and their piped text to the memo), counted."""

    def __init__(self, sink: Sink, memo: BinaryIO | None):
        self.sink, self.memo = sink, memo
        self.errors = self.warnings = 0

    def block(self, block: Block) -> None:
        self.errors += block.errors
        self.warnings += block.warnings
        if self.memo is not None:
            self.memo.write(block.plain().encode())
        self.sink.block(block)

    def findings(self, path: str, findings: list[Finding]) -> None:
        self.block(Block.of(path, sorted(findings, key=sort_key)))


class _ClaimIds:
    """The claim_id of every review note seen, for the duplicate check at the end.

    A whole-vault run adds every note, so only an 8-byte hash of each claim_id stays in
    memory; the rest (path, line, the claim_id's bytes) is a record appended to a buffer
    that goes to an anonymous temporary file (no name on disk) once it grows past
    SPILL_BYTES. Hashes seen twice are found with a bounded bit filter, then counted
    exactly; only when some hash is repeated are the records read back, and the notes
    of those hashes grouped by the claim_ids themselves, so that a hash collision never
    makes (nor hides) a duplicate. Use it as a context manager (the file is closed).
    """

    def __init__(self) -> None:
        self._hashes = array("q")
        self._buffer = bytearray()  # records not yet spilled
        self._file: BinaryIO | None = None
        self._spilled = 0  # bytes in the file

    def __enter__(self) -> _ClaimIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def add(self, entry: tuple) -> bool:
        """Note the claim_id of a note's entry; whether it is a review note (has one)."""
        claim_id = entry[CLAIM_ID]
        if claim_id is None:
            return False
        line = entry[CLAIM_ID_LINE]
        path = entry[PATH].encode("utf-8", "surrogatepass")
        raw = claim_id.encode("utf-8", "surrogatepass")
        self._hashes.append(_claim_hash(claim_id))
        self._buffer += _RECORD.pack(NO_LINE if line is None else line, len(path), len(raw))
        self._buffer += path
        self._buffer += raw
        if len(self._buffer) >= SPILL_BYTES:
            self._spill()
        return True

    def duplicates(self, checked: set[str] | None) -> list[tuple[str, list[Finding]]]:
        """(path, its claim-id-duplicate findings) of each note (among `checked`, when
        given) sharing its claim_id, by path."""
        by_path: dict[str, list[Finding]] = {}
        for claim_id, owners in self._shared():
            for path, line in owners:
                if checked is not None and path not in checked:
                    continue
                names = ", ".join(p for p, _ in owners if p != path)
                by_path.setdefault(path, []).append(
                    error(
                        path,
                        line,
                        "claim-id-duplicate",
                        f"claim_id {claim_id!r} is also used by {names}",
                    )
                )
        return sorted(by_path.items())

    def _shared(self) -> Iterator[tuple[str, list[tuple[str, int | None]]]]:
        """Each claim_id of two notes or more, with its (path, line) owners as added."""
        repeated = _repeated(self._hashes)
        if not repeated:  # the usual case: no two notes share a hash, let alone a claim_id
            return
        groups: dict[int, list[tuple[int, bytes, bytes]]] = {}
        for value, record in zip(self._hashes, self._records(), strict=True):
            if value in repeated:
                groups.setdefault(value, []).append(record)
        for notes in groups.values():
            by_claim: dict[bytes, list[tuple[int, bytes, bytes]]] = {}
            for note in notes:
                by_claim.setdefault(note[2], []).append(note)
            for raw, owners in by_claim.items():
                if len(owners) > 1:
                    yield (
                        _decoded(raw),
                        [
                            (_decoded(path), None if line == NO_LINE else line)
                            for line, path, _ in owners
                        ],
                    )

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._file.write(self._buffer)
        self._spilled += len(self._buffer)
        self._buffer.clear()

    def _records(self) -> Iterator[tuple[int, bytes, bytes]]:
        """Per note in order, its (line, path, claim_id) as stored (UTF-8 bytes)."""
        if self._file is not None:
            self._file.flush()
            fd, position, tail = self._file.fileno(), 0, b""
            while position < self._spilled:
                block = os.pread(fd, min(SPILL_BYTES, self._spilled - position), position)
                position += len(block)
                tail = yield from _parsed(tail + block)
            yield from _parsed(tail + self._buffer)
        else:
            yield from _parsed(bytes(self._buffer))


NO_LINE = -1
SPILL_BYTES = 1 << 16  # the claim records a run keeps in memory before spilling them
FILTER_BITS = 1 << 21  # the bit filter of `_repeated` (256 KiB)
_RECORD = struct.Struct("<iII")  # line, then the lengths of the path and the claim_id
_claim_hash: Callable[[str], int] = hash  # 64 bits; collisions are resolved exactly


def _parsed(data: bytes) -> Generator[tuple[int, bytes, bytes], None, bytes]:
    """The whole records at the start of `data` (see `_ClaimIds._records`); returns the
    bytes of a record cut short."""
    offset, size, unpack = 0, len(data), _RECORD.unpack_from
    while offset + _RECORD.size <= size:
        line, path_size, claim_size = unpack(data, offset)
        start = offset + _RECORD.size
        end = start + path_size + claim_size
        if end > size:
            break
        yield line, data[start : start + path_size], data[start + path_size : end]
        offset = end
    return data[offset:]


def _decoded(stored: bytes) -> str:
    return stored.decode("utf-8", "surrogatepass")


def _repeated(values: array) -> set[int]:
    """The values occurring more than once: those that meet a value already seen in a
    bit filter (of a bounded size), counted exactly."""
    bits = bytearray(FILTER_BITS >> 3)
    mask = FILTER_BITS - 1
    maybe: set[int] = set()
    for value in values:
        slot = value & mask
        bit = 1 << (slot & 7)
        if bits[slot >> 3] & bit:
            maybe.add(value)
        else:
            bits[slot >> 3] |= bit
    if not maybe:
        return maybe
    counts = dict.fromkeys(maybe, 0)
    for value in values:
        if value in counts:
            counts[value] += 1
    return {value for value, count in counts.items() if count > 1}


def _explicit_run(
    settings: Settings,
    ctx: _LazyContext,
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
    with _ClaimIds() as claims:
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
    out = _Emitter(sink, None)
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


def _cache_key(schemas: Schemas, kb: KnowledgeBase, settings: Settings) -> str:
    """What every cached result depends on besides the note's own bytes."""
    parts = [
        __version__,
        schemas.digest,
        kb.digest,
        kb.aliases_digest(),
        ",".join(sorted(settings.disabled_findings)),
        settings.claims_dir,
        str(settings.max_note_bytes),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# --- packed results: what workers send back and the cache keeps ------------------------
# (path, digest, stat, claim_id, claim_id_line, errors, warnings, findings, text): plain
# tuples, the findings sorted and marshalled, `text` their piped output lines
PATH, DIGEST, STAT, CLAIM_ID, CLAIM_ID_LINE, ERRORS, WARNINGS, PACKED, TEXT = range(9)


def pack(result: NoteResult) -> tuple:
    """A NoteResult in the packed form (cheap to send between processes and to cache)."""
    findings = sorted(result.findings, key=sort_key)
    errors = sum(1 for f in findings if f.severity == ERROR)
    return (
        result.path,
        result.digest,
        result.stat,
        result.claim_id,
        result.claim_id_line,
        errors,
        len(findings) - errors,
        marshal.dumps(tuple(map(tuple, findings))),
        _plain_text(findings),
    )


def unpack_findings(packed: bytes) -> list[Finding]:
    return list(map(Finding._make, marshal.loads(packed)))


def _plain_text(findings: list[Finding]) -> str:
    return "".join(
        [
            f"{f.path}:{f.line}: {f.code}: {f.message}\n"
            if f.line
            else f"{f.path}: {f.code}: {f.message}\n"
            for f in findings
        ]
    )


def _results(
    settings: Settings,
    ctx: _LazyContext,
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
    for entry in _check_all(settings, ctx, misses, len(results), len(targets), progress):
        results[entry[PATH]] = entry
        cache.store(entry)
    return [results[t] for t in targets]


def _check_all(
    settings: Settings,
    ctx: _LazyContext,
    targets: Paths,
    done: int,
    total: int,
    progress: Progress | None,
) -> Iterator[tuple]:
    """The packed results of `targets`, in their order, made as they are consumed."""
    if not len(targets):
        return iter(())
    from vault_tools.infra.pool import map_chunks

    context = ctx.get()

    def work(chunk: list[str]) -> list[tuple]:
        return [pack(result) for result in check_files(settings, context, chunk)]

    def counted(checked: int, _: int) -> None:
        assert progress is not None
        progress(done + checked, total)

    return map_chunks(
        work,
        targets,
        workers=settings.workers,
        count=len(targets),
        progress=counted if progress else None,
        threshold=PARALLEL_THRESHOLD,
    )


def check_file(settings: Settings, ctx: CheckContext, relative: str) -> NoteResult:
    """Read, parse and check one vault file."""
    return _checked(ctx, _read(settings, relative))


# Notes read and parsed before they are checked: a few parses, then a few checks, keep
# each stage's code and data in the processor's caches, which one note after the other
# does not (a tenth less time per note, measured on a synthetic vault of 10k notes; 32
# notes a batch were another 4% faster than 16 over a whole cold run, 64 no faster).
CHECK_BATCH = 32


def check_files(
    settings: Settings, ctx: CheckContext, relatives: Sequence[str]
) -> Iterator[NoteResult]:
    """`check_file` of each of `relatives`, in order, CHECK_BATCH at a time."""
    for start in range(0, len(relatives), CHECK_BATCH):
        batch = [_read(settings, relative) for relative in relatives[start : start + CHECK_BATCH]]
        for read in batch:
            yield _checked(ctx, read)


class _Read(NamedTuple):
    """A vault file read (and, when it may be a review note, parsed), not yet checked."""

    relative: str
    digest: str
    stat: tuple[int, ...]
    note: Note


def _read(settings: Settings, relative: str) -> _Read | NoteResult:
    """The file read and parsed, or its result already (unreadable, not a review note)."""
    try:
        raw, stat = read_with_stat(os.path.join(settings.vault, relative), settings.max_note_bytes)
    except OSError as exc:  # never cached (no digest): a later run reads it again
        return NoteResult(relative, "", (), None, None, (read_finding(relative, exc),))
    digest = content_digest(raw)
    if not may_be_review_note(relative, raw, settings.claims_dir):
        return NoteResult(relative, digest, stat, None, None, ())  # not a review note
    from vault_tools.notes.note import parse_note  # imported once, then a dict look-up

    return _Read(relative, digest, stat, parse_note(raw, relative))


def _checked(ctx: CheckContext, read: _Read | NoteResult) -> NoteResult:
    if isinstance(read, NoteResult):
        return read
    from vault_tools.checks.rules import check_note

    note = read.note
    return NoteResult(
        read.relative,
        read.digest,
        read.stat,
        note.claim_id,
        note.line_of_property("claim_id"),
        tuple(check_note(note, ctx)),
    )


def _current_claim_ids(
    settings: Settings, ctx: _LazyContext, cache: ResultCache, results: list[tuple]
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
            fresh = pack(check_file(settings, ctx.get(), entry[PATH]))
            cache.store(fresh)
        if fresh[CLAIM_ID] in wanted:
            current.append(fresh)
    return current
