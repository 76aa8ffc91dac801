"""Checking vault files: one read, parsed and checked (`check_file`), or many, batched,
and on every core when there are enough of them (`check_all`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import NamedTuple

from vault_tools.checks.context import CheckContext
from vault_tools.checks.note_results import DIGEST, PATH, STAT, NoteResult, pack
from vault_tools.config import Settings
from vault_tools.findings import Finding
from vault_tools.infra.pool import map_chunks
from vault_tools.notes.identity import content_digest, read_with_stat
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.vault import Paths, may_be_review_note, read_finding

Progress = Callable[[int, int], None]


class Tap(NamedTuple):
    """Something else a caller wants of each note a run reads, made from the same read
    and parse (so that a cold `vt report` parses a note once for validate and status).

    `make(path, bytes, note)` runs where the note is parsed (a worker process when there
    are many), `note` None for a file that is no review note; its result must pickle.
    `keep(path, stat, digest, made)` runs in the caller's process, in path order."""

    make: Callable[[str, bytes, Note | None], object]
    keep: Callable[[str, tuple, str, object], None]


# below this many notes to parse, a process pool costs more than it saves
PARALLEL_THRESHOLD = 400


def check_all(
    settings: Settings,
    ctx: CheckContext,
    targets: Paths,
    done: int,
    total: int,
    progress: Progress | None,
    tap: Tap | None = None,
) -> Iterator[tuple]:
    """The packed results of `targets`, in their order, made as they are consumed."""
    if not len(targets):
        return iter(())
    make = tap.make if tap is not None else None

    def work(chunk: list[str]) -> list[tuple[tuple, object]]:
        return [(pack(result), made) for result, made in _checks(settings, ctx, chunk, make)]

    def counted(checked: int, _: int) -> None:
        assert progress is not None
        progress(done + checked, total)

    results = map_chunks(
        work,
        targets,
        workers=settings.workers,
        count=len(targets),
        progress=counted if progress else None,
        threshold=PARALLEL_THRESHOLD,
        before_fork=lambda: _import_checks(ctx),
    )
    return _kept(results, tap)


def _kept(results: Iterator[tuple[tuple, object]], tap: Tap | None) -> Iterator[tuple]:
    """The packed results, what `tap` made of each note kept on the way."""
    for packed, made in results:
        if tap is not None and packed[DIGEST]:  # a file read (unread ones have no digest)
            tap.keep(packed[PATH], packed[STAT], packed[DIGEST], made)
        yield packed


def _import_checks(ctx: CheckContext) -> None:
    """Import the checks (and the review assist, when the run asks for it) and compile the
    schemas' validators before the workers fork, so that they inherit them instead of
    each importing them on its own (the review assist compiles its regular expressions at
    import; the validators import jsonschema-rs and compile each schema)."""
    _note_checks()
    from vault_tools.checks.rules import NOTE_SCHEMAS, review_assist

    ctx.schemas.compile(NOTE_SCHEMAS)
    if ctx.assist:
        review_assist()


def check_file(settings: Settings, ctx: CheckContext, relative: str) -> NoteResult:
    """Read, parse and check one vault file."""
    return _checked(ctx, _read(settings, relative)[0])


# Notes read and parsed before they are checked: a few parses, then a few checks, keep
# each stage's code and data in the processor's caches, which one note after the other
# does not (a tenth less time per note, measured on a synthetic vault of 10k notes; 32
# notes a batch were another 4% faster than 16 over a whole cold run, 64 no faster).
CHECK_BATCH = 32


def check_files(
    settings: Settings, ctx: CheckContext, relatives: Sequence[str]
) -> Iterator[NoteResult]:
    """`check_file` of each of `relatives`, in order, CHECK_BATCH at a time."""
    for result, _ in _checks(settings, ctx, relatives):
        yield result


def _checks(
    settings: Settings,
    ctx: CheckContext,
    relatives: Sequence[str],
    make: Callable[[str, bytes, Note | None], object] | None = None,
) -> Iterator[tuple[NoteResult, object]]:
    """`check_files`, with what `make` (a `Tap`'s) made of each note."""
    for start in range(0, len(relatives), CHECK_BATCH):
        batch = [_read(settings, r, make) for r in relatives[start : start + CHECK_BATCH]]
        for read, made in batch:
            yield _checked(ctx, read), made


class _Read(NamedTuple):
    """A vault file read (and, when it may be a review note, parsed), not yet checked."""

    relative: str
    digest: str
    stat: tuple[int, ...]
    note: Note


def _read(
    settings: Settings,
    relative: str,
    make: Callable[[str, bytes, Note | None], object] | None = None,
) -> tuple[_Read | NoteResult, object]:
    """The file read and parsed, or its result already (unreadable, not a review note);
    with what `make` (a `Tap`'s) made of it."""
    try:
        raw, stat = read_with_stat(os.path.join(settings.vault, relative), settings.max_note_bytes)
    except OSError as exc:  # never cached (no digest): a later run reads it again
        return NoteResult(relative, "", (), None, None, (read_finding(relative, exc),)), None
    digest = content_digest(raw)
    if not may_be_review_note(relative, raw, settings.claims_dir):
        made = make(relative, raw, None) if make is not None else None
        return NoteResult(relative, digest, stat, None, None, ()), made  # not a review note
    note = parse_note(raw, relative)
    made = make(relative, raw, note) if make is not None else None
    return _Read(relative, digest, stat, note), made


def _checked(ctx: CheckContext, read: _Read | NoteResult) -> NoteResult:
    if isinstance(read, NoteResult):
        return read
    check_note = _note_checks()
    note = read.note
    kb = ctx.kb
    asked: set[str] = set()
    kb.asked = asked
    try:
        findings = tuple(check_note(note, ctx))
    finally:
        kb.asked = None
    return NoteResult(
        read.relative,
        read.digest,
        read.stat,
        note.claim_id,
        note.line_of_property("claim_id"),
        findings,
        kb.wide_facts(sorted(asked)) if asked else (),
    )


@cache
def _note_checks() -> Callable[[Note, CheckContext], list[Finding]]:
    """`check_note`, imported on first need: at start-up it adds 20% to the CPU time of a
    warm 10k-note run, which checks none. Kept once imported: an import statement costs
    ~1 µs at each note it runs for."""
    from vault_tools.checks.rules import check_note

    return check_note
