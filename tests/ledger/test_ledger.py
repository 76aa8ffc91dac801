"""Decision Ledger: appends, chain, verify, tampering, torn tails, I/O failures, processes."""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_tools.errors import ExitCode, IntegrityError, RefusedError
from vault_tools.infra.lock import FileLock
from vault_tools.ledger import events as ledger_events
from vault_tools.ledger import heads as ledger_heads
from vault_tools.ledger import index as ledger_index
from vault_tools.ledger import merge as ledger_merge
from vault_tools.ledger import verify as ledger_verify
from vault_tools.ledger.append import (
    DuplicateEventError,
    InvalidEventError,
    Ledger,
    LedgerWriteError,
)
from vault_tools.ledger.events import GENESIS, canonical, decision_id, line_hash
from vault_tools.ledger.gate import trusted_head
from vault_tools.ledger.heads import claim_statuses
from vault_tools.ledger.reader import iter_events, iter_log
from vault_tools.ledger.verify import verify_ledger
from vault_tools.vocabulary import CHECK_KEYS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "ledger-event.schema.json").read_text())
# built once: jsonschema.validate checks the schema itself on every call (~40 ms each)
EVENT_SCHEMA = jsonschema.Draft202012Validator(SCHEMA)


def decision(claim_id: str, action: str = "ACCEPT", **extra: object) -> dict:
    claim = None
    if action in ("ACCEPT", "REPAIR"):
        claim = {
            "atomic_claim": f"main model 只需要一次 warm prefill ({claim_id})",
            "epistemic_mode": "ASSERTED",
            "mapping_status": "PARTIAL",
            "semantic_frame": {"frame_type": "COMPARISON", "entities": [{"hash": "x"}]},
        }
    d = {
        "action": action,
        "actor": "ann",
        "base": "sha256:" + "ab" * 32,
        "checks": dict.fromkeys(CHECK_KEYS, True),
        "claim": claim,
        "claim_id": claim_id,
        "comment": 'looks "fine"\\ok',
        "note": f"03_claims/{claim_id}.md",
        "preview": None,
    }
    d.update(extra)
    return d


@pytest.fixture()
def vault(tmp_path: Path) -> Path:
    return tmp_path / "vault"


def ledger_of(vault: Path, state: str = ".vt") -> Ledger:
    return Ledger(vault / "05_ledger" / "decision_ledger.jsonl", vault / state)


def lines_of(ledger: Ledger) -> list[bytes]:
    return ledger.path.read_bytes().splitlines(keepends=True)


def write_lines(ledger: Ledger, lines: list[bytes]) -> None:
    ledger.path.write_bytes(b"".join(lines))


def messages(result: ledger_verify.VerifyResult) -> list[str]:
    return [p.message for p in result.problems]


def filled(n: int, vault: Path, verified: bool = False) -> Ledger:
    """A ledger of `n` events. The appends remember their ids; `verified`: the prefix
    they were appended to stays trusted (later verifies re-prove it by its hash chain),
    else it is forgotten, so that every line is parsed and checked in full."""
    ledger = ledger_of(vault)
    ledger.append(decision(f"C{i}", ("ACCEPT", "REJECT", "REPAIR")[i % 3]) for i in range(n))
    if not verified:
        forget_trust(ledger)
    return ledger


def forget_trust(ledger: Ledger) -> None:
    """Drop the trusted prefix, keep the memory of every id: as if no prefix was trusted."""
    conn = sqlite3.connect(ledger.state_dir / ledger_index.STATE_DB)
    try:
        conn.execute("DELETE FROM meta WHERE key LIKE 'trust_%'")
        conn.commit()
    finally:
        conn.close()


# every tampering test runs twice: on a ledger never verified, and on one verified before
# (then the tampered line lies in the prefix verify re-proves by its hash chain alone)
VERIFIED = pytest.mark.parametrize("verified", [False, True], ids=["fresh", "verified"])


# ---------------------------------------------------------------- round trip, chain


def test_append_then_verify_and_chain_values(vault: Path) -> None:
    ledger = filled(5, vault)
    raw = lines_of(ledger)
    events = [json.loads(x) for x in raw]
    assert [e["seq"] for e in events] == [1, 2, 3, 4, 5]
    assert events[0]["prev"] == GENESIS == "0" * 64
    jsonschema.Draft202012Validator.check_schema(SCHEMA)  # what jsonschema.validate adds
    for before, ev, line in zip([None, *events], events, raw, strict=False):
        assert line == (canonical(ev) + "\n").encode()
        assert ev["hash"] == line_hash(ev)
        assert ev["id"] == decision_id(ev)
        assert before is None or ev["prev"] == before["hash"]
        assert ev["v"] == 1 and ledger_events._TS.fullmatch(ev["ts"])
        EVENT_SCHEMA.validate(ev)
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert result.ok and result.events == 5 and result.problems == []
    assert result.head == events[-1]["hash"] == ledger.head().hash
    assert result.to_json()["ok"] is True


def test_id_ignores_chain_fields_and_ts() -> None:
    ev = dict(decision("C1"), supersedes=None, ts="2026-01-01T00:00:00Z", v=1)
    other = dict(ev, ts="2027-01-01T00:00:00Z", seq=9, prev="x", hash="y", id="z")
    assert decision_id(ev) == decision_id(other)
    assert decision_id(ev) != decision_id(dict(ev, comment="changed"))
    assert canonical({"b": 1, "a": "中"}) == '{"a":"中","b":1}'


def test_supersedes_is_filled_from_the_claims_latest_event(vault: Path) -> None:
    ledger = ledger_of(vault)
    a = ledger.append([decision("C1")])[0]
    r, b = ledger.append([decision("C1", "REJECT"), decision("C2")])
    assert a["supersedes"] is None and b["supersedes"] is None
    assert r["supersedes"] == a["id"]
    again = ledger.append([decision("C1")])[0]  # changed mind back: a new event, a new id
    assert again["supersedes"] == r["id"] and again["id"] != a["id"]
    assert claim_statuses(iter_events(ledger.path)) == {"C1": "ACCEPTED", "C2": "ACCEPTED"}


def test_transaction_reads_under_the_lock_and_sees_its_own_appends(vault: Path) -> None:
    ledger = filled(3, vault)
    with ledger.transaction() as txn:
        assert txn.latest("C1")["action"] == "REJECT"
        assert txn.latest("nope") is None
        ev = txn.append(decision("C9"))
        assert txn.latest("C9") == ev and txn.has_id(ev["id"])
        with pytest.raises(DuplicateEventError):
            txn.append(dict(decision("C9"), supersedes=None))
        assert ledger.path.stat().st_size == txn.start.size  # not yet written
    assert ledger.head().seq == 4
    assert verify_ledger(ledger.path, ledger.state_dir).ok


def test_claims_looked_up_at_once_read_and_append_as_one_by_one(vault: Path) -> None:
    ledger = filled(3, vault)
    with ledger.transaction() as txn:
        txn.look_up(["C1", "C7", "C8", "C7"])
        assert txn.latest("C1")["action"] == "REJECT"  # has events: read from the index
        assert txn.latest("C7") is None
        first = txn.append(decision("C7"))
        assert txn.latest("C7") == first
        with pytest.raises(DuplicateEventError):  # the same decision, again in this run
            txn.append(dict(decision("C7"), supersedes=None))
        with pytest.raises(DuplicateEventError):  # a claim with events: the index knows
            txn.append(dict(decision("C1", "REJECT"), supersedes=None))
        txn.append(decision("C8", "REJECT"))
    assert ledger.head().seq == 5
    assert verify_ledger(ledger.path, ledger.state_dir).ok


@pytest.mark.parametrize("existing", [0, 3])
def test_flush_makes_a_batch_durable_and_the_index_answers_for_it(
    vault: Path, existing: int
) -> None:
    ledger = filled(existing, vault) if existing else ledger_of(vault)
    with ledger.transaction() as txn:
        txn.look_up(["C7", "C8"])  # no event yet: known to be new without the index
        first = txn.append(decision("C7"))
        txn.flush()
        assert len(lines_of(ledger)) == existing + 1  # written before the transaction ends
        assert txn.appended == [] and txn.durable == txn.head
        # forgotten here, answered by the index: C7 has an event now
        assert txn.latest("C7") == first and txn.has_id(first["id"])
        with pytest.raises(DuplicateEventError):
            txn.append(dict(decision("C7"), supersedes=None))
        second = txn.append(decision("C7", "REJECT"))
        assert second["supersedes"] == first["id"] and second["prev"] == first["hash"]
        txn.append(decision("C8", "REJECT"))
        txn.flush()
        txn.flush()  # nothing new: nothing written
    assert ledger.head().seq == existing + 3
    assert [ev["claim_id"] for ev in iter_events(ledger.path)][existing:] == ["C7", "C7", "C8"]
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    with ledger.transaction() as txn:  # the flushed lines were trusted as they were written
        assert txn.latest("C8")["action"] == "REJECT"


def test_a_failed_flush_keeps_what_earlier_flushes_wrote(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = ledger_of(vault)
    with pytest.raises(LedgerWriteError), ledger.transaction() as txn:
        txn.append(decision("C1"))
        txn.flush()
        size = ledger.path.stat().st_size
        txn.append(decision("C2"))

        def failing_fsync(fd: int) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "fsync", failing_fsync)
        txn.flush()
    monkeypatch.undo()
    assert ledger.path.stat().st_size == size  # the failed batch truncated away
    assert [ev["claim_id"] for ev in iter_events(ledger.path)] == ["C1"]
    assert verify_ledger(ledger.path, ledger.state_dir).ok


def test_recorded_finds_the_same_decision_whatever_it_superseded(vault: Path) -> None:
    ledger = filled(2, vault)
    with ledger.transaction() as txn:
        assert txn.recorded(decision("C0")) is not None  # ACCEPT C0 is the latest
        assert txn.recorded(decision("C0", comment="other")) is None
        assert txn.recorded(decision("C1")) is None  # C1's latest is a REJECT
        assert txn.recorded(decision("C7")) is None


def test_an_exception_inside_the_transaction_appends_nothing(vault: Path) -> None:
    ledger = filled(2, vault)
    before = ledger.path.read_bytes()
    with pytest.raises(RuntimeError), ledger.transaction() as txn:
        txn.append(decision("C5"))
        raise RuntimeError("boom")
    assert ledger.path.read_bytes() == before


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"action": "MAYBE"}, "action 'MAYBE' is not one of"),
        ({"claim": None}, "claim must be an object for ACCEPT"),
        ({"base": "md5:1"}, "base must be"),
        ({"checks": {"check_source_claim": "yes"}}, "checks must map"),
        ({"reverts": "sha256:" + "0" * 64}, "'reverts' is only allowed on REVERT"),
        ({"extra": 1}, "field 'extra' is not allowed"),
    ],
)
def test_invalid_decisions_are_refused(vault: Path, change: dict, expected: str) -> None:
    ledger = ledger_of(vault)
    with pytest.raises(InvalidEventError, match=expected):
        ledger.append([dict(decision("C1"), **change)])
    assert not ledger.path.exists() or ledger.path.read_bytes() == b""


def test_revert_and_statuses(vault: Path) -> None:
    ledger = ledger_of(vault)
    a = ledger.append([decision("C1")])[0]
    ledger.append([decision("C1", "REVERT", claim=None, reverts=a["id"]), decision("C2")])
    events = list(iter_events(ledger.path))
    assert claim_statuses(events) == {"C1": "REVERTED", "C2": "ACCEPTED"}
    states = ledger_heads.claim_states(events)
    assert states["C1"].current is None and states["C2"].current["claim_id"] == "C2"
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    with pytest.raises(InvalidEventError, match="REVERT needs 'reverts'"):
        ledger.append([decision("C2", "REVERT", claim=None)])


def test_index_catches_up_incrementally_and_rebuilds_after_a_rechain(vault: Path) -> None:
    ledger = filled(3, vault, verified=True)
    other = Ledger(ledger.path, vault / ".vt-other")  # another clone's state: stale index
    other.append([decision("C1", "ACCEPT")])
    with ledger.transaction() as txn:
        assert txn.latest("C1")["action"] == "ACCEPT"  # caught up on the tail only
    # a merge that re-chained the events (same ids, new seq/prev/hash): the trusted
    # prefix no longer matches, the whole file verifies, the index is rebuilt
    events = [json.loads(raw) for raw in lines_of(ledger)]
    ledger.path.write_bytes(ledger_merge._rechain([events[1], events[0], *events[2:]]))
    with ledger.transaction() as txn:
        assert txn.latest("C1")["action"] == "ACCEPT"
        assert txn.latest("C0")["seq"] == 2
        assert txn.has_id(events[0]["id"])


def test_a_shortened_ledger_is_refused_by_the_next_transaction(vault: Path) -> None:
    ledger = filled(3, vault, verified=True)
    write_lines(ledger, lines_of(ledger)[:2])
    before = ledger.path.read_bytes()
    with pytest.raises(IntegrityError, match="holds 2 events, but 3 were verified before") as exc:
        ledger.append([decision("C9")])
    assert exc.value.line == 3  # the first line that is gone
    assert ledger.path.read_bytes() == before


def test_log_newest_first_with_filters(vault: Path) -> None:
    ledger = ledger_of(vault)
    ledger.append([
        decision("C1", ts="2026-11-01T10:00:00Z"),
        decision("C2", "REJECT", ts="2026-11-02T10:00:00Z", actor="bob"),
        decision("C1", "REJECT", ts="2026-11-03T10:00:00Z"),
    ])  # fmt: skip
    assert [e["seq"] for e in iter_log(ledger.path)] == [3, 2, 1]
    assert [e["seq"] for e in iter_log(ledger.path, claim_id="C1")] == [3, 1]
    assert [e["seq"] for e in iter_log(ledger.path, actor="bob")] == [2]
    assert [e["seq"] for e in iter_log(ledger.path, action="REJECT")] == [3, 2]
    assert [e["seq"] for e in iter_log(ledger.path, since="2026-11-02")] == [3, 2]
    assert [e["seq"] for e in iter_log(ledger.path, until="2026-11-02")] == [2, 1]


# ---------------------------------------------------------------- tampering


@VERIFIED
def test_flipped_byte_is_a_hash_mismatch(vault: Path, verified: bool) -> None:
    ledger = filled(5, vault, verified)
    raw = lines_of(ledger)
    raw[2] = raw[2].replace(b'"actor":"ann"', b'"actor":"anm"')
    write_lines(ledger, raw)
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok
    assert "line 3: hash mismatch (edited line?)" in messages(result)
    assert any(m.startswith("line 3: id mismatch") for m in messages(result))


@VERIFIED
def test_flipped_byte_that_breaks_json(vault: Path, verified: bool) -> None:
    ledger = filled(4, vault, verified)
    raw = lines_of(ledger)
    raw[1] = b"[" + raw[1][1:]
    write_lines(ledger, raw)
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok and messages(result)[0].startswith("line 2: not valid JSON")
    assert result.problems[0].line == 2


@VERIFIED
def test_edited_field_with_recomputed_hash(vault: Path, verified: bool) -> None:
    ledger = filled(5, vault, verified)
    raw = lines_of(ledger)
    ev = json.loads(raw[1])
    ev["actor"] = "mallory"
    ev["hash"] = line_hash(ev)
    raw[1] = (canonical(ev) + "\n").encode()
    write_lines(ledger, raw)
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok
    got = messages(result)
    assert any(m.startswith("line 2: id mismatch") for m in got)
    assert "line 3: prev does not match the hash of line 2" in got
    assert "line 2: hash mismatch (edited line?)" not in got


def test_the_same_decision_with_another_ts_verifies_after_it_was_trusted(vault: Path) -> None:
    """The same decision appended in two clones a second apart is two copies of one id;
    the merge keeps one, so a clone that trusted the other copy must accept it."""
    ledger = filled(3, vault)
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    raw = lines_of(ledger)
    ev = json.loads(raw[-1])
    ev["ts"] = "2020-01-01T00:00:00Z"
    ev["hash"] = line_hash(ev)
    raw[-1] = (canonical(ev) + "\n").encode()
    write_lines(ledger, raw)
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    assert trusted_head(ledger.path, ledger.state_dir).seq == 3


def test_a_remembered_event_that_is_gone_is_still_caught(vault: Path) -> None:
    ledger = filled(3, vault)
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    write_lines(ledger, lines_of(ledger)[:-1])
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok
    assert any("verified before is missing" in m for m in messages(result))


@VERIFIED
def test_deleted_line(vault: Path, verified: bool) -> None:
    ledger = filled(6, vault, verified)
    raw = lines_of(ledger)
    del raw[3]
    write_lines(ledger, raw)
    got = messages(verify_ledger(ledger.path, ledger.state_dir))
    assert "line 4: seq 4 expected, found 5 (deleted or reordered line?)" in got
    assert "line 4: prev does not match the hash of line 3" in got
    assert len([m for m in got if "seq" in m]) == 1  # one gap, one message


@VERIFIED
def test_reordered_lines(vault: Path, verified: bool) -> None:
    ledger = filled(5, vault, verified)
    raw = lines_of(ledger)
    raw[1], raw[2] = raw[2], raw[1]
    write_lines(ledger, raw)
    got = messages(verify_ledger(ledger.path, ledger.state_dir))
    assert "line 2: seq 2 expected, found 3 (deleted or reordered line?)" in got
    assert "line 2: prev does not match the hash of line 1" in got
    assert "line 3: seq 4 expected, found 2 (deleted or reordered line?)" in got


@VERIFIED
def test_non_canonical_line(vault: Path, verified: bool) -> None:
    ledger = filled(2, vault, verified)
    raw = lines_of(ledger)
    raw[0] = (json.dumps(json.loads(raw[0]), ensure_ascii=False) + "\n").encode()  # spaces
    write_lines(ledger, raw)
    got = messages(verify_ledger(ledger.path, ledger.state_dir))
    assert got == ["line 1: not canonical JSON (re-serialised or hand-edited?)"]


@VERIFIED
def test_missing_field(vault: Path, verified: bool) -> None:
    ledger = filled(2, vault, verified)
    raw = lines_of(ledger)
    ev = json.loads(raw[1])
    del ev["actor"]
    raw[1] = (canonical(ev) + "\n").encode()
    write_lines(ledger, raw)
    assert "line 2: field 'actor' missing" in messages(verify_ledger(ledger.path, ledger.state_dir))


def test_duplicate_event_rechained(vault: Path) -> None:
    ledger = filled(3, vault)
    events = [json.loads(x) for x in lines_of(ledger)]
    ledger.path.write_bytes(ledger_merge._rechain([*events, events[0]], dedupe=False))
    got = messages(verify_ledger(ledger.path, vault / "fresh"))
    assert got == [f"line 4: duplicate id {events[0]['id']} (first on line 1)"]


def test_shortened_by_whole_lines_is_caught_by_memory(vault: Path) -> None:
    ledger = filled(6, vault)
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    raw = lines_of(ledger)
    gone = [json.loads(x)["id"] for x in raw[4:]]
    write_lines(ledger, raw[:4])
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok
    assert sorted(messages(result)) == sorted(
        f"event {i} verified before is missing: ledger shortened or rewritten" for i in gone
    )
    # without the memory the shortened file is a valid ledger: the memory is what caught it
    assert verify_ledger(ledger.path, vault / "fresh").ok


def test_appended_events_are_remembered_too(vault: Path) -> None:
    ledger = filled(3, vault)  # never verified, only appended
    write_lines(ledger, lines_of(ledger)[:2])
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok and "verified before is missing" in messages(result)[0]


def test_deleted_ledger_is_caught_by_memory(vault: Path) -> None:
    ledger = filled(2, vault)
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    ledger.path.unlink()
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert not result.ok and messages(result)[0] == "decision_ledger.jsonl is missing"
    assert verify_ledger(vault / "none.jsonl", vault / "other").ok  # a new vault is fine


# ---------------------------------------------------------------- torn tail


@pytest.mark.slow
def test_torn_tail_at_every_byte_of_the_last_line(vault: Path, tmp_path: Path) -> None:
    source = ledger_of(vault)
    source.append([decision("C1"), decision("C2", "REJECT", comment="")])
    whole = source.path.read_bytes()
    start = whole.rstrip(b"\n").rfind(b"\n") + 1

    def check(cut: int) -> None:
        # a new folder per cut: emptying one again costs more than the cut's own checks
        case = Ledger(tmp_path / f"t{cut}" / "decision_ledger.jsonl", tmp_path / f"t{cut}" / ".vt")
        case.path.parent.mkdir()
        case.path.write_bytes(whole[:cut])
        result = verify_ledger(case.path, case.state_dir)
        assert result.ok and result.events == 1, (cut, result.problems)
        assert result.torn is not None and result.torn.offset == start
        assert result.torn.length == cut - start and not result.torn.moved
        assert "the next `vt apply` or `vt revert` moves it to" in result.torn.message()
        # verify writes nothing: the next append moves the torn bytes aside
        assert case.path.read_bytes() == whole[:cut] and not case.torn_path.exists()
        case.append([decision("C3")])
        assert case.torn_path.read_bytes() == whole[start:cut] + b"\n"
        assert verify_ledger(case.path, case.state_dir).ok

    # the cuts share nothing (a folder each) and mostly wait on fsync and SQLite's syncs:
    # threads overlap those waits (600 cuts one after another took about a minute); the
    # assertion of the first cut that fails is raised here
    cuts = range(start + 1, len(whole))
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert len(list(pool.map(check, cuts))) == len(cuts)


def test_torn_tail_recovered_by_the_next_append(vault: Path) -> None:
    ledger = filled(2, vault)
    with open(ledger.path, "ab") as f:
        f.write(b'{"action":"ACC')
    ledger.torn_path.write_bytes(b"older\n")
    with ledger.transaction() as txn:
        assert txn.torn is not None and "moved to" in txn.torn.message()
        txn.append(decision("C5"))
    assert ledger.torn_path.read_bytes() == b'older\n{"action":"ACC\n'  # appended, never lost
    assert verify_ledger(ledger.path, ledger.state_dir).ok


# ---------------------------------------------------------------- I/O failures


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_failed_write_leaves_no_partial_line(vault: Path, monkeypatch, code: int) -> None:
    ledger = filled(2, vault)
    before = ledger.path.read_bytes()
    real_write = os.write
    calls = []

    def half_then_fail(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))  # a short write
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(LedgerWriteError) as info:
        ledger.append([decision("C7"), decision("C8")])
    monkeypatch.undo()
    assert len(calls) == 2
    assert info.value.exit_code == ExitCode.IO
    assert os.strerror(code) in str(info.value)
    assert ledger.path.read_bytes() == before
    ledger.append([decision("C7")])
    assert verify_ledger(ledger.path, ledger.state_dir).ok


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_failed_fsync_is_fatal_and_not_retried(vault: Path, monkeypatch, code: int) -> None:
    ledger = filled(2, vault)
    before = ledger.path.read_bytes()
    calls = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(LedgerWriteError, match="fsync of the ledger failed"):
        ledger.append([decision("C7")])
    monkeypatch.undo()
    assert len(calls) == 1  # never retried
    assert ledger.path.read_bytes() == before
    with ledger.transaction() as txn:
        assert txn.latest("C7") is None  # nothing was recorded
    assert verify_ledger(ledger.path, ledger.state_dir).ok


def test_one_fsync_per_transaction(vault: Path, monkeypatch) -> None:
    ledger = filled(1, vault)
    real_fsync, calls = os.fsync, []
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    ledger.append(decision(f"D{i}") for i in range(20))
    assert len(calls) == 1


# ---------------------------------------------------------------- processes


WORKER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from vault_tools.ledger.append import Ledger
    from vault_tools.vocabulary import CHECK_KEYS
    mode, worker, path, state = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    ledger = Ledger(path, state)

    def decision(cid):
        return {{"action": "REJECT", "actor": "w", "base": "sha256:" + "c" * 64,
                "checks": dict.fromkeys(CHECK_KEYS, True), "claim": None, "claim_id": cid,
                "comment": "", "note": "03_claims/" + cid + ".md", "preview": None}}

    if mode == "distinct":
        for i in range(50):
            with ledger.transaction() as txn:
                txn.append(decision(f"W{{worker}}-{{i}}"))
    else:  # every worker applies the same decisions: each must land exactly once
        for i in range(25):
            with ledger.transaction() as txn:
                for cid in (f"S{{i}}", f"S{{(i + 7) % 25}}"):
                    if txn.recorded(decision(cid)) is None:
                        txn.append(decision(cid))
    """
).format(root=str(ROOT))


def run_workers(ledger: Ledger, mode: str) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, mode, str(w), str(ledger.path), str(ledger.state_dir)]
        )
        for w in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]


def test_four_processes_append_concurrently(vault: Path) -> None:
    ledger = ledger_of(vault)
    run_workers(ledger, "distinct")
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert result.ok and result.events == 200, result.problems[:3]
    events = list(iter_events(ledger.path))
    assert len({e["id"] for e in events}) == 200
    assert {e["claim_id"] for e in events} == {f"W{w}-{i}" for w in range(4) for i in range(50)}


def test_four_processes_applying_the_same_decisions(vault: Path) -> None:
    ledger = ledger_of(vault)
    run_workers(ledger, "same")
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert result.ok, result.problems[:3]
    claims = [e["claim_id"] for e in iter_events(ledger.path)]
    assert sorted(claims) == sorted(f"S{i}" for i in range(25))  # each exactly once


def test_a_killed_lock_holder_leaves_no_stale_lock(vault: Path) -> None:
    ledger = filled(1, vault)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import sys,time; sys.path.insert(0, {str(ROOT)!r});"
         "from vault_tools.infra.lock import FileLock;"
         f"l = FileLock({str(ledger.lock_path)!r}); l.acquire(); print('held', flush=True);"
         "time.sleep(60)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    with pytest.raises(RefusedError):
        FileLock(ledger.lock_path, timeout=0.05).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with FileLock(ledger.lock_path, timeout=10) as lock:
        assert lock.held
    ledger.append([decision("C2")])
    assert verify_ledger(ledger.path, ledger.state_dir).ok


# ---------------------------------------------------------------- hypothesis

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
DECISIONS = st.lists(
    st.tuples(
        st.sampled_from(["C1", "C2", "C3", 'C"4\\']),
        st.sampled_from(["ACCEPT", "REJECT", "REPAIR"]),
        TEXT,
        TEXT,
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.slow
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(items=DECISIONS, batch=st.integers(1, 5))
def test_generated_appends_verify(tmp_path: Path, items: list, batch: int) -> None:
    case = tmp_path / f"h{time.monotonic_ns()}"
    ledger = ledger_of(case)
    ds = [
        decision(cid, action, comment=comment, note=f"03_claims/{note or 'x'}.md")
        for cid, action, comment, note in items
    ]
    for i in range(0, len(ds), batch):
        with ledger.transaction() as txn:
            for d in ds[i : i + batch]:
                if txn.recorded(d) is None:
                    txn.append(d)
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert result.ok, result.problems
    for ev in iter_events(ledger.path):
        EVENT_SCHEMA.validate(ev)


def test_memory_fast_path_never_hides_a_lost_appended_event(vault: Path) -> None:
    ledger = filled(3, vault)
    assert verify_ledger(ledger.path, ledger.state_dir).ok  # remembered head: line 3
    Ledger(ledger.path, vault / ".vt-other").append([decision("X1"), decision("X2")])
    ledger.append([decision("X3")])  # remembered, but beyond the remembered head
    lost = json.loads(lines_of(ledger)[-1])["id"]
    write_lines(ledger, lines_of(ledger)[:-1])
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert messages(result) == [
        f"event {lost} verified before is missing: ledger shortened or rewritten"
    ]


def test_memory_fast_path_after_verified_appends(vault: Path) -> None:
    ledger = filled(3, vault)
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    ledger.append([decision("X1")])  # extends the remembered head
    assert verify_ledger(ledger.path, ledger.state_dir).ok
    write_lines(ledger, lines_of(ledger)[:-1])
    assert "verified before is missing" in messages(verify_ledger(ledger.path, ledger.state_dir))[0]


def test_apply_refuses_a_ledger_whose_chain_is_broken(vault: Path) -> None:
    ledger = filled(4, vault)
    raw = lines_of(ledger)
    del raw[1]
    write_lines(ledger, raw)
    with (
        pytest.raises(IntegrityError, match=r"does not verify \(seq 2 expected, found 3") as exc,
        ledger.transaction(),
    ):
        pass
    assert exc.value.line == 2 and "run `vt ledger verify`" in exc.value.message


def test_a_second_verify_reproves_the_prefix_without_reparsing(vault: Path, monkeypatch) -> None:
    ledger = filled(6, vault, verified=True)
    ledger.append([decision("N1"), decision("N2")])
    Ledger(ledger.path, vault / ".vt-other").append([decision("N3")])
    calls = []
    real = ledger_verify.canonical
    monkeypatch.setattr(ledger_verify, "canonical", lambda obj: (calls.append(1), real(obj))[1])
    result = verify_ledger(ledger.path, ledger.state_dir)
    assert result.ok and result.events == 9
    assert len(calls) == 1  # only N3, appended through another state dir, was parsed


def test_a_moved_hash_field_in_the_prefix_is_caught(vault: Path) -> None:
    ledger = filled(3, vault, verified=True)
    raw = lines_of(ledger)
    body = raw[1][:-1]
    i = body.rfind(b',"hash":"')
    seg, cut = body[i : i + 81], body[:i] + body[i + 81 :]
    k = cut.rfind(b',"comment":')
    raw[1] = cut[:k] + seg + cut[k:] + b"\n"  # same bytes without the hash, same hash
    write_lines(ledger, raw)
    got = messages(verify_ledger(ledger.path, ledger.state_dir))
    assert got == ["line 2: not canonical JSON (re-serialised or hand-edited?)"]


def test_utc_now_is_the_current_second_in_utc() -> None:
    import time as clock
    from datetime import datetime, timezone

    before = int(clock.time())
    stamp = ledger_events.utc_now()
    after = int(clock.time())
    seconds = int(
        datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    )
    assert before <= seconds <= after
