"""vt's hook through the real `pre-commit` framework: `pre-commit try-repo` on this
repository's .pre-commit-hooks.yaml, and commits through a `repo: local` mirror of it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import git

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install '.[test]')")

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_VAULT = REPO / "examples" / "vault"
NOTE = "03_claims/DV1-0001.md"


pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root, ignore=shutil.ignore_patterns(".vt"))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.org")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "vault")
    return root


def pre_commit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def break_note(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('"operator": "GREATER_THAN"', '"operator": "BOGUS"'), encoding="utf-8"
    )


def test_hooks_yaml_declares_vt_validate() -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "vt-validate"
    assert hook["entry"] == "vt hook run"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False
    assert hook["require_serial"] is True and hook["always_run"] is True


@pytest.mark.slow
def test_try_repo_refuses_an_invalid_staged_note(vault: Path) -> None:
    """The real thing: pre-commit builds vt's environment from this repository (~15 s)."""
    break_note(vault / NOTE)
    git(vault, "add", "-A")
    done = pre_commit(vault, "try-repo", str(REPO), "vt-validate")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{NOTE}:55: frame-schema:" in done.stdout


def _local_config(vault: Path) -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    # the same hook, run by this interpreter (no environment to build)
    local = {**hook, "language": "system", "entry": f"{sys.executable} -m vault_tools hook run"}
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (vault / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))


def test_commits_through_the_framework(vault: Path) -> None:
    _local_config(vault)
    installed = pre_commit(vault, "install")
    assert installed.returncode == 0, installed.stderr
    git(vault, "add", ".pre-commit-config.yaml")
    first = git(vault, "commit", "-qm", "config", check=False)
    assert first.returncode == 0, first.stdout + first.stderr
    break_note(vault / NOTE)
    git(vault, "add", "-A")
    refused = git(vault, "commit", "-qm", "broken", check=False)
    assert refused.returncode == 1
    assert f"{NOTE}:55: frame-schema:" in refused.stdout + refused.stderr
    git(vault, "checkout", "-q", "HEAD", "--", NOTE)
    note = vault / NOTE
    note.write_text(note.read_text(encoding="utf-8").replace('"alice"', '"bob"'))
    git(vault, "add", "-A")
    done = git(vault, "commit", "-qm", "fine", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
