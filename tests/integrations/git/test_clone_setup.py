"""A clone without vt's git set-up is told, on every command, in one warning line naming
what it lacks and `vt init`; a clone with it hears nothing. Real clones of a real
origin, real `vt` subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import configure, seed_origin
from vault_tools.config import load_settings
from vault_tools.integrations.git import hook, team
from vault_tools.integrations.git.clonesetup import CURRENT_POST_HOOK, HOOK_MARK, missing_setup

pytestmark = pytest.mark.usefixtures("isolated_git")


def clone(tmp_path: Path, name: str) -> Path:
    if not (tmp_path / "origin.git").exists():
        seed_origin(tmp_path)
    git(tmp_path, "clone", "-q", "origin.git", name)
    configure(tmp_path / name, name)
    return tmp_path / name


def warnings(done_stderr: str) -> list[str]:
    return [line for line in done_stderr.splitlines() if line.startswith("vt: warning:")]


def test_a_clone_without_vt_init_is_told_once_and_the_output_is_unchanged(
    tmp_path: Path,
) -> None:
    bare, ready = clone(tmp_path, "bare"), clone(tmp_path, "ready")
    assert run_vt("init", vault=ready).returncode == 0
    for args in (("status", "--json"), ("validate",), ("ledger", "verify", "--json")):
        told, quiet = run_vt(*args, vault=bare), run_vt(*args, vault=ready)
        (line,) = warnings(told.stderr)
        for what in ("vt-ledger", "vt-note", "vt-signers", "pre-commit", "post-merge"):
            assert what in line, line
        assert line.endswith("run `vt init`")
        assert warnings(quiet.stderr) == []
        assert told.returncode == quiet.returncode
        if "--json" in args:
            assert json.loads(told.stdout).keys() == json.loads(quiet.stdout).keys()
    assert run_vt("init", vault=bare).returncode == 0
    assert warnings(run_vt("status", vault=bare).stderr) == []


def test_only_what_is_missing_is_named(tmp_path: Path) -> None:
    alice = clone(tmp_path, "alice")
    assert run_vt("init", vault=alice).returncode == 0
    (alice / ".git" / "hooks" / "post-merge").unlink()
    git(alice, "config", "--remove-section", "merge.vt-signers")
    (line,) = warnings(run_vt("status", vault=alice).stderr)
    assert "merge driver vt-signers" in line and "the post-merge hook" in line
    assert "vt-note" not in line and "pre-commit" not in line


def test_a_post_hook_of_an_older_vt_is_named(tmp_path: Path) -> None:
    alice = clone(tmp_path, "alice")
    assert run_vt("init", vault=alice).returncode == 0
    post_merge = alice / ".git" / "hooks" / "post-merge"
    text = post_merge.read_text()
    assert HOOK_MARK in text and CURRENT_POST_HOOK in text
    post_merge.write_text(text.replace(" --after post-merge", ""))
    (line,) = warnings(run_vt("status", vault=alice).stderr)
    assert "vt's current post-merge hook" in line
    assert run_vt("hook", "install", vault=alice).returncode == 0  # what `vt init` runs
    assert warnings(run_vt("status", vault=alice).stderr) == []


def test_hooks_vt_did_not_write_are_not_reported(tmp_path: Path) -> None:
    """vt init leaves a post hook it did not write alone: nothing to fix, nothing said."""
    alice = clone(tmp_path, "alice")
    hooks = alice / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in team.POST_HOOKS:
        (hooks / name).write_text("#!/bin/sh\nexit 0\n")
        (hooks / name).chmod(0o755)
    assert run_vt("init", vault=alice).returncode == 0
    assert warnings(run_vt("status", vault=alice).stderr) == []


def test_drivers_and_hooks_path_set_outside_the_clone_count(tmp_path: Path) -> None:
    """A driver in the global config and hooks under core.hooksPath set there: found by
    asking git, so not reported."""
    alice = clone(tmp_path, "alice")
    assert run_vt("init", vault=alice).returncode == 0
    hooks = tmp_path / "shared-hooks"
    (alice / ".git" / "hooks").rename(hooks)
    global_config = tmp_path / "empty-gitconfig"  # the isolated_git fixture's
    sections = git(alice, "config", "--local", "--get-regexp", r"^merge\.vt-").stdout
    for line in sections.splitlines():
        key, value = line.split(" ", 1)
        git(alice, "config", "--file", str(global_config), key, value)
        git(alice, "config", "--local", "--unset", key)
    git(alice, "config", "--file", str(global_config), "core.hooksPath", str(hooks))
    assert missing_setup(alice) is None
    (hooks / "pre-commit").unlink()
    assert "the pre-commit hook" in (missing_setup(alice) or "")


def test_a_set_up_clone_is_checked_without_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The usual case reads files only: with no git to run, a set-up clone (and its linked
    worktree, sharing config and hooks) still hears nothing, and a bare clone is told."""
    alice, bare = clone(tmp_path, "alice"), clone(tmp_path, "bare")
    hook.install(load_settings(alice))
    git(alice, "worktree", "add", "-q", str(tmp_path / "side"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    assert missing_setup(alice) is None
    assert missing_setup(tmp_path / "side") is None
    assert missing_setup(alice / "03_claims") is None  # a vault below the root
    assert "run `vt init`" in (missing_setup(bare) or "")


def test_a_repository_that_names_no_vt_driver_is_not_told(tmp_path: Path) -> None:
    alice = clone(tmp_path, "alice")
    (alice / ".gitattributes").write_text("*.png binary\n")
    assert missing_setup(alice) is None
    (tmp_path / "no-repo-here").mkdir()
    assert missing_setup(tmp_path / "no-repo-here") is None
