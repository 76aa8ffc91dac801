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
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from vault_tools.infra.filestat import stat_signature
from vault_tools.notes import frontmatter
from vault_tools.notes.vault import (
    Listing,
    MarkdownFile,
    in_batches,
    read_file,
)

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
    """An index of the vault's Markdown files for link resolution.

    Kept for a whole run over every file of the vault, so compact: the knowledge base's
    own notes by key in a dict; every other file, once a target outside the knowledge
    base's folder is resolved, only as an 8-byte entry of a table (a hash of its key and
    its position in the listing), and likewise
    every file by name once a bare `[[Name]]` is resolved. A hash found is confirmed
    against the listing's path, so a collision never resolves a target to the wrong file.
    """

    def __init__(
        self, files: Listing | Iterable[MarkdownFile], kb_dir: str, root: Path | None = None
    ):
        # root: the vault folder, needed only to read the notes' aliases (None: no aliases)
        self.root = root
        self._aliases: dict[str, tuple[str, ...]] | None = None
        self.kb_prefix = normalise(kb_dir.strip("/")) + "/"
        self.listing = files if isinstance(files, Listing) else Listing.of(files)
        self._kb: dict[str, str] | None = None  # key -> the first KB note of that key
        self._keys: _Table | None = None  # the other files, by key
        self._names: _Table | None = None  # every file, by name
        # the raw listing: a warm `vt validate` needs this digest, not the (costlier) index
        self.digest = _listing_digest(kb_dir, self.listing)
        self._resolved: dict[str, Resolution] = {}
        self._wide: set[str] = set()  # targets whose resolution the whole listing decides
        # while not None, the wide targets resolved (see `track`)
        self.asked: set[str] | None = None
        self._kb_paths: list[str] = []  # every file under the folder, in listing order
        self._kb_digest: str | None = None

    @property
    def kb_digest(self) -> str:
        """A digest of the knowledge base's folder alone: what every target under it
        resolves by (a result cache's key; a note added elsewhere leaves it as it is)."""
        if self._kb_digest is None:
            self._kb_notes()
            paths = self._kb_paths
            listing = Listing(paths, self.listing.escaping.intersection(paths))
            self._kb_digest = _listing_digest(self.kb_prefix, listing)
        return self._kb_digest

    def resolve(self, target: str) -> Resolution:
        """Resolve one target (memoised: a vault names the same few hundred targets)."""
        found = self._resolved.get(target)
        if found is None:
            found = self._resolved[target] = self._resolve(target)
        if self.asked is not None and target in self._wide:
            self.asked.add(target)
        return found

    def wide_facts(self, targets: Iterable[str]) -> tuple[tuple[str, str, str | None], ...]:
        """(target, status, path) of each of `targets`, sorted: what a cached result that
        resolved them depends on besides the knowledge base's own folder."""
        resolved = [self.resolve(target) for target in targets]
        return tuple(sorted((t, r.status, r.path) for t, r in zip(targets, resolved, strict=True)))

    def still_resolves(self, facts: Iterable[tuple[str, str, str | None]]) -> bool:
        """Whether each (target, status, path) of `facts` resolves the same way now."""
        for target, status, path in facts:
            found = self.resolve(target)
            if found.status != status or found.path != path:
                return False
        return True

    def _resolve(self, target: str) -> Resolution:
        link = link_target(target)
        if _escapes(link):
            return Resolution(ESCAPE, key=normalise(link))
        key = normalise(link)
        if not key.startswith(self.kb_prefix):
            # found among every file (or by name): a note added or removed anywhere may
            # change it, where a target under the knowledge base's folder only changes
            # with that folder
            self._wide.add(target)
        path = self._by_key(key)
        if path is None and "/" not in key:
            path = self._by_name(key)
        if path is None:
            return Resolution(MISSING, key=key)
        if path in self.listing.escaping:
            return Resolution(ESCAPE, path, key)
        found_key = normalise(path)
        if not found_key.startswith(self.kb_prefix):
            return Resolution(OUTSIDE_KB, path, found_key)
        return Resolution(OK, path, found_key)

    def _by_key(self, key: str) -> str | None:
        """The first path of the listing whose normalised key is `key`."""
        if key.startswith(self.kb_prefix):  # only a KB note's key starts so
            return self._kb_notes().get(key)
        paths = self.listing.paths
        found = [
            position
            for position in self._others().positions(key)
            if normalise(paths[position]) == key
        ]
        return paths[min(found)] if found else None

    def _by_name(self, name: str) -> str | None:
        """The path of the listing whose normalised file name is `name`, when only one is."""
        paths = self.listing.paths
        if self._names is None:
            self._names = _Table(len(paths))
            self._names.fill(
                (_name(normalise(relative)), position) for position, relative in enumerate(paths)
            )
        found = [
            position
            for position in self._names.positions(name)
            if _name(normalise(paths[position])) == name
        ]
        return paths[found[0]] if len(found) == 1 else None  # two: neither is meant

    def _kb_notes(self) -> dict[str, str]:
        """The KB notes by key (key -> the first note of that key), made on first use."""
        if self._kb is None:
            kb: dict[str, str] = {}
            prefix = self.kb_prefix
            paths = self._kb_paths
            for relative in self.listing.paths:
                key = normalise(relative)
                if key.startswith(prefix):
                    kb.setdefault(key, relative)
                    paths.append(relative)
            self._kb = kb
        return self._kb

    def _others(self) -> _Table:
        """The files outside the knowledge base by key, made on first use: only a target
        that does not start with the knowledge base's folder needs them (rarely, so a
        clean vault never pays for the table, nor its forked workers for a copy)."""
        if self._keys is None:
            prefix = self.kb_prefix
            others = _Table(len(self.listing.paths))  # a few KB notes' slots stay empty
            others.fill(
                (key, position)
                for position, key in enumerate(map(normalise, self.listing.paths))
                if not key.startswith(prefix)
            )
            self._keys = others
        return self._keys

    def notes_in_kb(self) -> list[str]:
        return sorted(self._kb_notes().values())

    def alias_index(self) -> dict[str, tuple[str, ...]]:
        """Every knowledge-base note (vault-relative path) -> its `aliases` property.

        Read once, on first use; empty when the vault root is unknown.
        """
        if self._aliases is None:
            self._aliases = {}
            if self.root is not None:
                root = str(self.root)
                for relative in self.notes_in_kb():
                    self._aliases[relative] = _read_record(os.path.join(root, relative), relative)[
                        1
                    ]
        return self._aliases

    def load_aliases(
        self, known: dict[str, tuple], fresh: Callable[[os.stat_result], bool], listing: str = ""
    ) -> dict[str, tuple]:
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
        root = str(self.root)
        for relative in notes:
            absolute = os.path.join(root, relative)
            record = known.get(relative)
            if record is None or not _unchanged(absolute, record[0], fresh):
                record = _read_record(absolute, relative)
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


_key_hash: Callable[[str], int] = hash  # 64 bits; a hit is confirmed against the path


def _name(key: str) -> str:
    return key[key.rfind("/") + 1 :]


class _Table:
    """Positions in the listing by the hash of a key made from each path: an
    open-addressing hash table in one int64 array, no object per entry (a sorted array
    would be smaller, but sorting it takes a Python int per entry, megabytes that the
    process keeps). An entry holds the hash's high bits and, in the low `bits`,
    the position + 1 (0: an empty slot)."""

    def __init__(self, count: int):
        self.bits = max(1, count.bit_length())
        self.size = count * 4 // 3 + 1  # at most 3/4 full
        self.slots = array("q", bytes(8 * self.size))

    def fill(self, entries: Iterable[tuple[str, int]]) -> None:
        """Add (key, position) pairs (one loop, its names local: this is every file)."""
        slots, size, bits = self.slots, self.size, self.bits
        keep = ~((1 << bits) - 1)
        key_hash = _key_hash
        for key, position in entries:
            value = key_hash(key)
            slot = (value >> bits) % size
            while slots[slot]:
                slot = slot + 1 if slot + 1 < size else 0
            slots[slot] = (value & keep) | (position + 1)

    def positions(self, key: str) -> Iterator[int]:
        """The positions whose key may be `key` (the same hash)."""
        value = _key_hash(key)
        low = (1 << self.bits) - 1
        high = value & ~low
        slot = (value >> self.bits) % self.size
        while entry := self.slots[slot]:
            if entry & ~low == high:
                yield (entry & low) - 1
            slot = (slot + 1) % self.size


def _listing_digest(kb_dir: str, listing: Listing, batch: int = 1024) -> str:
    """sha256 of the folder and the listing, one `path<TAB>escapes` line each, fed a batch
    of lines at a time (the whole text, built at once, is megabytes on a large vault)."""
    digest = hashlib.sha256(f"{kb_dir}\n".encode())
    escaping = listing.escaping
    for start, part in enumerate(in_batches(listing.paths, batch)):
        if escaping and not escaping.isdisjoint(part):
            text = "\n".join(f"{path}\t{int(path in escaping)}" for path in part)
        else:
            text = "\t0\n".join(part) + "\t0"
        digest.update(f"\n{text}".encode() if start else text.encode())
    return digest.hexdigest()


def _unchanged(
    absolute: str, signature: tuple | None, fresh: Callable[[os.stat_result], bool]
) -> bool:
    """Whether the file still has `signature` and was surely written before it was taken."""
    try:
        info = os.stat(absolute)
    except OSError:
        return False
    return signature == stat_signature(info) and fresh(info)


def _read_record(absolute: str, relative: str) -> tuple[tuple | None, tuple[str, ...]]:
    """(stat signature, aliases) of a knowledge-base note, read now. The signature is the
    open file's, taken before its bytes are read: an edit made meanwhile shows next time."""
    try:
        raw, info = read_file(absolute)
    except OSError:
        return None, ()
    return stat_signature(info), _aliases_of(raw, relative)


def _aliases_of(raw: bytes, relative: str) -> tuple[str, ...]:
    """A note's `aliases` (or `alias`) property as strings; () when absent or not UTF-8."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return ()
    lines = [line.rstrip("\r") for line in text.split("\n")]
    properties = frontmatter.read(lines, relative).properties
    value = properties.get("aliases", properties.get("alias"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(
        unicodedata.normalize("NFC", str(item))
        for item in value
        if isinstance(item, (str, int, float)) and str(item).strip()
    )


def _escapes(link: str) -> bool:
    if not link:
        return False
    if link.startswith(("/", "\\", "~")) or _WINDOWS_DRIVE.match(link):
        return True
    return ".." in link.replace("\\", "/").split("/")
