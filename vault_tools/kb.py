"""Resolve entity targets to knowledge-base notes the way Obsidian resolves links.

A target is `[[04_knowledge_base/X]]`, `[[04_knowledge_base/X|alias]]` or plain
`04_knowledge_base/X`: a path relative to the vault root, `.md` implied, compared
after Unicode normalisation and case-insensitively (as Obsidian does). A bare name
(`[[X]]`) resolves to the note of that name anywhere in the vault when unique.
A target never leads outside the vault: `..` segments, absolute paths and
symlinks that escape are refused.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from vault_tools.vault import MarkdownFile

OK = "ok"
MISSING = "missing"
ESCAPE = "escape"
OUTSIDE_KB = "outside-kb"

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


@dataclass(frozen=True, slots=True)
class Resolution:
    status: str  # OK | MISSING | ESCAPE | OUTSIDE_KB
    path: str | None = None  # the vault-relative note path when found
    key: str = ""  # the normalised link key: what two targets share when they name one note


def link_target(target: str) -> str:
    """'[[04_kb/X|alias]]' -> '04_kb/X'; '[[X#Heading]]' -> 'X'; plain text unchanged."""
    text = target.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2]
    text = text.split("|", 1)[0].split("#", 1)[0].strip()
    return text


def normalise(path: str) -> str:
    path = unicodedata.normalize("NFC", path.replace("\\", "/")).strip()
    if path.lower().endswith(".md"):
        path = path[:-3]
    return path.casefold()


class KnowledgeBase:
    """An index of the vault's Markdown files for link resolution."""

    def __init__(self, files: Iterable[MarkdownFile], kb_dir: str):
        self.kb_prefix = normalise(kb_dir.strip("/")) + "/"
        self.by_key: dict[str, MarkdownFile] = {}
        self.by_name: dict[str, list[MarkdownFile]] = {}
        for file in files:
            key = normalise(file.relative)
            self.by_key.setdefault(key, file)
            self.by_name.setdefault(key.rsplit("/", 1)[-1], []).append(file)
        listing = "\n".join(sorted(self.by_key))
        self.digest = hashlib.sha256(f"{kb_dir}\n{listing}".encode()).hexdigest()
        self._resolved: dict[str, Resolution] = {}

    def resolve(self, target: str) -> Resolution:
        """Resolve one target (memoised: a vault names the same few hundred targets)."""
        found = self._resolved.get(target)
        if found is None:
            found = self._resolved[target] = self._resolve(target)
        return found

    def _resolve(self, target: str) -> Resolution:
        link = link_target(target)
        if _escapes(link):
            return Resolution(ESCAPE, key=normalise(link))
        key = normalise(link)
        file = self.by_key.get(key)
        if file is None and "/" not in key:
            candidates = self.by_name.get(key, [])
            file = candidates[0] if len(candidates) == 1 else None
        if file is None:
            return Resolution(MISSING, key=key)
        if file.escapes:
            return Resolution(ESCAPE, file.relative, key)
        found_key = normalise(file.relative)
        if not found_key.startswith(self.kb_prefix):
            return Resolution(OUTSIDE_KB, file.relative, found_key)
        return Resolution(OK, file.relative, found_key)

    def notes_in_kb(self) -> list[str]:
        return sorted(f.relative for k, f in self.by_key.items() if k.startswith(self.kb_prefix))


def _escapes(link: str) -> bool:
    if not link:
        return False
    if link.startswith(("/", "\\", "~")) or _WINDOWS_DRIVE.match(link):
        return True
    return ".." in link.replace("\\", "/").split("/")
