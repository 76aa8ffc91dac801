"""The cache of `vt stats` (`.vt/`, derived state, safe to delete): the last figures, and
what each review note added to them, each under what it was computed from.

The figures stand while the ledger's head (`seq`, `hash`, which the gate trusted) and the
options are those they were computed under, and every note they read still has the stat
signature it had then (`notes.identity.unchanged`; a note that might have changed within
the same clock tick counts as changed). A ledger that grew recomputes the figures but
reads again only the notes whose signature changed.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vault_tools.infra.filestat import Signature, unchanged

CACHE_FILE = "stats-cache.marshal"
FORMAT = 1  # bump whenever the layout or a figure's meaning changes

# what a note added: (its section or None, whether its V1 was read, the V1 or None)
Facts = tuple[str | None, bool, dict | None]


class StatsCache:
    def __init__(
        self,
        path: Path,
        key: str = "",
        saved_ns: int = 0,
        notes: dict[str, tuple[Signature | None, Facts]] | None = None,
        figures: dict[str, Any] | None = None,
    ) -> None:
        self.path = path
        self.key = key
        self.saved_ns = saved_ns
        self.notes = notes if notes is not None else {}
        self.figures = figures
        self.used: dict[str, tuple[Signature | None, Facts]] = {}

    @classmethod
    def read(cls, state_dir: Path) -> StatsCache:
        path = state_dir / CACHE_FILE
        try:
            fmt, key, saved_ns, notes, figures = marshal.loads(path.read_bytes())
            if fmt != FORMAT or not isinstance(notes, dict):
                raise ValueError("another cache format")
        except (OSError, EOFError, ValueError, TypeError):
            return cls(path)  # absent, unreadable or torn: start afresh
        return cls(path, key, saved_ns, notes, figures)

    def _still(self, vault: Path, relative: str, signature: Signature | None) -> bool:
        try:
            info = os.stat(vault / relative)
        except OSError:
            return signature is None  # gone then, gone now
        return signature is not None and unchanged(info, signature, self.saved_ns)

    def figures_for(self, key: str, vault: Path) -> dict[str, Any] | None:
        """The figures, when they were computed under `key` and no note they read changed."""
        if self.figures is None or key != self.key:
            return None
        if all(self._still(vault, rel, sig) for rel, (sig, _) in self.notes.items()):
            return self.figures
        return None

    def facts(
        self,
        vault: Path,
        relative: str,
        want_v1: bool,
        read: Callable[[str, bool], tuple[Signature | None, Facts]],
    ) -> Facts:
        """What the note at `relative` adds: kept from the last run when the note is
        unchanged (and its V1 was read, if wanted), else `read` again."""
        kept = self.notes.get(relative)
        if (
            kept is not None
            and (kept[1][1] or not want_v1)
            and self._still(vault, relative, kept[0])
        ):
            self.used[relative] = kept
            return kept[1]
        signature, facts = read(relative, want_v1)
        self.used[relative] = (signature, facts)
        return facts

    def save(self, key: str, figures: dict[str, Any]) -> None:
        """Write the cache whole (a temporary file renamed over it); a failure only costs
        the next run its speed."""
        temp = self.path.with_name(f".{self.path.name}-{os.getpid()}.tmp")
        # taken before the write: a note changed while the figures were made is re-read
        data = (FORMAT, key, time.time_ns(), self.used, figures)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp.write_bytes(marshal.dumps(data))
            os.replace(temp, self.path)
        except (OSError, ValueError):
            with contextlib.suppress(OSError):
                temp.unlink()
