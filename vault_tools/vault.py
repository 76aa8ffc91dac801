"""The files of a vault: which are notes, and how a path given by a user maps into it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from vault_tools.boundary import escaping_note, is_inside
from vault_tools.config import IGNORED_DIRS
from vault_tools.findings import Finding, error
from vault_tools.sortedruns import SortedRuns, SpilledStrings, SpillError


class MarkdownFile(NamedTuple):
    """A tuple, not a frozen dataclass: a vault lists tens of thousands, five times faster."""

    relative: str  # vault-relative, '/'-separated
    escapes: bool = False  # a symlink whose target lies outside the vault


class Listing(NamedTuple):
    """The `.md` files of a vault as plain strings, which is all a run keeps of each.

    `paths` is a list, or on a large vault listed with a limit (see `list_vault`) a
    `SpilledStrings` in a temporary file that `close()` lets go of: a whole-vault
    `vt validate` holds the listing to the end (the knowledge base's index and the
    run's targets share it), and its memory should not grow with the vault."""

    paths: Sequence[str]  # vault-relative, '/'-separated, sorted
    escaping: frozenset[str] = frozenset()  # those that are symlinks leading outside

    @classmethod
    def of(cls, files: Iterable[MarkdownFile]) -> Listing:
        files = list(files)
        return cls([f.relative for f in files], frozenset(f.relative for f in files if f.escapes))

    def files(self) -> list[MarkdownFile]:
        return [MarkdownFile(relative, relative in self.escaping) for relative in self.paths]

    def inside(self) -> Sequence[str] | Paths:
        """The paths that stay inside the vault (the listing's own sequence when all do;
        a filtering view of a spilled one: iterable, with a length)."""
        if not self.escaping:
            return self.paths
        if isinstance(self.paths, list):
            return [relative for relative in self.paths if relative not in self.escaping]
        return _Without(self.paths, self.escaping)

    def close(self) -> None:
        """Let go of a spilled listing's file (nothing to do for a list)."""
        if isinstance(self.paths, SpilledStrings):
            self.paths.close()


class Paths(Protocol):
    """What a whole-vault run needs of its targets: their count, and them in order."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[str]: ...


class _Without:
    """The paths of a spilled listing but the escaping ones, as they are read."""

    def __init__(self, paths: Sequence[str], skipped: frozenset[str]):
        self.paths, self.skipped = paths, skipped

    def __len__(self) -> int:
        return len(self.paths) - len(self.skipped)  # every skipped path is listed

    def __iter__(self) -> Iterator[str]:
        skipped = self.skipped
        return (relative for relative in self.paths if relative not in skipped)


# Above this many files a listing made with `spill=True` is sorted in runs of this size
# spilled to a temporary file (see sortedruns.py): its memory stays flat as the vault grows.
SPILL_PATHS = 4096


def markdown_files(vault: Path) -> list[MarkdownFile]:
    """Every `.md` file of the vault (see `list_vault`), one tuple each."""
    return list_vault(vault).files()


def list_vault(vault: Path, spill: bool = False) -> Listing:
    """Every `.md` file of the vault, sorted, skipping dot-folders (.obsidian, .git, …).

    Symlinked folders are not followed; a symlinked file is listed, marked when it
    leads outside the vault so that links to it are refused. `spill`: above
    SPILL_PATHS files the paths are kept in a temporary file (close the listing).
    """
    runs = SortedRuns(SPILL_PATHS if spill else sys.maxsize)
    escaping: set[str] = set()
    stack = [(str(vault), "")]
    try:
        while stack:
            folder, prefix = stack.pop()
            try:
                stack += _scan(folder, prefix, vault, runs, escaping)
            except SpillError:
                raise
            except OSError:  # an unreadable folder: its files found so far stay listed
                continue
        return Listing(runs.result(), frozenset(escaping))
    except BaseException:
        runs.close()
        raise


def _scan(folder: str, prefix: str, vault: Path, runs: SortedRuns,
          escaping: set[str]) -> list[tuple[str, str]]:
    """Add one folder's `.md` files to `runs` (those leading outside to `escaping`
    too); its subfolders to scan.

    The entries are taken one at a time: a list of them (a folder may hold fifty
    thousand notes) would cost megabytes that the run's memory then keeps.
    """
    files = runs.run
    limit = runs.limit
    folders: list[tuple[str, str]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in IGNORED_DIRS:
                continue
            if name.endswith(".md") and not entry.is_dir(follow_symlinks=False):
                files.append(prefix + name)
                if entry.is_symlink() and not is_inside(vault, entry.path):
                    escaping.add(files[-1])
                if len(files) >= limit:
                    runs.spill()
            elif entry.is_dir(follow_symlinks=False):
                folders.append((entry.path, f"{prefix}{name}/"))
    return folders


def relative_in_vault(vault: Path, path: Path) -> str | None:
    """The vault-relative form of a user-given path, or None when it lies outside the vault."""
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        return absolute.resolve().relative_to(vault.resolve()).as_posix()
    except ValueError:
        return None


def _by_name(vault: Path, path: Path) -> str | None:
    """The vault-relative form of `path` by its name alone (no symlink resolved), or None."""
    absolute = os.path.abspath(path)
    for root in (os.path.abspath(vault), os.path.realpath(vault)):
        relative = os.path.relpath(absolute, root)
        if relative != "." and not relative.startswith(".." + os.sep) and relative != "..":
            return Path(relative).as_posix()
    return None


def read_file(path: str | Path) -> tuple[bytes, os.stat_result]:
    """A file's bytes and the fstat of the open file they were read from, so that the
    two belong together (one open, one fstat and, as a rule, one read)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        first = os.read(fd, max(info.st_size, 1) + 1)
        if len(first) == info.st_size:  # all of it, and no byte more: at its end
            return first, info
        chunks = [first]
        while chunks[-1]:  # the file changed size since fstat, or the read came up short
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks), info
    finally:
        os.close(fd)


def stat_signature(info: os.stat_result) -> tuple[int, ...]:
    """What says a file is unchanged without reading it, as git's index does: mtime,
    ctime (which no user can set back), size and inode."""
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)


def given_notes(vault: Path, paths: Iterable[Path]) -> Iterator[tuple[str, Finding | None]]:
    """The notes a user named on the command line, in the order given, each once:
    (vault-relative path, None), or (the path as shown, the finding why it is no note of
    the vault: outside it, or no such file)."""
    seen: set[str] = set()
    for path in paths:
        relative = relative_in_vault(vault, path)
        if relative is None:
            by_name = _by_name(vault, path)
            if by_name is not None:  # inside by name: a symlink on its way leads out
                yield by_name, escaping_note(by_name)
                continue
            yield str(path), error(str(path), None, "path-outside-vault",
                                   f"not inside the vault {vault}")
        elif not (vault / relative).is_file():
            yield relative, error(relative, None, "read-error", "no such file")
        elif relative not in seen:
            seen.add(relative)
            yield relative, None


def review_note_bytes(vault: Path, relative: str) -> bytes | None:
    """The bytes of a vault file that may be a review note, else None.

    A review note's frontmatter holds `claim_id`, so a file whose bytes never mention it
    is not parsed at all; an unreadable file is None too (its callers only survey).
    """
    try:
        with open(os.path.join(vault, relative), "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return raw if b"claim_id" in raw else None
