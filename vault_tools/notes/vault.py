"""The files of a vault: which are notes, and how a path given by a user maps into it."""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, Protocol

from vault_tools.config import IGNORED_DIRS, MAX_NOTE_BYTES
from vault_tools.findings import Finding, error
from vault_tools.infra.boundary import escaping_folder, escaping_note, escaping_notes, is_inside
from vault_tools.infra.osfiles import open_fd
from vault_tools.notes.frontmatter import may_name


class MarkdownFile(NamedTuple):
    """A tuple, not a frozen dataclass: a vault lists tens of thousands, five times faster."""

    relative: str  # vault-relative, '/'-separated
    escapes: bool = False  # a symlink whose target lies outside the vault


class Listing(NamedTuple):
    """The `.md` files of a vault as plain strings, which is all a run keeps of each."""

    paths: list[str]  # vault-relative, '/'-separated, sorted
    escaping: frozenset[str] = frozenset()  # those that are symlinks leading outside
    # what could not be listed or is no file to read (an unreadable folder, a symlinked
    # folder leading outside, a FIFO named `*.md`): one finding each, sorted by path
    problems: tuple[Finding, ...] = ()

    @classmethod
    def of(cls, files: Iterable[MarkdownFile]) -> Listing:
        files = list(files)
        return cls([f.relative for f in files], frozenset(f.relative for f in files if f.escapes))

    def files(self) -> list[MarkdownFile]:
        return [MarkdownFile(relative, relative in self.escaping) for relative in self.paths]

    def inside(self) -> list[str]:
        """The paths that stay inside the vault (the listing's own list when all do)."""
        if not self.escaping:
            return self.paths
        return [relative for relative in self.paths if relative not in self.escaping]

    def findings(self, claims_dir: str) -> list[Finding]:
        """What a whole-vault run reports before it reads a note: the listing's problems,
        and the notes of the claims folder that are symlinks leading outside (never read)."""
        return sorted([*escaping_notes(claims_dir, self.escaping), *self.problems])


class Paths(Protocol):
    """What a whole-vault run needs of its targets: their count, and them in order."""

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[str]: ...


def in_batches(paths: Iterable[str], size: int = 1024) -> Iterator[list[str]]:
    """`paths` a list of `size` at a time: a digest of a large listing is fed in parts
    (the whole text, built at once, is megabytes on a large vault)."""
    items = iter(paths)
    while batch := list(itertools.islice(items, size)):
        yield batch


NOTE_SUFFIX = ".md"


def is_note_name(name: str) -> bool:
    """A file of this name (no folder) is a note: `*.md`, the suffix spelt as Obsidian
    writes it (`X.MD` is not one), and not a dot-file (editor temp files `.#x.md`,
    Obsidian's and vt's own files are hidden ones)."""
    return name.endswith(NOTE_SUFFIX) and not name.startswith(".")


def is_note_path(relative: str) -> bool:
    """A vault-relative, '/'-separated path names a note: a note's name, in no hidden
    folder (.obsidian, .git, .trash, .vt and every other dot-folder are never read).

    The one rule `list_vault`, `vt watch` and the pre-commit hook apply to a path; a
    symlink named like a note is one (where it leads is the listing's concern)."""
    if not relative or relative.startswith(("/", "../")):
        return False
    *folders, name = relative.split("/")
    return is_note_name(name) and not any(
        not part or part.startswith(".") or part in IGNORED_DIRS for part in folders
    )


def may_be_review_note(relative: str, raw: bytes, claims_dir: str) -> bool:
    """A note worth parsing as a review note: under the claims folder (where a note that
    is not one is a finding), or elsewhere when its text names a `claim_id` at all."""
    return relative.startswith(claims_dir.rstrip("/") + "/") or may_name(raw, b"claim_id")


def markdown_files(vault: Path) -> list[MarkdownFile]:
    """Every `.md` file of the vault (see `list_vault`), one tuple each."""
    return list_vault(vault).files()


def list_vault(vault: Path) -> Listing:
    """Every `.md` file of the vault, sorted, skipping dot-folders (.obsidian, .git, …).

    Symlinked folders are not followed; a symlinked file is listed, marked when it
    leads outside the vault so that links to it are refused.
    """
    files: list[str] = []
    escaping: set[str] = set()
    problems: list[Finding] = []
    stack = [(str(vault), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            stack += _scan(folder, prefix, vault, files, (escaping, problems))
        except OSError as exc:  # its files found so far stay listed; the rest is a finding
            problems.append(
                error(
                    prefix.rstrip("/") or ".",
                    None,
                    "read-error",
                    f"cannot list this folder: {exc.strerror or exc}; "
                    "the notes in it are not checked",
                )
            )
    files.sort()
    return Listing(files, frozenset(escaping), tuple(sorted(problems)))


def _scan(
    folder: str, prefix: str, vault: Path, files: list[str], found: tuple[set[str], list[Finding]]
) -> list[tuple[str, str]]:
    """Add one folder's `.md` files to `files` (those leading outside to the escaping set
    too, what is no file to read to the problems); its subfolders to scan.

    The entries are taken one at a time: a list of them (a folder may hold fifty
    thousand notes) would cost megabytes that the run's memory then keeps. Their types
    come with the listing (no system call): a FIFO, socket or device named `*.md` is
    never opened, and a symlink is told apart only when it is one.
    """
    escaping, problems = found
    folders: list[tuple[str, str]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name
            # most entries, in the fewest steps: a regular file named as a note (no dot-
            # name, no folder, no symlink), which the checks below would list the same way
            if (
                name.endswith(NOTE_SUFFIX)
                and not name.startswith(".")
                and name.isascii()
                and entry.is_file(follow_symlinks=False)
            ):
                files.append(prefix + name)
                continue
            if name.startswith(".") or name in IGNORED_DIRS:
                continue
            if not name.isascii() and _undecodable(name):
                # its path could be neither shown nor written as UTF-8 (JSON, the cache)
                if entry.is_dir(follow_symlinks=False) or is_note_name(name):
                    shown = (prefix + name).encode("utf-8", "surrogateescape")
                    problems.append(
                        error(
                            shown.decode("utf-8", "replace"),
                            None,
                            "read-error",
                            "the name is not valid UTF-8; not read",
                        )
                    )
                continue
            if entry.is_dir(follow_symlinks=False):
                folders.append((entry.path, f"{prefix}{name}/"))
            elif entry.is_symlink():
                if not is_note_name(name):
                    if not is_inside(vault, entry.path) and _is_folder(entry):
                        # not followed (its notes would be read from outside the vault)
                        problems.append(escaping_folder(prefix + name))
                    continue
                files.append(prefix + name)
                if not is_inside(vault, entry.path):
                    escaping.add(files[-1])
            elif is_note_name(name):
                if not entry.is_file(follow_symlinks=False):
                    try:
                        kind = _kind(entry.stat(follow_symlinks=False).st_mode)
                    except OSError:  # gone since it was listed
                        continue
                    problems.append(not_a_file(prefix + name, kind))
                    continue
                files.append(prefix + name)
    return folders


def _undecodable(name: str) -> bool:
    """Whether a file name held bytes that are not UTF-8 (os.fsdecode made surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """Whether a symlink leads to a folder, or nowhere a file could be (dangling, a loop):
    both hide whatever notes the link was meant to show."""
    try:
        return entry.is_dir() or not os.path.exists(entry.path)
    except OSError:
        return True


def relative_in_vault(vault: Path, path: Path) -> str | None:
    """The vault-relative form of a user-given path, or None when it lies outside the vault."""
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        return absolute.resolve().relative_to(vault.resolve()).as_posix()
    except ValueError:
        return None


def from_vault_when_missing_here(vault: Path, path: Path) -> Path:
    """A relative path names a file from the working folder, as a shell means it; one
    that names nothing there but names something in the vault is taken from the vault,
    so `vt draft 03_claims/X.md --vault V` works from any folder. Where it leads is
    then judged as for any path (a `../` or a symlink out of the vault stays outside)."""
    if path.is_absolute() or os.path.lexists(path) or not os.path.lexists(vault / path):
        return path
    return vault / path


def _by_name(vault: Path, path: Path) -> str | None:
    """The vault-relative form of `path` by its name alone (no symlink resolved), or None."""
    absolute = os.path.abspath(path)
    for root in (os.path.abspath(vault), os.path.realpath(vault)):
        relative = os.path.relpath(absolute, root)
        if relative != "." and not relative.startswith(".." + os.sep) and relative != "..":
            return Path(relative).as_posix()
    return None


class NotAFile(OSError):
    """The path is not a regular file (a FIFO, a socket, a device, a folder): not read."""


class TooLarge(OSError):
    """The file is larger than the note size limit: not read."""


def read_file(path: str | Path, limit: int | None = MAX_NOTE_BYTES) -> tuple[bytes, os.stat_result]:
    """A file's bytes and the fstat of the open file they were read from, so that the
    two belong together (one open, one fstat and, as a rule, one read).

    The one way vt reads a note. Only a regular file is read: the open does not block
    (a FIFO opened for reading would wait for a writer forever) and the fstat of the
    open file says what it is (NotAFile). A file over `limit` bytes is not read
    (TooLarge), nor one that grows past it while it is read. Both are OSErrors, so every
    caller that survives an unreadable file survives these.
    """
    fd = open_fd(path, os.O_RDONLY, nonblocking=True)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(errno.EINVAL, f"not a regular file ({_kind(info.st_mode)})", str(path))
        if limit is not None and info.st_size > limit:
            raise _too_large(info.st_size, limit, path)
        first = os.read(fd, max(info.st_size, 1) + 1)
        if len(first) == info.st_size:  # all of it, and no byte more: at its end
            return first, info
        chunks = [first]
        size = len(first)
        while chunks[-1]:  # the file changed size since fstat, or the read came up short
            chunks.append(os.read(fd, 1 << 16))
            size += len(chunks[-1])
            if limit is not None and size > limit:
                raise _too_large(size, limit, path)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def _too_large(size: int, limit: int, path: str | Path) -> TooLarge:
    return TooLarge(
        errno.EFBIG,
        f"{size:,} bytes, more than the note size limit of "
        f"{limit:,} bytes ([limits] max_note_bytes in vt.toml); not read",
        str(path),
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def not_a_file(relative: str, kind: str) -> Finding:
    return error(
        relative, None, "not-a-file", f"{kind} named like a note, not a regular file; never opened"
    )


# the codes of a file or folder vt could not read at all (`read_finding`, the listing's
# problems, a note a symlink leads out of): whatever review note it holds went unchecked
UNREAD_CODES = frozenset({"read-error", "not-a-file", "note-too-large"})


def read_finding(relative: str, exc: OSError) -> Finding:
    """The finding for a vault file that `read_file` could not read."""
    if isinstance(exc, TooLarge):
        return error(relative, None, "note-too-large", exc.strerror or str(exc))
    if isinstance(exc, NotAFile):
        return error(relative, None, "not-a-file", f"{exc.strerror}; not read")
    return error(relative, None, "read-error", f"cannot read: {exc.strerror or exc}")


def given_notes(vault: Path, paths: Iterable[Path]) -> Iterator[tuple[str, Finding | None]]:
    """The notes a user named on the command line, in the order given, each once:
    (vault-relative path, None), or (the path as shown, the finding why it is no note of
    the vault: outside it, or no such file)."""
    seen: set[str] = set()
    for given in paths:
        path = from_vault_when_missing_here(vault, given)
        relative = relative_in_vault(vault, path)
        if relative is None:
            by_name = _by_name(vault, path)
            if by_name is not None:  # inside by name: a symlink on its way leads out
                yield by_name, escaping_note(by_name)
                continue
            yield (
                str(given),
                error(str(given), None, "path-outside-vault", f"not inside the vault {vault}"),
            )
        elif not (vault / relative).is_file():
            try:
                mode = (vault / relative).stat().st_mode
            except OSError:
                yield relative, error(relative, None, "read-error", "no such file")
            else:
                yield relative, not_a_file(relative, _kind(mode))
        elif relative not in seen:
            seen.add(relative)
            yield relative, None


def review_note_bytes(
    vault: Path, relative: str, limit: int | None = MAX_NOTE_BYTES
) -> bytes | None:
    """The bytes of a vault file that may be a review note, else None.

    A review note's frontmatter holds `claim_id`, so a file whose bytes never mention it
    is not parsed at all; an unreadable file is None too (its callers only survey, and
    `vt validate` reports it).
    """
    try:
        raw, _ = read_file(os.path.join(vault, relative), limit)
    except OSError:
        return None
    return raw if may_name(raw, b"claim_id") else None
