"""vault_tools.integrations.git.repo against real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, make_repo
from vault_tools.integrations.git.repo import GitRepo

pytestmark = pytest.mark.usefixtures("isolated_git")


def test_find_outside_a_repository_is_none(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert GitRepo.find(plain) is None


def test_find_from_a_subfolder(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    sub = root / "vault" / "03_claims"
    sub.mkdir(parents=True)
    repo = GitRepo.find(sub)
    assert repo is not None
    assert repo.root == root.resolve()
    assert repo.git_dir == (root / ".git").resolve()
    assert repo.relative(root / "vault") == "vault"
    assert repo.relative(root) == ""


def test_hooks_dir_honours_core_hooks_path(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    repo = GitRepo.find(root)
    assert repo is not None
    assert repo.hooks_dir().resolve() == (root / ".git" / "hooks").resolve()
    git(root, "config", "core.hooksPath", "githooks")
    assert repo.hooks_dir().resolve() == (root / "githooks").resolve()
    elsewhere = tmp_path / "shared-hooks"
    git(root, "config", "core.hooksPath", str(elsewhere))
    assert repo.hooks_dir() == elsewhere


def test_staged_content_differs_from_the_working_tree_and_head(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "a.md").write_text("committed\n")
    git(root, "add", "a.md")
    git(root, "commit", "-qm", "one")
    (root / "a.md").write_text("staged\n")
    git(root, "add", "a.md")
    (root / "a.md").write_text("working tree\n")
    (root / "new dir").mkdir()
    (root / "new dir" / "b é.md").write_text("new\n")
    git(root, "add", "new dir")
    repo = GitRepo.find(root)
    assert repo is not None
    assert sorted(repo.staged_paths()) == ["a.md", "new dir/b é.md"]
    assert repo.staged_paths("new dir") == ["new dir/b é.md"]
    blobs = repo.read_blobs(
        [":a.md", "HEAD:a.md", ":new dir/b é.md", ":missing.md", "HEAD:new dir/b é.md"]
    )
    assert blobs == {
        ":a.md": b"staged\n",
        "HEAD:a.md": b"committed\n",
        ":new dir/b é.md": b"new\n",
        ":missing.md": None,
        "HEAD:new dir/b é.md": None,
    }
    assert repo.read_staged("a.md") == b"staged\n"
    assert repo.read_committed("HEAD", "a.md") == b"committed\n"


def test_staged_paths_include_deletions_and_work_without_commits(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    repo = GitRepo.find(root)
    assert repo is not None
    assert not repo.has_head()
    (root / "a.md").write_bytes(b"x\n")
    git(root, "add", "a.md")
    assert repo.staged_paths() == ["a.md"]
    git(root, "commit", "-qm", "one")
    assert repo.has_head()
    assert repo.staged_paths() == []
    git(root, "rm", "-q", "a.md")
    assert repo.staged_paths() == ["a.md"]
    assert repo.read_staged("a.md") is None


def test_staged_tells_symlinks_apart_with_and_without_commits(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("a\n")
    (root / "notes" / "link.md").symlink_to("a.md")
    (root / "other.md").write_text("o\n")
    git(root, "add", "-A")
    repo = GitRepo.find(root)
    assert repo is not None
    assert not repo.has_head()
    staged = repo.staged("notes")
    assert sorted(staged.paths) == ["notes/a.md", "notes/link.md"]
    assert staged.symlinks == {"notes/link.md"}
    git(root, "commit", "-qm", "one")
    assert repo.staged() == ([], set())
    (root / "notes" / "link.md").unlink()
    (root / "notes" / "link.md").write_text("a file now\n")  # a symlink no more
    (root / "notes" / "b.md").symlink_to("a.md")
    git(root, "add", "-A")
    staged = repo.staged()
    assert sorted(staged.paths) == ["notes/b.md", "notes/link.md"]
    assert staged.symlinks == {"notes/b.md"}


def test_binary_blobs_round_trip(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    data = bytes(range(256)) * 3 + b"\n\n"
    (root / "bin").write_bytes(data)
    (root / "empty").write_bytes(b"")
    git(root, "add", "bin", "empty")
    repo = GitRepo.find(root)
    assert repo is not None
    assert repo.read_blobs([":bin", ":empty", ":bin"]) == {":bin": data, ":empty": b""}


def test_config_get_set_remove(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    repo = GitRepo.find(root)
    assert repo is not None
    assert repo.config_get("merge.vt-ledger.driver") is None
    repo.config_set("merge.vt-ledger.driver", "python -m x %O %A %B")
    assert repo.config_get("merge.vt-ledger.driver") == "python -m x %O %A %B"
    assert (
        git(root, "config", "--get", "merge.vt-ledger.driver").stdout.strip()
        == "python -m x %O %A %B"
    )
    assert repo.config_remove_section("merge.vt-ledger")
    assert repo.config_get("merge.vt-ledger.driver") is None
    assert not repo.config_remove_section("merge.vt-ledger")


def test_merge_heads(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    (root / "f").write_text("base\n")
    git(root, "add", "f")
    git(root, "commit", "-qm", "base")
    git(root, "checkout", "-qb", "side")
    (root / "f").write_text("side\n")
    git(root, "commit", "-qam", "side")
    side = git(root, "rev-parse", "HEAD").stdout.strip()
    git(root, "checkout", "-q", "main")
    (root / "g").write_text("main\n")
    git(root, "add", "g")
    git(root, "commit", "-qm", "main")
    repo = GitRepo.find(root)
    assert repo is not None
    assert repo.merge_heads() == []
    git(root, "merge", "--no-commit", "-q", "side")
    assert repo.merge_heads() == [side]
