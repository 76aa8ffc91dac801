"""The same decision appended in two clones a second apart (one reviewer, two machines):
one id, two copies with different `ts`. The merge keeps one; every clone that trusted the
other copy goes on working, and the history audits clean in a fresh clone. Real git,
real `vt` processes, real seconds between the two appends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import (
    LEDGER,
    commit_all,
    configure,
    seed_origin,
    set_action,
)

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.usefixtures("isolated_git")


def clone_as(tmp_path: Path, folder: str, user: str) -> Path:
    git(tmp_path, "clone", "-q", "origin.git", folder)
    clone = tmp_path / folder
    configure(clone, user)
    assert run_vt("init", vault=clone).returncode == 0
    return clone


def stamps(clone: Path, claim_id: str = "DV1-0004") -> list[tuple[str, str]]:
    lines = (clone / LEDGER).read_text(encoding="utf-8").splitlines()
    return [(ev["id"], ev["ts"]) for ev in map(json.loads, lines) if ev["claim_id"] == claim_id]


def test_one_reviewer_deciding_in_two_clones_blocks_neither(tmp_path: Path) -> None:
    seed_origin(tmp_path)
    laptop = clone_as(tmp_path, "laptop", "alice")
    desktop = clone_as(tmp_path, "desktop", "alice")
    for clone in (laptop, desktop):  # the same decision, made twice, a second apart
        set_action(clone, "DV1-0004.md", "REJECT")
        assert run_vt("apply", vault=clone).returncode == 0
        assert run_vt("status", vault=clone).returncode == 0  # every line trusted, ts included
        commit_all(clone, "alice rejects DV1-0004")
        time.sleep(1.1)
    (mine,), (theirs,) = (stamps(c) for c in (laptop, desktop))
    assert mine[0] == theirs[0] and mine[1] != theirs[1]  # one id, two ts
    git(laptop, "push", "-q", "origin", "main")
    pulled = git(desktop, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    git(desktop, "push", "-q", "origin", "main")
    git(laptop, "pull", "-q", "--no-rebase", "origin", "main")
    for clone in (laptop, desktop):
        ids = [i for i, _ in stamps(clone)]
        assert ids.count(mine[0]) == 1  # the merge kept one copy
        for command in (("ledger", "verify"), ("status",), ("apply",)):
            done = run_vt(*command, vault=clone)
            assert done.returncode == 0, (clone.name, command, done.stdout + done.stderr)
    git(tmp_path, "clone", "-q", "origin.git", "fresh")
    audited = run_vt("ledger", "audit", vault=tmp_path / "fresh")
    assert audited.returncode == 0, audited.stdout + audited.stderr
