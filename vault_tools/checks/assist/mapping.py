"""Review assist, the entity mapping: is each frame entity's label a name of the
knowledge-base note it is mapped to (its title or an alias)?

A label that is neither gets `assist-mapping-label`, or `assist-mapping-unrelated` when
the target's title has words found nowhere in the claim, its evidence or context; both
suggest the knowledge-base notes the label does name.
"""

from __future__ import annotations

import functools
import re

from vault_tools.checks.assist.wording import fold, fold_text, has_cjk, nfkc, stem, text_words
from vault_tools.checks.claim_versions import ClaimVersion, block_line
from vault_tools.checks.context import CheckContext
from vault_tools.findings import Finding, warning
from vault_tools.notes import kb as kbmod
from vault_tools.notes.note import Note


def _title(path: str) -> str:
    """A note's title: its file name, as Obsidian shows it."""
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _names(ctx: CheckContext, path: str) -> list[str]:
    """A knowledge-base note's title and aliases."""
    return [_title(path), *ctx.kb.aliases(path)]


@functools.lru_cache(maxsize=4096)  # the same few hundred targets, note after note
def _folded_names(kb: kbmod.KnowledgeBase, path: str) -> frozenset[str]:
    """The folded `_names` of a knowledge-base note (a KnowledgeBase never changes its
    aliases once read, so it can be the key)."""
    return frozenset(map(fold, (_title(path), *kb.aliases(path))))


def _candidates(ctx: CheckContext, label: str, exclude: str) -> list[str]:
    """Knowledge-base notes whose title or an alias is the label."""
    key = fold(label)
    found = []
    for path in ctx.kb.alias_index():
        if path != exclude and key in _folded_names(ctx.kb, path):
            found.append(path[:-3] if path.lower().endswith(".md") else path)
    return found


_TITLE_STOPWORDS = frozenset("a an and the of for in on to with by or vs".split())


def _foreign_title_words(title: str, text: str) -> list[str]:
    """Words of a knowledge-base title found nowhere in `text`: Latin words as whole words
    ("IC" is not inside "speculative"), a CJK run as a substring."""
    folded, latin = fold_text(text), set(text_words(text))
    foreign = []
    for word in re.findall(r"[^\W_]+", nfkc(title)):
        if word.casefold() in _TITLE_STOPWORDS:
            continue
        cjk = has_cjk(word)
        if (cjk and fold(word) not in folded) or (not cjk and stem(word.casefold()) not in latin):
            foreign.append(word)
    return foreign


def mapping_checks(
    note: Note, version: ClaimVersion, ctx: CheckContext, evidence: str, context: str
) -> list[Finding]:
    if ctx.kb.root is None:
        return []  # no aliases known: a label-vs-title check would only raise false alarms
    findings = []
    for index, entity in version.entities:
        resolution = ctx.kb.resolve(entity["id"])
        if resolution.status != kbmod.OK or resolution.path is None:
            continue  # an error already (kb-target-*)
        label, path = entity["label"], resolution.path
        if fold(label) in _folded_names(ctx.kb, path):
            continue
        names = _names(ctx, path)
        everything = " ".join((version.claim.value, evidence, context))
        line = _entity_line(note, version, index, entity)
        others = _candidates(ctx, label, path)
        hint = (
            f"; did you mean {' or '.join(f'[[{c}]]' for c in others)}?"
            if others
            else f"; add {label!r} to the aliases of {names[0]!r} if it is right"
        )
        foreign = _foreign_title_words(names[0], everything)
        if foreign:
            findings.append(
                warning(
                    note.path,
                    line,
                    "assist-mapping-unrelated",
                    f"{version.label}{label!r} is mapped to {names[0]!r}, but "
                    f"{', '.join(repr(w) for w in foreign)} "
                    f"{'appear' if len(foreign) > 1 else 'appears'} nowhere in the claim, "
                    f"evidence or context{hint}",
                )
            )
        else:
            findings.append(
                warning(
                    note.path,
                    line,
                    "assist-mapping-label",
                    f"{version.label}surface label {label!r} matches neither the title nor an "
                    f"alias of {names[0]!r}{hint}",
                )
            )
    return findings


def _entity_line(note: Note, version: ClaimVersion, index: int, entity: dict) -> int:
    """V1: the mapping-table row of the entity (where the reviewer checks the mapping);
    the drafts (and a V1 entity with no row): the entity's label in the frame."""
    if not version.label:
        for row in note.mapping:
            if fold(row.label) == fold(entity["label"]) and kbmod.link_target(
                row.target
            ) == kbmod.link_target(entity["id"]):
                return row.line
    return block_line(version.frame, ("entities", index, "label"), entity["label"])
