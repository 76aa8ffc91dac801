"""The claim graph inside Obsidian (docs/claim-store.md).

Each knowledge-base note that an accepted claim maps onto gets a vt-owned block
(`<!-- vt:claims:start -->` … `<!-- vt:claims:end -->`, at the end of the note) listing
those claims as wikilinks to their review notes, so Obsidian's backlinks and graph view
show claim → entity edges. The block is derived from the Claim Store alone; a note no
longer referenced loses its block, and a note is rewritten only when its block changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.notes import kb as kbmod
from vault_tools.notes import markdown, markers, writer
from vault_tools.notes.vault import list_vault, read_file
from vault_tools.store.claims import ClaimStore

BLOCK = "claims"
HEADER = "Accepted claims using this entity (maintained by vt from the Decision Ledger):"


@dataclass(frozen=True, slots=True)
class Use:
    """One accepted claim mapping onto a knowledge-base note."""

    claim_id: str
    role: str
    label: str
    note: str  # the claim's review note, vault-relative

    def line(self) -> str:
        label = markdown.text(self.label)
        tail = f"{self.role}, {label}" if label else self.role  # the role is vt's own word
        return f"- {markdown.wikilink(self.note, self.claim_id)} — {tail}"


def render_block(uses: list[Use]) -> str:
    lines = [HEADER, *(use.line() for use in sorted(uses, key=lambda u: (u.claim_id, u.role)))]
    return "\n".join(lines) + "\n"


def sync_kb_blocks(
    settings: Settings, store: ClaimStore, problems: list[str] | None = None
) -> list[str]:
    """Write or remove the claims block of every knowledge-base note as the store says.

    Returns the vault-relative paths of the notes written. A note that cannot be
    rewritten (edited meanwhile, broken markers, unreadable) is skipped and described in
    `problems`, never fatal: the next refresh tries again.
    """
    # the listing itself, not a tuple per file made from it: a run over a large vault
    # (apply's last step) holds one list of its paths, not two
    kb = kbmod.KnowledgeBase(list_vault(settings.vault), settings.kb_dir)
    targets = _targets_by_note(store, kb)
    written: list[str] = []
    for relative in kb.notes_in_kb():
        wanted = _uses_in(store, targets.get(relative))
        try:
            if _sync_one(settings, relative, render_block(wanted) if wanted else None):
                written.append(relative)
        except VtError as exc:
            if problems is not None:
                where = f"{relative}:{exc.line}" if exc.line else relative
                problems.append(f"{where}: {exc.message}")
    try:
        writer.sync_folders(settings.vault / relative for relative in written)
    except VtError as exc:  # the blocks are written; only their durability is in doubt
        if problems is not None:
            problems.append(f"{exc.path}: {exc.message}")
    return written


def _targets_by_note(store: ClaimStore, kb: kbmod.KnowledgeBase) -> dict[str, dict[str, str]]:
    """Knowledge-base note → {target: target_key} of the edge targets resolving to it.
    Built from the targets alone, so that each note's block is then made from its own
    edges (`_uses_in`), never from all the edges of the store at once."""
    found: dict[str, dict[str, str]] = {}
    for key, target in store.edge_targets():
        resolution = kb.resolve(target)
        if resolution.status == kbmod.OK and resolution.path is not None:
            found.setdefault(resolution.path, {})[target] = key
    return found


def _uses_in(store: ClaimStore, targets: dict[str, str] | None) -> list[Use]:
    """The accepted claims using one knowledge-base note, from the edges to `targets`.
    Targets that resolve to no knowledge-base note (missing, outside it, escaping the
    vault) have no note to show them in and were left out of `_targets_by_note`."""
    if not targets:
        return []
    return [
        Use(claim_id, role, label, note)
        for target, claim_id, role, label, note in store.graph_rows_of(targets.values())
        if target in targets
    ]


def _sync_one(settings: Settings, relative: str, content: str | None) -> bool:
    path = settings.vault / relative
    if content is None:
        # the common case by far: no claims and no block; checked on bytes, no decoding
        try:
            if not markers.has_start(read_file(path, settings.max_note_bytes)[0], BLOCK):
                return False
        except OSError as exc:
            raise VtError(f"cannot read: {exc.strerror or exc}", relative) from None
    snapshot = writer.read_snapshot(path, settings.max_note_bytes)
    new_text = writer.set_block(snapshot.text, BLOCK, content)
    # one folder fsync for all the blocks (sync_kb_blocks): they are derived state
    return writer.write_if_changed(snapshot, new_text, sync_folder=False, root=settings.vault)
