"""What a clone of a shared vault needs beyond the pre-commit hook and the ledger driver
(installed with them by `vt init` / `vt hook install`): the note merge driver
(notemerge.py), the allowed signers' merge driver (signersmerge.py), and `post-merge` /
`post-checkout` / `post-rewrite` hooks (and `post-commit`, for the commit that concludes
a merge stopped on a conflict) that bring the Claim Store, the knowledge-base blocks and
the notes' marks up to date with the ledger a pull brought, and commit what that
rewrote (pullcommit.py)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from vault_tools.config import Settings
from vault_tools.infra.textfiles import append_lines, read_text, write_atomic
from vault_tools.integrations.git.clonesetup import (
    HOOK_MARK,
    NOTE_DRIVER,
    POST_HOOKS,
    SIGNERS_DRIVER,
)
from vault_tools.integrations.git.repo import GitRepo
from vault_tools.integrations.git.signersmerge import SIGNERS_DRIVER_NAME

NOTE_DRIVER_NAME = "vt review notes (vt's own bytes recomputed, the rest merged by git)"
# post-commit: git runs no post-merge after a merge that stopped on a conflict, so the
# commit that concludes it refreshes instead (only a merge commit: one with two parents)
POST_SIGNATURE = f"{HOOK_MARK}: refreshes after a pull"
GITATTRIBUTES = ".gitattributes"


def note_driver_command(python: str | None = None) -> str:
    return f"{shlex.quote(python or sys.executable)} -m vault_tools hook merge-note %O %A %B %P"


def signers_driver_command(python: str | None = None) -> str:
    return f"{shlex.quote(python or sys.executable)} -m vault_tools hook merge-signers %O %A %B"


def _quoted(pattern: str) -> str:
    if any(c in pattern for c in ' \t"\\'):
        pattern = '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return pattern


def note_attributes_line(repo: GitRepo, settings: Settings) -> str:
    """Every Markdown file of the vault goes through the note driver."""
    vault = repo.relative(settings.vault)
    pattern = f"{vault}/**/*.md" if vault else "*.md"
    return f"{_quoted(pattern)} merge={NOTE_DRIVER}"


def signers_attributes_line(repo: GitRepo, settings: Settings) -> str | None:
    """The allowed signers file goes through its driver; None when it lies outside the
    repository (vt.toml may name any path), where git merges nothing of it."""
    try:
        path = repo.relative(settings.allowed_signers_path)
    except ValueError:
        return None
    pattern = path if "/" in path else "/" + path  # anchored to the root, like the ledger's
    return f"{_quoted(pattern)} merge={SIGNERS_DRIVER}"


def _drivers() -> dict[str, dict[str, str]]:
    """vt's merge drivers of this module: the git config section -> its keys."""
    return {
        f"merge.{NOTE_DRIVER}": {"name": NOTE_DRIVER_NAME, "driver": note_driver_command()},
        f"merge.{SIGNERS_DRIVER}": {
            "name": SIGNERS_DRIVER_NAME,
            "driver": signers_driver_command(),
        },
    }


def _attribute_lines(repo: GitRepo, settings: Settings) -> list[str]:
    signers = signers_attributes_line(repo, settings)
    return [note_attributes_line(repo, settings), *([signers] if signers else [])]


# when each hook acts (the shell tests before Python starts)
_WHEN = {
    "post-merge": "",
    # its third argument is 0 for a checkout of files: nothing moved. A rebase checks
    # out the upstream first, before replaying ours: the ledger then lacks our events,
    # and writing the blocks would stop the rebase; post-rewrite refreshes after it
    "post-checkout": 'if [ "$3" = "0" ]; then exit 0; fi\n'
    'git_dir="$(git rev-parse --git-dir)" || exit 0\n'
    'if [ -d "$git_dir/rebase-merge" ] || [ -d "$git_dir/rebase-apply" ]; then exit 0; fi\n',
    # only the commit that concludes a merge stopped on a conflict: a merge commit
    "post-commit": "git rev-parse -q --verify HEAD^2 >/dev/null || exit 0\n",
    # only after a rebase (`git pull --rebase`), not after `git commit --amend`
    # (git writes the rewritten commits to stdin: read, so git never meets a closed pipe)
    "post-rewrite": 'cat >/dev/null\nif [ "$1" != "rebase" ]; then exit 0; fi\n',
}


def post_hook_script(repo: GitRepo, settings: Settings, name: str) -> str:
    vault = repo.relative(settings.vault) or "."
    python = shlex.quote(sys.executable)
    return (
        "#!/bin/sh\n"
        f"{POST_SIGNATURE}\n"
        "# The Claim Store and the knowledge-base blocks, from the ledger now checked out;\n"
        "# after a merge or a pull, what that rewrote is committed (pullcommit.py).\n"
        f"{_WHEN[name]}"
        f"exec {python} -m vault_tools hook refresh --vault {shlex.quote(vault)} --after {name}\n"
    )


def _is_ours(path: Path) -> bool:
    try:
        return POST_SIGNATURE in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def install_team(repo: GitRepo, settings: Settings, dry_run: bool) -> list[str]:
    """The note driver (git config, .gitattributes) and the post-merge / post-checkout
    hooks; the changes made, in words. A hook vt did not write is left alone, and said."""
    changes: list[str] = []
    for section, wanted in _drivers().items():
        for name, value in wanted.items():
            key = f"{section}.{name}"
            if repo.config_get(key) != value:
                changes.append(f"git config {key} {shlex.quote(value)}")
                if not dry_run:
                    repo.config_set(key, value)
    for line in _attribute_lines(repo, settings):
        changes += _add_attribute(repo, line, dry_run)
    hooks = repo.hooks_dir()
    for name in POST_HOOKS:
        path = hooks / name
        script = post_hook_script(repo, settings, name).encode()
        if path.exists() and not _is_ours(path):
            changes.append(f"left {path} alone: vt did not write it (run `vt hook refresh`)")
            continue
        if path.exists() and path.read_bytes() == script:
            continue
        changes.append(f"installed the {name} hook {path}")
        if not dry_run:
            hooks.mkdir(parents=True, exist_ok=True)
            write_atomic(path, script, 0o755, root=hooks)
    return changes


def uninstall_team(repo: GitRepo, settings: Settings, dry_run: bool) -> list[str]:
    changes: list[str] = []
    for name in POST_HOOKS:
        path = repo.hooks_dir() / name
        if _is_ours(path):
            changes.append(f"removed the {name} hook {path}")
            if not dry_run:
                path.unlink()
    for section in _drivers():
        if repo.config_get(f"{section}.driver") is not None:
            changes.append(f"removed git config section {section}")
            if not dry_run:
                repo.config_remove_section(section)
    path = repo.root / GITATTRIBUTES
    ours = _attribute_lines(repo, settings)
    lines = read_text(path).splitlines(keepends=True)
    kept = [existing for existing in lines if existing.strip() not in ours]
    changes += [f"removed `{line}` from {path}" for line in ours
                if line in (existing.strip() for existing in lines)]  # fmt: skip
    if len(kept) != len(lines) and not dry_run:
        if any(existing.strip() for existing in kept):
            write_atomic(path, "".join(kept).encode(), root=repo.root)
        else:
            path.unlink()
    return changes


def _add_attribute(repo: GitRepo, line: str, dry_run: bool) -> list[str]:
    path = repo.root / GITATTRIBUTES
    text = read_text(path)
    if line in (existing.strip() for existing in text.splitlines()):
        return []
    if not dry_run:
        write_atomic(path, append_lines(text, [line]).encode(), root=repo.root)
    return [f"added `{line}` to {path}"]
