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
import os
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from vault_tools import frontmatter
from vault_tools.vault import Listing, MarkdownFile

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
    text = text.replace("\\|", "|").split("|", 1)[0].split("#", 1)[0].strip()
    return text


def normalise(path: str) -> str:
    if path.isascii():  # NFC and casefold change nothing an ASCII lower() would not
        path = path.replace("\\", "/").strip().lower()
        return path[:-3] if path.endswith(".md") else path
    path = unicodedata.normalize("NFC", path.replace("\\", "/")).strip()
    if path.lower().endswith(".md"):
        path = path[:-3]
    return path.casefold()


class KnowledgeBase:
    """An index of the vault's Markdown files for link resolution."""

    def __init__(self, files: Listing | Iterable[MarkdownFile], kb_dir: str,
                 root: Path | None = None):
        # root: the vault folder, needed only to read the notes' aliases (None: no aliases)
        self.root = root
        self._aliases: dict[str, tuple[str, ...]] | None = None
        self.kb_prefix = normalise(kb_dir.strip("/")) + "/"
        self.listing = files if isinstance(files, Listing) else Listing.of(files)
        self._by_key: dict[str, str] | None = None
        self._by_name: dict[str, list[str]] | None = None
        # the raw listing: a warm `vt validate` needs this digest, not the (costlier) index
        self.digest = _listing_digest(kb_dir, self.listing)
        self._resolved: dict[str, Resolution] = {}

    @property
    def by_key(self) -> dict[str, str]:
        """Normalised link key -> path (the first of the listing's whose keys collide)."""
        if self._by_key is None:
            self._by_key = {}
            for relative in self.listing.paths:
                self._by_key.setdefault(normalise(relative), relative)
        return self._by_key

    @property
    def by_name(self) -> dict[str, list[str]]:
        """Normalised file name -> paths (for bare `[[Name]]` links)."""
        if self._by_name is None:
            self._by_name = {}
            for relative in self.listing.paths:
                key = normalise(relative)
                self._by_name.setdefault(key.rsplit("/", 1)[-1], []).append(relative)
        return self._by_name

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
        path = self.by_key.get(key)
        if path is None and "/" not in key:
            candidates = self.by_name.get(key, [])
            path = candidates[0] if len(candidates) == 1 else None
        if path is None:
            return Resolution(MISSING, key=key)
        if path in self.listing.escaping:
            return Resolution(ESCAPE, path, key)
        found_key = normalise(path)
        if not found_key.startswith(self.kb_prefix):
            return Resolution(OUTSIDE_KB, path, found_key)
        return Resolution(OK, path, found_key)

    def notes_in_kb(self) -> list[str]:
        return sorted(path for k, path in self.by_key.items() if k.startswith(self.kb_prefix))

    def alias_index(self) -> dict[str, tuple[str, ...]]:
        """Every knowledge-base note (vault-relative path) -> its `aliases` property.

        Read once, on first use; empty when the vault root is unknown.
        """
        if self._aliases is None:
            self._aliases = {}
            if self.root is not None:
                for relative in self.notes_in_kb():
                    self._aliases[relative] = _read_aliases(self.root / relative, relative)
        return self._aliases

    def load_aliases(self, known: dict[str, tuple], fresh: Callable[[os.stat_result], bool],
                     listing: str = "") -> dict[str, tuple]:
        """Build the alias index reusing `known` records (path -> (stat signature, aliases))
        of notes whose stat is unchanged and `fresh`; returns the records of the new index.

        `listing`: the `digest` the records were made under; when it is this one, their
        paths are the knowledge base's notes, and the index of every file is not needed.
        A warm `vt validate` so stats the knowledge base instead of reading all of it.
        """
        records: dict[str, tuple] = {}
        self._aliases = {}
        if self.root is None:
            return records
        notes = list(known) if listing and listing == self.digest else self.notes_in_kb()
        for relative in notes:
            absolute = self.root / relative
            try:
                info = os.stat(absolute)
                signature: tuple | None = (info.st_mtime_ns, info.st_ctime_ns, info.st_size,
                                           info.st_ino)
            except OSError:
                info = signature = None
            record = known.get(relative)
            if record is None or signature is None or record[0] != signature \
                    or not fresh(info):
                record = (signature, _read_aliases(absolute, relative))  # stat, then read
            records[relative] = record
            self._aliases[relative] = record[1]
        return records

    def aliases(self, path: str) -> list[str]:
        """The `aliases` of the knowledge-base note at vault-relative `path`."""
        return list(self.alias_index().get(path, ()))

    def aliases_digest(self) -> str:
        """Changes whenever any knowledge-base note's aliases change (for result caches)."""
        listing = sorted(self.alias_index().items())
        return hashlib.sha256(repr(listing).encode()).hexdigest()


def _listing_digest(kb_dir: str, listing: Listing, batch: int = 1024) -> str:
    """sha256 of the folder and the listing, one `path<TAB>escapes` line each, fed a batch
    of lines at a time (the whole text, built at once, is megabytes on a large vault)."""
    digest = hashlib.sha256(f"{kb_dir}\n".encode())
    paths, escaping = listing.paths, listing.escaping
    for start in range(0, len(paths), batch):
        part = paths[start:start + batch]
        if escaping and not escaping.isdisjoint(part):
            text = "\n".join(f"{path}\t{int(path in escaping)}" for path in part)
        else:
            text = "\t0\n".join(part) + "\t0"
        digest.update(f"\n{text}".encode() if start else text.encode())
    return digest.hexdigest()


def _read_aliases(path: Path, relative: str) -> tuple[str, ...]:
    """A note's `aliases` (or `alias`) property as strings; () when unreadable or absent."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return ()
    lines = [line.rstrip("\r") for line in text.split("\n")]
    properties = frontmatter.read(lines, relative).properties
    value = properties.get("aliases", properties.get("alias"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(unicodedata.normalize("NFC", str(item)) for item in value
                 if isinstance(item, (str, int, float)) and str(item).strip())


def _escapes(link: str) -> bool:
    if not link:
        return False
    if link.startswith(("/", "\\", "~")) or _WINDOWS_DRIVE.match(link):
        return True
    return ".." in link.replace("\\", "/").split("/")
