"""The vault boundary: vt writes, creates, renames and truncates nothing outside the vault.

The table runs every writing command against a vault with one symlink leading out of it
(a note, a folder, the ledger, `.vt/`, the dashboard, `.gitignore`, …) and checks that
every byte and name outside stays as it was, and that the command says why it refused
instead of failing with a traceback.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO, copy_example_vault, render_note, settings_for
from tests.memo_oracle import check_memo, memo_test
from vault_tools.cli import main
from vault_tools.errors import BoundaryError, ExitCode
from vault_tools.infra import boundary as boundary_module
from vault_tools.infra.boundary import escaping_note, escaping_notes, is_inside, writable_path
from vault_tools.infra.durable import TMP_SUFFIX, remove_stale_temps
from vault_tools.integrations.git.hook import SIGNATURE

CLAIMS, KB = "03_claims", "04_knowledge_base"
LEDGER_DIR, LEDGER = "05_ledger", "05_ledger/decision_ledger.jsonl"
DASHBOARD = "Review Dashboard.md"
REFUSAL = "refusing to write"


# ---------------------------------------------------------------- the rule itself


@pytest.fixture
def spaces(tmp_path: Path) -> tuple[Path, Path]:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    vault.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("outside\n")
    return vault, outside


def test_a_path_inside_the_vault_is_its_own_real_path(spaces: tuple[Path, Path]) -> None:
    vault, _ = spaces
    assert writable_path(vault, "03_claims/new/X.md") == vault.resolve() / "03_claims/new/X.md"
    assert writable_path(vault, vault / "a.md") == vault.resolve() / "a.md"


def test_an_in_vault_symlink_resolves_to_its_target(spaces: tuple[Path, Path]) -> None:
    vault, _ = spaces
    (vault / "real.md").write_text("r")
    os.symlink("real.md", vault / "link.md")
    os.symlink(vault, vault / "again", target_is_directory=True)
    assert writable_path(vault, "link.md") == vault.resolve() / "real.md"
    assert writable_path(vault, "again/again/real.md") == vault.resolve() / "real.md"


def test_a_symlinked_file_leading_out_is_refused_naming_the_link(spaces: tuple[Path, Path]) -> None:
    vault, outside = spaces
    (vault / "03_claims").mkdir()
    os.symlink(outside / "secret.md", vault / "03_claims" / "X.md")
    with pytest.raises(BoundaryError) as caught:
        writable_path(vault, "03_claims/X.md")
    assert str(caught.value) == (
        f"03_claims/X.md: {REFUSAL}: it leads outside the vault through the symlink "
        f"03_claims/X.md (→ {outside / 'secret.md'})"
    )
    assert caught.value.exit_code == ExitCode.USAGE
    assert not is_inside(vault, "03_claims/X.md")


def test_a_symlinked_folder_leading_out_is_refused_for_new_files_too(
    spaces: tuple[Path, Path],
) -> None:
    vault, outside = spaces
    os.symlink(outside, vault / "05_ledger", target_is_directory=True)
    with pytest.raises(BoundaryError, match="through the symlink 05_ledger "):
        writable_path(vault, "05_ledger/sub/new.jsonl")


def test_paths_outside_by_name_and_loops_are_refused(spaces: tuple[Path, Path]) -> None:
    vault, outside = spaces
    with pytest.raises(BoundaryError, match="it lies outside the vault"):
        writable_path(vault, "../outside/secret.md")
    with pytest.raises(BoundaryError, match="it lies outside the vault"):
        writable_path(vault, outside / "secret.md")
    os.symlink("Loop.md", vault / "Loop.md")
    with pytest.raises(BoundaryError, match="loops"):
        writable_path(vault, "Loop.md")
    assert not is_inside(vault, "Loop.md")


def test_dot_dot_after_a_symlink_is_resolved_as_the_kernel_does(spaces: tuple[Path, Path]) -> None:
    vault, outside = spaces
    (outside / "deep").mkdir()
    os.symlink(outside / "deep", vault / "link", target_is_directory=True)
    (vault / "secret.md").write_text("in the vault")
    # by name this is <vault>/secret.md; opened, it is <outside>/secret.md
    with pytest.raises(BoundaryError):
        writable_path(vault, "link/../secret.md")
    assert not is_inside(vault, "link/../secret.md")
    assert writable_path(vault, "sub/../secret.md") == vault.resolve() / "secret.md"


def test_a_link_out_and_back_in_lands_inside(spaces: tuple[Path, Path]) -> None:
    vault, outside = spaces
    (vault / "real.md").write_text("r")
    os.symlink(vault / "real.md", outside / "back.md")
    os.symlink(outside / "back.md", vault / "hop.md")
    assert writable_path(vault, "hop.md") == vault.resolve() / "real.md"


# ---------------------------------------------------------------- running vt


def run_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str
) -> tuple[int, str, str]:
    """The real entry point in-process (run_app maps a VtError to its line and exit code)."""
    monkeypatch.setattr(sys, "argv", ["vt", *args])
    monkeypatch.delenv("VT_VAULT", raising=False)
    try:
        with pytest.raises(SystemExit) as caught:
            main()
    finally:
        gc.unfreeze()  # run_app freezes what is alive as the command ends
    out, err = capsys.readouterr()
    return int(caught.value.code or 0), out, err


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)


# ---------------------------------------------------------------- the table


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault in which every writing command has something to write: decisions in the
    ledger (and so KB blocks and `.vt/`), a dashboard, notes to preview, draft and apply,
    a `.gitignore` to extend, vt's pre-commit hook installed, in a git repository."""
    from vault_tools.integrations.dashboard_state import report
    from vault_tools.integrations.git.hook import install
    from vault_tools.review.apply import apply_notes

    vault = copy_example_vault(tmp_path_factory.mktemp("template") / "vault")
    git(vault, "init", "-q")
    settings = settings_for(vault)
    assert apply_notes(settings).applied
    (vault / CLAIMS / "NEW-1.md").write_text(render_note(claim_id="NEW-1"), encoding="utf-8")
    report(settings)
    install(settings)
    (vault / ".gitignore").write_text("*.bak\n")
    (vault / ".gitattributes").write_text("* text=auto\n")
    hook = Path(git(vault, "rev-parse", "--git-path", "hooks").stdout.strip())
    hook = (hook if hook.is_absolute() else vault / hook) / "pre-commit"
    hook.write_text(f"#!/bin/sh\n{SIGNATURE}\n# an older version of vt's hook\n")
    return vault


def _move_out(vault: Path, outside: Path, relative: str) -> None:
    """Move a vault file or folder outside and leave a symlink to it in its place."""
    target = outside / relative.replace("/", "__")
    shutil.move(vault / relative, target)
    os.symlink(target, vault / relative)


def _each_file(folder: str) -> Callable[[Path, Path], None]:
    def place(vault: Path, outside: Path) -> None:
        for path in sorted((vault / folder).glob("*.md")):
            _move_out(vault, outside, f"{folder}/{path.name}")

    return place


def _torn_ledger(vault: Path, outside: Path) -> None:
    _move_out(vault, outside, LEDGER)
    with open(vault / LEDGER, "ab") as ledger:
        ledger.write(b'{"torn": "an interrupted wr')  # no newline: a torn last line


def _hook_file(vault: Path, outside: Path) -> None:
    _move_out(vault, outside, ".git/hooks/pre-commit")


def _dangling_lock(vault: Path, outside: Path) -> None:
    """The ledger's lock as a clone can carry it: a symlink to a file (and folder) that
    does not exist outside the vault."""
    lock = vault / (LEDGER + ".lock")
    lock.unlink()
    os.symlink(outside / "made" / "by-vt.lock", lock)


def _ledger_configured_outside(vault: Path, outside: Path) -> None:
    """`[paths] ledger` naming a file beside the vault, not in it."""
    shutil.move(vault / LEDGER, outside / "ledger.jsonl")
    (vault / "vt.toml").write_text('[paths]\nledger = "../outside/ledger.jsonl"\n')


PLACEMENTS: dict[str, Callable[[Path, Path], None]] = {
    "lock-dangling": _dangling_lock,
    "ledger-configured-outside": _ledger_configured_outside,
    "note": _each_file(CLAIMS),
    "claims-dir": lambda v, o: _move_out(v, o, CLAIMS),
    "kb-note": _each_file(KB),
    "kb-dir": lambda v, o: _move_out(v, o, KB),
    "ledger-dir": lambda v, o: _move_out(v, o, LEDGER_DIR),
    "ledger-file": lambda v, o: _move_out(v, o, LEDGER),
    "ledger-file-torn": _torn_ledger,
    "state-dir": lambda v, o: _move_out(v, o, ".vt"),
    "dashboard": lambda v, o: _move_out(v, o, DASHBOARD),
    "gitignore": lambda v, o: _move_out(v, o, ".gitignore"),
    "gitattributes": lambda v, o: _move_out(v, o, ".gitattributes"),
    "hook": _hook_file,
}


def _first_event(vault: Path, field: str = "id") -> str:
    return json.loads((vault / LEDGER).read_bytes().split(b"\n")[0])[field]


def _import_file(tmp: Path) -> Path:
    from tests.integrations.test_importer import record

    path = tmp / "records.jsonl"
    path.write_text(json.dumps(record("IMP-0001"), ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# command -> its arguments, given the vault and a scratch folder outside it
COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "validate": lambda v, t: ["validate", "--vault", str(v)],
    "preview": lambda v, t: ["preview", "--vault", str(v)],
    "draft": lambda v, t: ["draft", str(v / CLAIMS / "IX2-0328.md"), "--vault", str(v)],
    "apply": lambda v, t: ["apply", "--vault", str(v)],
    "revert": lambda v, t: ["revert", _first_event(v), "--vault", str(v)],
    "rebuild": lambda v, t: ["rebuild", "--vault", str(v)],
    "status": lambda v, t: ["status", "--vault", str(v)],
    "history": lambda v, t: ["history", _first_event(v, "claim_id"), "--vault", str(v)],
    "export": lambda v, t: ["export", "--vault", str(v)],
    "entities": lambda v, t: ["entities", "--vault", str(v)],
    "hook-refresh": lambda v, t: ["hook", "refresh", "--vault", str(v)],
    "ledger-log": lambda v, t: ["ledger", "log", "--vault", str(v)],
    "ledger-verify": lambda v, t: ["ledger", "verify", "--vault", str(v)],
    "report": lambda v, t: ["report", "--vault", str(v)],
    "init": lambda v, t: ["init", str(v)],
    "import": lambda v, t: ["import", str(_import_file(t)), "--vault", str(v)],
    "entities-new": lambda v, t: ["entities", "new", "Brand New", "--vault", str(v)],
    "hook-install": lambda v, t: ["hook", "install", "--vault", str(v)],
    "hook-uninstall": lambda v, t: ["hook", "uninstall", "--vault", str(v)],
}

# the pairs where the command would write through the symlink: it must say it refused
REFUSED = {
    ("preview", "note"),
    ("draft", "note"),
    ("draft", "claims-dir"),
    ("apply", "note"),
    ("apply", "ledger-dir"),
    ("apply", "ledger-file"),
    ("apply", "ledger-file-torn"),
    ("apply", "state-dir"),
    ("revert", "ledger-dir"),
    ("revert", "ledger-file"),
    ("revert", "ledger-file-torn"),
    ("revert", "state-dir"),
    ("revert", "kb-note"),
    ("rebuild", "state-dir"),
    ("rebuild", "kb-note"),
    ("apply", "kb-note"),
    ("status", "state-dir"),
    ("report", "state-dir"),
    ("report", "dashboard"),
    ("validate", "state-dir"),
    ("validate", "note"),
    ("init", "gitignore"),
    ("init", "gitattributes"),
    ("init", "hook"),
    ("import", "claims-dir"),
    ("entities-new", "kb-dir"),
    ("hook-install", "gitattributes"),
    ("hook-install", "hook"),
    # the ledger's lock: every command that takes it (readers too) refuses to make it
    # through a dangling symlink or beside a ledger configured outside the vault
    *(
        (command, placement)
        for command in (
            "apply",
            "revert",
            "rebuild",
            "status",
            "history",
            "export",
            "report",
            "entities",
            "hook-refresh",
        )
        for placement in ("lock-dangling", "ledger-configured-outside")
    ),
}


def _snapshot(folder: Path) -> dict[str, tuple[str, bytes]]:
    """Every name under `folder` with its kind and bytes (a link's target)."""
    seen: dict[str, tuple[str, bytes]] = {}
    for parent, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(parent) / name
            key = str(path.relative_to(folder))
            if path.is_symlink():
                seen[key] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                seen[key] = ("dir", b"")
            else:
                seen[key] = ("file", path.read_bytes())
    return seen


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_nothing_outside_the_vault_changes(
    template: Path,
    tmp_path: Path,
    command: str,
    placement: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    vault, outside, scratch = tmp_path / "vault", tmp_path / "outside", tmp_path / "scratch"
    shutil.copytree(template, vault, symlinks=True)
    outside.mkdir()
    scratch.mkdir()
    args = COMMANDS[command](vault, scratch)  # before the placement: reads the ledger
    PLACEMENTS[placement](vault, outside)
    before = _snapshot(outside)

    code, out, err = run_in_process(monkeypatch, capsys, *args)

    assert _snapshot(outside) == before
    assert "Traceback" not in out + err and "internal error" not in err, err
    assert code in (ExitCode.OK, ExitCode.FINDINGS, ExitCode.USAGE), (code, out, err)
    if (command, placement) in REFUSED:
        # knowledge-base blocks are derived: a block not updated is reported, not fatal
        assert code != ExitCode.OK or placement == "kb-note", (out, err)
        assert any(
            words in out + err
            for words in (
                "outside the vault",
                "outside the working tree",
                "outside git's hooks folder",
            )
        ), (out, err)


def test_the_ledger_through_an_outside_symlink_is_never_truncated(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The reported case: a torn last line in an outside ledger stayed outside, whole."""
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    shutil.copytree(template, vault, symlinks=True)
    outside.mkdir()
    _torn_ledger(vault, outside)
    ledger = outside / LEDGER.replace("/", "__")
    before = ledger.read_bytes()
    code, _, err = run_in_process(monkeypatch, capsys, "apply", "--vault", str(vault))
    assert code == ExitCode.USAGE
    assert err == (
        f"vt: {LEDGER}: {REFUSAL}: it leads outside the vault through the "
        f"symlink {LEDGER} (→ {ledger})\n"
    )
    assert ledger.read_bytes() == before
    assert not (vault / (LEDGER + ".torn")).exists()
    assert not (vault / CLAIMS / "NEW-1.md").read_text().count("APPLIED")  # no note marked


# ---------------------------------------------------------------- notes through symlinks


def test_validate_preview_and_apply_report_a_note_leading_out_alike(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    shutil.copytree(template, vault, symlinks=True)
    outside.mkdir()
    _move_out(vault, outside, f"{CLAIMS}/DV1-0003.md")  # marked REQUEST_REPAIR
    [expected] = escaping_notes(CLAIMS, [f"{CLAIMS}/DV1-0003.md"])
    assert expected == escaping_note(f"{CLAIMS}/DV1-0003.md")
    for command in ("validate", "preview", "apply"):  # vault runs
        code, out, err = run_in_process(
            monkeypatch, capsys, command, "--vault", str(vault), "--json"
        )
        assert code == ExitCode.FINDINGS, (command, out, err)
        assert json.dumps(expected.message) in out, (command, out)
    for command in ("validate", "preview", "apply", "draft"):  # the note given
        code, out, err = run_in_process(
            monkeypatch,
            capsys,
            command,
            str(vault / CLAIMS / "DV1-0003.md"),
            "--vault",
            str(vault),
            "--json",
        )
        assert code == ExitCode.FINDINGS, (command, out, err)
        assert json.dumps(expected.message) in out and f"{CLAIMS}/DV1-0003.md" in out, out
    _, out, err = run_in_process(monkeypatch, capsys, "validate", "--vault", str(vault))
    assert f"{CLAIMS}/DV1-0003.md: read-error: {expected.message}" in out + err


def test_a_note_symlinked_inside_the_vault_is_written_at_its_target(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(template, vault, symlinks=True)
    (vault / "drafts").mkdir()
    shutil.move(vault / CLAIMS / "DV1-0003.md", vault / "drafts" / "DV1-0003.md")
    os.symlink("../drafts/DV1-0003.md", vault / CLAIMS / "DV1-0003.md")
    code, out, err = run_in_process(monkeypatch, capsys, "preview", "--vault", str(vault), "--json")
    assert code in (ExitCode.OK, ExitCode.FINDINGS), err
    assert os.readlink(vault / CLAIMS / "DV1-0003.md") == "../drafts/DV1-0003.md"
    assert "vt:preview:start" in (vault / "drafts" / "DV1-0003.md").read_text(encoding="utf-8")


def test_ledger_resolve_refuses_a_ledger_leading_out(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    shutil.copytree(template, vault, symlinks=True)
    outside.mkdir()
    lines = (vault / LEDGER).read_bytes().splitlines(keepends=True)
    (vault / LEDGER).write_bytes(
        b"<<<<<<< ours\n"
        + lines[0]
        + b"=======\n"
        + lines[0]
        + b">>>>>>> theirs\n"
        + b"".join(lines[1:])
    )
    _move_out(vault, outside, LEDGER)
    before = _snapshot(outside)
    code, _, err = run_in_process(monkeypatch, capsys, "ledger", "resolve", "--vault", str(vault))
    assert code == ExitCode.USAGE and REFUSAL in err
    assert _snapshot(outside) == before


# ---------------------------------------------------------------- stale temporary files


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_apply_removes_the_temp_files_of_a_killed_vt_and_nothing_else(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(template, vault, symlinks=True)
    dead = _dead_pid()
    (vault / CLAIMS / "sub").mkdir()
    stale = [
        vault / CLAIMS / f".DV1-0001.md.{dead}-0{TMP_SUFFIX}",
        vault / CLAIMS / "sub" / f".X.md.{dead}-17{TMP_SUFFIX}",
        vault / KB / f".Prefill.md.{dead}-3{TMP_SUFFIX}",
        vault / f".{DASHBOARD}.{dead}-1{TMP_SUFFIX}",
    ]
    kept = [
        vault / CLAIMS / f".DV1-0001.md.{os.getpid()}-9{TMP_SUFFIX}",  # alive
        vault / CLAIMS / f".DV1-0001.md{TMP_SUFFIX}",  # not vt's pattern
        vault / CLAIMS / f"notes.{dead}-0{TMP_SUFFIX}",  # not hidden
        vault / CLAIMS / f".DV1-0001.md.{dead}-0{TMP_SUFFIX}.bak",
        vault / "elsewhere" / f".X.md.{dead}-0{TMP_SUFFIX}",
    ]  # not a folder vt writes
    for path in stale + kept:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"half a note")
    code, _, err = run_in_process(monkeypatch, capsys, "apply", "--vault", str(vault))
    assert code == ExitCode.OK, err
    assert [p for p in stale if p.exists()] == []
    assert [p for p in kept if not p.exists()] == []


def test_the_sweep_needs_the_ledger_lock_so_a_dry_run_leaves_them(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(template, vault, symlinks=True)
    leftover = vault / CLAIMS / f".DV1-0001.md.{_dead_pid()}-0{TMP_SUFFIX}"
    leftover.write_bytes(b"x")
    run_in_process(monkeypatch, capsys, "apply", "--vault", str(vault), "--dry-run")
    assert leftover.exists()


def test_the_sweep_never_follows_a_symlinked_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    leftover = outside / f".X.md.{_dead_pid()}-0{TMP_SUFFIX}"
    leftover.write_bytes(b"x")
    (tmp_path / "claims").mkdir()
    os.symlink(outside, tmp_path / "claims" / "linked", target_is_directory=True)
    assert remove_stale_temps(tmp_path / "claims") == []
    assert leftover.exists()


def test_init_gitignore_covers_vt_temp_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    git(vault, "init", "-q")
    code, _, err = run_in_process(monkeypatch, capsys, "init", str(vault))
    assert code == ExitCode.OK, err
    names = [
        f"{CLAIMS}/.DV1-0001.md.4242-0{TMP_SUFFIX}",
        f"{KB}/sub/.P.md.1-2{TMP_SUFFIX}",
        f".{DASHBOARD}.7-0{TMP_SUFFIX}",
    ]
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *names], cwd=vault, capture_output=True, text=True
    )
    assert done.stdout.split("\n")[:-1] == names
    note = subprocess.run(
        ["git", "check-ignore", "--no-index", f"{CLAIMS}/DV1-0001.md"],
        cwd=vault,
        capture_output=True,
        text=True,
    )
    assert note.returncode == 1  # the notes themselves are not ignored


def test_a_pull_runs_the_post_merge_refresh_without_writing_outside(tmp_path: Path) -> None:
    """The reported case: a plain `git pull` whose post-merge hook refreshes the Claim
    Store, in a clone whose ledger lock is a dangling symlink leading out of the vault."""
    from tests.integrations.git.test_merge_git import commit_all
    from tests.integrations.git.test_merge_markers import decide, team

    alice, bob = team(tmp_path, ("alice", "bob"), without_driver=())
    decide(alice, "DV1-0001.md", "APPROVE")
    commit_all(alice, "alice accepts DV1-0001")
    git(alice, "push", "-q", "origin", "main")
    git(bob, "pull", "-q", "--no-rebase", "origin", "main")
    lock = bob / (LEDGER + ".lock")
    lock.unlink(missing_ok=True)
    outside = tmp_path / "outside"
    os.symlink(outside / "made" / "by-vt.lock", lock)
    decide(alice, "DV1-0002.md", "REJECT")
    commit_all(alice, "alice rejects DV1-0002")
    git(alice, "push", "-q", "origin", "main")
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "origin", "main"], cwd=bob, capture_output=True, text=True
    )
    assert pulled.returncode == 0, pulled.stderr
    assert "leads outside the vault through the symlink" in pulled.stdout + pulled.stderr
    assert not outside.exists()


# --- the memos of infra/boundary.py against the functions they memoize (tests/memo_oracle.py) ----

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_real_root": (
        st.tuples(
            st.sampled_from(
                [
                    str(REPO),
                    str(REPO / "examples"),
                    "/",
                    "relative/x",
                    str(REPO / "examples" / ".." / "docs"),
                ]
            )
        ),
        lambda n: (f"/nonexistent/{n}",),
    ),
}


@pytest.mark.parametrize("name", memo_test(boundary_module, MEMO_ARGS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(
        getattr(boundary_module, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill
    )


# --- the lstat walk against the plain rule --------------------------------------------
#
# `writable_path` and `is_inside` first walk the path's components with lstat
# (`_plain_inside`) and resolve it with realpath only when a component is a symlink or
# the name cannot be trusted. The plain rule is the resolution alone: realpath of the
# path, inside the resolved root, and not a symlink left unresolved (a loop). Random
# paths through a real tree of folders, files and symlinks (inside, outside, dangling,
# looping, to a file, the root itself given through a link), relative or absolute.

PARTS = ["a", "b", "f", "in", "out", "dangling", "loop", "to_file", "new", "..", ".", ""]


def _tree(top: Path) -> tuple[Path, Path]:
    """A vault with every kind of component, and a link to it; returns (vault, link)."""
    vault, outside = top / "vault", top / "outside"
    (vault / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (vault / "f").write_text("x")
    (vault / "a" / "f").write_text("x")
    for folder in (vault, vault / "a"):
        (folder / "in").symlink_to(vault / "a" / "b")
        (folder / "out").symlink_to(outside)
        (folder / "dangling").symlink_to(top / "nowhere")
        (folder / "loop").symlink_to(folder / "loop")
        (folder / "to_file").symlink_to(vault / "f")
    (top / "link").symlink_to(vault)
    return vault, top / "link"


def _plain(root: Path, path: str) -> Path | None:
    real = os.path.realpath(os.path.join(root, path))
    real_root = os.path.realpath(root)
    inside = real == real_root or real.startswith(real_root + os.sep)
    return Path(real) if inside and not os.path.islink(real) else None


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _tree(tmp_path_factory.mktemp("boundary"))


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from(PARTS), min_size=1, max_size=4),
    through_link=st.booleans(),
    absolute=st.booleans(),
)
def test_the_lstat_walk_answers_as_realpath(
    tree: tuple[Path, Path], parts: list[str], through_link: bool, absolute: bool
) -> None:
    root = tree[1] if through_link else tree[0]
    path = "/".join(parts)
    if absolute:
        path = os.path.join(root, path)
    expected = _plain(root, path)
    try:
        got: Path | None = writable_path(root, path)
    except BoundaryError:
        got = None
    assert got == expected, (root, path)
    assert is_inside(root, path) == (expected is not None), (root, path)
