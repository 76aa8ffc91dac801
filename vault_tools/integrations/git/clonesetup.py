"""Whether this clone has the git set-up its vault expects: every command's one warning
line when the repository's `.gitattributes` names vt's merge drivers but this clone's
git config lacks them, or its hooks are missing (docs/workflow.md).

A clone made with `git clone` gets the vault's `.gitattributes` but none of its git
config or hooks, so without `vt init` git merges vt's bytes as plain text, and nothing
would tell the reviewer why. The check runs before every command, so it reads files
and spawns nothing in the usual case: `.git` found by walking up from the vault, the
repository's own config read as text, the hooks folder listed. Only when that finds
something missing is git asked (`git config`, `git rev-parse --git-path hooks`), so a
driver set in the global config or through an include, or a `core.hooksPath` set
there, is not reported wrongly. Standard library only: every command imports it.
"""

from __future__ import annotations

from pathlib import Path

LEDGER_DRIVER = "vt-ledger"
NOTE_DRIVER = "vt-note"
SIGNERS_DRIVER = "vt-signers"
DRIVERS = (LEDGER_DRIVER, NOTE_DRIVER, SIGNERS_DRIVER)
POST_HOOKS = ("post-merge", "post-checkout", "post-commit", "post-rewrite")
HOOKS = ("pre-commit", *POST_HOOKS)
# what each hook vt writes starts with (hook.SIGNATURE, team.POST_SIGNATURE)
HOOK_MARK = "# vt-hook: written by `vt hook install` (vault_tools)"
# a post hook from before the refresh committed what it rewrote (pullcommit.py)
CURRENT_POST_HOOK = "--after "
FIX = "vt init"


def _git_dirs(start: Path) -> tuple[Path, Path] | None:
    """(the working tree's root, the common git dir) of the repository around `start`,
    found as git does: the nearest `.git` folder, or a `.git` file naming one (a linked
    worktree, a submodule), whose `commondir` leads to the shared config and hooks."""
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder, dot_git
        if dot_git.is_file():
            try:
                text = dot_git.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = (folder / text.removeprefix("gitdir:").strip()).resolve()
            try:
                common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return folder, git_dir
            return folder, (git_dir / common).resolve()
    return None


def _config(text: str) -> tuple[set[str], str | None]:
    """(the merge drivers given a `driver` in this config text, its core.hooksPath).
    Read by hand, not by regular expressions, whose compiling alone would cost every
    command more than the whole check."""
    drivers: set[str] = set()
    hooks_path: str | None = None
    section = subsection = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            header, _, line = line[1:].partition("]")
            name, _, quoted = header.strip().partition(" ")
            section, subsection = name.lower(), quoted.strip().strip('"')
            line = line.strip()
        key, equals, value = line.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not equals or not value or value[0] in "#;":
            continue
        if section == "merge" and key == "driver":
            drivers.add(subsection)
        elif section == "core" and not subsection and key == "hookspath":
            hooks_path = value.strip('"')
    return drivers, hooks_path


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _hook_state(hooks: Path, name: str) -> str | None:
    """None when vt's hook is there (or one vt did not write: `vt init` leaves that
    alone, so there is nothing to tell); else "missing" or "older"."""
    path = hooks / name
    if not path.exists():
        return "missing"
    text = _read(path)
    if name in POST_HOOKS and HOOK_MARK in text and CURRENT_POST_HOOK not in text:
        return "older"
    return None


def _ask_git(root: Path, *args: str) -> str | None:
    import subprocess  # imported only when a file says something is missing

    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, check=False)
    except OSError:
        return None
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None


def missing_setup(vault: Path) -> str | None:
    """The one warning line for a clone without vt's git set-up, or None."""
    found = _git_dirs(vault.resolve())
    if found is None:
        return None
    root, common = found
    attributes = _read(root / ".gitattributes").split()
    named = [d for d in DRIVERS if f"merge={d}" in attributes]
    if not named:
        return None  # not a vault shared with vt's drivers: nothing is expected
    drivers, hooks_path = _config(_read(common / "config"))
    hooks = Path(hooks_path).expanduser() if hooks_path else common / "hooks"
    if not hooks.is_absolute():
        hooks = root / hooks
    lacking = [d for d in named if d not in drivers]
    hook_states = {name: _hook_state(hooks, name) for name in HOOKS}
    if lacking:  # set where this reading does not look (global config, an include)?
        lacking = [d for d in lacking if not _ask_git(root, "config", f"merge.{d}.driver")]
    if any(hook_states.values()):
        asked = _ask_git(root, "rev-parse", "--git-path", "hooks")
        if asked is not None and (root / asked).resolve() != hooks.resolve():
            hook_states = {name: _hook_state(root / asked, name) for name in HOOKS}
    missing = [f"the merge driver{_s(lacking)} {', '.join(lacking)}"] if lacking else []
    for state, what in (("missing", "the {} hook{}"), ("older", "vt's current {} hook{}")):
        names = [name for name, s in hook_states.items() if s == state]
        if names:
            missing.append(what.format(", ".join(names), _s(names)))
    if not missing:
        return None
    return (
        f"{root}: this clone lacks {' and '.join(missing)} that the vault's git set-up "
        f"expects (its .gitattributes names vt's merge drivers); run `{FIX}`"
    )


def _s(names: list[str]) -> str:
    return "s" if len(names) > 1 else ""
