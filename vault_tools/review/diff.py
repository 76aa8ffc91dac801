"""V1 → V2 changes for the Repair Preview (docs/workflow.md).

Three kinds: the claim text (`text_diff`: word by word in Latin text, character by
character in CJK text, which has no spaces between its words), the semantic frame and the
revision metadata (structural diffs as RFC 6901 JSON-pointer operations). Plain data in,
plain data out: rendering is the caller's job, and every rendering of a claim's diff (the
terminal, the note, `vt history`) takes the segments of `text_diff`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vault_tools.notes.note import Note

CLAIM = "claim"
FRAME = "frame"
METADATA = "metadata"

# what a repair whose drafts say what V1 says is told, by preview and by apply
REPAIR_UNCHANGED = "repair-unchanged"  # its finding code
NOTHING_TO_REPAIR = (
    "the V2 drafts equal V1: there is nothing to repair; edit the drafts, or set "
    "review_action to APPROVE to accept V1 as it is"
)


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


# One character each: the Han ideographs, kana, Hangul and the CJK and full-width
# punctuation and forms. Their languages do not put spaces between words, so a word of
# them is as long as the sentence; compared one by one they give the changed characters.
_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3000-\u30ff\u3130-\u318f\u31c0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff"
)
# a token: one CJK character, a word of other letters and digits, a run of whitespace,
# or any other single character (punctuation, a symbol)
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])\w)+|\s+|.", re.DOTALL)

Segment = tuple[str, str]  # ("equal" | "delete" | "insert", text)


def tokens(text: str) -> list[str]:
    """`text` cut into the units `text_diff` compares; joined, they give `text` back."""
    return _TOKEN.findall(text)


def text_diff(old: str, new: str) -> list[Segment]:
    """The claim's diff as segments ("equal" | "delete" | "insert", text): words for Latin
    runs, characters for CJK text.

    Between two equal segments all deleted text comes first, as one segment, then all
    inserted text: joining equal+delete gives `old`, equal+insert gives `new`. A run of
    whitespace left alone between two changes joins them ("quick brown" → "slow red" is
    one deletion and one insertion, not two of each).
    """
    if old == new:
        return [("equal", old)] if old else []
    a, b = tokens(old), tokens(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    # runs: ("equal", text) or ("change", deleted, inserted)
    runs: list[tuple[str, ...]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            runs.append(("equal", "".join(a[i1:i2])))
            continue
        deleted, inserted = "".join(a[i1:i2]), "".join(b[j1:j2])
        if _joins(runs, deleted, inserted):
            (_, space), (_, was_deleted, was_inserted) = runs.pop(), runs.pop()
            deleted = was_deleted + space + deleted
            inserted = was_inserted + space + inserted
        elif runs and runs[-1][0] == "change":  # never two changes side by side
            _, was_deleted, was_inserted = runs.pop()
            deleted, inserted = was_deleted + deleted, was_inserted + inserted
        runs.append(("change", deleted, inserted))
    segments: list[Segment] = []
    for run in runs:
        if run[0] == "equal":
            segments.append(("equal", run[1]))
            continue
        _, deleted, inserted = run
        segments += [
            (kind, part) for kind, part in (("delete", deleted), ("insert", inserted)) if part
        ]
    return segments


def _joins(runs: list[tuple[str, ...]], deleted: str, inserted: str) -> bool:
    """Whether a change joins the one before it across the whitespace between them:
    only when the two together both delete and insert (two insertions stay apart)."""
    if len(runs) < 2 or runs[-2][0] != "change" or runs[-1][0] != "equal":
        return False
    if not runs[-1][1].isspace():
        return False
    return bool(runs[-2][1] or deleted) and bool(runs[-2][2] or inserted)


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
    a removed one as `remove` at its old index, and a new id where an old one stood
    (the same index) as one `replace` of the whole item. Other lists are compared index
    by index, with removals from the end listed last-first — so for values without
    id-matched lists, applying the changes in order is a valid JSON patch.
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
    # an item whose id changed where it stands (a frame entity given another target) is
    # one replacement at that place, not an addition and a removal at the same pointer
    gone = {i for key, i in old_ids.items() if key not in new_ids}
    replaced = {j for key, j in new_ids.items() if key not in old_ids and j in gone}
    for key, j in new_ids.items():
        if key in old_ids:
            _diff(old[old_ids[key]], new[j], f"{pointer}/{j}", field, out)
        elif j in replaced:
            out.append(Change(field, "replace", f"{pointer}/{j}", old[j], new[j]))
        else:
            out.append(Change(field, "add", f"{pointer}/{j}", None, new[j]))
    for key, i in old_ids.items():
        if key not in new_ids and i not in replaced:
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


# ---------------------------------------------------------------------------
# a note's repair


def note_changes(note: Note) -> tuple[list[Change], list[Segment]]:
    """A note's V1 → V2 changes and its claim's segments; a draft block that does not
    parse contributes none."""
    drafts = note.drafts
    assert drafts is not None
    old_claim = note.claim.text.value if note.claim is not None else ""
    new_claim = drafts.claim.value if drafts.claim is not None else old_claim
    changes = repair_changes(old_claim, new_claim, None, None, None, None)
    if drafts.frame is not None and drafts.frame.ok:
        old_frame = note.frame.data if note.frame is not None and note.frame.ok else None
        changes += repair_changes("", "", old_frame, drafts.frame.data, None, None)
    if drafts.metadata is not None and drafts.metadata.ok:
        changes += repair_changes("", "", None, None, _v1_metadata(note), drafts.metadata.data)
    segments = text_diff(old_claim, new_claim) if old_claim != new_claim else []
    return changes, segments


def unread_drafts(note: Note) -> list[str]:
    """The JSON draft blocks that are missing or do not parse (their findings say why)."""
    drafts = note.drafts
    assert drafts is not None
    blocks = (
        ("V2 Semantic Frame Draft", drafts.frame),
        ("V2 Revision Metadata Draft", drafts.metadata),
    )
    return [name for name, block in blocks if block is None or not block.ok]


def repairs_nothing(note: Note) -> bool:
    """Whether the note's V2 drafts were all read and say exactly what V1 says: a repair
    that would record no change (preview fails it, apply refuses it)."""
    drafts = note.drafts
    if drafts is None or drafts.claim is None or unread_drafts(note):
        return False
    return not note_changes(note)[0]


def _v1_metadata(note: Note) -> dict[str, Any]:
    claim = note.claim
    mode = claim.epistemic_mode.value if claim and claim.epistemic_mode else None
    status = claim.mapping_status.value if claim and claim.mapping_status else None
    return {"epistemic_mode": mode, "mapping_status": status}
