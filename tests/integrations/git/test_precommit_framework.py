"""vt's hook through the real `pre-commit` framework: `pre-commit try-repo` on this
repository's .pre-commit-hooks.yaml, and a `repo: local` mirror of it (the same entry,
files and options, run by the installed `vt`) for commits and for
`pre-commit run --all-files`, the CI gate: a committed invalid note or ledger fails it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import git, make_repo, run_vt

pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install '.[test]')")

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_VAULT = REPO / "examples" / "vault"
NOTE = "03_claims/DV1-0001.md"
LEDGER = "05_ledger/decision_ledger.jsonl"
(HOOK,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, root, ignore=shutil.ignore_patterns(".vt"))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "alice")
    git(root, "config", "user.email", "test@example.org")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "vault")
    return root


def with_vt_on_path() -> dict[str, str]:
    """The environment with this interpreter's `vt` first on PATH, as `pip install`
    puts it for a user (the local hook's `language: system` runs `vt` from PATH)."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


def pre_commit(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=with_vt_on_path(),
    )


def break_note(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('"operator": "GREATER_THAN"', '"operator": "BOGUS"'), encoding="utf-8"
    )


def test_hooks_yaml_declares_vt_validate() -> None:
    assert HOOK["id"] == "vt-validate"
    assert HOOK["entry"] == "vt hook run"
    assert HOOK["language"] == "python"
    # file names passed: what `pre-commit run --all-files` checks in CI; always_run: with
    # no name at all, vt checks the index (a commit that only deletes the ledger)
    assert HOOK["pass_filenames"] is True
    assert HOOK["require_serial"] is True and HOOK["always_run"] is True
    files = re.compile(HOOK["files"])
    assert files.search(NOTE) and files.search(f"vault/{LEDGER}")
    assert not files.search("README.rst") and not files.search("notes.md.bak")


def _local_config(root: Path, args: list[str] | None = None) -> None:
    """The hook of .pre-commit-hooks.yaml as it is (entry, files, options), run by the
    installed `vt` (`language: system`: no environment to build, nothing downloaded)."""
    local = {**HOOK, "language": "system"}
    if args is not None:
        local["args"] = args
    config = {"repos": [{"repo": "local", "hooks": [local]}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))


def commit(root: Path, message: str) -> subprocess.CompletedProcess[str]:
    """`git commit`, its pre-commit hook finding `vt` on PATH as a user's would."""
    return subprocess.run(
        ["git", "commit", "-qm", message],
        cwd=root,
        capture_output=True,
        text=True,
        env=with_vt_on_path(),
    )


def commit_unchecked(root: Path, message: str) -> None:
    """A commit that bypassed every hook (`--no-verify`, a web edit, a server merge)."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", message)


@pytest.mark.slow
def test_try_repo_all_files_fails_on_a_committed_invalid_note(vault: Path) -> None:
    """The real thing, as CI runs it: pre-commit builds vt's environment from this
    repository (about 20 s of CPU; try-repo builds it anew on every call, hence one call)
    and runs the hook with nothing staged and the invalid note already committed. The
    same hook on a commit's staged files is `test_commits_through_the_framework`."""
    break_note(vault / NOTE)
    commit_unchecked(vault, "broken, bypassing the hook")
    done = pre_commit(vault, "try-repo", str(REPO), "vt-validate", "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{NOTE}:55: frame-schema:" in done.stdout


def test_commits_through_the_framework(vault: Path) -> None:
    _local_config(vault)
    installed = pre_commit(vault, "install")
    assert installed.returncode == 0, installed.stderr
    git(vault, "add", ".pre-commit-config.yaml")
    first = commit(vault, "config")
    assert first.returncode == 0, first.stdout + first.stderr
    break_note(vault / NOTE)
    git(vault, "add", "-A")
    refused = commit(vault, "broken")
    assert refused.returncode == 1
    assert f"{NOTE}:55: frame-schema:" in refused.stdout + refused.stderr
    git(vault, "checkout", "-q", "HEAD", "--", NOTE)
    note = vault / NOTE
    note.write_text(note.read_text(encoding="utf-8").replace('"alice"', '"bob"'))
    git(vault, "add", "-A")
    done = commit(vault, "fine")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_commit_checks_what_it_stages_not_what_is_committed(vault: Path) -> None:
    """The invalid note is in HEAD already; a commit that stages another, valid note, or
    no note at all (vt then runs with no file name and reads the index), goes through."""
    _local_config(vault)
    assert pre_commit(vault, "install").returncode == 0
    break_note(vault / NOTE)
    commit_unchecked(vault, "broken, bypassing the hook")
    other = vault / "03_claims" / "DV1-0002.md"
    other.write_text(other.read_text(encoding="utf-8").replace('"alice"', '"bob"'))
    git(vault, "add", "-A")
    done = commit(vault, "another note")
    assert done.returncode == 0, done.stdout + done.stderr
    (vault / "notes.txt").write_text("not a note\n")
    git(vault, "add", "notes.txt")
    done = commit(vault, "no note staged")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "vt validate review notes" in done.stdout + done.stderr  # it ran (always_run)


def test_run_all_files_passes_on_a_clean_vault(vault: Path) -> None:
    _local_config(vault)
    commit_unchecked(vault, "config")
    done = pre_commit(vault, "run", "--all-files")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout


def test_run_all_files_fails_naming_a_committed_invalid_note(vault: Path) -> None:
    _local_config(vault)
    break_note(vault / NOTE)
    commit_unchecked(vault, "broken, bypassing the hook")
    assert git(vault, "status", "--porcelain").stdout == ""  # nothing staged, nothing changed
    done = pre_commit(vault, "run", "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{NOTE}:55: frame-schema:" in done.stdout
    assert "Failed" in done.stdout


def _apply(vault: Path) -> None:
    done = run_vt("apply", vault=vault)
    assert done.returncode == 0, done.stdout + done.stderr


def _tamper_first_event(vault: Path) -> None:
    """Edit the first event's comment without recomputing its hash: a forged line."""
    ledger = vault / LEDGER
    first, rest = ledger.read_bytes().split(b"\n", 1)
    ledger.write_bytes(first.replace(b'"comment":"', b'"comment":"forged ', 1) + b"\n" + rest)


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """A repository with the vault in `vault/` (decided: a ledger of 2 events), another
    invalid-looking note outside it, and the local hook given `--vault vault`."""
    root = make_repo(tmp_path / "repo")
    shutil.copytree(EXAMPLE_VAULT, root / "vault", ignore=shutil.ignore_patterns(".vt"))
    _apply(root / "vault")
    (root / ".gitignore").write_text(".vt/\n")
    (root / "docs").mkdir()
    outside = (EXAMPLE_VAULT / NOTE).read_text(encoding="utf-8").replace('"GREATER_THAN"', '"X"')
    (root / "docs" / "sample-note.md").write_text(outside, encoding="utf-8")
    _local_config(root, ["--vault", "vault"])
    commit_unchecked(root, "vault")
    return root


def test_run_all_files_checks_the_committed_ledger(nested: Path) -> None:
    done = pre_commit(nested, "run", "--all-files")
    assert done.returncode == 0, done.stdout + done.stderr  # docs/ is no part of the vault
    _tamper_first_event(nested / "vault")
    commit_unchecked(nested, "forged, bypassing the hook")
    done = pre_commit(nested, "run", "--all-files")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{LEDGER}:1: ledger-invalid:" in done.stdout


def test_a_commit_deleting_the_ledger_is_refused_through_the_framework(nested: Path) -> None:
    """pre-commit never names a deleted file; vt finds the deletion in the index."""
    assert pre_commit(nested, "install").returncode == 0
    git(nested, "rm", "-q", f"vault/{LEDGER}")
    done = commit(nested, "no more ledger")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "deleted in this commit" in done.stdout + done.stderr


# ---------------------------------------------------------------- the README's recipes


README = (REPO / "README.md").read_text(encoding="utf-8")


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, re.S)


def _snippet_rev() -> str:
    (config,) = [yaml.safe_load(b) for b in _yaml_blocks(README) if "vt-validate" in b]
    (repo,) = config["repos"]
    assert [h["id"] for h in repo["hooks"]] == [HOOK["id"]]
    return str(repo["rev"])


def test_the_readme_snippets_pin_this_release_or_a_commit() -> None:
    """The README's `rev:` is the tag the release process makes (`v` + the version) or,
    until there is one, a full commit id (docs/releasing.md); the pip line names the same."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    import vault_tools

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    version_from = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert version_from == "vault_tools.__version__"
    rev = _snippet_rev()
    assert rev == f"v{vault_tools.__version__}" or re.fullmatch(r"[0-9a-f]{40}", rev), rev
    assert re.findall(r"git\+https://\S+?@([\w.]+)", README) == [rev]
    assert "vX.Y.Z" in (REPO / "docs" / "releasing.md").read_text(encoding="utf-8")


def test_the_pinned_rev_is_a_commit_of_this_repository_holding_the_hook() -> None:
    """What `pre-commit` fetches for the snippet's `rev:` exists, in this repository's
    history, with the `vt-validate` hook: the snippet works as written."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    shallow = git(REPO, "rev-parse", "--is-shallow-repository").stdout.strip()
    if shallow == "true":
        pytest.skip("a shallow clone holds too little history to look the commit up")
    rev = _snippet_rev()
    found = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, f"{rev} is no commit or tag of this repository"
    commit = found.stdout.strip()
    ancestor = ["git", "-C", str(REPO), "merge-base", "--is-ancestor", commit, "HEAD"]
    assert subprocess.run(ancestor).returncode == 0, f"{rev} is not in HEAD's history"
    hooks = git(REPO, "show", f"{commit}:.pre-commit-hooks.yaml").stdout
    assert HOOK["id"] in [hook["id"] for hook in yaml.safe_load(hooks)]


def _ci_steps() -> list[str]:
    """The `run:` steps of the README's CI recipes that check the vault (not installs)."""
    steps = []
    for block in _yaml_blocks(README):
        if "runs-on:" in block or block.lstrip().startswith("- run:"):
            commands = re.findall(r"^\s*- run: (.+)$", block, re.M)
            steps += [c for c in commands if not c.startswith("pip install")]
    return steps


def test_the_readme_ci_steps_fail_on_a_committed_invalid_note_and_pass_when_clean(
    vault: Path,
) -> None:
    steps = _ci_steps()
    assert steps == [
        "pre-commit run --all-files --show-diff-on-failure",
        "vt validate --vault . --json",
        "vt ledger verify --vault .",
        "vt ledger audit --vault .   # the ledger's history: check out with fetch-depth 0",
    ]
    _local_config(vault)  # the README's config, with the hook run by the installed vt
    _apply(vault)
    commit_unchecked(vault, "decided")

    def run(step: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            step, shell=True, cwd=vault, capture_output=True, text=True, env=with_vt_on_path()
        )

    for step in steps:
        done = run(step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    break_note(vault / NOTE)
    _tamper_first_event(vault)
    commit_unchecked(vault, "broken, bypassing the hook")
    hook, validate, verify, audit = (run(step) for step in steps)
    assert hook.returncode == 1, hook.stdout + hook.stderr
    assert re.search(rf"{NOTE}:\d+: frame-schema:", hook.stdout)  # marked APPLIED: 2 lines more
    assert f"{LEDGER}:1: ledger-invalid:" in hook.stdout
    assert validate.returncode == 1 and f'"path": "{NOTE}"' in validate.stdout
    assert verify.returncode == 3 and f"{LEDGER}:1:" in verify.stderr
    # the audit names the commit that changed line 1, and its author
    assert audit.returncode == 3 and f"{LEDGER}:1: commit " in audit.stderr, audit.stderr
