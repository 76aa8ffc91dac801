"""Section headings are found by title, not by number (DESIGN §3)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# a leading circled number ①–⑳, or "N." / "N)"
_LEADING_NUMBER = re.compile(r"^(?:[\u2460-\u2473]|\d+[.)])\s*")

_KNOWN = {
    "sa source": "source",
    "source": "source",
    "atomic claim": "claim",
    "semantic frame": "frame",
    "canonical entity mapping": "mapping",
    "v2 draft": "drafts",
    "human review": "review",
    "repair preview": "preview",
}


def normalise_heading_title(title: str) -> str:
    """'⑤ V2 Draft（需要修正時直接編輯）' -> 'v2 draft'."""
    title = unicodedata.normalize("NFC", title).strip()
    title = _without_trailing_parenthetical(_LEADING_NUMBER.sub("", title))
    return " ".join(title.split()).casefold()


def _without_trailing_parenthetical(title: str) -> str:
    """The title less a trailing `(…)` or `（…）` (no bracket of its kind inside) and the
    blanks before it. By hand: the regex it replaces tried every blank of a long run."""
    for opening, closing in (("(", ")"), ("（", "）")):
        if title.endswith(closing):
            start = title.rfind(opening, 0, len(title) - 1)
            if start >= 0 and closing not in title[start + 1:-1]:
                return title[:start].rstrip()
    return title


@lru_cache(maxsize=1024)
def section_key(title: str) -> str:
    """The key of a known section ('source', 'claim', …), else the normalised title."""
    normal = normalise_heading_title(title)
    return _KNOWN.get(normal, normal)
