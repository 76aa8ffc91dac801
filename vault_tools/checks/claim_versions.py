"""The part of a review note one round of review-assist checks looks at: V1 (the claim
and its Semantic Frame), or the V2 drafts; and the note line of a value in its blocks."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from vault_tools.notes.note import JsonBlock, Note, Text
from vault_tools.notes.positions import member_line, value_lines


@dataclass(slots=True)
class ClaimVersion:
    """V1, or the V2 drafts: a claim, its frame, its modes, and where they sit in the note."""

    label: str  # "" for V1, "V2 draft: " for the drafts (message prefix)
    claim: Text
    frame: JsonBlock
    mode: str | None
    mode_line: int
    status: str | None
    status_line: int
    entities: list[tuple[int, dict]] = field(init=False)  # well-formed, with their index

    def __post_init__(self) -> None:
        self.entities = _entities(self.frame.data)


def claim_versions(note: Note) -> Iterator[ClaimVersion]:
    """The note's V1 and V2 drafts that have a claim and a readable frame."""
    claim = note.claim
    if claim is not None and claim.text.value and _frame_ok(note.frame):
        assert note.frame is not None
        mode, status = claim.epistemic_mode, claim.mapping_status
        yield ClaimVersion(
            "",
            claim.text,
            note.frame,
            mode.value if mode else None,
            mode.line if mode else claim.text.line,
            status.value if status else None,
            status.line if status else claim.text.line,
        )
    drafts = note.drafts
    if (
        drafts is None
        or drafts.claim is None
        or not drafts.claim.value
        or not _frame_ok(drafts.frame)
    ):
        return
    assert drafts.frame is not None
    meta = drafts.metadata
    data = meta.data if meta is not None and meta.ok and isinstance(meta.data, dict) else {}

    def where(key: str) -> int:
        return block_line(meta, (key,)) if meta is not None else drafts.line

    yield ClaimVersion(
        "V2 draft: ",
        drafts.claim,
        drafts.frame,
        as_str(data.get("epistemic_mode")),
        where("epistemic_mode"),
        as_str(data.get("mapping_status")),
        where("mapping_status"),
    )


def _frame_ok(block: JsonBlock | None) -> bool:
    return block is not None and block.ok and isinstance(block.data, dict)


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _entities(frame: Any) -> list[tuple[int, dict]]:
    entities = frame.get("entities") if isinstance(frame, dict) else None
    if not isinstance(entities, list):
        return []
    return [
        (i, e)
        for i, e in enumerate(entities)
        if isinstance(e, dict)
        and isinstance(e.get("id"), str)
        and isinstance(e.get("label"), str)
        and e["label"].strip()
    ]


_value_lines = functools.lru_cache(maxsize=64)(value_lines)


def block_line(block: JsonBlock, path: tuple, value: object = None) -> int:
    """The note line of the value at `path` in `block` (positions.line_of), with the block
    scanned once for all the warnings it gets; when the caller knows the (string) value at
    `path`, a search for it usually suffices."""
    if type(value) is str and path and type(path[-1]) is str:
        line = member_line(block.text, path[-1], value)
        if line is not None:
            return block.line + line - 1
    mapped = _value_lines(block.text)
    while path not in mapped and path:
        path = path[:-1]
    return block.line + mapped.get(path, 1) - 1
