"""The cache that lets a `vt preview` with nothing to do skip its notes (`.vt/`, derived
state, safe to delete).

Per note of the vault: its stat signature, a digest of its bytes and what a vault run of
`vt preview` made of it — nothing (the note is not marked REQUEST_REPAIR), or its
`PreviewResult` as it stands once written (packed). A second run stats each note (like
`vt validate`'s warm run: `infra.filestat.unchanged`, or else the note is read again
and its digest compared) and previews only the notes whose
bytes changed. A note this run wrote is kept under the digest of the bytes written, so
the next run reads it once and then only stats it.

The whole cache stands under a key: vt's version, the schemas, the knowledge base (the
files of its folder and the aliases of its notes), the findings turned off and the limits
(see `checks.cache.results_key`). An entry also keeps the targets its preview resolved
through the whole listing (a bare `[[Name]]`), checked again when the listing changed.
A note whose preview was refused, or that changed while it was previewed, is not kept.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import time
from collections.abc import Iterable
from pathlib import Path

from vault_tools.infra.filestat import settled, unchanged
from vault_tools.notes.identity import content_digest, read_with_stat
from vault_tools.notes.kb import KnowledgeBase

CACHE_FILE = "preview-cache.marshal"
FORMAT = 3  # bump whenever the layout, or what a kept result means, changes

# an entry: (stat signature or None, digest of the note's bytes, packed result or None,
# the (target, status, path) facts it resolved through the whole listing)
PreviewRow = tuple
Record = tuple  # (vault-relative path, *an entry)


class PreviewCache:
    """The vault run's preview results by vault path, valid under one key."""

    def __init__(
        self,
        path: Path,
        key: str = "",
        entries: dict[str, PreviewRow] | None = None,
        saved_ns: int = 0,
        aliases: dict[str, tuple] | None = None,
        listing: str = "",
    ):
        self.path = path
        self.key = key
        self.entries = entries if entries is not None else {}
        self.saved_ns = saved_ns
        self.aliases = aliases if aliases is not None else {}  # kb note -> (stat, aliases)
        self.listing = listing  # the listing's digest the aliases were read under
        self.dirty = False

    @classmethod
    def read(cls, state_dir: Path) -> PreviewCache:
        path = state_dir / CACHE_FILE
        try:
            fmt, key, saved_ns, aliases, listing, entries = marshal.loads(path.read_bytes())
            if fmt != FORMAT or not isinstance(entries, dict) or not isinstance(aliases, dict):
                raise ValueError("another cache format")
        except (OSError, EOFError, ValueError, TypeError):
            return cls(path)  # absent, unreadable or torn: start afresh
        return cls(path, key, entries, saved_ns, aliases, listing)

    def use_key(self, key: str) -> None:
        """Keep the entries only when they were made under `key`."""
        if key != self.key:
            self.key, self.entries, self.dirty = key, {}, True

    def drop_moved(self, kb: KnowledgeBase) -> None:
        """Forget the entries whose targets resolve otherwise now (the listing changed)."""
        still = kb.still_resolves
        moved = [path for path, e in self.entries.items() if e[3] and not still(e[3])]
        for path in moved:
            del self.entries[path]
        self.dirty = self.dirty or bool(moved)

    def fresh(self, info: os.stat_result) -> bool:
        """Whether a file with this stat was surely last written before the cache was saved."""
        return settled(info, self.saved_ns)

    def lookup_all(
        self, root: str, targets: Iterable[str]
    ) -> tuple[dict[str, tuple | None], list[str]]:
        """(packed result or None by path, for the notes unchanged; the others' paths)."""
        hits: dict[str, tuple | None] = {}
        misses: list[str] = []
        entries, saved_ns = self.entries, self.saved_ns
        prefix = root.rstrip(os.sep) + os.sep
        for relative in targets:
            entry = entries.get(relative)
            if entry is not None:
                try:
                    info = os.stat(prefix + relative)
                    if unchanged(info, entry[0], saved_ns):
                        hits[relative] = entry[2]
                        continue
                    if self._same_bytes(prefix + relative, relative, entry):
                        hits[relative] = entry[2]
                        continue
                except OSError:
                    pass
            misses.append(relative)
        return hits, misses

    def _same_bytes(self, absolute: str, relative: str, entry: PreviewRow) -> bool:
        """Whether the note still holds the bytes of `entry` (its stat then kept)."""
        raw, signature = read_with_stat(absolute)
        if content_digest(raw) != entry[1]:
            return False
        if signature != entry[0]:
            self.entries[relative] = (signature, *entry[1:])
            self.dirty = True
        return True

    def store(self, record: Record) -> None:
        relative, *entry = record
        self.entries[relative] = tuple(entry)
        self.dirty = True

    def forget_missing(self, targets: Iterable[str]) -> None:
        """Drop the entries of notes no longer in the vault."""
        gone = self.entries.keys() - set(targets)
        for relative in gone:
            del self.entries[relative]
        self.dirty = self.dirty or bool(gone)

    def save(self) -> None:
        """Write the cache whole (a temporary file renamed over it); a failure only costs
        the next run its speed."""
        if not self.dirty:
            return
        temp = self.path.with_name(f".{self.path.name}-{os.getpid()}.tmp")
        data = (FORMAT, self.key, time.time_ns(), self.aliases, self.listing, self.entries)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_bytes(marshal.dumps(data))
            os.replace(temp, self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                temp.unlink()
