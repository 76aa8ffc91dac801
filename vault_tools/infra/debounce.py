"""Fold bursts of events per key into one: a key is due once it has been quiet for a while.

An editor saves a note several times a second while one types, and saves by writing a
temporary file and renaming it; `vt watch` handles a note once, when its saves stop.
"""

from __future__ import annotations

import threading
import time

MAX_WAIT_FACTOR = 10  # a key touched continuously is still due after this many periods
MIN_MAX_WAIT = 1.0


class Debouncer:
    """Paths waiting for a quiet period; `next_due` blocks (no polling) until one is due."""

    def __init__(self, delay: float) -> None:
        self.delay = max(0.0, delay)
        self.max_wait = max(MIN_MAX_WAIT, self.delay * MAX_WAIT_FACTOR)
        self._due: dict[str, tuple[float, float]] = {}  # key -> (first touch, due)
        self._cond = threading.Condition()
        self._closed = False

    def touch(self, key: str, delay: float | None = None) -> None:
        now = time.monotonic()
        delay = self.delay if delay is None else delay
        with self._cond:
            first = self._due[key][0] if key in self._due else now
            # every touch restarts the quiet period, but never beyond max_wait
            self._due[key] = (first, min(now + delay, first + max(self.max_wait, delay)))
            self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._due)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def next_due(self) -> str | None:
        """The next key whose quiet period is over; None once closed."""
        with self._cond:
            while not self._closed:
                if not self._due:
                    self._cond.wait()
                    continue
                key, (_, due) = min(self._due.items(), key=lambda item: item[1][1])
                wait = due - time.monotonic()
                if wait <= 0:
                    del self._due[key]
                    return key
                self._cond.wait(wait)
            return None
