"""Text as vt prints it: control characters from a note or a ledger field escaped.

Every output of a command passes `printable`, in one of three ways: the Reporter's
streams are `Printable` (cli/output.py), its rich console makes every text it renders
printable, and the error lines of `run_guarded` and of the crash handler call it.
"""

from __future__ import annotations

import re
from typing import Any, TextIO

# What vt never prints raw: C0 controls but newline and tab (ESC starts a terminal's
# commands, CR and backspace overwrite a line), DEL, the C1 controls (0x9b is a second
# ESC [ on some terminals) and the bidirectional overrides that reorder a line's text.
# Ledger fields and notes are anybody's text: a forged event must not erase its own line.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def printable(text: str) -> str:
    """`text` with every character in _UNPRINTABLE written as `\\uXXXX`: readable on a
    terminal, and inside a JSON string the very same character (JSON's own escape)."""
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub(_escaped, text)


class Printable:
    """A text stream that writes `printable(text)` to `raw`."""

    def __init__(self, raw: TextIO):
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno, buffer …
        return getattr(self.raw, name)


def printable_stream(stream: TextIO) -> TextIO:
    """`stream` behind `Printable` (once: a stream already behind it is returned as is)."""
    if isinstance(stream, Printable):
        return stream
    wrapped: Any = Printable(stream)
    return wrapped  # a TextIO to its users: every attribute but write is the stream's
