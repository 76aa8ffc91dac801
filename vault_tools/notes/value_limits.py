"""What a value vt reads must not hold: a control character (invisible in Obsidian, it
would reach the ledger unseen), or a number of more digits than Python turns into an int.
The frontmatter reader and the note parser apply the same rules."""

from __future__ import annotations

import re
import sys

from vault_tools.findings import Finding, error

# NUL and the other C0 control characters but TAB, LF and CR, and DEL: invisible in
# Obsidian, they would reach the ledger (and whoever reads it) unseen. The one rule for
# what a property value or a claim text must not hold.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def control_finding(path: str, line: int, what: str, character: str) -> Finding:
    return error(
        path,
        line,
        "control-character",
        f"{what} holds the control character U+{ord(character):04X}; remove it",
    )


_DIGITS = re.compile(r"\d+")


def digits_limit() -> int:
    """How many digits Python turns into an int (0: no limit; before 3.10.7, none)."""
    return getattr(sys, "get_int_max_str_digits", lambda: 0)()


def longest_number(text: str) -> tuple[int, int]:
    """(1-based line, digits) of the longest run of digits in `text` (linear: one scan)."""
    best = max(_DIGITS.finditer(text), key=lambda m: m.end() - m.start(), default=None)
    if best is None:
        return 1, 0
    return text.count("\n", 0, best.start()) + 1, best.end() - best.start()
