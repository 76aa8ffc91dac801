"""Two reviewers decide the same claims in their own clones without seeing each other,
over real git with vt's merge driver; `vt stats` of the merged ledger gives the kappa and
alpha computed by hand, and a fresh clone (a rebuilt store) the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import LEDGER, seed_origin, set_action, set_line
from tests.integrations.git.test_same_decision_twice import clone_as
from vault_tools.vocabulary import CHECK_KEYS

pytestmark = pytest.mark.usefixtures("isolated_git")

NOTES = ("DV1-0001", "DV1-0002", "DV1-0003", "DV1-0004", "IX2-0328")
ALICE = ("APPROVE", "APPROVE", "REJECT", "REJECT", "APPROVE")
BOB = ("APPROVE", "APPROVE", "REJECT", "APPROVE", "APPROVE")


def decide(clone: Path, actions: tuple[str, ...], who: str) -> None:
    for note, action in zip(NOTES, actions, strict=True):
        set_action(clone, f"{note}.md", action)
        for check in CHECK_KEYS:  # the checklist done, so that an approval is recorded
            set_line(clone, f"{note}.md", check, "true")
    done = run_vt("apply", vault=clone)
    assert done.returncode == 0, done.stdout + done.stderr
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", f"{who} decides")


def stats_of(clone: Path) -> dict:
    done = run_vt("stats", "--json", "--min-claims", "5", vault=clone, check=0)
    return json.loads(done.stdout)


def test_kappa_and_alpha_from_a_merged_ledger(tmp_path: Path) -> None:
    seed_origin(tmp_path)
    alice = clone_as(tmp_path, "alice", "alice")
    bob = clone_as(tmp_path, "bob", "bob")
    decide(alice, ALICE, "alice")
    decide(bob, BOB, "bob")
    git(alice, "push", "-q", "origin", "main")
    pulled = git(bob, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    if pulled.returncode != 0:  # the notes themselves: either side's text will do
        listed = git(bob, "diff", "--name-only", "--diff-filter=U", "-z").stdout
        unmerged = [p for p in listed.split("\0") if p]
        assert unmerged and LEDGER not in unmerged, pulled.stdout + pulled.stderr
        for path in unmerged:
            git(bob, "checkout", "--ours", "--", path)
        git(bob, "add", "-A")
        git(bob, "commit", "-q", "--no-edit")
    assert run_vt("ledger", "verify", vault=bob).returncode == 0
    stats = stats_of(bob)
    agreement = stats["review"]["agreement"]
    # alice A A R R A, bob A A R A A: p_o 4/5, p_e 3/5 * 4/5 + 2/5 * 1/5 = 14/25,
    # kappa = (20/25 - 14/25) / (11/25) = 6/11
    (pair,) = agreement["pairs"]
    assert pair["reviewers"] == ["alice", "bob"] and pair["agreed"] == 4
    assert pair["kappa"] == {"claims": 5, "value": round(6 / 11, 4), "verdict": None}
    # pooled APPROVE 7 of 10, REJECT 3; one unit disagrees: alpha = 1 - 9 * 2 / 42 = 4/7
    assert agreement["alpha"]["value"] == round(4 / 7, 4)
    assert stats["pipeline"]["outcomes"]["conflict"] == 1  # DV1-0004, decided differently
    git(bob, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", "origin.git", "fresh")
    fresh = stats_of(tmp_path / "fresh")
    assert fresh == stats
