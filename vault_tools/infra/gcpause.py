"""The cyclic garbage collector paused over a stretch of work.

Where a run creates many objects that form no reference cycles (parsed ledger events,
rows, the facts of every note) and keeps most of them, the collector's repeated scans
of the young generations find nothing to free and only cost time. Pausing it there is
safe: the objects are freed by reference counting as before, and whatever cyclic
garbage the stretch leaves is collected once the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the `with` block; a block inside another leaves
    it paused for the outer one."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
