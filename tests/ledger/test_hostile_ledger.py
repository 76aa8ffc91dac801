"""Hostile ledgers: every ledger command answers one clean line, never an internal error.

Each case puts one hostile thing where the ledger is (a folder, a FIFO, a line nested
deeper than any parser goes), then runs the real `vt` commands that read the ledger as
subprocesses: exit 3 with the file (and the line) named, no crash report, no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import copy_example_vault, run_vt
from vault_tools.errors import ExitCode
from vault_tools.ledger.events import canonical, decision_id, line_hash

LEDGER = "05_ledger/decision_ledger.jsonl"
TIMEOUT = 60


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example vault after one `vt apply` (two events), made once and copied."""
    vault = copy_example_vault(tmp_path_factory.mktemp("applied") / "vault")
    done = run_vt("apply", vault=vault, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return vault


def fresh(applied: Path, tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    shutil.copytree(applied, vault, symlinks=True)
    return vault


def _deep_line(depth: int) -> Callable[[Path], int]:
    def make(vault: Path) -> int:
        with open(vault / LEDGER, "ab") as out:
            out.write(b"[" * depth + b"]" * depth + b"\n")
        return 3  # the line it is

    return make


def _folder(vault: Path) -> int:
    os.replace(vault / LEDGER, vault / "05_ledger" / "kept.jsonl")
    (vault / LEDGER).mkdir()
    (vault / LEDGER / "inner.jsonl").write_text("{}\n")
    return 0


def _fifo(vault: Path) -> int:
    os.unlink(vault / LEDGER)
    os.mkfifo(vault / LEDGER)
    return 0


CASES = {
    "deep-json-line": _deep_line(100_000),
    # just past what json.loads takes: the encoder of verify would meet the same limit
    "json-line-at-the-recursion-limit": _deep_line(sys.getrecursionlimit() + 5),
    "folder-at-the-ledger-path": _folder,
    "fifo-at-the-ledger-path": _fifo,
}

COMMANDS: list[tuple[str, ...]] = [
    ("ledger", "verify"),
    ("ledger", "log"),
    ("history", "DV1-0001"),
    ("status",),
    ("export", "--output", "out.json"),
    ("apply",),
    ("revert", "sha256:" + "0" * 64),
    ("rebuild",),
    ("report",),
    ("entities",),
    ("hook", "refresh"),
    ("ledger", "resolve"),  # names the ledger as one side of a merge: `ledger:LINE:`
]


def assert_clean(done: subprocess.CompletedProcess[str], line: int) -> None:
    assert done.returncode == ExitCode.INTEGRITY, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    errors = [text for text in done.stderr.splitlines() if text.startswith("vt: ")]
    assert errors, done.stderr
    where = (
        (f"decision_ledger.jsonl:{line}: ", f" ledger:{line}: ")
        if line
        else ("decision_ledger.jsonl: ",)
    )
    assert any(w in text for w in where for text in errors), done.stderr


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_hostile_ledger_is_exit_3_naming_it_for_every_command(
    applied: Path, tmp_path: Path, case: str
) -> None:
    vault = fresh(applied, tmp_path)
    line = CASES[case](vault)
    for command in COMMANDS:
        done = run_vt(*command, vault=vault, cwd=tmp_path, timeout=TIMEOUT)
        if command == ("ledger", "verify") and line:
            assert done.returncode == ExitCode.INTEGRITY, done.stderr
            assert f"decision_ledger.jsonl:{line}: " in done.stderr, done.stderr
            continue
        assert_clean(done, line)
    assert not list((vault / ".vt").glob("crash-*.log"))


def test_a_deep_line_in_either_side_is_refused_by_the_merge_driver(
    applied: Path, tmp_path: Path
) -> None:
    vault = fresh(applied, tmp_path)
    data = (vault / LEDGER).read_bytes()
    base, ours, theirs = (tmp_path / name for name in ("base", "ours", "theirs"))
    base.write_bytes(data)
    for hostile in (ours, theirs):
        ours.write_bytes(data)
        theirs.write_bytes(data)
        hostile.write_bytes(data + b"[" * 100_000 + b"]" * 100_000 + b"\n")
        done = run_vt("ledger", "merge", str(base), str(ours), str(theirs), timeout=TIMEOUT)
        assert done.returncode == ExitCode.FINDINGS, done.stderr
        assert "internal error" not in done.stderr and ":3: not valid JSON" in done.stderr


def test_resolve_of_a_deep_line_is_a_clean_refusal(applied: Path, tmp_path: Path) -> None:
    vault = fresh(applied, tmp_path)
    data = (vault / LEDGER).read_bytes()
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    (vault / LEDGER).write_bytes(data + b"<<<<<<< ours\n" + deep + b"=======\n>>>>>>> theirs\n")
    done = run_vt("ledger", "resolve", vault=vault, timeout=TIMEOUT)
    assert done.returncode in (ExitCode.FINDINGS, ExitCode.INTEGRITY), done.stderr
    assert "internal error" not in done.stderr and "not valid JSON" in done.stderr
    assert (vault / LEDGER).read_bytes().startswith(data)  # nothing rewritten


def test_log_names_the_real_line_of_a_bad_line(applied: Path, tmp_path: Path) -> None:
    vault = fresh(applied, tmp_path)
    lines = (vault / LEDGER).read_bytes().splitlines(keepends=True)
    (vault / LEDGER).write_bytes(lines[0] + b"{not json\n" + lines[1])
    done = run_vt("ledger", "log", vault=vault, timeout=TIMEOUT)
    assert done.returncode == ExitCode.INTEGRITY
    # log passes the gate like every reader: its one line names line 2 and the problem
    assert "decision_ledger.jsonl:2: " in done.stderr and "not valid JSON" in done.stderr
    assert ":0:" not in done.stderr and "line 0" not in done.stderr


def forged_event(data: bytes, **fields: object) -> bytes:
    """`data` and one more event after its last line: the first event changed by
    `fields`, its id, seq, prev and hash made right (what anyone can write)."""
    lines = data.splitlines()
    first, last = json.loads(lines[0]), json.loads(lines[-1])
    event = {k: v for k, v in first.items() if k != "sig"}
    event.update(fields, seq=last["seq"] + 1, prev=last["hash"])
    event["id"] = decision_id(event)
    event["hash"] = line_hash(event)
    return data + (canonical(event) + "\n").encode()


UNKNOWN = "sha256:" + "ab" * 32


def test_the_merge_driver_refuses_a_side_that_would_not_verify(
    applied: Path, tmp_path: Path
) -> None:
    vault = fresh(applied, tmp_path)
    data = (vault / LEDGER).read_bytes()
    base, ours, theirs = (tmp_path / name for name in ("base", "ours", "theirs"))
    hostile = forged_event(data, supersedes=UNKNOWN, comment="supersedes nothing known")
    assert run_vt("ledger", "verify", vault=vault, timeout=TIMEOUT).returncode == 0
    (vault / LEDGER).write_bytes(hostile)
    alone = run_vt("ledger", "verify", vault=vault, timeout=TIMEOUT)
    assert alone.returncode == ExitCode.INTEGRITY  # the rule the driver must hold to
    for side in ("ours", "theirs"):
        base.write_bytes(data)
        ours.write_bytes(hostile if side == "ours" else data)
        theirs.write_bytes(hostile if side == "theirs" else data)
        before = ours.read_bytes()
        done = run_vt("ledger", "merge", str(base), str(ours), str(theirs), timeout=TIMEOUT)
        assert done.returncode == ExitCode.FINDINGS, done.stderr
        assert f"vt ledger merge: {side}:3: supersedes {UNKNOWN}" in done.stderr, done.stderr
        assert "does not verify" in done.stderr
        assert ours.read_bytes() == before  # nothing written: git keeps the conflict


def test_the_merge_driver_refuses_a_result_that_would_not_verify(
    applied: Path, tmp_path: Path
) -> None:
    """Theirs holds conflict markers (committed without the driver): it is read section
    by section, and the event of a section that breaks verify's rules is refused in the
    merged result, its side named."""
    vault = fresh(applied, tmp_path)
    data = (vault / LEDGER).read_bytes()
    hostile = forged_event(data, supersedes=UNKNOWN).splitlines(keepends=True)[-1]
    base, ours, theirs = (tmp_path / name for name in ("base", "ours", "theirs"))
    base.write_bytes(data)
    ours.write_bytes(data)
    theirs.write_bytes(data + b"<<<<<<< HEAD\n=======\n" + hostile + b">>>>>>> other\n")
    done = run_vt("ledger", "merge", str(base), str(ours), str(theirs), timeout=TIMEOUT)
    assert done.returncode == ExitCode.FINDINGS, done.stderr
    assert "vt ledger merge: theirs: its event " in done.stderr, done.stderr
    assert f"would not verify in the merged ledger (supersedes {UNKNOWN}" in done.stderr
    assert ours.read_bytes() == data


def test_resolve_refuses_a_result_that_would_not_verify(applied: Path, tmp_path: Path) -> None:
    vault = fresh(applied, tmp_path)
    data = (vault / LEDGER).read_bytes()
    hostile = forged_event(data, supersedes=UNKNOWN).splitlines(keepends=True)[-1]
    text = data + b"<<<<<<< ours\n=======\n" + hostile + b">>>>>>> theirs\n"
    (vault / LEDGER).write_bytes(text)
    done = run_vt("ledger", "resolve", vault=vault, timeout=TIMEOUT)
    assert done.returncode == ExitCode.INTEGRITY, done.stderr
    assert "would not verify" in done.stderr and UNKNOWN in done.stderr
    assert (vault / LEDGER).read_bytes() == text


def test_events_read_from_an_offset_name_a_bad_line_by_its_number(
    applied: Path, tmp_path: Path
) -> None:
    from vault_tools.errors import IntegrityError
    from vault_tools.ledger.reader import iter_events

    vault = fresh(applied, tmp_path)
    data = (vault / LEDGER).read_bytes()
    (vault / LEDGER).write_bytes(data + b"{not json\n")
    with pytest.raises(IntegrityError) as caught:
        list(iter_events(vault / LEDGER, data.index(b"\n") + 1))  # from line 2
    assert caught.value.line == 3 and str(caught.value).startswith(f"{vault / LEDGER}:3: ")
