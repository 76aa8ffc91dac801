"""Ledger merges over git: the merge driver function, resolve, re-chaining, conflicts."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ledger.test_ledger import decision as ledger_decision
from vault_tools.errors import IntegrityError
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.events import canonical, line_hash
from vault_tools.ledger.heads import claim_states, claim_statuses
from vault_tools.ledger.merge import merge_ledgers, resolve_ledger
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger


def decision(claim_id: str, action: str = "ACCEPT", **extra: object) -> dict:
    """test_ledger's decision, with a fixed time so merged ledgers compare byte for byte."""
    return ledger_decision(
        claim_id, action, **{"comment": "", "ts": "2026-11-29T10:00:00Z", **extra}
    )


def branch(root: Path, name: str, base: bytes, decisions: list[dict]) -> bytes:
    """The ledger of a branch: the base file plus its own appends."""
    ledger = Ledger(root / name / "decision_ledger.jsonl", root / name / ".vt")
    ledger.path.parent.mkdir(parents=True, exist_ok=True)
    ledger.path.write_bytes(base)
    with ledger.transaction() as txn:
        for d in decisions:
            if txn.recorded(d) is None:
                txn.append(d)
    return ledger.path.read_bytes()


def ids(data: bytes) -> list[str]:
    return [json.loads(x)["id"] for x in data.splitlines()]


def verifies(root: Path, data: bytes, state: Path | None = None) -> bool:
    path = root / "check" / "decision_ledger.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    result = verify_ledger(path, state or root / "check" / ".vt-fresh")
    shutil.rmtree(root / "check" / ".vt-fresh", ignore_errors=True)
    return result.ok


def git_merge_file(root: Path, ours: bytes, base: bytes, theirs: bytes, *flags: str) -> bytes:
    files = []
    for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
        (root / f"{name}.jsonl").write_bytes(data)
        files.append(str(root / f"{name}.jsonl"))
    out = subprocess.run(
        ["git", "merge-file", "-p", *flags, "-L", "ours", "-L", "base", "-L", "theirs", *files],
        capture_output=True,
    )
    assert out.returncode >= 0, out.stderr  # >0 is the number of conflicts
    return out.stdout


@pytest.fixture()
def three(tmp_path: Path) -> tuple[bytes, bytes, bytes]:
    base = branch(tmp_path, "base", b"", [decision("C1"), decision("C2"), decision("C3")])
    ours = branch(tmp_path, "ours", base, [decision("C1", "REJECT"), decision("C4")])
    theirs = branch(
        tmp_path, "theirs", base, [decision("C4"), decision("C5"), decision("C2", "REJECT")]
    )
    return base, ours, theirs


def test_merge_keeps_ours_then_theirs_new_events_rechained(tmp_path: Path, three) -> None:
    base, ours, theirs = three
    merged = merge_ledgers(base, ours, theirs)
    assert merged.startswith(ours)  # ours' lines are untouched
    theirs_new = [i for i in ids(theirs) if i not in ids(ours)]
    assert ids(merged) == ids(ours) + theirs_new
    assert len(theirs_new) == 2  # C4 was decided identically on both sides: kept once
    assert verifies(tmp_path, merged)
    for line in merged.splitlines():  # re-chained: a fresh hash for every moved line
        ev = json.loads(line)
        assert ev["hash"] == line_hash(ev) and line.decode() == canonical(ev)


def test_rechained_events_are_not_an_integrity_failure(tmp_path: Path, three) -> None:
    base, ours, theirs = three
    state = tmp_path / "theirs-clone" / ".vt"
    assert verifies(tmp_path, theirs, state)  # remembers theirs' ids at seq 4..6
    merged = merge_ledgers(base, ours, theirs)  # now at other seqs, with other hashes
    assert verifies(tmp_path, merged, state)


def test_resolve_git_conflict_markers_and_union(tmp_path: Path, three) -> None:
    base, ours, theirs = three
    merged = merge_ledgers(base, ours, theirs)
    conflicted = git_merge_file(tmp_path, ours, base, theirs)
    assert b"<<<<<<< ours" in conflicted
    assert resolve_ledger(conflicted) == merged
    diff3 = git_merge_file(tmp_path, ours, base, theirs, "--diff3")
    assert b"||||||| base" in diff3
    assert resolve_ledger(diff3) == merged
    union = git_merge_file(tmp_path, ours, base, theirs, "--union")
    assert b"<<<<<<<" not in union and not verifies(tmp_path, union)  # chain broken
    assert resolve_ledger(union) == merged
    assert resolve_ledger(merged) == merged  # idempotent


def test_real_git_merge_then_resolve(tmp_path: Path, three) -> None:
    base, ours, theirs = three
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo, capture_output=True, text=True,
        )  # fmt: skip

    git("init", "-q", "-b", "main")
    (repo / "ledger.jsonl").write_bytes(base)
    git("add", ".")
    git("commit", "-qm", "base")
    git("checkout", "-qb", "theirs")
    (repo / "ledger.jsonl").write_bytes(theirs)
    git("commit", "-qam", "theirs")
    git("checkout", "-q", "main")
    (repo / "ledger.jsonl").write_bytes(ours)
    git("commit", "-qam", "ours")
    assert git("merge", "theirs").returncode != 0  # a conflict, as on a server without driver
    assert resolve_ledger((repo / "ledger.jsonl").read_bytes()) == merge_ledgers(base, ours, theirs)


def test_merge_refuses_an_edited_line_instead_of_laundering_it(three) -> None:
    base, ours, theirs = three
    lines = theirs.splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"actor":"ann"', b'"actor":"eve"')
    with pytest.raises(IntegrityError, match="theirs line 6: hash mismatch"):
        merge_ledgers(base, ours, b"".join(lines))
    with pytest.raises(IntegrityError, match="hash mismatch"):
        resolve_ledger(ours + b"".join(lines[3:]))


def test_merge_refuses_a_side_that_dropped_a_base_event(three) -> None:
    base, ours, theirs = three
    with pytest.raises(IntegrityError, match="theirs no longer holds event"):
        merge_ledgers(base, ours, b"")


def test_two_branches_superseding_the_same_event_conflict_until_a_new_decision(
    tmp_path: Path,
) -> None:
    base = branch(tmp_path, "base", b"", [decision("C1"), decision("C2")])
    ours = branch(tmp_path, "ours", base, [decision("C1", "REJECT", actor="ann")])
    theirs = branch(tmp_path, "theirs", base, [decision("C1", "REPAIR", actor="bob")])
    merged = merge_ledgers(base, ours, theirs)
    events = [json.loads(x) for x in merged.splitlines()]
    states = claim_states(events)
    assert states["C1"].status == "CONFLICT" and len(states["C1"].contenders) == 2
    assert states["C2"].status == "ACCEPTED"
    # a decision that saw only one head leaves the other one standing
    heads = states["C1"].contenders
    partial = branch(
        tmp_path, "partial", merged, [decision("C1", "ACCEPT", actor="cy", supersedes=heads[1])]
    )
    states = claim_states(iter_events(tmp_path / "partial" / "decision_ledger.jsonl"))
    assert states["C1"].status == "CONFLICT" and states["C1"].contenders[0] == heads[0]
    assert verifies(tmp_path, partial)
    # a decision made after the merge supersedes both heads and settles the claim
    after = branch(
        tmp_path, "after", merged, [decision("C1", "ACCEPT", actor="cy", supersedes=sorted(heads))]
    )
    assert claim_statuses(iter_events(tmp_path / "after" / "decision_ledger.jsonl")) == {
        "C1": "ACCEPTED",
        "C2": "ACCEPTED",
    }
    assert verifies(tmp_path, after)


def test_statuses_without_conflict() -> None:
    e = [
        {"id": "a", "claim_id": "C", "action": "ACCEPT", "supersedes": None},
        {"id": "b", "claim_id": "C", "action": "REPAIR", "supersedes": "a"},
        {"id": "c", "claim_id": "D", "action": "REJECT", "supersedes": None},
        {"id": "d", "claim_id": "C", "action": "REVERT", "supersedes": "b", "reverts": "a"},
    ]
    assert claim_statuses(e[:2]) == {"C": "REPAIRED"}
    assert claim_statuses(e[:3]) == {"C": "REPAIRED", "D": "REJECTED"}
    # reverting an event that was already superseded changes nothing
    assert claim_statuses(e) == {"C": "REPAIRED", "D": "REJECTED"}
    e[3]["reverts"] = "b"
    assert claim_statuses(e)["C"] == "REVERTED"


SIDE = st.lists(
    st.tuples(st.sampled_from(["C1", "C2", "C3", "C4"]), st.sampled_from(["ACCEPT", "REJECT"])),
    max_size=5,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(base_d=SIDE, ours_d=SIDE, theirs_d=SIDE)
def test_generated_merges(base_d: list, ours_d: list, theirs_d: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = branch(root, "base", b"", [decision(c, a) for c, a in base_d])
        ours = branch(root, "ours", base, [decision(c, a) for c, a in ours_d])
        theirs = branch(root, "theirs", base, [decision(c, a) for c, a in theirs_d])
        merged = merge_ledgers(base, ours, theirs)
        got = ids(merged)
        assert len(got) == len(set(got))
        assert set(got) == set(ids(ours)) | set(ids(theirs))
        assert verifies(root, merged)
        for flags in ((), ("--diff3",), ("--union",)):
            assert resolve_ledger(git_merge_file(root, ours, base, theirs, *flags)) == merged
