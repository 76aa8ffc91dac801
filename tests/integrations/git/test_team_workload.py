"""The team workload of bench/team_workload.py, one seed at a time: five real clones of
one vault over real git, real `vt` processes, interleaved seeded rounds (pull, decide as
the clone's reviewer, a plain `vt apply`, commit, push), and every invariant of
docs/team.md checked after every pull and at the end. The full workload (3 seeds x 40
rounds x the three set-ups) is the benchmark script; here one seed of each set-up, kept
short enough for the suite.

Each run asserts no violation at all; the message lists them by kind with the first few.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import team_workload  # noqa: E402
from team_workload import LEDGER, Result, Team, ledger_counts, run_workload  # noqa: E402

pytestmark = [pytest.mark.usefixtures("isolated_git"), pytest.mark.slow]


def _violations(result: Result) -> str:
    shown = [f"{v.kind} ({v.clone}, step {v.step}): {v.detail}" for v in result.violations[:12]]
    return f"{result.by_kind()}\n" + "\n".join(shown)


def test_a_team_that_ran_vt_init_everywhere_never_blocks(tmp_path: Path) -> None:
    """Every clone ran `vt init`: enough rounds that teammates reverse each other's
    decisions and two clones settle the same CONFLICT without seeing each other."""
    result = run_workload(tmp_path, "init", seed=3, rounds=8, notes=8)
    assert result.edits["reverse"] and result.edits["settle"], result.edits
    assert result.reversals > 0 and result.concurrent_settles > 0, result.summary()
    assert result.violations == [], _violations(result)


def test_a_team_with_two_clones_without_vt_init(tmp_path: Path) -> None:
    """r4 and r5 never run `vt init`, and decide like everyone else."""
    result = run_workload(tmp_path, "skip", seed=2, rounds=5, notes=8)
    assert result.edits["reverse"], result.edits
    actors = {ev["actor"] for ev in _events(tmp_path / "r1")}
    assert actors & {"r4", "r5"}, actors
    assert result.violations == [], _violations(result)


def test_a_signing_team_with_a_key_each(tmp_path: Path) -> None:
    """Each reviewer signs with their own ed25519 key, added to allowed_signers in their
    own commit (all five at once), and vt.toml requires signatures."""
    result = run_workload(tmp_path, "sign", seed=2, rounds=4, notes=8)
    signers = (tmp_path / "r1" / "05_ledger" / "allowed_signers").read_text("utf-8")
    assert sorted(line.split()[0] for line in signers.splitlines()) == [
        f"r{n}" for n in range(1, 6)
    ]
    assert result.events and all(ev.get("sig") for ev in _events(tmp_path / "r1"))
    assert result.violations == [], _violations(result)


def _events(clone: Path) -> list[dict]:
    return team_workload.read_events(clone / LEDGER)


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    """The invariants are not vacuous: a lost event, an event no clone appended, a file a
    pull leaves behind and a tampered ledger are each reported, and a vt exit 3 on a
    ledger that truly does not verify is not blamed on the gate."""
    team = Team(tmp_path, "init", seed=1, clones=2, notes=2)
    team.set_up()
    r1, r2 = team.clones["r1"], team.clones["r2"]
    team.pull(r1)
    team.work(r1)  # at least one event, by r1
    assert {ev["actor"] for ev in _events(r1.path)} == {"r1"}
    team.appended["sha256:" + "0" * 64] = {"r2"}  # an event nobody has
    del team.appended[_events(r1.path)[0]["id"]]  # and one nobody appended
    (r2.path / "left-behind.txt").write_text("x", encoding="utf-8")
    team.pull(r2)
    ledger = r2.path / LEDGER
    first, rest = ledger.read_bytes().split(b"\n", 1)
    ev = json.loads(first)
    ev["comment"] = "changed after the fact"
    ledger.write_bytes(json.dumps(ev, ensure_ascii=False).encode() + b"\n" + rest)
    team.check_clone(r2)
    team.final_checks()
    kinds = {v.kind for v in team.result.violations}
    planted = {"lost", "unattributed", "dirty-after-pull", "verify", "ledgers-differ"}
    assert planted <= kinds, kinds
    assert "exit-3-on-good-ledger" not in kinds, _violations(team.result)


def test_a_seed_gives_the_same_run(tmp_path: Path) -> None:
    """Everything but the timing is the seed's: the same steps, edits and outcomes."""

    def outcome(result: Result) -> dict:
        figures = result.summary()
        del figures["wall_s"], figures["seconds"]
        figures["kinds"] = [(v.kind, v.clone, v.step) for v in result.violations]
        return figures

    runs = [
        run_workload(tmp_path / str(n), "init", seed=4, rounds=3, clones=2, notes=3) for n in (1, 2)
    ]
    assert outcome(runs[0]) == outcome(runs[1])
    assert runs[0].edits and runs[0].events


def test_the_script_prints_its_figures(tmp_path: Path) -> None:
    """bench/team_workload.py as a user runs it: one small run, its figures as JSON."""
    command = [sys.executable, str(REPO / "bench" / "team_workload.py"), "--seeds", "5"]
    command += ["--rounds", "1", "--setups", "init", "--clones", "2", "--notes", "3"]
    command += ["--json", "--dir", str(tmp_path / "runs")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["setup"], run["seed"], run["rounds"], run["clones"]) == ("init", 5, 1, 2)
    assert run["vt_commands"] > 0 and run["pulls"] >= 3 and run["events"] > 0
    assert "init  seed 5: 1 rounds" in done.stderr  # the text summary, on stderr with --json
    saved = tmp_path / "runs.json"
    saved.write_text(done.stdout, encoding="utf-8")
    shown = subprocess.run([*command[:2], "--table", str(saved)], capture_output=True, text=True)
    row = f"| `init` | 1 | {run['vt_commands']} | {run['exit3']} | "
    assert shown.returncode == 0 and row in shown.stdout, shown.stdout + shown.stderr


def test_counting_reversals_and_concurrent_settles() -> None:
    def ev(i: str, actor: str, action: str, supersedes: object = None) -> dict:
        return {"id": i, "actor": actor, "action": action, "supersedes": supersedes}

    events = [
        ev("a", "r1", "ACCEPT"),
        ev("b", "r2", "REJECT"),  # r1 and r2 disagree: a CONFLICT
        ev("c", "r3", "ACCEPT", ["a", "b"]),  # r3 settles it ...
        ev("d", "r4", "REJECT", ["a", "b"]),  # ... and so does r4, not seeing r3
        ev("e", "r4", "ACCEPT", "d"),  # r4 changes their own mind: no reversal
        ev("f", "r5", "REJECT", "e"),  # r5 reverses r4
    ]
    assert ledger_counts(events) == (3, 2, 1)
