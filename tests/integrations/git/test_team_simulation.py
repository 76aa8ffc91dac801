"""A team over git, simulated: four reviewers in four clones of one vault (real git, a
bare origin), a seeded sequence of decide / apply / commit and pull / push steps, so
that decisions are made without seeing each other and pushes interleave. One clone
never ran `vt init` (no hooks, no merge drivers): its pulls leave conflict markers,
which it commits and pushes as they are, and repairs later with `vt ledger resolve`.

Asserted at the end: every clone holds the same ledger, byte for byte; no event appended
anywhere is lost or comes back with another `ts`; a claim is CONFLICT exactly when its
heads decide differently; every CONFLICT is settled by deciding again, from whichever
clone; and after a pull the knowledge-base blocks are already fresh. Deterministic: the
steps come from a seeded generator and nothing depends on timing.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.conftest import git, render_note
from tests.integrations.git.test_merge_git import EXAMPLE_VAULT, LEDGER, configure
from vault_tools.config import load_settings
from vault_tools.integrations.git.hook import resolve_file
from vault_tools.integrations.init import init_vault
from vault_tools.ledger.heads import claim_states, same_decision
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.apply import apply_notes
from vault_tools.review.status import UNMARKED, status
from vault_tools.store.claims import ClaimStore
from vault_tools.store.refresh import refresh
from vault_tools.vocabulary import CONFLICT

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.slow]

NAMES = ("alice", "bob", "carol", "dave")
WITHOUT_VT = "dave"
CLAIMS = [f"SIM-{n:02d}" for n in range(1, 7)]
STEPS = 24


class Team:
    def __init__(self, tmp_path: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        self.root = tmp_path
        self.appended: dict[str, str] = {}  # every event any clone appended: id -> ts
        self.converging = False
        self.clones = self._clones()

    def _clones(self) -> dict[str, Path]:
        seed = self.root / "seed"
        shutil.copytree(EXAMPLE_VAULT, seed, ignore=shutil.ignore_patterns(".vt"))
        for claim_id in CLAIMS:
            note = render_note(claim_id=claim_id, review_action="PENDING", reviewer="")
            (seed / "03_claims" / f"{claim_id}.md").write_text(note, encoding="utf-8")
        git(seed, "init", "-q", "-b", "main")
        configure(seed, "seed")
        init_vault(load_settings(seed))
        git(seed, "add", "-A")
        git(seed, "commit", "-qm", "vault")
        git(self.root, "clone", "-q", "--bare", str(seed), "origin.git")
        clones = {}
        for name in NAMES:
            git(self.root, "clone", "-q", "origin.git", name)
            clone = self.root / name
            configure(clone, name)
            if name != WITHOUT_VT:
                init_vault(load_settings(clone))
            clones[name] = clone
        return clones

    # -- what a reviewer does

    def decide(self, name: str, claim_id: str, action: str) -> None:
        clone = self.clones[name]
        if name == WITHOUT_VT and _has_markers(clone / LEDGER):
            self.repair(name)
        path = clone / "03_claims" / f"{claim_id}.md"
        lines = path.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if line.startswith("review_action:"):
                lines[i] = f"review_action: {action}"
            elif line.startswith("reviewer:"):
                lines[i] = f'reviewer: "{name}"'
        path.write_text("\n".join(lines), encoding="utf-8")
        report = apply_notes(load_settings(clone), [path])
        assert not report.refused, report.refused
        self.appended.update((ev["id"], ev["ts"]) for ev in report.events)
        self.commit(name, f"{name}: {claim_id} {action}")

    def repair(self, name: str) -> None:
        """The teammate without vt's hooks finds the markers they committed, and
        repairs the ledger (`vt ledger resolve`) before deciding again."""
        result = resolve_file(load_settings(self.clones[name]))
        assert result.changed
        self.commit(name, "resolve the ledger")

    def commit(self, name: str, message: str) -> None:
        clone = self.clones[name]
        git(clone, "add", "-A")
        if git(clone, "diff", "--cached", "--quiet", check=False).returncode:
            git(clone, "commit", "-qm", message)  # through vt's pre-commit hook, if any

    def sync(self, name: str) -> None:
        """Commit what is there (a ledger the post-merge hook repaired, blocks it
        refreshed), pull (a merge), settle what git left the ordinary way, push."""
        clone = self.clones[name]
        self.commit(name, "what the last pull brought, refreshed")
        pulled = git(clone, "pull", "-q", "--no-rebase", "origin", "main", check=False)
        if pulled.returncode != 0:
            self._resolve(name)
        if self.converging and name == WITHOUT_VT and _has_markers(clone / LEDGER):
            self.repair(name)  # told to, at last: `vt ledger resolve`
        done = git(clone, "push", "-q", "origin", "main", check=False)
        assert done.returncode == 0, done.stderr

    def _resolve(self, name: str) -> None:
        clone = self.clones[name]
        listed = git(clone, "diff", "--name-only", "--diff-filter=U", "-z").stdout
        unmerged = [path for path in listed.split("\0") if path]
        assert unmerged, "a pull failed with nothing to resolve"
        for path in unmerged:
            if path == LEDGER:
                # only the clone without the driver gets a ledger conflict, and commits
                # the markers as they are
                assert name == WITHOUT_VT
                continue
            side = self.rng.choice(["--ours", "--theirs"])
            git(clone, "checkout", side, "--", path)
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "--no-edit")

    # -- what is checked

    def converge(self) -> None:
        """Everyone syncs until every clone is at origin's commit, nothing to commit."""
        self.converging = True
        for _ in range(4):
            for name in NAMES:
                self.sync(name)
            origin = git(self.root / "origin.git", "rev-parse", "main").stdout
            if all(
                not _dirty(clone) and git(clone, "rev-parse", "HEAD").stdout == origin
                for clone in self.clones.values()
            ):
                return
        raise AssertionError("the clones did not converge")


def _dirty(clone: Path) -> bool:
    return bool(git(clone, "status", "--porcelain").stdout.strip())


def _has_markers(path: Path) -> bool:
    return path.exists() and b"\n<<<<<<< " in b"\n" + path.read_bytes()


def _heads(events: list[dict]) -> dict[str, list[dict]]:
    """Each claim's heads, computed here from scratch: its events no other names."""
    named = {
        sid
        for ev in events
        for sid in (
            [ev["supersedes"]] if isinstance(ev["supersedes"], str) else ev["supersedes"] or []
        )
    }
    heads: dict[str, list[dict]] = {}
    for ev in events:
        if ev["id"] not in named:
            heads.setdefault(ev["claim_id"], []).append(ev)
    return heads


def _check_converged(team: Team) -> list[dict]:
    ledgers = {name: (clone / LEDGER).read_bytes() for name, clone in team.clones.items()}
    assert len(set(ledgers.values())) == 1, "the clones' ledgers differ"
    assert not _has_markers(team.clones["alice"] / LEDGER)
    events = list(iter_events(team.clones["alice"] / LEDGER))
    stamps = {ev["id"]: ev["ts"] for ev in events}
    assert len(stamps) == len(events), "an event is in the ledger twice"
    lost = set(team.appended) - set(stamps)
    assert not lost, f"events lost: {sorted(lost)}"
    retimed = {i for i, ts in team.appended.items() if stamps[i] != ts}
    assert not retimed, f"events back with another ts: {sorted(retimed)}"
    for clone in team.clones.values():  # each with its own memory of what it trusted
        settings = load_settings(clone)
        result = verify_ledger(settings.ledger_path, settings.state_dir)
        assert result.ok, result.problems
    return events


def _fresh_blocks(team: Team) -> None:
    """After the last pull, the post-merge hook left nothing for a refresh to write, and
    every note is marked as the merged ledger records it."""
    for name, clone in team.clones.items():
        if name != WITHOUT_VT:
            settings = load_settings(clone)
            assert refresh(settings).kb_notes_written == [], name
            with ClaimStore.open(settings) as store:
                store.catch_up()
                report = status(settings, store)
            unmarked = [d["path"] for d in report.disagreements if d["kind"] == UNMARKED]
            assert unmarked == [], (name, unmarked)


@pytest.mark.parametrize("seed", [7])
def test_a_team_converges_and_settles_every_conflict(tmp_path: Path, seed: int) -> None:
    team = Team(tmp_path, seed)
    rng = team.rng
    for _ in range(STEPS):
        name = rng.choice(NAMES)
        if rng.random() < 0.6:
            # mostly APPROVE: two reviewers often agree without seeing each other
            team.decide(name, rng.choice(CLAIMS), rng.choice(["APPROVE"] * 3 + ["REJECT"]))
        else:
            team.sync(name)
    team.converge()
    events = _check_converged(team)
    _fresh_blocks(team)

    # CONFLICT exactly when the heads decide differently; alike heads are an agreement
    states = claim_states(events)
    heads = _heads(events)
    assert set(states) == set(heads)
    conflicts = []
    for claim_id, state in states.items():
        alike = all(same_decision(heads[claim_id][0], h) for h in heads[claim_id])
        assert [h["id"] for h in state.heads] == [h["id"] for h in heads[claim_id]]
        assert (state.status == CONFLICT) == (not alike), claim_id
        if state.status == CONFLICT:
            conflicts.append(claim_id)
    agreements = [c for c, hs in heads.items() if len(hs) > 1 and c not in conflicts]
    assert conflicts and agreements  # the seeds are chosen to show both

    # settle each CONFLICT from a different clone, the one without vt among them
    for n, claim_id in enumerate(conflicts):
        name = NAMES[(n + 3) % len(NAMES)]
        team.sync(name)
        team.decide(name, claim_id, rng.choice(["APPROVE", "REJECT"]))
        team.sync(name)
    team.converge()
    events = _check_converged(team)
    _fresh_blocks(team)
    states = claim_states(events)
    assert [c for c, s in states.items() if s.status == CONFLICT] == []
    for claim_id in conflicts:
        (head,) = states[claim_id].heads
        assert isinstance(head["supersedes"], list)  # it superseded every head
