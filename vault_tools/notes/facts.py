"""What `vt status`, `vt report` and `vt entities` know of each note, kept between runs
(`.vt/note-facts-KIND.marshal`, derived state, safe to delete).

A command asks for one kind of fact of every note it surveys ("status",
"uses"), with the function that makes that fact from the note's path and bytes. A note
whose bytes are unchanged since a run kept its fact is neither read nor parsed again:
its stat signature proves it unchanged, or else its bytes are read and their digest
compared (`notes/identity.py`, as for `vt validate`'s cache). An entry stands for the
note's bytes (their digest), so no fact ever stands for other bytes. A fact depends on
the note's path and bytes alone and is plain data (`marshal`). Each kind has a file of
its own, so a command loads only what it needs. A file that cannot be read is the
caller's to report and is never kept. A torn, foreign or older facts file is ignored,
and replaced by the next save.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from vault_tools import __version__
from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.filestat import unchanged
from vault_tools.infra.pool import map_chunks
from vault_tools.notes.identity import content_digest, read_with_stat

FACTS_FILE = "note-facts-{kind}.marshal"
FORMAT = 2  # bump whenever the layout changes
# below this many notes to read, a process pool costs more than it saves
PARALLEL_THRESHOLD = 400

Fact = Any  # plain data that marshal keeps (tuples, dicts, str, int, None, …)
Make = Callable[[str, bytes], Fact]  # (vault-relative path, bytes) -> the fact
Failed = Callable[[str, OSError], Fact]  # the fact of a file that cannot be read (not kept)

# an entry: (stat signature, digest of the bytes, the fact)
STAT, DIGEST, FACT = 0, 1, 2


class NoteFacts:
    """One kind of fact of a vault's notes by path, each standing for the note's bytes."""

    def __init__(
        self,
        path: Path | None,
        key: str = "",
        entries: dict[str, tuple] | None = None,
        saved_ns: int = 0,
        limit: int | None = None,
    ) -> None:
        self.path = path  # None: nothing is kept (the state folder cannot be written)
        self.limit = limit  # a larger file is not read (config.MAX_NOTE_BYTES)
        self.key = key
        self.entries = entries if entries is not None else {}
        self.saved_ns = saved_ns
        self.dirty = False
        # the notes `keep` was given in this process: their facts were made from bytes
        # read in this run, so `survey` takes them without a stat
        self.kept_now: set[str] = set()

    @classmethod
    def open(cls, settings: Settings, kind: str) -> NoteFacts:
        """The facts of `kind` kept for this vault (none when the state folder leads
        outside it)."""
        key = f"{__version__}\n{settings.max_note_bytes}\n{kind}"
        try:
            path = writable_path(settings.vault, settings.state_dir)
            path = path / FACTS_FILE.format(kind=kind)
        except VtError:
            return cls(None, key, limit=settings.max_note_bytes)
        try:
            fmt, saved_key, saved_ns, entries = marshal.loads(path.read_bytes())
            if fmt != FORMAT or saved_key != key or not isinstance(entries, dict):
                raise ValueError("another format")
            if not isinstance(saved_ns, int):
                raise ValueError("another format")
        except (OSError, EOFError, ValueError, TypeError):
            # absent, unreadable, torn or foreign: start afresh
            return cls(path, key, limit=settings.max_note_bytes)
        return cls(path, key, entries, saved_ns, settings.max_note_bytes)

    def survey(
        self,
        root: Path,
        targets: Sequence[str],
        make: Make,
        failed: Failed,
        workers: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[tuple[str, Fact]]:
        """(path, fact) of each of `targets`, in their order: kept ones as they
        are, the others made now (on every core when there are many) and kept. The
        entries of notes not among `targets` are dropped: pass the whole vault."""
        entries, saved_ns, kept_now = self.entries, self.saved_ns, self.kept_now
        prefix = str(root).rstrip(os.sep) + os.sep
        known: dict[str, Fact] = {}
        misses: list[str] = []
        for relative in targets:
            entry = entries.get(relative)
            if entry is not None and relative in kept_now:
                known[relative] = entry[FACT]
                continue
            if entry is not None:
                try:
                    info = os.stat(prefix + relative)
                except OSError:
                    info = None
                if info is not None and unchanged(info, entry[STAT], saved_ns):
                    known[relative] = entry[FACT]
                    continue
            misses.append(relative)
        gone = entries.keys() - set(targets)
        if gone:
            for relative in gone:
                del entries[relative]
            self.dirty = True

        limit = self.limit

        def work(chunk: list[str]) -> list[tuple]:
            return [_made(prefix, r, limit, (make, failed), entries) for r in chunk]

        made = map_chunks(
            work, misses, workers=workers, threshold=PARALLEL_THRESHOLD, progress=progress
        )
        for relative in targets:
            if relative in known:
                yield relative, known[relative]
                continue
            relative_made, fact, entry = next(made)
            assert relative_made == relative
            if entry is not None:
                self.entries[relative] = (*entry, fact)
                self.dirty = True
            yield relative, fact
        for _ in made:  # none left: this lets its pool finish
            raise AssertionError("a note surveyed but not a target")

    def keep(self, relative: str, signature: tuple, digest: str, fact: Fact) -> None:
        """Keep `fact` of a note another run read, under the stat signature and digest
        of the bytes it was made from (a value marshal cannot keep is dropped by `save`)."""
        self.entries[relative] = (signature, digest, fact)
        self.kept_now.add(relative)
        self.dirty = True

    def save(self) -> None:
        """Write the facts whole (a temporary file renamed over the old one); a failure
        only costs the next run its speed."""
        if not self.dirty or self.path is None:
            return
        temp = self.path.with_name(f".{self.path.name}-{os.getpid()}.tmp")
        saved_ns = time.time_ns()
        try:
            data = self._dumped(saved_ns)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_bytes(data)
            os.replace(temp, self.path)
            self.saved_ns = saved_ns  # as the file now says: kept in memory, read alike
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                temp.unlink()
        self.dirty = False

    def _dumped(self, saved_ns: int) -> bytes:
        """The file's bytes; a fact marshal cannot keep (a value of a type it does not
        know) is dropped first, looked for one by one only when there is one."""
        try:
            return marshal.dumps((FORMAT, self.key, saved_ns, self.entries))
        except ValueError:
            for relative, entry in list(self.entries.items()):
                try:
                    marshal.dumps(entry)
                except ValueError:
                    del self.entries[relative]
                    self.kept_now.discard(relative)
            return marshal.dumps((FORMAT, self.key, saved_ns, self.entries))


def _made(
    prefix: str,
    relative: str,
    limit: int | None,
    makers: tuple[Make, Failed],
    entries: dict[str, tuple],
) -> tuple[str, Fact, tuple | None]:
    """(path, its fact, (stat, digest) to keep it under, or None: not kept)."""
    make, failed = makers
    try:
        raw, signature = read_with_stat(prefix + relative, limit)
    except OSError as exc:
        return relative, failed(relative, exc), None
    digest = content_digest(raw)
    old = entries.get(relative)
    if old is not None and old[DIGEST] == digest:
        return relative, old[FACT], (signature, digest)  # touched, not changed
    fact = make(relative, raw)
    try:
        marshal.dumps(fact)
    except ValueError:
        return relative, fact, None  # a value marshal cannot keep: made again next time
    return relative, fact, (signature, digest)


def surveyed(
    settings: Settings,
    targets: Sequence[str],
    kind: str,
    makers: tuple[Make, Failed],
    progress: Callable[[int, int], None] | None = None,
    kept: NoteFacts | None = None,
) -> list[tuple[str, Fact]]:
    """`NoteFacts.survey` of `targets` (the whole vault) with the vault's kept facts (or
    `kept`, those of this kind a caller holds already), saved afterwards. `makers`: the
    fact of a note's bytes, and of an unreadable file."""
    facts = NoteFacts.open(settings, kind) if kept is None else kept
    make, failed = makers
    found = list(facts.survey(settings.vault, targets, make, failed, settings.workers, progress))
    facts.save()
    return found
