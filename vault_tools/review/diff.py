"""V1 → V2 changes for the Repair Preview (docs/workflow.md).

Three kinds: the claim text (a character-level diff: Chinese has no spaces, so word
diffs say nothing), the semantic frame and the revision metadata (structural diffs as
RFC 6901 JSON-pointer operations). Plain data in, plain data out: rendering is the
caller's job.
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from typing import Any

CLAIM = "claim"
FRAME = "frame"
METADATA = "metadata"


@dataclass(frozen=True)
class Change:
    """One V1 → V2 change. `pointer` is an RFC 6901 JSON pointer ("" = the whole value).

    `old` is None for `add`, `new` is None for `remove`.
    """

    field: str  # "claim" | "frame" | "metadata"
    op: str  # "add" | "remove" | "replace"
    pointer: str
    old: Any
    new: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "op": self.op,
            "pointer": self.pointer,
            "old": self.old,
            "new": self.new,
        }


# ---------------------------------------------------------------------------
# claim text


def char_diff(old: str, new: str) -> list[tuple[str, str]]:
    """Character-level segments ("equal" | "delete" | "insert", text).

    Between two equal segments all deleted text comes first, as one segment, then all
    inserted text: joining equal+delete gives `old`, equal+insert gives `new`.
    """
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    segments: list[tuple[str, str]] = []
    deleted: list[str] = []
    inserted: list[str] = []

    def flush() -> None:
        for kind, parts in (("delete", deleted), ("insert", inserted)):
            if "".join(parts):
                segments.append((kind, "".join(parts)))
        deleted.clear()
        inserted.clear()

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            flush()
            if segments and segments[-1][0] == "equal":
                segments[-1] = ("equal", segments[-1][1] + old[i1:i2])
            else:
                segments.append(("equal", old[i1:i2]))
            continue
        deleted.append(old[i1:i2])
        inserted.append(new[j1:j2])
    flush()
    return segments


def claim_change(old: str, new: str) -> Change | None:
    """The claim-text change as a whole-value `replace`, or None if the text is unchanged."""
    if old == new:
        return None
    return Change(CLAIM, "replace", "", old, new)


def _lines(text: str) -> list[str]:
    if not text:
        return []
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _prefixed(sign: str, line: str) -> str:
    return f"{sign} {line}" if line else sign


def diff_text_lines(old: str, new: str) -> str:
    """The body of a ```diff block: `- ` + each old line, then `+ ` + each new line.

    Every line starts with `-` or `+`, so no line of the claim can close the fence; use
    `markdown.fence_for` anyway when choosing the fence. Ends with a newline (unless empty).
    """
    out = [_prefixed("-", line) for line in _lines(old)]
    out += [_prefixed("+", line) for line in _lines(new)]
    return "".join(line + "\n" for line in out)


# ---------------------------------------------------------------------------
# structural JSON diff


def escape_pointer_token(key: str) -> str:
    """RFC 6901: `~` → `~0`, `/` → `~1` (in that order)."""
    return key.replace("~", "~0").replace("/", "~1")


def _same_scalar(old: Any, new: Any) -> bool:
    # type() and not ==: True == 1 and 1 == 1.0 in Python, but in the JSON they differ
    if type(old) is not type(new):
        return False
    if isinstance(old, float):
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        # 0.0 and -0.0 are equal numbers but different JSON text: a reviewer's edit
        return old == new and math.copysign(1.0, old) == math.copysign(1.0, new)
    return bool(old == new)


def _id_key(item: Any) -> str | None:
    """A hashable key for an item's "id", or None if the item has no usable id."""
    if not isinstance(item, dict) or "id" not in item:
        return None
    return json.dumps(item["id"], sort_keys=True, ensure_ascii=False)


def _id_index(items: list[Any]) -> dict[str, int] | None:
    """id → index if every item is a dict with a unique "id"; else None."""
    index: dict[str, int] = {}
    for i, item in enumerate(items):
        key = _id_key(item)
        if key is None or key in index:
            return None
        index[key] = i
    return index


def json_changes(old: Any, new: Any, field: str) -> list[Change]:
    """The changes turning `old` into `new`, as JSON-pointer operations.

    Dicts are compared by key (sorted). Lists whose items on both sides are all dicts
    with a unique "id" are matched by id, so reordering is not a change: a changed item
    is reported under its index in the new list, an added one as `add` at its new index,
    a removed one as `remove` at its old index. Other lists are compared index by index,
    with removals from the end listed last-first — so for values without id-matched
    lists, applying the changes in order is a valid JSON patch.
    """
    changes: list[Change] = []
    _diff(old, new, "", field, changes)
    return changes


def _diff(old: Any, new: Any, pointer: str, field: str, out: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        _diff_dict(old, new, pointer, field, out)
    elif isinstance(old, list) and isinstance(new, list):
        _diff_list(old, new, pointer, field, out)
    elif (
        isinstance(old, (dict, list)) or isinstance(new, (dict, list)) or not _same_scalar(old, new)
    ):
        # a container against anything else is a type change
        out.append(Change(field, "replace", pointer, old, new))


def _diff_dict(old: dict, new: dict, pointer: str, field: str, out: list[Change]) -> None:
    for key in sorted(set(old) | set(new), key=str):
        child = f"{pointer}/{escape_pointer_token(str(key))}"
        if key not in new:
            out.append(Change(field, "remove", child, old[key], None))
        elif key not in old:
            out.append(Change(field, "add", child, None, new[key]))
        else:
            _diff(old[key], new[key], child, field, out)


def _diff_list(old: list, new: list, pointer: str, field: str, out: list[Change]) -> None:
    old_ids, new_ids = _id_index(old), _id_index(new)
    if old_ids is not None and new_ids is not None and (old or new):
        _diff_by_id(old, new, old_ids, new_ids, pointer, field, out)
        return
    for i in range(min(len(old), len(new))):
        _diff(old[i], new[i], f"{pointer}/{i}", field, out)
    for i in range(len(old), len(new)):
        out.append(Change(field, "add", f"{pointer}/{i}", None, new[i]))
    for i in range(len(old) - 1, len(new) - 1, -1):
        out.append(Change(field, "remove", f"{pointer}/{i}", old[i], None))


def _diff_by_id(
    old: list,
    new: list,
    old_ids: dict[str, int],
    new_ids: dict[str, int],
    pointer: str,
    field: str,
    out: list[Change],
) -> None:
    for key, j in new_ids.items():
        if key in old_ids:
            _diff(old[old_ids[key]], new[j], f"{pointer}/{j}", field, out)
        else:
            out.append(Change(field, "add", f"{pointer}/{j}", None, new[j]))
    for key, i in old_ids.items():
        if key not in new_ids:
            out.append(Change(field, "remove", f"{pointer}/{i}", old[i], None))


def repair_changes(
    old_claim: str,
    new_claim: str,
    old_frame: Any,
    new_frame: Any,
    old_metadata: Any,
    new_metadata: Any,
) -> list[Change]:
    """All V1 → V2 changes in display order: claim, frame, metadata."""
    claim = claim_change(old_claim, new_claim)
    changes = [claim] if claim is not None else []
    changes += json_changes(old_frame, new_frame, FRAME)
    changes += json_changes(old_metadata, new_metadata, METADATA)
    return changes


def plain_change_lines(claim_segments: list[tuple[str, str]], changes: list[Change]) -> list[str]:
    """V1 → V2 changes as plain text lines: `claim: a[-b-]{+c+}`, `frame /operator: …`."""
    lines = []
    if claim_segments:
        marks = {"equal": "{}", "delete": "[-{}-]", "insert": "{{+{}+}}"}
        lines.append("claim: " + "".join(marks[kind].format(part) for kind, part in claim_segments))
    for change in changes:
        if change.field == CLAIM:
            continue
        pointer = change.pointer or "/"
        if change.op == "add":
            lines.append(f"{change.field} + {pointer}: {_shown(change.new)}")
        elif change.op == "remove":
            lines.append(f"{change.field} - {pointer}: {_shown(change.old)}")
        else:
            lines.append(f"{change.field} {pointer}: {_shown(change.old)} → {_shown(change.new)}")
    return lines


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
