"""A thin wrapper over the `git` executable: just what the hook, the merge driver and
`vt init` need.

Plain subprocess calls, no library: git is the authority on where the index, the hooks
and the config live (worktrees, `core.hooksPath`, `GIT_INDEX_FILE` during
`git commit -a`), so every question is asked to git itself. The environment is passed
through untouched for the same reason: inside a hook, git's `GIT_*` variables point at
the index being committed.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from vault_tools.errors import UsageError


class GitError(UsageError):
    """git failed, or is not installed."""


class Staged(NamedTuple):
    paths: list[str]  # whose staged content differs from HEAD's, deletions included
    symlinks: set[str]  # those whose staged entry is a symlink (mode 120000): their blob
    # is where the link leads, not a file's text


def _run(
    args: list[str],
    cwd: Path,
    stdin: bytes | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False, env=env
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise GitError(f"git {' '.join(args[:2])}: {message}", str(cwd))
    return done


@dataclass(frozen=True, slots=True)
class GitRepo:
    """One working tree: its root, its git dir, and where a given folder sits inside it."""

    root: Path  # the top of the working tree
    git_dir: Path  # absolute; a worktree's own git dir for linked worktrees

    @classmethod
    def find(cls, path: Path) -> GitRepo | None:
        """The repository whose working tree holds `path`, or None outside any repository."""
        done = _run(["rev-parse", "--show-toplevel", "--absolute-git-dir"], path, check=False)
        if done.returncode != 0:
            return None
        lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 2 or not lines[0]:
            return None  # a bare repository, or inside .git itself
        return cls(Path(lines[0]), Path(lines[1]))

    def git(
        self,
        *args: str,
        stdin: bytes | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run git at the root; `env` replaces the environment (None: this process's)."""
        return _run(list(args), self.root, stdin, check, env)

    def relative(self, path: Path) -> str:
        """`path` relative to the working tree root, '/'-separated ('' for the root)."""
        rel = Path(os.path.realpath(path)).relative_to(os.path.realpath(self.root)).as_posix()
        return "" if rel == "." else rel

    # -- hooks and state

    def hooks_dir(self) -> Path:
        """Where git looks for hooks: `git rev-parse --git-path hooks` (honours core.hooksPath)."""
        out = self.git("rev-parse", "--git-path", "hooks").stdout.decode().strip()
        path = Path(out)
        return path if path.is_absolute() else self.root / path

    def merge_heads(self) -> list[str]:
        """The commits being merged in (MERGE_HEAD), empty outside a merge."""
        try:
            text = (self.git_dir / "MERGE_HEAD").read_text(encoding="ascii")
        except OSError:
            return []
        return [line.strip() for line in text.splitlines() if line.strip()]

    # -- the index and commits

    def staged(self, under: str = "") -> Staged:
        """What the index changes from HEAD (added, modified, deleted), '/'-separated from
        the root, in one `git diff --cached --raw`: on an unborn branch git compares the
        index with the empty tree, so everything staged is listed."""
        spec = [f":(top,literal){under}"] if under else []
        out = self.git("diff", "--cached", "--raw", "--no-renames", "-z", "--", *spec).stdout
        fields = out.split(b"\0")
        paths: list[str] = []
        symlinks: set[str] = set()
        # each entry: ":<old mode> <new mode> <old id> <new id> <status>", then the path
        for meta, raw in zip(fields[::2], fields[1::2], strict=False):
            path = raw.decode("utf-8", "surrogateescape")
            paths.append(path)
            if meta.split(b" ")[1:2] == [b"120000"]:
                symlinks.add(path)
        return Staged(paths, symlinks)

    def staged_paths(self, under: str = "") -> list[str]:
        """The paths of `staged`."""
        return self.staged(under).paths

    def has_head(self) -> bool:
        return self.git("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).returncode == 0

    def read_blobs(self, specs: list[str]) -> dict[str, bytes | None]:
        """Many objects in one `git cat-file --batch`: `:path` is the staged blob, `REV:path`
        a committed one. A spec that names nothing maps to None."""
        if not specs:
            return {}
        request = "".join(f"{spec}\n" for spec in specs).encode("utf-8", "surrogateescape")
        out = self.git("cat-file", "--batch", stdin=request).stdout
        blobs: dict[str, bytes | None] = {}
        pos = 0
        for spec in specs:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) == 3 and header[1] == b"blob":
                size = int(header[2])
                blobs[spec] = out[pos : pos + size]
                pos += size + 1  # the blob is followed by a newline
            else:
                blobs[spec] = None  # "<spec> missing", "ambiguous", or not a blob
        return blobs

    def read_staged(self, path: str) -> bytes | None:
        return self.read_blobs([f":{path}"])[f":{path}"]

    def read_committed(self, rev: str, path: str) -> bytes | None:
        return self.read_blobs([f"{rev}:{path}"])[f"{rev}:{path}"]

    def ls_files(self, under: str = "") -> list[str]:
        spec = [f":(top,literal){under}"] if under else []
        out = self.git("ls-files", "--cached", "-z", "--", *spec).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    # -- config (the repository's own .git/config)

    def config_get(self, key: str) -> str | None:
        done = self.git("config", "--local", "--get", key, check=False)
        return done.stdout.decode("utf-8", "replace").rstrip("\n") if done.returncode == 0 else None

    def config_set(self, key: str, value: str) -> None:
        self.git("config", "--local", key, value)

    def config_remove_section(self, section: str) -> bool:
        """True when the section existed and was removed."""
        return (
            self.git("config", "--local", "--remove-section", section, check=False).returncode == 0
        )
