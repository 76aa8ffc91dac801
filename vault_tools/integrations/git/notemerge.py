"""The git merge driver for notes (`vt hook merge-note %O %A %B %P`): the user's bytes
merged by git's own three-way merge (`git merge-file`), vt's bytes never a conflict.

vt owns `review_state`, the `vt_*` properties and the text between its block markers,
and recomputes them from the ledger; two clones that each applied a decision write
different vt bytes into the same note, which git alone reports as a conflict in lines
nobody should resolve by hand. The driver settles vt's bytes first, item by item (a
property, a block): the side that changed it since the merge base wins, and when both
did, ours stands until vt recomputes it from the merged ledger (the post-merge hook).
Then the three versions, alike in vt's bytes, go to `git merge-file`: what is left to
conflict is the user's, and git reports it as usual.

Two reviewers who decided the same (the same `review_action` and, for a decision, the
same content: `same_decision`, the ledger's own test of agreement) have nothing to
settle, so who they are, their comments and their checklists never stop the merge:
each such property takes the side that changed it, ours when both did (docs/workflow.md).
The ledger keeps both events with their own reviewers and comments.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from vault_tools.errors import VtError
from vault_tools.notes.note import parse_note
from vault_tools.notes.owned_properties import (
    entry_chunks,
    is_owned_key,
    set_properties,
    with_entry_chunks,
)
from vault_tools.notes.writer import block_content, block_names, decode_note, encode_note, set_block
from vault_tools.vocabulary import CHECK_KEYS

# a version whose frontmatter cannot be read: its vt properties are unknown, not absent
_UNREADABLE = frozenset(
    {
        "git-conflict",
        "frontmatter-unclosed",
        "yaml-syntax",
        "yaml-not-mapping",
        "yaml-duplicate-key",
    }
)
Owned = dict[str, str | None]  # "prop:KEY" / "block:NAME" -> its value, None when absent
# what a reviewer writes beside the decision: not what was decided (ledger/heads.py)
BESIDE_DECISION = ("reviewer", "review_comment", *CHECK_KEYS)


def owned_bytes(text: str, path: str) -> Owned:
    """vt's part of a note: its owned properties' values and its blocks' contents."""
    note = parse_note(text.encode("utf-8"), path)
    unreadable = [f for f in note.findings if f.code in _UNREADABLE]
    if unreadable:  # its vt properties cannot be told apart: merge the bytes as they are
        raise ValueError(unreadable[0].message)
    props = note.properties
    owned: Owned = {f"prop:{k}": _as_text(v) for k, v in props.items() if is_owned_key(k)}
    for name in block_names(text):
        owned[f"block:{name}"] = block_content(text, name)
    return owned


def _as_text(value: object) -> str | None:
    return None if value is None else str(value)


def settle_owned(base: Owned, ours: Owned, theirs: Owned) -> Owned:
    """Each of vt's items three ways: the side that changed it wins; ours if both did."""
    merged: Owned = {}
    for key in dict.fromkeys([*ours, *theirs, *base]):
        mine, other, old = ours.get(key), theirs.get(key), base.get(key)
        merged[key] = other if mine == old else mine
    return merged


def with_owned(text: str, owned: Owned) -> str:
    """`text` with vt's items set as `owned` says (only vt's bytes change)."""
    props = {k.removeprefix("prop:"): v for k, v in owned.items() if k.startswith("prop:")}
    if props and text.startswith("---"):
        text = set_properties(text, props)
    for key, content in owned.items():
        if key.startswith("block:"):
            text = set_block(text, key.removeprefix("block:"), content)
    return text


def merge_note(base: bytes, ours: bytes, theirs: bytes, path: str) -> tuple[bytes, bool]:
    """(the merged note, whether it merged cleanly). vt's bytes settled as above when all
    three versions read as notes, then `git merge-file` on the rest."""
    try:
        texts = [decode_note(raw) for raw in (base, ours, theirs)]
        owned = [owned_bytes(text, path) for text, _ in texts]
        agreed = settle_owned(*owned)
        settled = [with_owned(text, agreed) for text, _ in texts]
        if _agree(settled[1], settled[2], path):
            settled = _beside_decision_settled(settled)
        base, ours, theirs = (
            encode_note(text, bom) for text, (_, bom) in zip(settled, texts, strict=True)
        )  # fmt: skip
    except (VtError, ValueError, UnicodeError):
        pass  # not a note vt can read (no UTF-8, broken markers): git merges it as it is
    return merge_file(base, ours, theirs, path)


def _agree(ours: str, theirs: str, path: str) -> bool:
    """Do both sides ask for the same: the same review_action and, when it decides
    something, the same decision (the V2 drafts and approved preview of a repair)."""
    from vault_tools.ledger.heads import same_decision
    from vault_tools.review.claim_record import decision_content

    notes = [parse_note(text.encode("utf-8"), path) for text in (ours, theirs)]
    actions = [note.properties.get("review_action") for note in notes]
    if actions[0] != actions[1] or not isinstance(actions[0], str):
        return False
    mine, other = (decision_content(note, actions[0]) for note in notes)
    if mine is None or other is None:
        return mine is other  # PENDING, REQUEST_REPAIR: the action is all there is
    return same_decision(mine, other)


def _beside_decision_settled(texts: list[str]) -> list[str]:
    """(base, ours, theirs) with each property beside the decision settled as vt's own
    items are (the side that changed it wins, ours when both did) and written alike into
    all three, so neighbouring lines changed on two sides cannot conflict either. Copied
    as raw lines: the winner's quoting and comments stay as its reviewer wrote them."""
    old, mine, other = (entry_chunks(text) for text in texts)
    wanted: dict[str, str | None] = {}
    for key in BESIDE_DECISION:
        if mine.get(key) != other.get(key):
            wanted[key] = other.get(key) if mine.get(key) == old.get(key) else mine.get(key)
    if not wanted:
        return texts
    return [with_entry_chunks(text, wanted) for text in texts]


def merge_file(base: bytes, ours: bytes, theirs: bytes, path: str) -> tuple[bytes, bool]:
    with tempfile.TemporaryDirectory(prefix="vt-merge-") as tmp:
        files = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            file = Path(tmp) / name
            file.write_bytes(data)
            files.append(str(file))
        done = subprocess.run(
            ["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *files],
            capture_output=True,
            check=False,
        )
    if done.returncode < 0 or done.returncode >= 128:
        raise VtError(f"git merge-file failed: {done.stderr.decode(errors='replace')}", path)
    return done.stdout, done.returncode == 0


def merge_driver(base: Path, ours: Path, theirs: Path, path: str) -> bool:
    """git's `%O %A %B %P`: the merged note written to `ours`; whether it merged cleanly."""
    from vault_tools.infra.textfiles import write_atomic

    merged, clean = merge_note(base.read_bytes(), ours.read_bytes(), theirs.read_bytes(), path)
    write_atomic(ours, merged, root=None)  # `ours` is git's own temporary file
    return clean
