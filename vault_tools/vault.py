"""The files of a vault: which are notes, and how a path given by a user maps into it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vault_tools.config import IGNORED_DIRS


@dataclass(frozen=True, slots=True)
class MarkdownFile:
    relative: str  # vault-relative, '/'-separated
    escapes: bool = False  # a symlink whose target lies outside the vault


def markdown_files(vault: Path) -> list[MarkdownFile]:
    """Every `.md` file of the vault, sorted, skipping dot-folders (.obsidian, .git, …).

    Symlinked folders are not followed; a symlinked file is listed, marked when it
    leads outside the vault so that links to it are refused.
    """
    found: list[MarkdownFile] = []
    stack = [(vault, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in IGNORED_DIRS:
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), f"{prefix}{name}/"))
            elif name.endswith(".md"):
                escapes = entry.is_symlink() and not _inside(Path(entry.path), vault)
                found.append(MarkdownFile(prefix + name, escapes))
    found.sort(key=lambda f: f.relative)
    return found


def _inside(path: Path, vault: Path) -> bool:
    try:
        path.resolve().relative_to(vault.resolve())
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False
    return True


def relative_in_vault(vault: Path, path: Path) -> str | None:
    """The vault-relative form of a user-given path, or None when it lies outside the vault."""
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        return absolute.resolve().relative_to(vault.resolve()).as_posix()
    except ValueError:
        return None
