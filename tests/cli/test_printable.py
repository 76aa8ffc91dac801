"""Control characters from a ledger field or a note are escaped wherever vt prints them.

A forged event (a valid line, its hash and id recomputed, as anyone who can push a
commit can write) carries terminal commands in its actor and comment; a note's file
name carries one too. The real `vt` runs piped, with `--json` and on a terminal (a
pseudo-terminal): none of the forged commands reaches the output raw, the text around
them does, and JSON stays JSON with the same values.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import copy_example_vault, run_vt, start_vt
from vault_tools.cli.printable import printable
from vault_tools.ledger.events import canonical, decision_id, line_hash

LEDGER = "05_ledger/decision_ledger.jsonl"
# erase the line, go back to its start, go up one line; a C1 CSI; a right-to-left override
FORGED = "ok\x1b[2K\r\x1b[1Aforged\x9b31m\u202e\x07\x08"
ACTOR = "mal\x1b[31mlory"
RAW = ("\x1b[2K", "\x1b[1A", "\x1b[31m", "\x9b", "\u202e", "\x07", "\x08")
# on a terminal rich writes terminal commands of its own: the forged ones, in place
FORGED_IN_PLACE = ("ok\x1b[2K", "\x1b[1Aforged", "mal\x1b[31m", "x\x1b[2Ky", "\x9b", "\u202e")


# a colour terminal wide enough that rich wraps nothing
TERMINAL = {"TERM": "xterm-256color", "COLUMNS": "400", "NO_COLOR": ""}


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    return run_vt(*args, env=TERMINAL)


def on_terminal(*args: str) -> str:
    """What `vt args` writes to a terminal (stdout and stderr both on one pty)."""
    main, other = os.openpty()
    try:
        process = start_vt(
            *args, env=TERMINAL, stdin=subprocess.DEVNULL, stdout=other, stderr=other
        )
        os.close(other)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=60)
    finally:
        os.close(main)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def forged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vault = copy_example_vault(tmp_path_factory.mktemp("forged") / "vault")
    done = piped("apply", "--vault", str(vault))
    assert done.returncode == 0, done.stderr
    lines = (vault / LEDGER).read_text(encoding="utf-8").splitlines()
    first, last = json.loads(lines[0]), json.loads(lines[-1])
    event = {k: v for k, v in first.items() if k != "sig"}
    event.update(comment=FORGED, actor=ACTOR, seq=last["seq"] + 1, prev=last["hash"])
    event["supersedes"] = first["id"]
    event["id"] = decision_id(event)
    event["hash"] = line_hash(event)
    with open(vault / LEDGER, "a", encoding="utf-8") as out:
        out.write(canonical(event) + "\n")
    shutil.copy(vault / "03_claims" / "DV1-0003.md", vault / "03_claims" / "x\x1b[2Ky.md")
    return vault


COMMANDS = [("ledger", "log"), ("history", "DV1-0001"), ("validate",), ("ledger", "verify")]


def assert_escaped(text: str) -> None:
    for raw in RAW:
        assert raw not in text, (raw, text[-3000:])


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_forged_control_characters_are_escaped_when_piped(
    forged: Path, command: tuple[str, ...]
) -> None:
    done = piped(*command, "--vault", str(forged))
    assert "internal error" not in done.stderr
    assert_escaped(done.stdout + done.stderr)
    assert "\r" not in done.stdout + done.stderr
    if command[0] in ("ledger", "history") and command[-1] != "verify":
        assert "ok\\u001b[2K\\u000d\\u001b[1Aforged\\u009b31m\\u202e" in done.stdout
        assert "mal\\u001b[31mlory" in done.stdout
    if command == ("validate",):
        assert "03_claims/x\\u001b[2Ky.md" in done.stdout
        warm = piped(*command, "--vault", str(forged))  # the output kept by the cache
        assert warm.stdout == done.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_forged_control_characters_are_escaped_in_json(
    forged: Path, command: tuple[str, ...]
) -> None:
    done = piped(*command, "--vault", str(forged), "--json")
    assert_escaped(done.stdout + done.stderr)
    payload = json.loads(done.stdout)  # still JSON, and the same values
    if command == ("ledger", "log"):
        assert payload["events"][0]["comment"] == FORGED
        assert payload["events"][0]["actor"] == ACTOR


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_forged_control_characters_are_escaped_on_a_terminal(
    forged: Path, command: tuple[str, ...]
) -> None:
    shown = on_terminal(*command, "--vault", str(forged))
    assert "internal error" not in shown
    for raw in FORGED_IN_PLACE:
        assert raw not in shown, (raw, shown[-3000:])
    if command[0] in ("ledger", "history") and command[-1] != "verify":
        assert "mal\\u001b[31mlory" in shown
        assert "forged\\u009b31m\\u202e" in shown
    if command == ("validate",):
        assert "x\\u001b[2Ky.md" in shown


def test_printable_keeps_lines_and_tabs_and_escapes_the_rest() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable("a\x1b[2Kb\x00\x7f\x85\u2066") == "a\\u001b[2Kb\\u0000\\u007f\\u0085\\u2066"
    text = json.dumps({"k": "\x9b\u202e"}, ensure_ascii=False)
    assert json.loads(printable(text)) == {"k": "\x9b\u202e"}
