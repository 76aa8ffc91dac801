"""The pre-commit hook with real git: install/uninstall, chaining, core.hooksPath, and
`vt hook run` judging what is staged (never the working tree)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, isolate_git, make_repo, run_vt
from vault_tools.config import load_settings
from vault_tools.errors import RefusedError
from vault_tools.integrations.git import hook
from vault_tools.ledger.append import Ledger

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_VAULT = REPO / "examples" / "vault"
NOTE = "03_claims/DV1-0001.md"
LEDGER = "05_ledger/decision_ledger.jsonl"


pytestmark = pytest.mark.usefixtures("isolated_git")


def copy_vault(dest: Path) -> Path:
    shutil.copytree(EXAMPLE_VAULT, dest, ignore=shutil.ignore_patterns(".vt"), dirs_exist_ok=True)
    return dest


def decision(
    claim_id: str, action: str = "REJECT", actor: str = "alice", comment: str = ""
) -> dict:
    return {
        "action": action,
        "actor": actor,
        "base": "sha256:" + "ab" * 32,
        "checks": {"check_source_claim": True},
        "claim": None,
        "claim_id": claim_id,
        "comment": comment,
        "note": f"03_claims/{claim_id}.md",
        "preview": None,
    }


@pytest.fixture(scope="module")
def committed_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository holding the example vault in `vault/`, hook installed, all committed:
    made once per module (its commit runs vt's hooks, each a process)."""
    base = tmp_path_factory.mktemp("hook")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, base)
        root = make_repo(base / "repo")
        copy_vault(root / "vault")
        hook.install(load_settings(root / "vault"))
        git(root, "add", "-A")
        git(root, "commit", "-qm", "vault")
    return root


@pytest.fixture
def repo(committed_repo: Path, tmp_path: Path) -> Path:
    """A private copy of `committed_repo` (neither git nor vt records the folder's path)."""
    return Path(shutil.copytree(committed_repo, tmp_path / "repo", symlinks=True))


def commit(root: Path, message: str = "change", *args: str) -> subprocess.CompletedProcess:
    return git(root, "commit", "-qm", message, *args, check=False)


def break_note(text: str) -> str:
    broken = text.replace('"operator": "GREATER_THAN"', '"operator": "BOGUS"')
    assert broken != text
    return broken


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").stdout.strip()


# ---------------------------------------------------------------- notes


def test_invalid_staged_note_is_refused_with_the_finding(repo: Path) -> None:
    note = repo / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    git(repo, "add", "-A")
    before = head(repo)
    done = commit(repo)
    assert done.returncode == 1
    assert f"{NOTE}:55: frame-schema:" in done.stderr
    assert "BOGUS" in done.stderr
    assert head(repo) == before


def test_valid_staged_note_passes(repo: Path) -> None:
    note = repo / "vault" / NOTE
    note.write_text(
        note.read_text(encoding="utf-8").replace('reviewer: "alice"', 'reviewer: "bob"')
    )
    git(repo, "add", "-A")
    before = head(repo)
    done = commit(repo)
    assert done.returncode == 0, done.stderr
    assert head(repo) != before


def test_a_staged_symlinked_note_is_checked_as_the_note_it_shows(repo: Path) -> None:
    """Like `vt validate`, the hook checks the staged note a staged link leads to."""
    note = repo / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    (repo / "vault" / "03_claims" / "linked.md").symlink_to("DV1-0001.md")
    git(repo, "add", "-A")
    report = hook.run(load_settings(repo / "vault"))
    assert sorted({f.path for f in report.findings}) == [NOTE, "03_claims/linked.md"]
    assert report.notes == 2
    assert {f.code for f in report.findings} == {"frame-schema"}


def test_staged_content_decides_not_the_working_tree(repo: Path) -> None:
    note = repo / "vault" / NOTE
    valid = note.read_text(encoding="utf-8").replace('reviewer: "alice"', 'reviewer: "bob"')
    invalid = break_note(valid)
    # valid staged, invalid in the working tree: the commit goes through
    note.write_text(valid, encoding="utf-8")
    git(repo / "vault", "add", NOTE)
    note.write_text(invalid, encoding="utf-8")
    done = commit(repo)
    assert done.returncode == 0, done.stderr
    assert git(repo, "show", f"HEAD:vault/{NOTE}").stdout == valid
    # invalid staged, valid in the working tree: refused
    git(repo / "vault", "add", NOTE)
    note.write_text(valid.replace('"bob"', '"carol"'), encoding="utf-8")
    done = commit(repo)
    assert done.returncode == 1
    assert "frame-schema" in done.stderr


def test_commit_all_checks_the_files_it_stages(repo: Path) -> None:
    """`git commit -a` stages into a temporary index (GIT_INDEX_FILE): that is what counts."""
    note = repo / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    done = git(repo, "commit", "-aqm", "all", check=False)
    assert done.returncode == 1
    assert "frame-schema" in done.stderr


def test_a_note_in_a_dot_folder_and_non_notes_are_not_checked(repo: Path) -> None:
    (repo / "vault" / ".trash").mkdir()
    broken = break_note((repo / "vault" / NOTE).read_text(encoding="utf-8"))
    (repo / "vault" / ".trash" / "old.md").write_text(broken, encoding="utf-8")
    (repo / "vault" / "plain.md").write_text("# just a page\n", encoding="utf-8")
    (repo / "outside.md").write_text(broken, encoding="utf-8")  # in the repo, not the vault
    git(repo, "add", "-A")
    assert commit(repo).returncode == 0


def test_run_writes_nothing(repo: Path) -> None:
    vault = repo / "vault"
    Ledger(vault / LEDGER, vault / ".vt").append([decision("DV1-0002")])
    shutil.rmtree(vault / ".vt")
    note = vault / NOTE
    note.write_text(note.read_text(encoding="utf-8").replace('"alice"', '"bob"'))
    git(repo, "add", "-A")
    index_before = git(repo, "diff", "--cached", "--raw").stdout
    ledger_before = (vault / LEDGER).read_bytes()
    stat_before = note.stat().st_mtime_ns
    report = hook.run(load_settings(vault))
    assert report.notes == 1 and report.ledger and report.errors == 0
    assert not (vault / ".vt").exists()
    assert git(repo, "diff", "--cached", "--raw").stdout == index_before
    assert (vault / LEDGER).read_bytes() == ledger_before
    assert note.stat().st_mtime_ns == stat_before


def test_hook_run_json_and_exit_codes(repo: Path) -> None:
    note = repo / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    git(repo, "add", "-A")
    done = run_vt("hook", "run", "--json", vault="vault", cwd=repo)
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["ok"] is False and payload["notes"] == 1 and payload["errors"] == 1
    assert {f["code"] for f in payload["findings"] if f["severity"] == "error"} == {"frame-schema"}
    outside = repo.parent / "not-a-repo"
    copy_vault(outside)
    done = run_vt("hook", "run", vault=outside)
    assert done.returncode == 2
    assert "not inside a git repository" in done.stderr


def test_hook_run_imports_only_what_it_needs(repo: Path) -> None:
    """What keeps the hook fast: no Typer (cli/hook_run.py reads the hook's arguments),
    no other command's core, no rich, no watchdog, and no review assist (the hook
    reports errors only)."""
    note = repo / "vault" / NOTE
    note.write_text(note.read_text(encoding="utf-8").replace('"alice"', '"bob"'))
    git(repo, "add", "-A")
    # the environment's spelling of `python -X importtime`
    done = run_vt("hook", "run", vault="vault", cwd=repo, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "vault_tools.checks.rules" in imported  # the notes were checked
    libraries = ("rich", "watchdog", "jsonschema", "typer", "click")
    assert not {m for m in imported if m.split(".")[0] in libraries}
    others = (
        "vault_tools.review",
        "vault_tools.store",
        "vault_tools.integrations.watch",
        "vault_tools.checks.assist.run",
    )
    assert not {m for m in imported if m.startswith(others)}
    commands = {m for m in imported if m.startswith("vault_tools.cli.")}
    assert commands == {
        "vault_tools.cli.hook_run",
        "vault_tools.cli.running",
        "vault_tools.cli.output",
        "vault_tools.cli.printable",  # what it prints is escaped like any command's
    }


def test_hook_run_help_and_mistakes_are_typers(repo: Path) -> None:
    """What the lean path does not read is left to the Typer command: its help, its
    usage errors (exit 2)."""
    helped = hook_run(repo, "--vault", "vault", "--help")
    assert helped.returncode == 0
    assert "Check the staged notes and ledger" in helped.stdout
    assert "vt hook run --vault ." in helped.stdout
    for args in (["--vault"], ["--bogus"], ["--vault", "vault", "-x"]):
        done = hook_run(repo, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Error: " in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--vault", "vault"],
        ["--vault=vault", "--json"],
        ["--json", "--vault", "vault", f"vault/{NOTE}", f"vault/{LEDGER}"],
        ["--vault", "vault", f"vault/{NOTE}"],
    ],
)
def test_hook_run_without_typer_reports_as_the_typer_command(repo: Path, args: list[str]) -> None:
    """The lean path and the Typer command give the same output and exit code."""
    note = repo / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    git(repo, "add", "-A")
    lean = hook_run(repo, *args)
    assert lean.returncode == 1
    typed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from vault_tools.cli import main; "
            "sys.argv = ['vt', 'hook', 'run', *sys.argv[1:]]; main()",
            *args,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert (typed.returncode, typed.stdout, typed.stderr) == (
        lean.returncode,
        lean.stdout,
        lean.stderr,
    )


# ---------------------------------------------------------------- given file names


def hook_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_vt("hook", "run", *args, cwd=cwd)


def test_given_files_are_read_from_the_working_tree(repo: Path) -> None:
    """What pre-commit hands over: the files as they are on disk, staged or not."""
    note = repo / "vault" / NOTE
    valid = note.read_text(encoding="utf-8")
    note.write_text(break_note(valid), encoding="utf-8")
    assert hook_run(repo, "--vault", "vault").returncode == 0  # nothing staged
    given = hook_run(repo, "--vault", "vault", f"vault/{NOTE}")
    assert given.returncode == 1
    assert f"{NOTE}:55: frame-schema:" in given.stderr
    assert "in the files given" in given.stderr
    git(repo, "add", "-A")
    note.write_text(valid, encoding="utf-8")  # staged invalid, valid on disk
    given = hook_run(repo, "--vault", "vault", f"vault/{NOTE}")
    assert given.returncode == 0, given.stderr
    assert hook_run(repo, "--vault", "vault").returncode == 1


def test_given_files_outside_the_vault_or_no_notes_are_passed_over(repo: Path) -> None:
    broken = break_note((repo / "vault" / NOTE).read_text(encoding="utf-8"))
    (repo / "outside.md").write_text(broken, encoding="utf-8")
    (repo / "vault" / ".trash").mkdir()
    (repo / "vault" / ".trash" / "old.md").write_text(broken, encoding="utf-8")
    files = [
        "outside.md",
        "vault/.trash/old.md",
        "vault/04_knowledge_base/DFlash.md",
        "vault/.obsidian/app.json",
        ".gitattributes",
    ]
    done = hook_run(repo, "--vault", "vault", "--json", *files)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "ok": True,
        "notes": 0,
        "ledger": False,
        "errors": 0,
        "findings": [],
    }


def test_a_given_note_leading_out_of_the_vault_is_not_read(repo: Path) -> None:
    outside = repo.parent / "elsewhere.md"
    outside.write_text(break_note((repo / "vault" / NOTE).read_text(encoding="utf-8")))
    link = repo / "vault" / "03_claims" / "linked.md"
    link.symlink_to(outside)
    done = hook_run(repo, "--vault", "vault", "vault/03_claims/linked.md", f"vault/{NOTE}")
    assert done.returncode == 1
    assert "03_claims/linked.md: read-error: leads outside the vault" in done.stderr
    assert "frame-schema" not in done.stderr  # the outside file was never read


def test_a_given_ledger_is_held_to_head_and_verified(repo: Path) -> None:
    path = _ledger_repo(repo)
    given = ("--vault", "vault", f"vault/{LEDGER}", "--json")
    Ledger(path, path.parent.parent / ".vt").append([decision("C-9", "REJECT", "bob")])
    done = hook_run(repo, *given)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ledger"] is True
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"comment":""', b'"comment":"edited"')
    path.write_bytes(b"\n".join(lines))
    done = hook_run(repo, *given)
    assert done.returncode == 1
    assert [f["code"] for f in json.loads(done.stdout)["findings"]] == ["ledger-rewritten"]
    # committed as is (a commit that bypassed the hook): HEAD's own ledger must verify
    git(repo, "add", "-A")
    assert commit(repo, "forged", "--no-verify").returncode == 0
    done = hook_run(repo, *given)
    assert done.returncode == 1
    found = json.loads(done.stdout)["findings"]
    assert {(f["code"], f["line"]) for f in found} == {("ledger-invalid", 2)}
    assert f"{LEDGER}:2: ledger-invalid:" in hook_run(repo, *given[:-1]).stderr


def test_a_ledger_deleted_in_the_commit_is_refused_though_not_given(repo: Path) -> None:
    """pre-commit never names a deleted file: vt asks the index about the ledger."""
    path = _ledger_repo(repo)
    git(repo, "rm", "-q", str(path.relative_to(repo)))
    done = hook_run(repo, "--vault", "vault", f"vault/{NOTE}")
    assert done.returncode == 1
    assert "deleted in this commit" in done.stderr


def test_given_files_need_no_git_repository(tmp_path: Path) -> None:
    vault = copy_vault(tmp_path / "plain")
    Ledger(vault / LEDGER, vault / ".vt").append([decision("C-1")])
    note = vault / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    done = hook_run(tmp_path, "--vault", "plain", f"plain/{NOTE}", f"plain/{LEDGER}", "--json")
    assert done.returncode == 1, done.stderr
    payload = json.loads(done.stdout)
    assert payload["notes"] == 1 and payload["ledger"] is True
    assert [f["code"] for f in payload["findings"]] == ["frame-schema"]
    assert not (vault / ".git").exists()


# ---------------------------------------------------------------- ledger


def _ledger_repo(repo: Path, events: int = 3) -> Path:
    vault = repo / "vault"
    ledger = Ledger(vault / LEDGER, vault / ".vt")
    ledger.append([decision(f"C-{i}") for i in range(events)])
    git(repo, "add", "-A")
    done = commit(repo, "decisions")
    assert done.returncode == 0, done.stderr
    return vault / LEDGER


def test_appending_to_the_ledger_passes(repo: Path) -> None:
    path = _ledger_repo(repo)
    Ledger(path, path.parent.parent / ".vt").append([decision("C-9", "REJECT", "bob")])
    git(repo, "add", "-A")
    assert commit(repo).returncode == 0


def test_an_edited_ledger_line_is_refused(repo: Path) -> None:
    path = _ledger_repo(repo)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"comment":""', b'"comment":"edited"')
    path.write_bytes(b"\n".join(lines))
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1
    assert f"{LEDGER}:2: ledger-rewritten: line 2 of the committed decision ledger" in done.stderr


def test_a_deleted_ledger_line_is_refused(repo: Path) -> None:
    path = _ledger_repo(repo)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[2])
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1
    assert "ledger-rewritten" in done.stderr and "deleted" in done.stderr


def test_a_rechained_rewrite_is_still_refused(repo: Path) -> None:
    """A line removed and the rest re-chained verifies as a chain, but it is not an append."""
    from vault_tools.ledger.merge import _rechain
    from vault_tools.ledger.reader import iter_events

    path = _ledger_repo(repo)
    events = list(iter_events(path))
    path.write_bytes(_rechain([events[0], events[2]]))
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1 and "ledger-rewritten" in done.stderr


def test_deleting_the_ledger_is_refused(repo: Path) -> None:
    path = _ledger_repo(repo)
    git(repo, "rm", "-q", str(path.relative_to(repo)))
    done = commit(repo)
    assert done.returncode == 1 and "deleted in this commit" in done.stderr


def test_a_tampered_appended_line_is_refused(repo: Path) -> None:
    path = _ledger_repo(repo)
    Ledger(path, path.parent.parent / ".vt").append([decision("C-9")])
    data = path.read_bytes()
    path.write_bytes(data[:-3] + data[-3:].replace(b"}", b" }"))  # still JSON, not canonical
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1
    assert f"{LEDGER}:4: ledger-invalid:" in done.stderr


def test_conflict_markers_and_a_torn_line_are_refused(repo: Path) -> None:
    path = _ledger_repo(repo)
    original = path.read_bytes()
    path.write_bytes(original + b"<<<<<<< ours\n=======\n>>>>>>> theirs\n")
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1
    assert f"{LEDGER}:4: ledger-conflict-markers:" in done.stderr
    path.write_bytes(original + b'{"action":"ACC')
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1 and "torn" in done.stderr


def test_a_merge_must_keep_every_event_of_both_parents(tmp_path: Path) -> None:
    from vault_tools.ledger.merge import _rechain
    from vault_tools.ledger.reader import iter_events
    from vault_tools.ledger.succession import check_staged_ledger

    ours = Ledger(tmp_path / "ours.jsonl", tmp_path / "s1")
    ours.append([decision("C-1")])
    theirs = Ledger(tmp_path / "theirs.jsonl", tmp_path / "s2")
    theirs.append([decision("C-2", actor="bob")])
    a, b = ours.path.read_bytes(), theirs.path.read_bytes()
    both = _rechain([*iter_events(ours.path), *iter_events(theirs.path)])
    assert check_staged_ledger(LEDGER, both, [a, b]) == []
    lost = check_staged_ledger(LEDGER, a, [a, b])
    assert [f.code for f in lost] == ["ledger-rewritten"]
    assert "parent 2" in lost[0].message
    # outside a merge, theirs' events re-chained after ours is not an append to HEAD
    assert [f.code for f in check_staged_ledger(LEDGER, both, [b])] == ["ledger-rewritten"]


def test_a_merge_must_keep_each_sides_order(tmp_path: Path) -> None:
    """The rule `vt ledger audit` applies to every commit, against every parent."""
    from vault_tools.ledger.merge import _rechain
    from vault_tools.ledger.reader import iter_events
    from vault_tools.ledger.succession import check_staged_ledger

    ours = Ledger(tmp_path / "ours.jsonl", tmp_path / "s1")
    ours.append([decision("C-1"), decision("C-2")])
    theirs = Ledger(tmp_path / "theirs.jsonl", tmp_path / "s2")
    theirs.append([decision("C-3", actor="bob")])
    a, b = ours.path.read_bytes(), theirs.path.read_bytes()
    (one, two), mine = list(iter_events(ours.path)), list(iter_events(theirs.path))
    found = check_staged_ledger(LEDGER, _rechain([two, one, *mine]), [a, b])
    assert [(f.code, f.line) for f in found] == [("ledger-rewritten", 1)]
    assert "parent 1 (HEAD)" in found[0].message and "each side's order" in found[0].message
    # theirs first, then ours: each side's own order is kept
    assert check_staged_ledger(LEDGER, _rechain([*mine, one, two]), [a, b]) == []


# ---------------------------------------------------------------- install / uninstall


def _hook_files(root: Path) -> dict[str, bytes]:
    hooks = root / ".git" / "hooks"
    return {p.name: p.read_bytes() for p in hooks.iterdir() if not p.name.endswith(".sample")}


def test_install_writes_hook_driver_and_attribute(repo: Path) -> None:
    script = repo / ".git" / "hooks" / "pre-commit"
    text = script.read_text()
    assert hook.SIGNATURE in text
    assert f"{sys.executable} -m vault_tools hook run --vault vault" in text
    assert os.access(script, os.X_OK)
    assert (
        git(repo, "config", "merge.vt-ledger.driver").stdout.strip()
        == f"{sys.executable} -m vault_tools ledger merge %O %A %B"
    )
    assert git(repo, "config", "merge.vt-ledger.name").stdout.strip() == "vt decision ledger"
    assert (repo / ".gitattributes").read_text() == (
        f"vault/{LEDGER} merge=vt-ledger -text\nvault/**/*.md merge=vt-note\n"
        "vault/05_ledger/allowed_signers merge=vt-signers\n"
    )
    attr = git(repo, "check-attr", "merge", f"vault/{LEDGER}").stdout
    assert attr.strip().endswith("merge: vt-ledger")
    attr = git(repo, "check-attr", "merge", f"vault/{NOTE}").stdout
    assert attr.strip().endswith("merge: vt-note")
    assert (
        git(repo, "config", "merge.vt-note.driver").stdout.strip()
        == f"{sys.executable} -m vault_tools hook merge-note %O %A %B %P"
    )
    for name in ("post-merge", "post-checkout", "post-commit"):
        script = repo / ".git" / "hooks" / name
        assert "-m vault_tools hook refresh --vault vault" in script.read_text()
        assert os.access(script, os.X_OK)
    # a commit refreshes only when it concludes a merge (one stopped on a conflict)
    assert "HEAD^2" in (repo / ".git" / "hooks" / "post-commit").read_text()


def test_install_twice_is_installing_once(repo: Path) -> None:
    settings = load_settings(repo / "vault")
    before = _hook_files(repo)
    mtimes = {
        p: p.stat().st_mtime_ns
        for p in (
            repo / ".gitattributes",
            repo / ".git" / "hooks" / "pre-commit",
            repo / ".git" / "config",
        )
    }
    assert hook.install(settings) == []
    assert _hook_files(repo) == before
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes


def test_foreign_hook_is_chained_and_restored(repo: Path) -> None:
    settings = load_settings(repo / "vault")
    hook.uninstall(settings)
    hooks = repo / ".git" / "hooks"
    foreign = hooks / "pre-commit"
    body = (
        b'#!/bin/sh\necho ran >> "$(git rev-parse --show-toplevel)/foreign.log"\n'
        b"exit ${FOREIGN_EXIT:-0}\n"
    )
    foreign.write_bytes(body)
    foreign.chmod(0o755)
    changes = hook.install(settings)
    assert any("moved the existing pre-commit hook" in c for c in changes)
    assert (hooks / "pre-commit.vt-chained").read_bytes() == body
    assert hook.install(settings) == []
    # both run: the foreign one first, then vt's check
    note = repo / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    git(repo, "add", "-A")
    done = commit(repo)
    assert done.returncode == 1 and "frame-schema" in done.stderr
    assert (repo / "foreign.log").read_text() == "ran\n"
    # a failing foreign hook refuses the commit on its own
    git(repo, "checkout", "-q", "HEAD", "--", f"vault/{NOTE}")
    (repo / "vault" / "x.md").write_text("# page\n")
    git(repo, "add", "vault/x.md")
    done = subprocess.run(
        ["git", "commit", "-qm", "x"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "FOREIGN_EXIT": "7"},
    )
    assert done.returncode != 0
    assert (repo / "foreign.log").read_text() == "ran\nran\n"
    # uninstall restores it byte for byte, executable, and removes the driver
    hook.uninstall(settings)
    assert foreign.read_bytes() == body and os.access(foreign, os.X_OK)
    assert not (hooks / "pre-commit.vt-chained").exists()
    assert git(repo, "config", "--get", "merge.vt-ledger.driver", check=False).returncode == 1
    assert not (repo / ".gitattributes").exists()


def test_uninstall_keeps_other_attributes_and_foreign_hooks(repo: Path) -> None:
    settings = load_settings(repo / "vault")
    attributes = repo / ".gitattributes"
    attributes.write_text("*.png binary\n" + attributes.read_text() + "*.md text\n")
    changes = hook.uninstall(settings)
    assert len(changes) == 11  # 5 hooks, 3 drivers' config, 3 attribute lines
    assert not (repo / ".git" / "hooks" / "post-merge").exists()
    assert attributes.read_text() == "*.png binary\n*.md text\n"
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert hook.uninstall(settings) == []
    foreign = repo / ".git" / "hooks" / "pre-commit"
    foreign.write_text("#!/bin/sh\nexit 0\n")
    assert hook.uninstall(settings) == [f"left {foreign} alone: vt did not write it"]
    assert foreign.read_text() == "#!/bin/sh\nexit 0\n"


def test_install_refuses_when_the_chain_slot_is_taken(repo: Path) -> None:
    settings = load_settings(repo / "vault")
    hooks = repo / ".git" / "hooks"
    hook.uninstall(settings)
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-commit.vt-chained").write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(RefusedError, match="pre-commit.vt-chained is taken"):
        hook.install(settings)
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"


def test_dry_run_install_writes_nothing(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    copy_vault(root / "vault")
    changes = hook.install(load_settings(root / "vault"), dry_run=True)
    assert len(changes) == 14
    assert not (root / ".git" / "hooks" / "post-merge").exists()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert not (root / ".gitattributes").exists()
    assert git(root, "config", "--get", "merge.vt-ledger.driver", check=False).returncode == 1


def test_core_hooks_path_is_respected(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    copy_vault(root / "vault")
    git(root, "config", "core.hooksPath", "githooks")
    hook.install(load_settings(root / "vault"))
    assert (root / "githooks" / "pre-commit").is_file()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    git(root, "add", "-A")
    assert commit(root, "vault").returncode == 0
    note = root / "vault" / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    git(root, "add", "-A")
    done = commit(root)
    assert done.returncode == 1 and "frame-schema" in done.stderr


def test_vault_at_the_repository_root(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    copy_vault(root)
    hook.install(load_settings(root))
    assert "--vault ." in (root / ".git" / "hooks" / "pre-commit").read_text()
    assert (root / ".gitattributes").read_text() == (
        f"{LEDGER} merge=vt-ledger -text\n*.md merge=vt-note\n"
        "05_ledger/allowed_signers merge=vt-signers\n"
    )
    git(root, "add", "-A")
    assert commit(root, "vault").returncode == 0
    note = root / NOTE
    note.write_text(break_note(note.read_text(encoding="utf-8")), encoding="utf-8")
    git(root, "add", "-A")
    done = commit(root)
    assert done.returncode == 1 and f"{NOTE}:55: frame-schema" in done.stderr


def test_the_ledger_keeps_lf_in_a_checkout_with_autocrlf(repo: Path) -> None:
    ledger = repo / "vault" / LEDGER
    ledger.parent.mkdir(parents=True, exist_ok=True)
    data = b'{"seq":1}\n{"seq":2}\n'
    ledger.write_bytes(data)
    git(repo, "add", f"vault/{LEDGER}")
    git(repo, "commit", "-q", "--no-verify", "-m", "ledger")
    git(repo, "config", "core.autocrlf", "true")
    ledger.unlink()
    git(repo, "checkout", "-q", "--", f"vault/{LEDGER}")
    assert ledger.read_bytes() == data
    assert git(repo, "check-attr", "text", f"vault/{LEDGER}").stdout.strip().endswith("unset")


def test_install_replaces_the_attribute_line_without_text(repo: Path) -> None:
    attributes = repo / ".gitattributes"
    attributes.write_text(f"*.png binary\nvault/{LEDGER} merge=vt-ledger\n*.md text\n")
    changes = hook.install(load_settings(repo / "vault"))
    assert changes == [
        f"added `vault/{LEDGER} merge=vt-ledger -text` to {attributes}",
        f"added `vault/**/*.md merge=vt-note` to {attributes}",
        f"added `vault/05_ledger/allowed_signers merge=vt-signers` to {attributes}",
    ]
    assert attributes.read_text() == (
        f"*.png binary\n*.md text\nvault/{LEDGER} merge=vt-ledger -text\n"
        "vault/**/*.md merge=vt-note\nvault/05_ledger/allowed_signers merge=vt-signers\n"
    )
    hook.uninstall(load_settings(repo / "vault"))
    attributes.write_text(f"vault/{LEDGER} merge=vt-ledger\n*.md text\n")
    hook.uninstall(load_settings(repo / "vault"))
    assert attributes.read_text() == "*.md text\n"
