"""`vt entities`: the knowledge base as the review notes use it, and new entity notes.

`survey` reports every knowledge-base note with the review notes (and accepted claims)
that use it, the targets notes use that resolve to no knowledge-base note, and the
surface labels mapped to different targets in different notes. `new_entity` writes a
new knowledge-base note, refusing to overwrite one or to use a name Obsidian cannot.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from vault_tools.config import Settings
from vault_tools.errors import RefusedError, UsageError
from vault_tools.integrations.importer import create_file
from vault_tools.notes import kb as kbmod
from vault_tools.notes.facts import surveyed
from vault_tools.notes.frontmatter import may_name
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.owned_properties import render_value
from vault_tools.notes.vault import markdown_files


@dataclass(slots=True)
class Entity:
    path: str  # vault-relative knowledge-base note
    title: str
    aliases: list[str]
    notes: list[str] = field(default_factory=list)  # review notes that map onto it
    accepted: int = 0  # accepted claims whose current version maps onto it

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "title": self.title,
            "aliases": self.aliases,
            "notes": len(self.notes),
            "note_paths": self.notes,
            "accepted_claims": self.accepted,
        }


@dataclass(slots=True)
class MissingTarget:
    target: str  # as written (link form normalised away: '04_knowledge_base/X')
    status: str  # kb.MISSING | kb.ESCAPE | kb.OUTSIDE_KB
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"target": self.target, "status": self.status, "notes": self.notes}


@dataclass(slots=True)
class LabelConflict:
    label: str
    targets: dict[str, list[str]]  # target note path (or raw target) -> review notes

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "targets": [{"target": t, "notes": n} for t, n in self.targets.items()],
        }


@dataclass(slots=True)
class EntitiesReport:
    notes: int = 0
    entities: list[Entity] = field(default_factory=list)
    missing: list[MissingTarget] = field(default_factory=list)
    conflicts: list[LabelConflict] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "notes": self.notes,
            "entities": [e.to_json() for e in self.entities],
            "missing": [m.to_json() for m in self.missing],
            "conflicts": [c.to_json() for c in self.conflicts],
        }


def _title(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _uses(note: Note) -> list[tuple[str, str]]:
    """(label, target) pairs a note maps: V1 frame entities, mapping rows, V2 draft frame."""
    pairs: list[tuple[str, str]] = []
    blocks = [note.frame, note.drafts.frame if note.drafts else None]
    for block in blocks:
        entities = (
            block.data.get("entities")
            if block is not None and block.ok and isinstance(block.data, dict)
            else None
        )
        for entity in entities if isinstance(entities, list) else []:
            if isinstance(entity, dict) and isinstance(entity.get("id"), str):
                pairs.append((str(entity.get("label", "")), entity["id"]))
    pairs += [(row.label, row.target) for row in note.mapping]
    return pairs


def _current_uses(note: Note) -> list[tuple[str, str]]:
    """The V1 mapping only: what a label means in the note as it stands."""
    pairs = [(row.label, row.target) for row in note.mapping]
    frame = note.frame
    if frame is not None and frame.ok and isinstance(frame.data, dict):
        entities = frame.data.get("entities")
        for entity in entities if isinstance(entities, list) else []:
            if (
                isinstance(entity, dict)
                and isinstance(entity.get("id"), str)
                and isinstance(entity.get("label"), str)
            ):
                pairs.append((entity["label"], entity["id"]))
    return pairs


def survey(settings: Settings, accepted: Mapping[str, int] | None = None) -> EntitiesReport:
    """The knowledge base and its use by the vault's review notes.

    `accepted` maps an entity target (any form that resolves: '04_knowledge_base/X',
    '[[…]]', the note path) to the number of accepted claims using it; the CLI fills it
    from the Claim Store. Without it every entity counts 0 accepted claims.
    """
    files = markdown_files(settings.vault)
    kb = kbmod.KnowledgeBase(files, settings.kb_dir, settings.vault)
    entities = {path: Entity(path, _title(path), kb.aliases(path)) for path in kb.notes_in_kb()}
    missing: dict[str, MissingTarget] = {}
    labels: dict[str, dict[str, list[str]]] = {}
    label_shown: dict[str, str] = {}
    report = EntitiesReport()
    # each note parsed only when it changed since the last survey (notes/facts.py)
    inside = [file.relative for file in files]
    for relative, fact in surveyed(settings, inside, USES_FACTS, (_uses_fact, _no_fact)):
        if fact is None:
            continue
        uses, current = fact
        report.notes += 1
        for _label, target in uses:
            _count_use(kb, target, relative, entities, missing)
        for label, target in current:
            resolution = kb.resolve(target)
            key = unicodedata.normalize("NFC", label).strip().casefold()
            where = resolution.path if resolution.status == kbmod.OK else kbmod.link_target(target)
            if key and where:
                label_shown.setdefault(key, label.strip())
                notes = labels.setdefault(key, {}).setdefault(where, [])
                if not notes or notes[-1] != relative:
                    notes.append(relative)
    for target, count in (accepted or {}).items():
        resolution = kb.resolve(target)
        if resolution.status == kbmod.OK and resolution.path in entities:
            entities[resolution.path].accepted += count
    report.entities = sorted(entities.values(), key=lambda e: (-len(e.notes), e.path))
    report.missing = sorted(missing.values(), key=lambda m: m.target)
    report.conflicts = [
        LabelConflict(label_shown[key], dict(sorted(targets.items())))
        for key, targets in sorted(labels.items())
        if len(targets) > 1
    ]
    return report


USES_FACTS = "uses"  # the kind of fact kept


def _uses_fact(relative: str, raw: bytes) -> tuple | None:
    """(`_uses`, `_current_uses`) of a review note's bytes; None for any other file."""
    if not may_name(raw, b"claim_id"):
        return None
    note = parse_note(raw, relative)
    if not note.is_review_note:
        return None
    return tuple(_uses(note)), tuple(_current_uses(note))


def _no_fact(relative: str, exc: OSError) -> None:
    return None  # unreadable: `vt validate` reports it


def _count_use(
    kb: kbmod.KnowledgeBase,
    target: str,
    note: str,
    entities: dict[str, Entity],
    missing: dict[str, MissingTarget],
) -> None:
    resolution = kb.resolve(target)
    if resolution.status == kbmod.OK and resolution.path in entities:
        users = entities[resolution.path].notes
        if not users or users[-1] != note:  # a note's uses come together
            users.append(note)
        return
    link = kbmod.link_target(target)
    if not link:
        return
    entry = missing.setdefault(resolution.key or link, MissingTarget(link, resolution.status))
    if not entry.notes or entry.notes[-1] != note:
        entry.notes.append(note)


# --- vt entities new ------------------------------------------------------------------------

# Obsidian refuses these in file names; # ^ [ ] | also break wikilinks to the note
FORBIDDEN = '*"\\/<>:|?#^[]'


@dataclass(slots=True)
class NewEntity:
    path: str  # vault-relative
    text: str
    written: bool
    similar: list[str] = field(default_factory=list)  # notes already titled/aliased so

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "written": self.written,
            "similar": self.similar,
            "text": self.text,
        }


def check_name(name: str) -> str:
    """The entity note's name, NFC; UsageError when Obsidian could not hold or link it."""
    name = unicodedata.normalize("NFC", name)
    if not name.strip():
        raise UsageError("an entity name cannot be empty")
    if name != name.strip():
        raise UsageError(f"{name!r}: no leading or trailing spaces in an entity name")
    bad = sorted({ch for ch in name if ch in FORBIDDEN})
    if bad:
        raise UsageError(
            f"{name!r}: an entity name cannot contain {' '.join(bad)} "
            f"(Obsidian forbids {FORBIDDEN} in note names)"
        )
    if ".." in name or name.startswith("."):
        raise UsageError(f"{name!r}: an entity name cannot start with '.' or contain '..'")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise UsageError(f"{name!r}: an entity name cannot contain control characters")
    if name.endswith("."):
        raise UsageError(f"{name!r}: an entity name cannot end with '.'")
    if len(name.encode("utf-8")) > 240:
        raise UsageError(f"{name[:20]!r}…: an entity name must stay under 240 bytes")
    return name


_PLAIN_ALIAS = re.compile(r"^[^\W\d_](?:[\w -]*[\w])?$")
_YAML_WORDS = frozenset("y n yes no true false on off null".split())


def _yaml_string(value: str) -> str:
    """A YAML flow-sequence item that reads back as exactly `value`: plain for words
    (as Obsidian writes aliases), double-quoted otherwise ("a, b", "x: y", "yes")."""
    if _PLAIN_ALIAS.match(value) and value.lower() not in _YAML_WORDS:
        return value
    return render_value(value)


def render_entity(name: str, aliases: list[str]) -> str:
    items = ", ".join(_yaml_string(a) for a in aliases)
    return f"---\naliases: [{items}]\ntags: [entity]\n---\n# {name}\n"


def new_entity(
    settings: Settings, name: str, aliases: list[str] | None = None, dry_run: bool = False
) -> NewEntity:
    """Write `<kb_dir>/NAME.md` (aliases, `tags: [entity]`, `# NAME`); never overwrite."""
    name = check_name(name)
    cleaned = []
    for alias in aliases or []:
        alias = unicodedata.normalize("NFC", alias).strip()
        if not alias or any(unicodedata.category(ch).startswith("C") for ch in alias):
            raise UsageError(f"alias {alias!r}: must be non-empty text on one line")
        if alias not in cleaned:
            cleaned.append(alias)
    relative = f"{settings.kb_dir.strip('/')}/{name}.md"
    files = markdown_files(settings.vault)
    kb = kbmod.KnowledgeBase(files, settings.kb_dir, settings.vault)
    existing = kb.resolve(relative)
    if existing.status != kbmod.MISSING or (settings.vault / relative).exists():
        raise RefusedError("a note of this name exists; not overwritten", existing.path or relative)
    keys = {kbmod.normalise(n) for n in [name, *cleaned]}
    similar = [
        path
        for path in kb.notes_in_kb()
        if keys & {kbmod.normalise(n) for n in [_title(path), *kb.aliases(path)]}
    ]
    text = render_entity(name, cleaned)
    written = False
    if not dry_run:
        written = create_file(settings.vault / relative, text.encode("utf-8"), root=settings.vault)
        if not written:
            raise RefusedError("a note of this name exists; not overwritten", relative)
    return NewEntity(relative, text, written, similar)
