"""The ledger gate: nothing appends to, or trusts, a ledger that changed since it was
verified. Real vaults (copies of the example vault), real `vt` processes, real files.

Each vault has decisions applied through `vt apply` and more appended through the
ledger API (so `.vt/` remembers a trusted prefix), and one note with a decision still to
apply. Every tampering must stop `vt apply` and `vt revert` with exit 3 and one line
naming the first bad line and `vt ledger verify`, with the ledger and every note left
byte for byte as they were; the commands that only read the ledger stop the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import run_vt, settings_for
from vault_tools.errors import IntegrityError
from vault_tools.infra import filestat
from vault_tools.infra.lock import FileLock
from vault_tools.ledger import events as ledger_events
from vault_tools.ledger import gate as ledger_gate
from vault_tools.ledger import index as ledger_index
from vault_tools.ledger import reader as ledger_reader
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.events import canonical, decision_id, line_hash
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.apply import apply_notes
from vault_tools.vocabulary import CHECK_KEYS

LEDGER = "05_ledger/decision_ledger.jsonl"
PENDING = "03_claims/DV1-0004.md"  # set to REJECT: the decision the tampered apply must not make
Lines = list[bytes]


def extra(claim_id: str) -> dict:
    return {
        "action": "ACCEPT",
        "actor": "carol",
        "base": "sha256:" + "cd" * 32,
        "checks": dict.fromkeys(CHECK_KEYS, True),
        "claim": {
            "atomic_claim": f"draft tokens need one warm prefill ({claim_id})",
            "epistemic_mode": "HYPOTHETICAL",
            "mapping_status": "PARTIAL",
            "semantic_frame": {"frame_type": "COMPARISON"},
        },
        "claim_id": claim_id,
        "comment": "HYPOTHETICAL",
        "note": f"03_claims/{claim_id}.md",
        "preview": None,
        "ts": "2026-11-20T08:00:00Z",
    }


@pytest.fixture()
def vault(example_vault: Path) -> Path:
    """Two decisions applied, three more appended (five lines trusted), one to apply."""
    report = apply_notes(settings_for(example_vault))
    assert [a.seq for a in report.applied] == [1, 2] and not report.refused
    ledger = Ledger(example_vault / LEDGER, example_vault / ".vt")
    ledger.append(extra(f"GATE-{i}") for i in range(3))
    note = example_vault / PENDING
    note.write_text(
        note.read_text(encoding="utf-8").replace(
            "review_action: PENDING", "review_action: REJECT", 1
        ),
        encoding="utf-8",
    )
    return example_vault


def lines_of(vault: Path) -> Lines:
    return (vault / LEDGER).read_bytes().splitlines(keepends=True)


def rechained(events: list[dict]) -> bytes:
    """The events with seq/prev/hash recomputed from line 1: a valid chain."""
    out, prev = [], ledger_events.GENESIS
    for seq, ev in enumerate(events, 1):
        ev = {k: v for k, v in ev.items() if k != "hash"} | {"seq": seq, "prev": prev}
        ev["hash"] = prev = line_hash(ev)
        out.append((canonical(ev) + "\n").encode())
    return b"".join(out)


def same_length_edit(lines: Lines) -> bytes:
    lines[3] = lines[3].replace(b'"comment":"HYPOTHETICAL"', b'"comment":"HYPOTHETICAX"')
    return b"".join(lines)


def rollback(lines: Lines) -> bytes:
    return b"".join(lines[:-1])


def rewrite_rechained(lines: Lines) -> bytes:
    events = [json.loads(raw) for raw in lines]
    events[2]["comment"] = "changed my mind"
    events[2]["id"] = decision_id(events[2])  # a new, self-consistent decision
    return rechained(events)


def crlf(lines: Lines) -> bytes:
    return b"".join(lines).replace(b"\n", b"\r\n")


def emptied(lines: Lines) -> bytes:
    return b""


def non_canonical(lines: Lines) -> bytes:
    lines[2] = (json.dumps(json.loads(lines[2]), ensure_ascii=False) + "\n").encode()
    return b"".join(lines)


def ts_edited_rechained(lines: Lines) -> bytes:
    events = [json.loads(raw) for raw in lines]
    events[1]["ts"] = "2026-01-01T00:00:00Z"  # not part of the id: only the chain moves
    return rechained(events)


def flipped_byte(lines: Lines) -> bytes:
    line = bytearray(lines[3])
    line[line.index(b"warm prefill") + 2] ^= 0x01
    lines[3] = bytes(line)
    return b"".join(lines)


def swapped_lines(lines: Lines) -> bytes:
    lines[2], lines[3] = lines[3], lines[2]
    return b"".join(lines)


# (tampering, the line the message must name)
TAMPERINGS: dict[str, tuple[Callable[[Lines], bytes], int]] = {
    "same-length edit mid-file": (same_length_edit, 4),
    "last line removed (rollback)": (rollback, 5),
    "full rewrite, re-chained": (rewrite_rechained, 3),
    "CRLF-converted": (crlf, 1),
    "emptied": (emptied, 1),
    "non-canonical line": (non_canonical, 3),
    "flipped byte": (flipped_byte, 4),
    "two lines swapped": (swapped_lines, 3),
}
TAMPER = pytest.mark.parametrize("kind", list(TAMPERINGS))


def notes_of(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*.md"))}


def assert_refused(result: subprocess.CompletedProcess[str], line: int) -> None:
    assert result.returncode == 3, (result.stdout, result.stderr)
    said = [ln for ln in result.stderr.splitlines() if ln.startswith("vt: ")]
    assert len(said) == 1, result.stderr
    assert said[0].startswith(f"vt: {LEDGER}:{line}: "), said
    assert "; run `vt ledger verify`" in said[0], said
    assert "Traceback" not in result.stderr


@TAMPER
@pytest.mark.parametrize("command", ["apply", "revert"])
def test_tampered_ledger_stops_apply_and_revert(vault: Path, kind: str, command: str) -> None:
    tamper, line = TAMPERINGS[kind]
    first_id = json.loads(lines_of(vault)[0])["id"]
    (vault / LEDGER).write_bytes(tamper(lines_of(vault)))
    ledger, notes = (vault / LEDGER).read_bytes(), notes_of(vault)
    args = ["apply"] if command == "apply" else ["revert", first_id]
    assert_refused(run_vt(*args, vault=vault), line)
    assert (vault / LEDGER).read_bytes() == ledger
    assert notes_of(vault) == notes  # the pending note is not marked APPLIED
    assert not (vault / f"{LEDGER}.torn").exists()


@pytest.mark.parametrize("args", [("ledger", "verify"), ("status",), ("apply",)])
def test_a_trusted_event_kept_with_another_ts_passes_the_gate(vault: Path, args: tuple) -> None:
    """The same decision appended in two clones a second apart has two copies (same id,
    another ts); the merge keeps one, and a clone that trusted the other goes on working."""
    assert run_vt("status", vault=vault).returncode == 0  # every line trusted, ts included
    (vault / LEDGER).write_bytes(ts_edited_rechained(lines_of(vault)))
    done = run_vt(*args, vault=vault)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "args", [("rebuild",), ("export",), ("status",), ("history", "DV1-0001"), ("report",)]
)
@pytest.mark.parametrize("kind", ["same-length edit mid-file", "last line removed (rollback)"])
def test_tampered_ledger_stops_every_reader(vault: Path, kind: str, args: tuple[str, ...]) -> None:
    assert run_vt("status", vault=vault).returncode == 0  # the Claim Store holds the true events
    tamper, line = TAMPERINGS[kind]
    (vault / LEDGER).write_bytes(tamper(lines_of(vault)))
    before = notes_of(vault)
    result = run_vt(*args, vault=vault)
    assert_refused(result, line)
    assert "HYPOTHETICAX" not in result.stdout
    assert notes_of(vault) == before


def test_untampered_vault_applies_and_the_gate_remembers_it(vault: Path) -> None:
    result = run_vt("apply", vault=vault)
    assert result.returncode == 0, result.stderr
    assert b'"claim_id":"DV1-0004"' in lines_of(vault)[-1]
    db = ledger_index.StateDB.read_only(vault / ".vt")
    try:
        trusted = db.trusted()
        assert trusted is not None and trusted.size == (vault / LEDGER).stat().st_size
        assert trusted.seq == 6 and db.memory_size() == 6
    finally:
        db.close()
    for args in (("rebuild",), ("export",), ("status",), ("history", "DV1-0001"), ("report",)):
        assert run_vt(*args, vault=vault).returncode == 0, args


def test_a_rechaining_merge_passes_the_gate(vault: Path) -> None:
    """Same events, new seq/prev/hash (what the merge driver or a rebase does): every
    remembered event is still there, unchanged, so the gate lets it through."""
    events = [json.loads(raw) for raw in lines_of(vault)]
    (vault / LEDGER).write_bytes(rechained([events[0], events[3], events[1], events[2], events[4]]))
    result = run_vt("apply", vault=vault)
    assert result.returncode == 0, result.stderr
    assert len(lines_of(vault)) == 6
    assert run_vt("ledger", "verify", vault=vault).returncode == 0


def test_lines_appended_elsewhere_are_checked_before_they_are_trusted(vault: Path) -> None:
    other = Ledger(vault / LEDGER, vault / ".vt-other")  # a pull: lines this .vt never saw
    other.append([extra("PULLED-1"), extra("PULLED-2")])
    lines = lines_of(vault)
    lines[-1] = lines[-1].replace(b"HYPOTHETICAL", b"HYPOTHETICAX")
    (vault / LEDGER).write_bytes(b"".join(lines))
    before = (vault / LEDGER).read_bytes()
    result = run_vt("apply", vault=vault)
    assert_refused(result, 7)
    assert "does not verify (hash mismatch" in result.stderr
    assert (vault / LEDGER).read_bytes() == before


def test_a_deleted_state_dir_means_a_full_verify(vault: Path) -> None:
    for path in sorted((vault / ".vt").iterdir()):
        path.unlink()
    (vault / LEDGER).write_bytes(swapped_lines(lines_of(vault)))
    assert_refused(run_vt("apply", vault=vault), 3)  # no memory, but the chain itself is broken


LOST_WAY_OUT = (
    "(get the file back from git, or accept the loss with `vt ledger forget`); "
    "run `vt ledger verify` to list them"
)
EVERY_COMMAND = [
    ("status",),
    ("history", "DV1-0001"),
    ("export",),
    ("report",),
    ("entities",),
    ("rebuild",),
    ("ledger", "log"),
    ("apply",),
    ("apply", "--dry-run"),
    ("revert", "sha256:" + "ab" * 32),
    ("hook", "refresh"),
]


@pytest.mark.parametrize("args", EVERY_COMMAND)
def test_a_deleted_ledger_is_one_refusal_for_every_command(
    vault: Path, args: tuple[str, ...]
) -> None:
    (vault / LEDGER).unlink()
    notes = notes_of(vault)
    result = run_vt(*args, vault=vault)
    assert result.returncode == 3, (result.stdout, result.stderr)
    said = [ln for ln in result.stderr.splitlines() if ln.startswith("vt: ")]
    assert said == [
        f"vt: {LEDGER}: the ledger is missing, but 5 events were verified before " + LOST_WAY_OUT
    ], result.stderr
    assert not (vault / LEDGER).exists()  # no empty new ledger that would hide the loss
    assert notes_of(vault) == notes


def test_verify_lists_each_event_a_deleted_ledger_lost(vault: Path) -> None:
    ids = [json.loads(line)["id"] for line in lines_of(vault)]
    (vault / LEDGER).unlink()
    result = run_vt("ledger", "verify", vault=vault)
    assert result.returncode == 3
    for event_id in ids:
        assert f"event {event_id} verified before is missing" in result.stdout + result.stderr


def test_a_reader_checks_without_waiting_and_rechecks_a_failure_under_the_lock(vault: Path) -> None:
    ledger = Ledger(vault / LEDGER, vault / ".vt")
    state = (vault / ".vt" / ledger_index.STATE_DB).read_bytes()
    lock = FileLock(ledger.lock_path)
    lock.acquire()  # another vt appending
    try:
        assert ledger.trusted_head().seq == 5  # passed without the lock: nothing written
        assert (vault / ".vt" / ledger_index.STATE_DB).read_bytes() == state
        (vault / LEDGER).write_bytes(same_length_edit(lines_of(vault)))
        threading.Timer(0.3, lock.release).start()
        start = time.monotonic()
        with pytest.raises(IntegrityError, match="changed since it was verified"):
            ledger.trusted_head()
        assert time.monotonic() - start >= 0.3  # the failure was checked again, locked
    finally:
        lock.release()


# ---------------------------------------------------------------- verify


def tree(root: Path) -> list[tuple[str, int, int]]:
    """Every entry under `root` (folders too) with its size and mtime."""
    return sorted(
        (p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
    )


@pytest.mark.parametrize("kind", ["clean", "same-length edit mid-file", "torn tail"])
def test_verify_writes_nothing(vault: Path, kind: str) -> None:
    if kind == "torn tail":
        with open(vault / LEDGER, "ab") as f:
            f.write(b'{"action":"ACC')
    elif kind != "clean":
        (vault / LEDGER).write_bytes(TAMPERINGS[kind][0](lines_of(vault)))
    before = tree(vault)
    result = run_vt("ledger", "verify", vault=vault)
    assert result.returncode == (3 if kind == "same-length edit mid-file" else 0), result.stderr
    assert tree(vault) == before  # no file created, changed or removed, no folder touched


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only permissions")
def test_verify_on_a_read_only_vault(vault: Path) -> None:
    folders = [p for p in [vault, *vault.rglob("*")] if p.is_dir()]
    for folder in folders:
        folder.chmod(0o555)
    try:
        result = run_vt("ledger", "verify", vault=vault)
        assert result.returncode == 0, result.stderr
        assert "ledger ok: 5 events" in result.stdout
        assert run_vt("status", vault=vault).returncode == 0  # readers work too, just unremembered
    finally:
        for folder in folders:
            folder.chmod(0o755)


def test_verify_names_conflict_markers_and_resolve(vault: Path) -> None:
    lines = lines_of(vault)
    merged = [*lines[:3], b"<<<<<<< HEAD\n", *lines[3:], b"=======\n", b">>>>>>> other\n"]
    (vault / LEDGER).write_bytes(b"".join(merged))
    result = run_vt("ledger", "verify", vault=vault)
    assert result.returncode == 3
    assert (
        f"{LEDGER}:4: a git conflict marker: the ledger was merged without the vt merge "
        "driver; run `vt ledger resolve`"
    ) in result.stderr.splitlines()
    assert "not valid JSON" not in result.stderr
    applied = run_vt("apply", vault=vault)
    assert applied.returncode == 3 and "run `vt ledger resolve`" in applied.stderr


def test_verify_says_crlf_in_one_line(vault: Path) -> None:
    (vault / LEDGER).write_bytes(crlf(lines_of(vault)))
    result = run_vt("ledger", "verify", vault=vault)
    assert result.returncode == 3
    problems = [ln for ln in result.stderr.splitlines() if ln.startswith(LEDGER)]
    assert problems == [f"{LEDGER}:1: {ledger_reader.CRLF_MESSAGE}"]
    payload = json.loads(run_vt("ledger", "verify", "--json", vault=vault).stdout)
    assert [p["message"] for p in payload["problems"]] == [f"line 1: {ledger_reader.CRLF_MESSAGE}"]


def gate_once(vault: Path) -> ledger_reader.Tip:
    """One gate as a reader holding the lock runs it (it may remember what it saw)."""
    return Ledger(vault / LEDGER, vault / ".vt").trusted_head()


def forbid_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> str:
        raise AssertionError("the gate hashed the ledger")

    monkeypatch.setattr(ledger_gate, "block_digests", refuse)
    monkeypatch.setattr(ledger_index, "block_digests", refuse)


def test_an_unchanged_ledger_is_not_hashed_again(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filestat, "RACY_NS", 0)
    head = gate_once(vault)  # hashes, then remembers the file's stat signature
    forbid_hashing(monkeypatch)
    assert gate_once(vault) == head


def test_a_fresh_signature_is_not_trusted(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Taken within RACY_NS of the file's last change, a signature proves nothing: a
    same-length write in the same timestamp tick would leave it equal."""
    gate_once(vault)
    forbid_hashing(monkeypatch)
    with pytest.raises(AssertionError, match="hashed"):
        gate_once(vault)


@pytest.mark.parametrize("kind", ["same-length edit mid-file", "last line removed (rollback)"])
def test_a_write_after_the_signature_is_caught(
    vault: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(filestat, "RACY_NS", 0)
    gate_once(vault)
    time.sleep(0.05)  # past the file system's timestamp tick: the write changes ctime
    path = vault / LEDGER
    before = os.stat(path)
    fd = os.open(path, os.O_WRONLY)  # in place: same inode, as an editor saving in place
    try:
        data = TAMPERINGS[kind][0](lines_of(vault))
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    assert os.stat(path).st_ino == before.st_ino
    with pytest.raises(IntegrityError):
        gate_once(vault)


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("history", "DV1-0001"),
        ("export",),
        ("entities",),
        ("report", "--dry-run"),
        ("ledger", "log"),
        ("ledger", "verify"),
        ("validate",),
    ],
)
def test_a_command_that_only_reads_creates_no_lock_file(vault: Path, args: tuple[str, ...]) -> None:
    """A clone: the ledger committed, no lock file (git-ignored) and no `.vt/`. A reader
    checks the ledger all the same and creates nothing outside `.vt/`."""
    (vault / f"{LEDGER}.lock").unlink()
    for path in sorted((vault / ".vt").iterdir()):
        path.unlink()
    outside_state = {p for p in vault.rglob("*") if ".vt" not in p.relative_to(vault).parts}
    done = run_vt(*args, vault=vault)
    assert done.returncode in (0, 1), (args, done.stderr)
    assert {p for p in vault.rglob("*") if ".vt" not in p.relative_to(vault).parts} == (
        outside_state
    )
    (vault / LEDGER).write_bytes(same_length_edit(lines_of(vault)))
    if args[0] not in ("validate", "report"):
        assert (
            run_vt(*args, vault=vault).returncode == 3
        )  # and the gate still stops a tampered ledger
    assert not (vault / f"{LEDGER}.lock").exists()


def test_a_vault_never_set_up_gets_no_ledger_folder_from_a_reader(example_vault: Path) -> None:
    for args in (("status",), ("export",), ("ledger", "log"), ("history", "DV1-0001")):
        run_vt(*args, vault=example_vault)
        assert not (example_vault / "05_ledger").exists(), args


# --- the stat signature against the plain rule ---------------------------------------
#
# The plain rule: the gate's answer when it trusts nothing, that is with its trusted
# prefix and the prefix's stat signature forgotten (a copy of the state dir), so that
# the whole ledger is verified against the memory of the events verified before. The
# gate that trusts the signature must give the same answer after any history of writes:
# vt's appends, lines appended by another writer, a byte rewritten in place with the
# file's mtime put back, the file replaced by a rename (lines swapped, mtime put back),
# the last line replaced by one of the same length, a rollback, a torn tail, a touch.
# Outside the racy window, that is: the signature proves nothing for a write within
# RACY_NS of it (a same-size write in the same timestamp tick leaves the signature as
# it was), which the gate never trusts (test_a_fresh_signature_is_not_trusted). Here
# RACY_NS is 0 and every write waits for the file system's next tick.

TICK = 0.012  # past a 4 ms kernel tick (HZ=250), which stamps a file's times
OPS = ["vt append", "lines appended", "byte rewritten", "last line replaced"]
OPS += ["rollback", "replaced by a rename", "torn tail", "touched", "nothing"]


def _outcome(ledger: Path, state: Path) -> tuple[str, object]:
    try:
        return "trusted", Ledger(ledger, state).trusted_head()
    except IntegrityError as exc:
        return "refused", exc.line


def _plain_outcome(ledger: Path, state: Path, scratch: Path) -> tuple[str, object]:
    """The gate's answer with nothing trusted; and verify's (whose own fast path, a
    memory proved by the trusted prefix's last hash, is then not taken) the same as
    with the prefix trusted."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(state, scratch)
    db = ledger_index.StateDB(scratch)
    db.forget([])  # the trusted prefix and its signature, not the memory of events
    db.close()
    assert verify_ledger(ledger, state).to_json() == verify_ledger(ledger, scratch).to_json()
    return _outcome(ledger, scratch)


def _same_length_event(raw: bytes, n: int) -> bytes:
    """The line's event with its comment's characters changed, still chained to the line
    before (a valid event of its own), of the same byte length."""
    ev = json.loads(raw)
    comment = ev.get("comment") or ""
    ev["comment"] = "".join("x" if c != "x" else "y" for c in comment) or comment
    ev["ts"] = f"2026-11-2{n % 10}T08:00:00Z"
    ev["id"] = decision_id(ev)
    ev["hash"] = line_hash(ev)
    return (canonical(ev) + "\n").encode()


def _write_in_place(path: Path, data: bytes, keep_mtime: bool) -> None:
    before = os.stat(path)
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _apply(op: str, n: int, ledger: Path, state: Path) -> None:
    time.sleep(TICK)  # every write lands in a later tick than the signature before it
    data = ledger.read_bytes()
    lines = data.splitlines(keepends=True)
    complete = [raw for raw in lines if raw.endswith(b"\n")]
    if op == "vt append":
        with suppress(IntegrityError):  # refused on a ledger that no longer verifies
            Ledger(ledger, state).append([extra(f"PROP-{n}")])
    elif op == "lines appended" and complete:
        events = [json.loads(raw) for raw in complete]
        last = events[-1] | {}
        new = extra(f"PULLED-{n}") | {"seq": last["seq"] + 1, "prev": last["hash"]}
        new["ts"] = "2026-11-21T08:00:00Z"
        new["id"] = decision_id(new)
        new["hash"] = line_hash(new)
        body = b"".join(complete)
        _write_in_place(ledger, body + (canonical(new) + "\n").encode(), keep_mtime=False)
    elif op == "byte rewritten" and complete:
        at = (n * 7919) % len(complete)
        line = bytearray(complete[at])
        spot = line.index(b'"comment":"') + len(b'"comment":"')
        line[spot] = ord("Q") if line[spot] != ord("Q") else ord("R")
        complete[at] = bytes(line)
        _write_in_place(ledger, b"".join(complete), keep_mtime=True)
    elif op == "last line replaced" and complete:
        complete[-1] = _same_length_event(complete[-1], n)
        _write_in_place(ledger, b"".join(complete), keep_mtime=True)
    elif op == "replaced by a rename" and complete:  # as git checkout or an editor saves
        before = os.stat(ledger)
        complete[0] = _same_length_event(complete[0], n) if len(complete) == 1 else complete[0]
        other = ledger.with_name("checkout.tmp")
        other.write_bytes(b"".join(complete[:1] + complete[1:][::-1]))  # lines swapped
        os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(other, ledger)
    elif op == "rollback" and complete:
        _write_in_place(ledger, b"".join(complete[:-1]), keep_mtime=True)
    elif op == "torn tail":
        with ledger.open("ab") as handle:
            handle.write(b'{"action":"ACC')
    elif op == "touched":
        os.utime(ledger)


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 99)), min_size=1, max_size=4))
def test_a_trusted_stat_signature_answers_as_a_full_verify(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("gate")
    ledger, state, scratch = root / "decision_ledger.jsonl", root / "state", root / "plain"
    Ledger(ledger, state).append(extra(f"START-{i}") for i in range(3))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(filestat, "RACY_NS", 0)
        time.sleep(TICK)
        _outcome(ledger, state)  # hashed and remembered: the signature is taken now
        for op, n in ops:
            _apply(op, n, ledger, state)
            plain = _plain_outcome(ledger, state, scratch)
            assert _outcome(ledger, state) == plain, (op, ops)


def test_the_signature_is_trusted_after_a_settled_gate(tmp_path: Path) -> None:
    """What the property above relies on to reach the fast path: once a gate has
    remembered the signature of a file written earlier, the next gate trusts it."""
    ledger, state = tmp_path / "decision_ledger.jsonl", tmp_path / "state"
    Ledger(ledger, state).append(extra(f"START-{i}") for i in range(2))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(filestat, "RACY_NS", 0)
        time.sleep(TICK)
        _outcome(ledger, state)
        fd = os.open(ledger, os.O_RDONLY)
        try:
            db = ledger_index.StateDB.read_only(state)
            assert db.stat_unchanged(fd, ledger_reader.complete_size(fd))
            db.close()
        finally:
            os.close(fd)
