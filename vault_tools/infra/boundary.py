"""The vault boundary: vt never writes, creates, renames or truncates a file outside the vault.

A vault can arrive with symlinks in it (a clone, an unpacked archive, a synced folder), and
the pre-commit hook runs vt on every commit, so a symlinked note, `03_claims/`, `05_ledger/`,
ledger file, `.vt/`, dashboard or `.gitignore` leading elsewhere must never make vt touch a
file there. Every path vt writes goes through `writable_path` first; reading through a
symlink is not this module's concern.

The rule: the path, with every symlink on the way resolved (its last component
included), lies inside the (resolved) root. So:

- a symlink whose target lies inside the vault is followed: a symlinked note is written
  at its in-vault target and the link stays a link (replacing the link by a file would
  silently undo the user's link);
- a symlink leading outside the vault, at any component, refuses the write with
  `BoundaryError`, naming the link; nothing has been written at that point.

The root is the vault for everything vt keeps in it. Git's hooks are the one other root:
`git rev-parse --git-path hooks` names the folder (a repository's `.git/hooks`, a linked
worktree's common git dir, `core.hooksPath`), and that folder is trusted as git reports it,
even outside the vault (a vault in a subfolder of a repository) or when `.git/hooks` is
itself a symlink to shared hooks: a clone never carries a `.git/` folder or its config, so
that choice is the user's own. A hook file inside it is held to the rule with the hooks
folder as root. `.gitattributes` lies at the top of the working tree, which is its root.

The check resolves paths when the write is about to happen; a symlink planted between
the check and the write is not caught (POSIX offers no race-free "open beneath" here).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from vault_tools.errors import BoundaryError
from vault_tools.findings import Finding, error


def writable_path(root: Path | str, path: Path | str, where: str = "the vault") -> Path:
    """The real path a write to `path` lands on, when that lies inside `root`.

    `path` is absolute or relative to `root`; `where` names the root in the message.
    Raises BoundaryError (nothing written) when `path` lies outside `root` or a symlink on
    its way leads outside it.
    """
    given = os.path.join(root, path)  # an absolute `path` stays as it is
    real_root = _real_root(os.fspath(root))
    fast = _plain_inside(os.fspath(root), given, real_root)
    if fast is not None:
        return Path(fast)
    real = os.path.realpath(given)
    shown = _shown(root, given)
    if os.path.islink(real):  # realpath leaves a loop unresolved
        raise BoundaryError("refusing to write: a symlink on its way loops", shown)
    if _within(real, real_root):
        return Path(real)
    link = _escaping_link(Path(root), Path(given), real_root)
    if link is None:
        raise BoundaryError(f"refusing to write: it lies outside {where}", shown)
    try:
        target = f" (→ {os.readlink(link)})"
    except OSError:
        target = ""
    raise BoundaryError(
        f"refusing to write: it leads outside {where} through the symlink "
        f"{_shown(root, link)}{target}",
        shown,
    )


def is_inside(root: Path | str, path: Path | str) -> bool:
    """Whether `writable_path(root, path)` would allow a write to `path`."""
    given = os.path.join(root, path)
    real_root = _real_root(os.fspath(root))
    if _plain_inside(os.fspath(root), given, real_root) is not None:
        return True
    real = os.path.realpath(given)
    return not os.path.islink(real) and _within(real, real_root)


@functools.lru_cache(maxsize=16)
def _real_root(root: str) -> str:
    # a run has one vault (and perhaps a hooks folder): resolved once, not at every write
    return os.path.realpath(root)


def _plain_inside(root: str, path: str, real_root: str) -> str | None:
    """The real path of `path` when it lies under `root` by name and no component below
    the root is a symlink (the common case: a few lstat calls instead of a realpath of
    the whole path); None when that cannot be told so cheaply."""
    prefix = root.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split(os.sep)
    if any(part in ("", ".", "..") for part in parts):
        return None  # `..` after a symlink is the kernel's to resolve, not the string's
    at = root.rstrip(os.sep)
    for part in parts:
        at = f"{at}{os.sep}{part}"
        try:
            if stat.S_ISLNK(os.lstat(at).st_mode):
                return None
        except FileNotFoundError:
            break  # the rest is created by vt itself, as plain folders and files
        except OSError:
            return None
    return os.path.join(real_root, *parts)


def _within(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _escaping_link(root: Path, path: Path, real_root: str) -> Path | None:
    """The first symlink on the way from `root` to `path` whose target lies outside."""
    try:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        return None  # not under the root at all, not even by name
    at = Path(os.path.abspath(root))
    for part in parts:
        at = at / part
        if os.path.islink(at) and not _within(os.path.realpath(at), real_root):
            return at
    return None


def _shown(root: Path | str, path: Path | str) -> str:
    """`path` relative to `root` where it lies under it by name, else as it is."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return os.path.abspath(path)


def escaping_note(relative: str) -> Finding:
    """The finding for a note (vault-relative by name) that a symlink leads out of the
    vault: never read and never written. validate, preview, draft and apply all report
    such a note so, whether listed in a vault run or given on the command line."""
    return error(
        relative,
        None,
        "read-error",
        "leads outside the vault through a symlink (or a symlink loops); not read or written",
    )


def escaping_folder(relative: str) -> Finding:
    """The finding for a symlinked folder (vault-relative by name) that leads out of the
    vault, dangles or loops: the listing does not follow it, so the notes it was meant to
    show are not read (they would be read from outside the vault)."""
    return error(
        relative,
        None,
        "read-error",
        "a symlinked folder that leads outside the vault (or loops); its notes are not checked",
    )


def escaping_notes(claims_dir: str, escaping: Iterable[str]) -> list[Finding]:
    """`escaping_note` for the review notes among `escaping` (vault-relative `.md` files
    that are symlinks leading out of the vault, as the listing marks them)."""
    prefix = claims_dir.rstrip("/") + "/"
    return [escaping_note(relative) for relative in sorted(escaping) if relative.startswith(prefix)]


def state_files(database: Path) -> tuple[Path, ...]:
    """An SQLite database's file and the files SQLite keeps beside it, all written."""
    return (
        database,
        *(database.with_name(database.name + suffix) for suffix in ("-journal", "-wal", "-shm")),
    )
