"""The per-note result cache of `vt validate` in `.vt/` (derived state, safe to delete)."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vault_tools.validate import NoteResult

CACHE_FILE = "validate-cache.pickle"


class ResultCache:
    """Results by vault path, valid only under one key (schemas + knowledge base + vt)."""

    def __init__(self, path: Path, key: str, entries: dict[str, NoteResult]):
        self.path = path
        self.key = key
        self.entries = entries
        self.dirty = False

    @classmethod
    def load(cls, state_dir: Path, key: str) -> ResultCache:
        path = state_dir / CACHE_FILE
        try:
            with open(path, "rb") as handle:
                stored_key, entries = pickle.load(handle)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError,
                AttributeError, ImportError):
            return cls(path, key, {})  # absent or unreadable: start afresh
        return cls(path, key, entries if stored_key == key else {})

    def lookup(self, relative: str, raw: bytes) -> NoteResult | None:
        entry = self.entries.get(relative)
        if entry is None or entry.digest != hashlib.blake2b(raw, digest_size=16).hexdigest():
            return None
        return entry

    def store(self, result: NoteResult) -> None:
        if result.digest:
            self.entries[result.path] = result
            self.dirty = True

    def claim_ids(self) -> Iterator[NoteResult]:
        return (entry for entry in self.entries.values() if entry.claim_id is not None)

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".cache-", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump((self.key, self.entries), handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs speed next time
