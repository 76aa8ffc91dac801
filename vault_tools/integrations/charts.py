"""Mermaid charts for the Review Dashboard: pure functions from plain data to the lines of
a ```mermaid block, in the chart types Obsidian's bundled Mermaid draws.

`pie` and `flowchart` render in every Mermaid Obsidian has shipped; `xychart-beta` needs
Mermaid 10.6 or later (docs/commands.md, `vt report`). Text from notes or the ledger
(names, labels) is quoted and its Mermaid-significant characters are replaced, so a
label can never end the diagram or break its syntax.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_SPACE = re.compile(r"\s+")
_ID_CHARS = re.compile(r"[^0-9A-Za-z]+")
# Mermaid entity codes: `#` first, since the other replacements introduce it
_LABEL_CODES = (
    ("#", "#35;"),
    ('"', "#quot;"),
    ("<", "#lt;"),
    (">", "#gt;"),
    ("`", "#96;"),
    ("|", "#124;"),
)
# pie and xychart take a plain quoted string, where no entity code is decoded
_PLAIN_CODES = str.maketrans({'"': "'", "`": "'", "#": "＃", ";": ",", "<": "‹", ">": "›"})
NAME_CHARS = 28  # a longer category name is cut: the axis has room for little more


@dataclass(frozen=True, slots=True)
class Edge:
    """One accepted claim → entity edge, as the Claim Store holds it."""

    claim_id: str
    note: str  # the claim's review note, vault-relative
    entity_key: str  # normalised target: what two spellings of one entity share
    entity: str  # the entity's note path (resolved when in the knowledge base), no `.md`
    label: str  # the surface label


def mermaid_label(text: str) -> str:
    """A quoted flowchart label that shows `text` literally (on one line)."""
    text = _SPACE.sub(" ", text).strip()
    for char, code in _LABEL_CODES:
        text = text.replace(char, code)
    return f'"{text}"'


def plain_label(text: str, limit: int = NAME_CHARS) -> str:
    """A quoted pie or axis label: one line, at most `limit` characters, no character
    that would end the string or the statement."""
    text = _SPACE.sub(" ", text).strip().translate(_PLAIN_CODES)
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return f'"{text or "-"}"'


def _fence(lines: list[str]) -> list[str]:
    return ["```mermaid", *lines, "```", ""]


def pie(title: str, counts: Mapping[str, int]) -> list[str]:
    """A pie of `counts` (slices of zero are left out), largest first."""
    slices = sorted(((n, name) for name, n in counts.items() if n > 0), key=lambda s: -s[0])
    lines = ["pie showData", f"  title {_SPACE.sub(' ', title)}"]
    lines += [f"  {plain_label(name)} : {n}" for n, name in slices]
    return _fence(lines)


def bars(title: str, axis: str, counts: Sequence[tuple[str, int]]) -> list[str]:
    """An xychart-beta bar chart: one bar per (name, count), in the order given."""
    top = max((n for _name, n in counts), default=0)
    names = ", ".join(plain_label(name) for name, _n in counts)
    return _fence(
        [
            "xychart-beta",
            f"  title {plain_label(title, 80)}",
            f"  x-axis [{names}]",
            f"  y-axis {plain_label(axis, 40)} 0 --> {max(top, 1)}",
            f"  bar [{', '.join(str(n) for _name, n in counts)}]",
        ]
    )


class _NodeIds:
    """Stable, collision-free Mermaid node ids (ASCII letters, digits, `_`) per name."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.ids: dict[str, str] = {}
        self.used: set[str] = set()

    def get(self, name: str, readable: str | None = None) -> str:
        """The id of `name`, made from `readable` (default: the name itself)."""
        found = self.ids.get(name)
        if found is None:
            text = _ID_CHARS.sub("_", name if readable is None else readable).strip("_")
            base = f"{self.prefix}_{text or 'node'}"  # e.g. a name all in CJK
            found, n = base, 1
            while found in self.used:
                n += 1
                found = f"{base}_{n}"
            self.used.add(found)
            self.ids[name] = found
        return found


def spread(edges: Sequence[Edge], entities: int, per_entity: int) -> list[Edge]:
    """The edges a graph shows: those of the `entities` most used entities, taken in
    turns (one edge of each entity, then a second of each, …) up to `per_entity` each,
    so no entity takes the whole graph however many claims name it."""
    by_entity: dict[str, list[Edge]] = defaultdict(list)
    for e in edges:
        by_entity[e.entity_key].append(e)
    ranked = sorted(by_entity, key=lambda k: (-len(by_entity[k]), k))[:entities]
    for key in ranked:
        by_entity[key].sort(key=lambda e: (e.claim_id, e.label))
    shown: list[Edge] = []
    for turn in range(per_entity):
        shown += [by_entity[k][turn] for k in ranked if turn < len(by_entity[k])]
    return shown


def flowchart(shown: Sequence[Edge]) -> list[str]:
    """A ```mermaid flowchart of claim → entity edges (all of `shown`)."""
    claims, entities = _NodeIds("c"), _NodeIds("e")
    # ids are given in sorted order, so they do not depend on the edges' order
    for claim_id in sorted({e.claim_id for e in shown}):
        claims.get(claim_id)
    for key in sorted({e.entity_key for e in shown}):
        entities.get(key, key.rsplit("/", 1)[-1])
    names = {e.entity_key: e.entity.rsplit("/", 1)[-1] for e in shown}
    lines = ["flowchart LR"]
    lines += [f"  {claims.ids[c]}[{mermaid_label(c)}]" for c in sorted(claims.ids)]
    node = entities.ids
    lines += [f"  {node[k]}[{mermaid_label(names[k])}]" for k in sorted(node)]
    ordered = sorted(shown, key=lambda e: (e.entity_key, e.claim_id, e.label))
    for edge in ordered:
        arrow = f"-->|{mermaid_label(edge.label)}|" if edge.label.strip() else "-->"
        lines.append(f"  {claims.ids[edge.claim_id]} {arrow} {node[edge.entity_key]}")
    # Obsidian opens the note named by a node's text when the node has this class
    nodes = [*sorted(claims.ids.values()), *sorted(entities.ids.values())]
    lines.append(f"  class {','.join(nodes)} internal-link")
    return _fence(lines)
