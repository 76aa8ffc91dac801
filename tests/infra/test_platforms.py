"""macOS and Windows code paths, forced on this Linux machine (no CI runs on either).

A `sitecustomize.py` put on PYTHONPATH makes a real `vt` process look like Windows where
vt could tell: `fcntl`, `termios`, `resource`, `pwd`, `grp` … cannot be imported, and
`os.fork`, `os.pread`, `os.fchmod`, `os.statvfs`, `O_CLOEXEC`, `O_NONBLOCK` and libc's
`renameat2` are gone (a note is replaced by link and rename, as elsewhere). Its
`msvcrt` stands in for Windows' own (which cannot run here): `locking` keeps Windows'
contract (LK_NBLCK fails at once with EACCES while another handle holds the lock) on top
of a real kernel lock, and logs each call, so a test sees that this path was taken.
Line endings are forced with a real git clone under `core.autocrlf=true`, as Windows'
git checks a vault out.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    EXAMPLE_VAULT,
    build_vault,
    copy_example_vault,
    git,
    make_repo,
    render_note,
    run_vt,
    vt_env,
)
from vault_tools.infra import osfiles, pool
from vault_tools.infra.pool import can_fork, map_chunks

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "vault_tools"

POSIX_ONLY = ("fcntl", "termios", "resource", "pwd", "grp", "pty", "tty", "syslog", "crypt")
WINDOWS_ONLY = ("msvcrt", "winreg", "_winapi", "winsound")
# names of `os` that Windows' Python (3.10-3.12) does not have, and vt used or might
GONE_FROM_OS = (
    "fork", "forkpty", "register_at_fork", "pread", "pwrite", "fchmod", "fchown",
    "statvfs", "fstatvfs", "getuid", "geteuid", "O_CLOEXEC", "O_NONBLOCK",
)  # fmt: skip

SHIM = f"""
import errno, os, sys, types
import fcntl as _fcntl
import getpass, subprocess  # both probe for msvcrt to tell Windows: let them see Linux

_LOG = os.environ.get("VT_SHIM_LOG")
msvcrt = types.ModuleType("msvcrt")
msvcrt.LK_UNLCK, msvcrt.LK_LOCK, msvcrt.LK_NBLCK, msvcrt.LK_RLCK, msvcrt.LK_NBRLCK = range(5)

def _locking(fd, mode, nbytes):
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(f"{{mode}} {{nbytes}} {{os.lseek(fd, 0, os.SEEK_CUR)}}\\n")
    if mode == msvcrt.LK_UNLCK:
        _fcntl.flock(fd, _fcntl.LOCK_UN)
        return
    try:
        _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
    except BlockingIOError:
        raise PermissionError(errno.EACCES, "Permission denied") from None

msvcrt.locking = _locking
sys.modules["msvcrt"] = msvcrt

import ctypes  # no renameat2 (Linux only): a note is replaced the macOS and Windows way

class _WithoutRenameat2(ctypes.CDLL):
    def __getattr__(self, name):
        if name == "renameat2":
            raise AttributeError(name)
        return super().__getattr__(name)

ctypes.CDLL = _WithoutRenameat2
for _name in {POSIX_ONLY!r}:
    sys.modules[_name] = None
for _name in {GONE_FROM_OS!r}:
    if hasattr(os, _name):
        delattr(os, _name)
"""


@pytest.fixture
def shim(tmp_path: Path) -> Path:
    folder = tmp_path / "shim"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(SHIM, encoding="utf-8")
    return folder


def platform_env(shim: Path | None, **env: str) -> dict[str, str | None]:
    """The environment changes of a run under `shim`, looking like Windows (None: none)."""
    # the OS user names a decision without a reviewer: from the environment (as on
    # Windows), since without `pwd` the user database cannot be asked;
    # an open() without encoding= reads the locale's code page on Windows, not UTF-8:
    # each one warns here, and the runs below must not
    base: dict[str, str | None] = {
        "LOGNAME": "tester",
        "PYTHONWARNDEFAULTENCODING": "1",
        "PYTHONPATH": None,
    }
    if shim is not None:
        base["PYTHONPATH"] = str(shim)
        # piped, Windows' Python writes in the ANSI code page unless told otherwise
        base["PYTHONIOENCODING"] = "cp1252"
    return {**base, **env}


def python(
    *args: str, shim: Path | None, cwd: Path = REPO, **env: str
) -> subprocess.CompletedProcess[str]:
    """A real Python process running `args`; under `shim`, looking like Windows."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=vt_env(platform_env(shim, **env)),
        timeout=300,
    )


def vt(vault: Path, *args: str, shim: Path | None, **env: str) -> subprocess.CompletedProcess[str]:
    return run_vt(*args, vault=vault, env=platform_env(shim, **env), encoding="utf-8", timeout=300)


# --- importing -----------------------------------------------------------------------

MODULES = sorted(
    ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for path in PACKAGE.rglob("*.py")
)


def test_the_shim_takes_the_posix_parts_away(shim: Path) -> None:
    done = python(
        "-c",
        "import os, sys\n"
        "for name in ('fcntl', 'pwd', 'termios', 'resource'):\n"
        "    try:\n"
        "        __import__(name); print('imported', name)\n"
        "    except ImportError:\n"
        "        pass\n"
        "print(sorted(n for n in ('fork', 'pread', 'fchmod', 'O_CLOEXEC') if hasattr(os, n)))\n"
        "from vault_tools.infra.pool import can_fork; print(can_fork())\n"
        "from vault_tools.infra.durable import exchange; print(exchange('a', 'b'))",
        shim=shim,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "False", "False"]


def test_every_module_imports_without_posix_modules(shim: Path) -> None:
    code = (
        "import importlib, json, sys\n"
        "failed = {}\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed[name] = repr(exc)\n"
        "print(json.dumps(failed))"
    )
    assert len(MODULES) > 100  # every module of the package, found on disk
    done = python("-c", code, *MODULES, shim=shim)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {}


def _module_level_imports(tree: ast.Module) -> set[str]:
    """The modules a file imports when it is loaded (not inside a function or class)."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
        elif isinstance(node, (ast.Try, ast.If, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    todo.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return names


def test_no_module_imports_a_platform_module_at_load() -> None:
    """Not even guarded by try/except: the platform is decided when a call needs it."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        platform = _module_level_imports(tree) & {*POSIX_ONLY, *WINDOWS_ONLY}
        if platform:
            found[str(path.relative_to(REPO))] = sorted(platform)
    assert found == {}


def test_every_os_open_is_binary() -> None:
    """Windows' os.open is text mode unless told O_BINARY: each open goes through
    infra/osfiles.open_fd, which says so."""
    calls = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "osfiles.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in ("open", "pread", "fchmod", "statvfs", "O_CLOEXEC", "O_NONBLOCK")
            ):
                calls.append(f"{path.relative_to(REPO)}:{node.lineno}: os.{node.attr}")
    assert calls == []


# --- the pieces, in this process ------------------------------------------------------


def _pids(chunk: list[int]) -> list[int]:
    return [os.getpid() for _ in chunk]


def test_the_pool_forks_on_linux_and_runs_in_process_on_macos(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items = list(range(pool.PARALLEL_THRESHOLD + 100))
    assert can_fork()  # this machine: Linux
    assert set(map_chunks(_pids, items, workers=2)) - {os.getpid()}
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not can_fork()
    assert set(map_chunks(_pids, items, workers=2)) == {os.getpid()}


def test_read_at_without_pread_leaves_the_position_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 40)
    with path.open("rb") as file:
        fd = file.fileno()
        expected = [osfiles.read_at(fd, n, at) for n, at in ((10, 0), (300, 5000), (99, 10200))]
        assert expected[2] == (bytes(range(256)) * 40)[10200:]  # short at the end
        monkeypatch.delattr(os, "pread")
        assert file.read(7) == bytes(range(7))
        got = [osfiles.read_at(fd, n, at) for n, at in ((10, 0), (300, 5000), (99, 10200))]
        assert got == expected
        assert file.read(3) == bytes(range(7, 10))  # the file object's position is unmoved


# --- whole runs of the real vt, looking like Windows ---------------------------------

APPLIED_AT = re.compile(rb'vt_applied_at: "[^"]*"')
LEDGER = "05_ledger/decision_ledger.jsonl"


def _vault_files(vault: Path) -> dict[str, bytes]:
    """Every file of the vault but vt's state and the ledger, by relative path; apply's
    time blanked."""
    files = {}
    for path in sorted(vault.rglob("*")):
        relative = path.relative_to(vault).as_posix()
        if path.is_file() and not relative.startswith((".vt/", ".git/", LEDGER)):
            files[relative] = APPLIED_AT.sub(b'vt_applied_at: "T"', path.read_bytes())
    return files


def _events(vault: Path) -> list[dict]:
    """The ledger's events without what covers their time (ts, the chain's hashes)."""
    lines = (vault / LEDGER).read_bytes().decode("utf-8").splitlines()
    untimed = ("ts", "hash", "prev")
    return [{k: v for k, v in json.loads(line).items() if k not in untimed} for line in lines]


def _review_cycle(vault: Path, shim: Path | None, **env: str) -> list[dict]:
    """validate, preview, apply, ledger verify: each one's JSON; every exit code 0."""
    outputs = []
    for command in (["validate"], ["preview"], ["apply"], ["ledger", "verify"]):
        done = vt(vault, *command, "--json", shim=shim, **env)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and "EncodingWarning" not in done.stderr
        outputs.append(json.loads(done.stdout))
    return outputs


def _without_times(outputs: list[dict]) -> str:
    """The outputs, the ledger head's hash (it covers each event's time) left out."""
    text = json.dumps(outputs, sort_keys=True)
    return re.sub(r'"head": "sha256:[0-9a-f]{64}"', '"head": "H"', text)


def test_the_review_cycle_without_fork_and_fcntl(tmp_path: Path, shim: Path) -> None:
    native = copy_example_vault(tmp_path / "native")
    windows = copy_example_vault(tmp_path / "windows")
    log = tmp_path / "locking.log"
    expected = _review_cycle(native, None)
    got = _review_cycle(windows, shim, VT_SHIM_LOG=str(log))
    assert _without_times(got) == _without_times(expected)
    assert [event["claim_id"] for event in got[2]["applied"]] == ["DV1-0001", "DV1-0002"]
    assert got[3]["ok"] and got[3]["events"] == 2
    assert _vault_files(windows) == _vault_files(native)
    assert _events(windows) == _events(native)
    # piped text output, the CJK of a claim in it, is UTF-8 whatever the code page
    text = vt(windows, "validate", shim=shim)
    assert text.returncode == 0 and "'訓練不同'" in text.stdout, text.stderr
    # the lock was taken the Windows way: the first byte, locked then unlocked
    calls = log.read_text(encoding="utf-8").splitlines()
    assert "2 1 0" in calls and "0 1 0" in calls
    assert calls.count("2 1 0") == calls.count("0 1 0")


def test_a_large_validate_runs_in_one_process_without_fork(tmp_path: Path, shim: Path) -> None:
    """Past the pool's threshold: the same findings, found without forking."""
    count = pool.PARALLEL_THRESHOLD + 50
    notes = {f"P{n:04d}.md": render_note(claim_id=f"P{n:04d}") for n in range(count)}
    notes["P0007.md"] = render_note(claim_id="P0003")  # one planted duplicate
    native = build_vault(tmp_path / "native", notes)
    windows = shutil.copytree(native, tmp_path / "windows")
    expected = vt(native, "validate", "--json", shim=None)
    got = vt(windows, "validate", "--json", shim=shim)
    assert got.returncode == expected.returncode == 1, got.stderr
    assert json.loads(got.stdout)["notes"] == count
    assert got.stdout == expected.stdout


def test_the_demo_runs_without_fork_and_fcntl(tmp_path: Path, shim: Path) -> None:
    """`vt demo`: the whole cycle, draft and history included, each step checked by vt."""
    done = run_vt("demo", cwd=tmp_path, env=platform_env(shim), encoding="utf-8", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Demo finished: every step did what it should." in done.stdout
    assert "EncodingWarning" not in done.stderr


def test_the_ledger_lock_held_the_windows_way_stops_another_vt(tmp_path: Path, shim: Path) -> None:
    lock = tmp_path / "ledger.jsonl.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from vault_tools.infra.lock import FileLock\n"
         f"FileLock({str(lock)!r}).acquire(); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(shim)},
    )  # fmt: skip
    try_lock = (
        "from vault_tools.errors import RefusedError\n"
        "from vault_tools.infra.lock import FileLock\n"
        "try:\n"
        f"    FileLock({str(lock)!r}, timeout=0).acquire(); print('taken')\n"
        "except RefusedError as exc:\n"
        "    print('refused:', exc)"
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = python("-c", try_lock, shim=shim)
        assert "another vt process holds the lock" in refused.stdout, refused.stderr
    finally:
        holder.kill()  # the system drops a dead holder's lock
        holder.wait()
    assert python("-c", try_lock, shim=shim).stdout == "taken\n"


# --- a CRLF checkout ------------------------------------------------------------------


def _crlf_clone(tmp_path: Path) -> Path:
    """The example vault committed with LF, cloned as Windows' git checks it out."""
    origin = make_repo(tmp_path / "origin")
    shutil.copytree(EXAMPLE_VAULT, origin, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".vt"))
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "vault")
    clone = tmp_path / "crlf"
    git(tmp_path, "-c", "core.autocrlf=true", "clone", "-q", str(origin), str(clone))
    git(clone, "config", "core.autocrlf", "true")
    return clone


def _approve_repair(note: Path, newline: bytes) -> None:
    """What the reviewer does after a good preview, in an editor that keeps the note's
    line endings: approve the repair, tick the check it lacked."""
    data = note.read_bytes()
    for old, new in (
        (b"review_action: REQUEST_REPAIR", b"review_action: APPROVE_REPAIR"),
        (b"check_claim_frame: false", b"check_claim_frame: true"),
    ):
        assert old + newline in data
        data = data.replace(old + newline, new + newline, 1)
    note.write_bytes(data)


def _cycle_with_repair(vault: Path, shim: Path | None) -> list[dict]:
    outputs = _review_cycle(vault, shim)
    _approve_repair(vault / "03_claims" / "DV1-0003.md", b"\r\n" if shim else b"\n")
    for command in (["apply"], ["ledger", "verify"]):
        done = vt(vault, *command, "--json", shim=shim)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        assert "EncodingWarning" not in done.stderr
        outputs.append(json.loads(done.stdout))
    return outputs


@pytest.mark.usefixtures("isolated_git")
def test_a_crlf_checkout_keeps_crlf_and_every_byte(tmp_path: Path, shim: Path) -> None:
    clone = _crlf_clone(tmp_path)
    notes = sorted(clone.rglob("*.md"))
    before = {path: path.read_bytes() for path in notes}
    assert all(b"\r\n" in data and not re.search(rb"(?<!\r)\n", data) for data in before.values())
    lf = copy_example_vault(tmp_path / "lf")

    expected = _cycle_with_repair(lf, None)
    got = _cycle_with_repair(clone, shim)

    assert _without_times(got) == _without_times(expected)
    assert [e["claim_id"] for e in got[4]["applied"]] == ["DV1-0003"]
    assert got[5]["ok"] and got[5]["events"] == 3
    # every note is still CRLF throughout; in LF it is byte for byte what the LF vault
    # became; the notes vt did not write are untouched
    crlf_files, lf_files = _vault_files(clone), _vault_files(lf)
    for relative, data in crlf_files.items():
        if relative.endswith(".md"):
            assert not re.search(rb"(?<!\r)\n", data), relative
            assert data.replace(b"\r\n", b"\n") == lf_files[relative], relative
    assert (clone / "03_claims" / "DV1-0004.md").read_bytes() == before[
        clone / "03_claims" / "DV1-0004.md"
    ]
    ledger = clone / "05_ledger" / "decision_ledger.jsonl"
    assert b"\r" not in ledger.read_bytes()
    # git sees exactly the notes vt wrote as changed, nothing from line endings
    changed = git(clone, "-c", "core.quotepath=false", "diff", "--name-only").stdout.splitlines()
    assert changed == sorted(
        rel
        for rel, data in crlf_files.items()
        if rel.endswith(".md") and before[clone / rel] != data
    )
    assert "03_claims/DV1-0004.md" not in changed and "03_claims/DV1-0001.md" in changed


def test_the_platforms_page_names_each_platform_test() -> None:
    """docs/platforms.md says how each platform is tested: by these tests, each named
    there; a test renamed or removed must take its line with it."""
    section = (REPO / "docs" / "platforms.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`tests/infra/test_platforms\.py::(\w+)`", section))
    tests = {name for name in globals() if name.startswith("test_")}
    assert named == tests - {"test_the_platforms_page_names_each_platform_test"}
    assert "No macOS or Windows machine runs" in section
