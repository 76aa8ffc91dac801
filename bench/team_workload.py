#!/usr/bin/env python3
"""A team reviewing one vault over git, simulated: the workload of docs/team.md.

    python bench/team_workload.py [--seeds 1 2 3] [--rounds 40] [--setups init skip sign]
                                  [--clones 5] [--notes 24] [--json] [--dir DIR]
    python bench/team_workload.py --table RUNS.json   # docs/team.md's table of a --json run

A bare origin and `--clones` clones of one vault (examples/vault with every decision
reset to PENDING, plus `--notes` claim notes made from its DV1-0001), each clone with its
own `user.name` rN. Real git and real `vt` processes (the console script beside the
Python running this), in a git environment of their own (no user or system config).
Rounds interleave: each step picks a clone (seeded) and moves it on, either pulling or,
once it has pulled, doing its round's work: edit 3-10 notes as rN (fresh APPROVE/REJECT
decisions with the four checks true, reversals of a teammate's decision, settling a
claim `vt status` shows in CONFLICT), a plain `vt apply`, `git add -A`, `git commit`,
`git push`; a rejected push is pulled, merged and pushed again. A note git stops on is
resolved by taking one side (chosen by the seed); a ledger git stops on (a clone
without the driver) by `vt ledger resolve`; allowed_signers by keeping both sides'
lines. At the end everyone pulls until every clone is at origin's commit.

Set-ups: `init` every clone runs `vt init`; `skip` the last two clones never do;
`sign` every clone runs `vt init --signer-key` with its own ed25519 key (commits it; the
clones add their keys at once), `gpg.format ssh` and `user.signingkey` in its git
config, and vt.toml says `[signing] required = true`.

What must hold is checked after every pull (in the clone that pulled) and at the end (in
every clone); each breach is a violation of a kind (`verify`, `exit-3-on-good-ledger`,
`actor`, `unrecorded`, `lost`, `duplicated`, `unattributed`, `ledgers-differ`,
`hidden-conflict`, `false-conflict`, `dirty-after-pull`, `pull-refused`, `commit-refused`,
`agreement-conflict`, `signers-conflict`, `ledger-conflict`, `other-conflict`,
`untold-no-drivers`, `status-unreadable`, `aborted`), collected, never the end of the
run: docs/team.md says what each means.

Deterministic for a seed except for time: every choice comes from the seeded generator
and from what the clones hold, never from a clock or an event's id.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from vault_tools.vocabulary import CHECK_KEYS, LEDGER_ACTION_OF

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_VAULT = REPO / "examples" / "vault"
TEMPLATE_ID = "DV1-0001"
CLAIMS = "03_claims"
LEDGER = "05_ledger/decision_ledger.jsonl"
SIGNERS = "05_ledger/allowed_signers"
SETUPS = ("init", "skip", "sign")
SKIPPING = 2  # clones that never run `vt init` in the `skip` set-up
DECIDED = ("APPROVE", "REJECT")
PUSH_TRIES = 12

_FRONT = re.compile(r"\A---\r?\n(.*?\r?\n)---\r?\n", re.S)


@dataclass(slots=True)
class Violation:
    kind: str
    clone: str
    step: int
    detail: str


@dataclass(slots=True)
class VtRun:
    clone: str
    args: list[str]
    code: int
    stderr: str


@dataclass
class Result:
    setup: str
    seed: int
    rounds: int
    clones: int
    vt_runs: list[VtRun] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    pulls: int = 0
    pulls_refused: int = 0
    pushes_rejected: int = 0
    note_conflicts: int = 0
    edits: Counter[str] = field(default_factory=Counter)
    events: int = 0
    reversals: int = 0
    settles: int = 0
    concurrent_settles: int = 0
    wall: float = 0.0
    seconds: Counter[str] = field(default_factory=Counter)  # wall time by command

    @property
    def exit3(self) -> int:
        return sum(1 for run in self.vt_runs if run.code == 3)

    def by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(v.kind for v in self.violations).items()))

    def summary(self) -> dict:
        return {
            "setup": self.setup,
            "seed": self.seed,
            "rounds": self.rounds,
            "clones": self.clones,
            "vt_commands": len(self.vt_runs),
            "exit_codes": dict(sorted(Counter(run.code for run in self.vt_runs).items())),
            "exit3": self.exit3,
            "violations": self.by_kind(),
            "pulls": self.pulls,
            "pulls_refused": self.pulls_refused,
            "pushes_rejected": self.pushes_rejected,
            "note_conflicts": self.note_conflicts,
            "edits": dict(sorted(self.edits.items())),
            "events": self.events,
            "reversals": self.reversals,
            "settles": self.settles,
            "concurrent_settles": self.concurrent_settles,
            "wall_s": round(self.wall, 1),
            "seconds": {k: round(v, 1) for k, v in self.seconds.most_common()},
        }


@dataclass(slots=True)
class Clone:
    name: str
    path: Path
    drivers: bool  # ran `vt init`: hooks and merge drivers installed
    pulled: bool = False
    conflicts: list[str] = field(default_factory=list)  # CONFLICT claims at its last status
    told: bool = False  # a vt command said it lacks `vt init`


def vt_command() -> list[str]:
    """The `vt` console script of the environment running this, else its module."""
    script = Path(sys.executable).parent / "vt"
    return [str(script)] if script.exists() else [sys.executable, "-m", "vault_tools"]


def read_events(path: Path) -> list[dict]:
    """The ledger's events in file order; conflict-marker and torn lines left out."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    events = []
    for raw in data.split(b"\n"):
        if raw.startswith(b"{"):
            try:
                events.append(json.loads(raw))
            except ValueError:
                continue
    return events


def superseded(ev: dict) -> list[str]:
    named = ev.get("supersedes")
    if named is None:
        return []
    return [named] if isinstance(named, str) else list(named)


def frontmatter(text: str) -> dict[str, str]:
    found = _FRONT.match(text)
    values = {}
    for line in (found.group(1) if found else "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip()] = value.strip().strip('"')
    return values


def decide_text(text: str, action: str, reviewer: str) -> str:
    """The note as a reviewer leaves it in Obsidian: the action, their name, every check."""
    found = _FRONT.match(text)
    assert found, "a review note without properties"
    head = found.group(0)
    head = re.sub(r"(?m)^review_action:.*$", f"review_action: {action}", head, count=1)
    head = re.sub(r"(?m)^reviewer:.*$", f'reviewer: "{reviewer}"', head, count=1)
    for key in CHECK_KEYS:
        head = re.sub(rf"(?m)^{key}:.*$", f"{key}: true", head, count=1)
    return head + text[found.end() :]


def ledger_counts(events: list[dict]) -> tuple[int, int, int]:
    """(reversals, settles, concurrent settles) in a final ledger: a reversal supersedes a
    decision of another actor with another action; a settle supersedes several heads;
    two settles are concurrent when they supersede a head in common, neither seeing
    the other."""
    by_id = {ev["id"]: ev for ev in events}
    reversals = 0
    for ev in events:
        for old in superseded(ev):
            before = by_id.get(old)
            if before and before["actor"] != ev["actor"] and before["action"] != ev["action"]:
                reversals += 1
                break
    settles = [ev for ev in events if len(superseded(ev)) > 1]
    concurrent = 0
    for i, a in enumerate(settles):
        for b in settles[i + 1 :]:
            shared = set(superseded(a)) & set(superseded(b))
            if shared and a["id"] not in superseded(b) and b["id"] not in superseded(a):
                concurrent += 1
    return reversals, len(settles), concurrent


class Team:
    """One run of the workload in `root` (which it fills)."""

    def __init__(self, root: Path, setup: str, seed: int, clones: int = 5, notes: int = 24) -> None:
        assert setup in SETUPS, setup
        self.root, self.setup, self.seed = root, setup, seed
        self.rng = random.Random(seed)
        self.vt = vt_command()
        self.env = self._environment()
        self.names = [f"r{n}" for n in range(1, clones + 1)]
        self.claims = [f"TEAM-{n:03d}" for n in range(1, notes + 1)]
        self.result = Result(setup, seed, 0, clones)
        self.appended: dict[str, set[str]] = {}  # id -> the clones that appended it
        self.step = 0
        self.clones: dict[str, Clone] = {}

    # -- the environment

    def _environment(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GIT_") and k not in ("VT_VAULT", "SSH_AUTH_SOCK")
        }
        config = self.root / "gitconfig"
        config.write_text(
            "[init]\n\tdefaultBranch = main\n[pull]\n\trebase = false\n"
            "[advice]\n\tdetachedHead = false\n",
            encoding="utf-8",
        )
        env.update(GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
        return env

    def git(self, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        started = time.perf_counter()
        done = subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True)
        self.result.seconds[f"git {args[0]}"] += time.perf_counter() - started
        if check and done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} in {cwd.name}: {done.stderr.strip()}")
        return done

    def run_vt(self, clone: Clone, *args: str) -> subprocess.CompletedProcess[str]:
        started = time.perf_counter()
        done = subprocess.run(
            [*self.vt, *args], cwd=clone.path, env=self.env, capture_output=True, text=True
        )
        self.result.seconds[f"vt {args[0]}"] += time.perf_counter() - started
        self.result.vt_runs.append(VtRun(clone.name, list(args), done.returncode, done.stderr))
        if done.returncode == 3 and self.ledger_is_good(clone):
            first = done.stderr.strip().splitlines()[:1]
            self.violate("exit-3-on-good-ledger", clone, f"vt {' '.join(args)}: {first}")
        elif done.returncode not in (0, 1, 3):
            self.violate(f"exit-{done.returncode}", clone, done.stderr.strip()[-300:])
        return done

    def ledger_is_good(self, clone: Clone) -> bool:
        """Does the clone's ledger verify from scratch, signatures included, without the
        memory of what its `.vt/` trusted before?"""
        from vault_tools.config import load_settings
        from vault_tools.errors import VtError
        from vault_tools.ledger.signatures import SignaturePolicy
        from vault_tools.ledger.verify import verify_ledger

        ledger = clone.path / LEDGER
        if not ledger.exists():
            return True
        with tempfile.TemporaryDirectory(prefix="team-verify-") as tmp:
            copy = Path(tmp) / "ledger.jsonl"
            shutil.copyfile(ledger, copy)
            try:
                policy = SignaturePolicy.of(load_settings(clone.path))
                return verify_ledger(copy, Path(tmp) / "state", policy).ok
            except VtError:
                return False

    def violate(self, kind: str, clone: Clone, detail: str) -> None:
        self.result.violations.append(Violation(kind, clone.name, self.step, detail))

    # -- the set-up

    def set_up(self) -> None:
        seed = self.root / "seed"
        shutil.copytree(EXAMPLE_VAULT, seed, ignore=shutil.ignore_patterns(".vt"))
        notes = seed / CLAIMS
        for path in sorted(notes.glob("*.md")):  # a vault nobody has decided on yet
            text = path.read_text(encoding="utf-8")
            text = re.sub(r"(?m)^review_action:.*$", "review_action: PENDING", text, count=1)
            text = re.sub(r"(?m)^reviewer:.*$", 'reviewer: ""', text, count=1)
            path.write_text(text, encoding="utf-8")
        template = (notes / f"{TEMPLATE_ID}.md").read_text(encoding="utf-8")
        for claim_id in self.claims:
            (notes / f"{claim_id}.md").write_text(
                template.replace(TEMPLATE_ID, claim_id), encoding="utf-8"
            )
        self.git(seed, "init", "-q")
        self._configure(seed, "seed")
        done = subprocess.run(
            [*self.vt, "init"], cwd=seed, env=self.env, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"vt init in the seed: {done.stderr.strip()}")
        if self.setup == "sign":
            toml = seed / "vt.toml"
            text, changed = re.subn(
                r"(?m)^# required = false.*$", "required = true", toml.read_text("utf-8")
            )
            assert changed == 1, "vt.toml has no `# required = false` line to turn on"
            toml.write_text(text, encoding="utf-8")
        self.git(seed, "add", "-A")
        self.git(seed, "commit", "-qm", "the vault")
        self.git(self.root, "clone", "-q", "--bare", str(seed), "origin.git")
        skipping = set(self.names[-SKIPPING:]) if self.setup == "skip" else set()
        for name in self.names:
            self.git(self.root, "clone", "-q", "origin.git", name)
            clone = Clone(name, self.root / name, drivers=name not in skipping)
            self._configure(clone.path, name)
            self.clones[name] = clone
            if self.setup == "sign":
                key = self._key(name)
                self.git(clone.path, "config", "gpg.format", "ssh")
                self.git(clone.path, "config", "user.signingkey", str(key))
                self.run_vt(clone, "init", "--signer-key", f"{key}.pub")
            elif clone.drivers:
                self.run_vt(clone, "init")
        if self.setup == "sign":  # every reviewer commits their key, all at once
            for clone in self.clones.values():
                self.commit(clone, f"{clone.name}: my signing key")
            for clone in self.clones.values():
                self.push(clone)

    def _configure(self, path: Path, name: str) -> None:
        self.git(path, "config", "user.name", name)
        self.git(path, "config", "user.email", f"{name}@example.org")

    def _key(self, name: str) -> Path:
        keys = self.root / "keys"
        keys.mkdir(exist_ok=True)
        key = keys / name
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
            check=True,
            capture_output=True,
        )
        return key

    # -- git as people use it

    def commit(self, clone: Clone, message: str) -> None:
        self.git(clone.path, "add", "-A")
        staged = self.git(clone.path, "diff", "--cached", "--quiet", check=False).returncode
        if not staged and not (clone.path / ".git" / "MERGE_HEAD").exists():
            return
        done = self.git(clone.path, "commit", "-q", "--no-edit", "-m", message, check=False)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            self.violate("commit-refused", clone, " / ".join(said[-2:]))
            self.git(clone.path, "commit", "-q", "--no-verify", "--no-edit", "-m", message)

    def pull(self, clone: Clone, tries: int = 3) -> None:
        self.result.pulls += 1
        done = self.git(clone.path, "pull", "-q", "--no-edit", "origin", "main", check=False)
        if done.returncode != 0:
            if self._unmerged(clone):
                self._resolve(clone)
            else:
                self.result.pulls_refused += 1
                said = done.stderr.strip().splitlines()
                self.violate("pull-refused", clone, " / ".join(said[:2]))
                if tries <= 1:
                    raise RuntimeError(f"{clone.name}: pull refused again: {done.stderr}")
                # as people do: commit what is there, pull again
                self.commit(clone, f"{clone.name}: what was left before the pull")
                self.pull(clone, tries - 1)
                return
        self.check_clone(clone, after_pull=True)

    def _unmerged(self, clone: Clone) -> list[str]:
        listed = self.git(clone.path, "diff", "--name-only", "--diff-filter=U", "-z").stdout
        return sorted(p for p in listed.split("\0") if p)

    def _resolve(self, clone: Clone) -> None:
        for path in self._unmerged(clone):
            if path == LEDGER:
                if clone.drivers:
                    self.violate("ledger-conflict", clone, "git stopped on the ledger")
                self.run_vt(clone, "ledger", "resolve")
            elif path == SIGNERS:
                self.violate("signers-conflict", clone, "git stopped on allowed_signers")
                self._union(clone, path)
            elif path.startswith(f"{CLAIMS}/") and path.endswith(".md"):
                self.result.note_conflicts += 1
                ours, theirs = (self._stage(clone, n, path) for n in (2, 3))
                same = frontmatter(ours).get("review_action") == frontmatter(theirs).get(
                    "review_action"
                )
                if same and clone.drivers:
                    self.violate("agreement-conflict", clone, path)
                side = self.rng.choice(["--ours", "--theirs"])
                self.git(clone.path, "checkout", side, "--", path)
            else:
                if clone.drivers:
                    self.violate("other-conflict", clone, path)
                side = self.rng.choice(["--ours", "--theirs"])
                if self.git(clone.path, "checkout", side, "--", path, check=False).returncode:
                    self.git(clone.path, "rm", "-q", "--", path)
            self.git(clone.path, "add", "-A", "--", path)
        self.commit(clone, f"{clone.name}: merge origin")

    def _stage(self, clone: Clone, stage: int, path: str) -> str:
        return self.git(clone.path, "show", f":{stage}:{path}", check=False).stdout

    def _union(self, clone: Clone, path: str) -> None:
        lines: list[str] = []
        for stage in (2, 3):
            for line in self._stage(clone, stage, path).splitlines():
                if line not in lines:
                    lines.append(line)
        (clone.path / path).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

    def push(self, clone: Clone) -> None:
        for _ in range(PUSH_TRIES):
            if not self.git(clone.path, "push", "-q", "origin", "main", check=False).returncode:
                return
            self.result.pushes_rejected += 1
            self.pull(clone)
        raise RuntimeError(f"{clone.name}: push rejected {PUSH_TRIES} times")

    # -- a round

    def work(self, clone: Clone) -> None:
        """Edit 3-10 notes as the clone's reviewer, apply, commit, push."""
        self.result.rounds += 1
        decisions = self._edit(clone)
        before = {ev["id"] for ev in read_events(clone.path / LEDGER)}
        self.run_vt(clone, "apply")
        events = read_events(clone.path / LEDGER)
        for ev in events:
            if ev["id"] not in before:
                self.appended.setdefault(ev["id"], set()).add(clone.name)
                if ev.get("actor") != clone.name:
                    detail = f"{ev['claim_id']} {ev['action']} recorded as {ev.get('actor')!r}"
                    self.violate("actor", clone, detail)
        self._check_recorded(clone, events, decisions)
        self.commit(clone, f"{clone.name}: round {self.result.rounds}")
        self.push(clone)
        clone.pulled = False

    def _edit(self, clone: Clone) -> dict[str, str]:
        """What the reviewer decides this round: claim id -> APPROVE or REJECT."""
        fresh, teammates = [], []
        for claim_id in self.claims:
            props = frontmatter((clone.path / CLAIMS / f"{claim_id}.md").read_text("utf-8"))
            action = props.get("review_action")
            if action == "PENDING":
                fresh.append(claim_id)
            elif action in DECIDED and props.get("reviewer") != clone.name:
                teammates.append(claim_id)
        settle = [c for c in clone.conflicts if c in self.claims]
        decisions: dict[str, str] = {}
        for _ in range(self.rng.randint(3, 10)):
            pools = [(k, p) for k, p in (("settle", settle), ("reverse", teammates)) if p]
            pools.append(("fresh", fresh))
            kind, pool = self._pick_pool(pools)
            left = [c for c in pool if c not in decisions]
            if not left:
                continue
            claim_id = self.rng.choice(left)
            path = clone.path / CLAIMS / f"{claim_id}.md"
            text = path.read_text(encoding="utf-8")
            current = frontmatter(text).get("review_action")
            if kind == "reverse":
                action = "REJECT" if current == "APPROVE" else "APPROVE"
            else:  # mostly APPROVE: reviewers often agree without seeing each other
                action = self.rng.choice(["APPROVE", "APPROVE", "APPROVE", "REJECT"])
            path.write_text(decide_text(text, action, clone.name), encoding="utf-8")
            decisions[claim_id] = action
            self.result.edits[kind] += 1
        return decisions

    def _pick_pool(self, pools: list[tuple[str, list[str]]]) -> tuple[str, list[str]]:
        weights = {"settle": 3, "reverse": 2, "fresh": 4}
        return self.rng.choices(pools, weights=[weights[k] for k, _ in pools])[0]

    def _check_recorded(self, clone: Clone, events: list[dict], decisions: dict) -> None:
        from vault_tools.ledger.heads import claim_states

        states = claim_states(events)
        for claim_id, action in sorted(decisions.items()):
            state = states.get(claim_id)
            wanted = LEDGER_ACTION_OF[action]
            if state is None or any(h["action"] != wanted for h in state.heads):
                self.violate("unrecorded", clone, f"{claim_id} {action} by {clone.name}")

    # -- the invariants

    def check_clone(self, clone: Clone, after_pull: bool = False) -> None:
        dirty = self.git(clone.path, "status", "--porcelain").stdout.splitlines()
        if dirty:
            kind = "dirty-after-pull" if after_pull else "dirty"
            self.violate(kind, clone, f"{len(dirty)} path(s), first {dirty[0].strip()}")
        verified = self.run_vt(clone, "ledger", "verify")
        if verified.returncode != 0:
            self.violate("verify", clone, "vt ledger verify did not exit 0")
        said = verified.stderr + self._check_status(clone)
        if not clone.drivers and not clone.told and after_pull:
            # a clone without the hooks and drivers is told so, and how to fix it
            clone.told = "vt init" in said
            if not clone.told:
                self.violate("untold-no-drivers", clone, "no vt command named `vt init`")
                clone.told = True  # once a clone: the figure counts clones, not pulls

    def _check_status(self, clone: Clone) -> str:
        """Compare the CONFLICTs `vt status` shows with the heads; its stderr."""
        from vault_tools.ledger.heads import claim_states, same_decision

        done = self.run_vt(clone, "status", "--json")
        try:
            shown = {c["claim_id"] for c in json.loads(done.stdout)["conflicts"]}
        except (ValueError, KeyError, TypeError):
            if done.returncode in (0, 1):  # else the exit code is the violation
                self.violate("status-unreadable", clone, done.stdout[:200])
            return done.stderr
        clone.conflicts = sorted(shown)
        real = set()
        for claim_id, state in claim_states(read_events(clone.path / LEDGER)).items():
            first = state.heads[0]
            if not all(same_decision(first, head) for head in state.heads[1:]):
                real.add(claim_id)
        for claim_id in sorted(real - shown):
            self.violate("hidden-conflict", clone, claim_id)
        for claim_id in sorted(shown - real):
            self.violate("false-conflict", clone, claim_id)
        return done.stderr

    def converge(self) -> None:
        """Everyone pulls and pushes until every clone is at origin's commit."""
        for _ in range(5):
            for clone in self.clones.values():
                self.commit(clone, f"{clone.name}: what was left")
                self.pull(clone)
                self.push(clone)
            origin = self.git(self.root / "origin.git", "rev-parse", "main").stdout
            if all(
                self.git(c.path, "rev-parse", "HEAD").stdout == origin
                and not self.git(c.path, "status", "--porcelain").stdout
                for c in self.clones.values()
            ):
                return
        raise RuntimeError("the clones did not converge")

    def final_checks(self) -> None:
        ledgers = {name: (c.path / LEDGER).read_bytes() for name, c in self.clones.items()}
        if len(set(ledgers.values())) > 1:
            first = next(iter(self.clones.values()))
            self.violate("ledgers-differ", first, f"{len(set(ledgers.values()))} versions")
        for clone in self.clones.values():
            ids = Counter(ev["id"] for ev in read_events(clone.path / LEDGER))
            for event_id in sorted(i for i, n in ids.items() if n > 1):
                self.violate("duplicated", clone, event_id)
            for event_id in sorted(set(self.appended) - set(ids)):
                self.violate("lost", clone, event_id)
            for event_id in sorted(set(ids) - set(self.appended)):
                self.violate("unattributed", clone, event_id)
            self.check_clone(clone)
        events = read_events(next(iter(self.clones.values())).path / LEDGER)
        self.result.events = len(events)
        counts = ledger_counts(events)
        self.result.reversals, self.result.settles, self.result.concurrent_settles = counts

    # -- the whole run

    def run(self, rounds: int) -> Result:
        started = time.perf_counter()
        self.set_up()
        clones = list(self.clones.values())
        clone = clones[0]
        try:
            while self.result.rounds < rounds:
                self.step += 1
                clone = self.rng.choice(clones)
                if clone.pulled:
                    self.work(clone)
                else:
                    self.pull(clone)
                    clone.pulled = True
            self.step += 1
            self.converge()
            self.final_checks()
        except RuntimeError as exc:  # the team is stuck: what it measured so far stands
            self.violate("aborted", clone, str(exc)[:300])
        self.result.wall = time.perf_counter() - started
        return self.result


def run_workload(
    root: Path, setup: str, seed: int, rounds: int, clones: int = 5, notes: int = 24
) -> Result:
    root.mkdir(parents=True, exist_ok=True)
    return Team(root, setup, seed, clones, notes).run(rounds)


def _print(result: Result, out: TextIO) -> None:
    s = result.summary()
    violations = ", ".join(f"{k} {n}" for k, n in s["violations"].items()) or "none"
    print(
        f"{s['setup']:<5} seed {s['seed']}: {s['rounds']} rounds, {s['clones']} clones, "
        f"{s['wall_s']:.1f} s wall\n"
        f"  vt commands {s['vt_commands']}, exit 3: {s['exit3']}; pulls {s['pulls']}, "
        f"refused {s['pulls_refused']}; pushes rejected {s['pushes_rejected']}; "
        f"note conflicts {s['note_conflicts']}\n"
        f"  events {s['events']}: reversals {s['reversals']}, settles {s['settles']}, "
        f"concurrent settles {s['concurrent_settles']}\n"
        f"  violations: {violations}",
        file=out,
        flush=True,
    )


def table(summaries: list[dict]) -> str:
    """docs/team.md's table: one row a set-up, its runs summed."""
    rows = [
        "| set-up | runs | vt commands | exit 3 | violations by kind | pulls refused | wall |",
        "|---|---|---|---|---|---|---|",
    ]
    for setup in SETUPS:
        runs = [s for s in summaries if s["setup"] == setup]
        if not runs:
            continue
        kinds: Counter[str] = Counter()
        for s in runs:
            kinds.update(s["violations"])
        shown = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none"
        walls = sorted(s["wall_s"] for s in runs)
        rows.append(
            f"| `{setup}` | {len(runs)} | {sum(s['vt_commands'] for s in runs)} "
            f"| {sum(s['exit3'] for s in runs)} | {shown} "
            f"| {sum(s['pulls_refused'] for s in runs)} "
            f"| {walls[0]:.0f}–{walls[-1]:.0f} s a run |"
        )
    return "\n".join(rows)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--setups", nargs="+", choices=SETUPS, default=list(SETUPS))
    parser.add_argument("--clones", type=int, default=5)
    parser.add_argument("--notes", type=int, default=24, help="claim notes added to the vault")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--table", type=Path, help="print docs/team.md's table of a --json file")
    parser.add_argument("--dir", type=Path, help="keep the clones here (default: a temp dir)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.table:
        print(table(json.loads(args.table.read_text(encoding="utf-8"))["runs"]))
        return 0
    base = args.dir or Path(tempfile.mkdtemp(prefix="team-workload-"))
    results = []
    try:
        for setup in args.setups:
            for seed in args.seeds:
                root = base / f"{setup}-{seed}"
                if root.exists():
                    shutil.rmtree(root)
                result = run_workload(root, setup, seed, args.rounds, args.clones, args.notes)
                results.append(result)
                _print(result, sys.stderr if args.json else sys.stdout)
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        runs = [{**r.summary(), "violation_list": list(map(asdict, r.violations))} for r in results]
        print(json.dumps({"runs": runs}, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
