"""The signing policy in the ledger (docs/signing.md, "The policy in the ledger"), with
real ed25519 keys made by ssh-keygen, real git clones and `vt` run as a subprocess: once a
signed POLICY event records the policy, editing vt.toml or the allowed signers file
changes nothing a verify accepts; only a POLICY event signed by a key the policy trusts
does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.ledger.test_signing import (
    LEDGER,
    REPO,
    allow,
    apply_one,
    events,
    forge,
    keygen,
    public,
    vault_with,
)
from vault_tools.config import load_settings
from vault_tools.errors import IntegrityError, RefusedError
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.events import decision_id
from vault_tools.ledger.heads import claim_states
from vault_tools.ledger.merge import _rechain
from vault_tools.ledger.policy import checker_for, policy_in_force, policy_value
from vault_tools.ledger.signatures import SignatureChecker, SignaturePolicy
from vault_tools.ledger.signing import Signer, signed_message
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review import signers
from vault_tools.review.revert import revert_event
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import POLICY, POLICY_CLAIM_ID

pytestmark = pytest.mark.usefixtures("isolated_git")


def signing_vault(tmp_path: Path, key: Path, name: str = "vault") -> Path:
    """alice's vault: her key signs, signatures required, her key allowed; committed."""
    vault = vault_with(tmp_path, name, signing=f'key = "{key}"\nrequired = true\n')
    allow(vault, f"alice {public(key)}")
    return vault


def adopted(vault: Path) -> dict:
    done = run_vt("signers", "adopt", "--comment", "signing from now on", vault=vault)
    assert done.returncode == 0, done.stderr
    (policy,) = [ev for ev in events(vault) if ev["action"] == POLICY]
    return policy


def verify_exit(vault: Path) -> subprocess.CompletedProcess[str]:
    """`vt ledger verify` as a fresh clone runs it: no memory in .vt/."""
    shutil.rmtree(vault / ".vt", ignore_errors=True)
    return run_vt("ledger", "verify", vault=vault)


def forge_unsigned(vault: Path, note: str = "DV1-0002.md") -> None:
    """The note's decision appended unsigned under alice's name, well chained."""
    from vault_tools.checks.context import make_context
    from vault_tools.review.candidates import examine

    settings = load_settings(vault)
    cand = examine(settings, make_context(settings, assist=False), f"03_claims/{note}")
    assert cand is not None and cand.decision is not None
    policy = SignaturePolicy.of(settings)
    ledger = Ledger(settings.ledger_path, settings.state_dir, root=vault, policy=policy)
    ledger.append([{**cand.decision, "actor": "alice", "comment": "forged", "supersedes": None}])


def set_reviewer(vault: Path, note: str, reviewer: str) -> None:
    path = vault / "03_claims" / note
    path.write_text(path.read_text().replace('reviewer: "alice"', f'reviewer: "{reviewer}"'))


@pytest.mark.parametrize("signing", ["[signing]\nrequired = false\n", ""])
def test_signing_switched_off_in_vt_toml_does_not_admit_an_unsigned_event(
    tmp_path: Path, signing: str
) -> None:
    alice = keygen(tmp_path / "keys", "alice")
    vault = signing_vault(tmp_path, alice)
    policy = adopted(vault)
    assert policy["policy"] == {"required": True, "signers": [["alice", public(alice)]]}
    assert policy["actor"] == "alice" and policy["claim_id"] == POLICY_CLAIM_ID
    apply_one(vault, "DV1-0001.md")
    ok = verify_exit(vault)
    assert ok.returncode == 0 and "propose another policy" not in ok.stdout
    (vault / "vt.toml").write_text(signing)  # the policy weakened in the file only
    forge_unsigned(vault)
    done = verify_exit(vault)
    assert done.returncode == 3, done.stdout
    assert (f"{LEDGER}:3: not signed, and the signing policy in the ledger (seq 1) requires "
            "every later event to be") in done.stderr  # fmt: skip


@pytest.mark.parametrize("where", ["a new line for alice", "another file"])
def test_a_key_admitted_by_the_files_alone_signs_nothing(tmp_path: Path, where: str) -> None:
    alice, mallory = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "mallory")
    vault = signing_vault(tmp_path, alice)
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    if where == "another file":
        other = vault / "trusted_signers"
        other.write_text(f"alice {public(mallory)}\n")
        (vault / "vt.toml").write_text(f'[signing]\nallowed_signers = "{other.name}"\n')
    else:
        allow(vault, f"alice {public(alice)}", f"alice {public(mallory)}")
    forge(vault, mallory, "alice", note="DV1-0002.md")
    done = verify_exit(vault)
    assert done.returncode == 3
    assert f"{LEDGER}:3: key SHA256:" in done.stderr
    assert "is not in the signing policy in the ledger (seq 1)" in done.stderr
    # vt apply with that key is refused before anything is appended
    (vault / "vt.toml").write_text(f'[signing]\nkey = "{mallory}"\n')
    refused = run_vt("apply", vault=vault)
    assert refused.returncode in (2, 3), refused.stdout


def test_the_honest_path_adopt_add_a_reviewer_who_signs_then_remove(tmp_path: Path) -> None:
    alice, bob = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "bob")
    vault = signing_vault(tmp_path, alice)
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    done = run_vt("signers", "add", "bob", str(bob) + ".pub", "--comment", "bob joins", vault=vault)
    assert done.returncode == 0, done.stderr
    assert "+ bob ssh-ed25519" in done.stdout
    # bob's run: his key, his note; the files say nothing of him
    (vault / "vt.toml").write_text(f'[signing]\nkey = "{bob}"\n')
    set_reviewer(vault, "DV1-0002.md", "bob")
    apply_one(vault, "DV1-0002.md")
    evs = events(vault)
    assert [(ev["action"], ev["actor"]) for ev in evs] == [
        (POLICY, "alice"), ("ACCEPT", "alice"), (POLICY, "alice"), ("REJECT", "bob")]  # fmt: skip
    assert evs[2]["supersedes"] == evs[0]["id"]
    ok = verify_exit(vault)
    assert ok.returncode == 0, ok.stderr
    assert ("signatures: 4 signed events, checked against the signing policy in the ledger "
            "(seq 3)") in ok.stdout  # fmt: skip
    # the files no longer say what the ledger does: said, and nothing more
    assert "propose another policy than the signing policy in the ledger (seq 3)" in ok.stdout
    logged = run_vt("ledger", "log", "--action", "POLICY", "--json", vault=vault)
    assert logged.returncode == 0, logged.stderr
    assert [ev["seq"] for ev in json.loads(logged.stdout)["events"]] == [3, 1]
    shown = json.loads(run_vt("signers", "show", "--json", vault=vault).stdout)["policy"]
    assert shown["seq"] == 3 and [s[0] for s in shown["signers"]] == ["alice", "bob"]
    # alice removes bob: what he signed before stays valid, what he signs after does not
    (vault / "vt.toml").write_text(f'[signing]\nkey = "{alice}"\n')
    assert run_vt("signers", "remove", "bob", vault=vault).returncode == 0
    assert verify_exit(vault).returncode == 0
    forge(vault, bob, "bob", note="DV1-0001.md")
    done = verify_exit(vault)
    assert done.returncode == 3
    assert f"{LEDGER}:6: key SHA256:" in done.stderr and "(seq 5)" in done.stderr


def test_a_policy_change_signed_by_a_key_the_policy_does_not_trust_is_refused(
    tmp_path: Path,
) -> None:
    alice, mallory = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "mallory")
    vault = signing_vault(tmp_path, alice)
    first = adopted(vault)
    # vt itself refuses, before anything is appended
    (vault / "vt.toml").write_text(f'[signing]\nkey = "{mallory}"\n')
    refused = run_vt("signers", "add", "mallory", str(mallory) + ".pub", vault=vault)
    assert refused.returncode == 1 and "is not in the signing policy" in refused.stderr
    assert len(events(vault)) == 1
    # a forger's own append: well formed, well chained, signed by a key of her own
    settings = load_settings(vault)
    own = policy_value(True, [("alice", public(alice)), ("mallory", public(mallory))])
    decision = {**first, "actor": "mallory", "policy": own, "comment": "",
                "supersedes": first["id"]}  # fmt: skip
    for name in ("id", "seq", "prev", "hash", "ts", "sig"):
        decision.pop(name)
    Ledger(settings.ledger_path, settings.state_dir, root=vault, signer=Signer(mallory)).append(
        [decision]
    )
    with pytest.raises(IntegrityError, match=r":2: .*not in the signing policy"):
        forge(vault, mallory, "mallory", note="DV1-0002.md")  # vt's gate stops at line 2
    done = verify_exit(vault)
    assert done.returncode == 3
    assert f"{LEDGER}:2: key SHA256:" in done.stderr and "(seq 1)" in done.stderr


def test_an_unsigned_or_misplaced_policy_event_is_refused(tmp_path: Path) -> None:
    alice = keygen(tmp_path / "keys", "alice")
    vault = signing_vault(tmp_path, alice)
    policy = adopted(vault)
    stripped = {k: v for k, v in policy.items() if k != "sig"}
    (vault / LEDGER).write_bytes(_rechain([stripped]))
    done = verify_exit(vault)
    assert done.returncode == 3 and "POLICY must be signed" in done.stderr
    misplaced = {**policy, "claim_id": "DV1-0001"}
    (vault / LEDGER).write_bytes(_rechain([misplaced]))
    assert "claim_id must be '(policy)'" in verify_exit(vault).stderr


def test_a_ledger_without_a_policy_event_verifies_as_before(tmp_path: Path) -> None:
    alice = keygen(tmp_path / "keys", "alice")
    vault = signing_vault(tmp_path, alice)
    apply_one(vault, "DV1-0001.md")
    settings = load_settings(vault)
    policy = SignaturePolicy.of(settings)
    checker = checker_for(policy, settings.ledger_path)
    assert type(checker) is SignatureChecker and checker.policy == policy
    assert checker_for(None, settings.ledger_path) is None
    assert policy_in_force(settings.ledger_path) is None
    # the files still decide: signing off in vt.toml admits an unsigned event, as before
    (vault / "vt.toml").write_text("")
    forge_unsigned(vault)
    assert verify_exit(vault).returncode == 0


def test_policy_events_change_no_claim(tmp_path: Path) -> None:
    """Status, the Claim Store and the heads are those of the same ledger without them."""
    alice, bob = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "bob")
    vault = signing_vault(tmp_path, alice)
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    assert run_vt("signers", "add", "bob", str(bob) + ".pub", vault=vault).returncode == 0
    first = apply_one(vault, "DV1-0002.md")
    revert_event(load_settings(vault), first, comment="by mistake")
    with_policy = events(vault)
    without = [ev for ev in with_policy if ev["action"] != POLICY]
    assert claim_states(with_policy).keys() == claim_states(without).keys() == {
        "DV1-0001", "DV1-0002"}  # fmt: skip
    status = json.loads(run_vt("status", "--json", vault=vault).stdout)
    with ClaimStore.open(load_settings(vault)) as store:
        store.rebuild()  # every event projected anew, the policy events among them
        claims = [(c.claim_id, c.status) for c in store.claims()]
    # the same claims from a vault whose ledger never had a policy
    plain = vault_with(tmp_path, "plain")
    (plain / LEDGER).parent.mkdir(parents=True, exist_ok=True)
    (plain / LEDGER).write_bytes(_rechain([{k: v for k, v in ev.items() if k != "sig"}
                                           for ev in without]))  # fmt: skip
    with ClaimStore.open(load_settings(plain)) as store:
        store.rebuild()
        assert [(c.claim_id, c.status) for c in store.claims()] == claims
    plain_status = json.loads(run_vt("status", "--json", vault=plain).stdout)
    # what status says of the claims (the notes of `plain` were never marked)
    notes = ("vault", "by_state", "disagreements", "ledger_head")
    assert {k: v for k, v in status.items() if k not in notes} == {
        k: v for k, v in plain_status.items() if k not in notes}  # fmt: skip
    exported = run_vt("export", vault=vault)
    assert exported.returncode == 0 and exported.stdout == run_vt("export", vault=plain).stdout
    assert POLICY_CLAIM_ID not in exported.stdout
    # a policy event is no decision to revert
    with pytest.raises(RefusedError, match="is the signing policy"):
        revert_event(load_settings(vault), with_policy[0]["id"])


def test_the_later_of_two_concurrent_policy_changes_wins(tmp_path: Path) -> None:
    """Two clones change the policy from the same one; merged, each is judged by the
    policy in force before it in ledger order, and the later one is in force."""
    alice, bob, carol = (keygen(tmp_path / "keys", n) for n in ("alice", "bob", "carol"))
    vault = signing_vault(tmp_path, alice)
    first = adopted(vault)
    settings = load_settings(vault)
    a = signers.add(settings, "bob", bob, dry_run=True).event
    c = signers.add(settings, "carol", carol, dry_run=True).event
    signer = Signer(alice)
    scratch = tmp_path / "scratch"
    ledger = Ledger(scratch / "l.jsonl", scratch / "state", signer=signer)
    ledger.append([{k: v for k, v in first.items() if k not in ("id", "seq", "prev", "hash",
                                                                 "sig")}])  # fmt: skip
    for ev in (a, c):
        clean = {k: v for k, v in ev.items() if k not in ("sig",)}
        clean["supersedes"] = first["id"]
        ledger.append([clean])
    merged = list(json.loads(line) for line in (scratch / "l.jsonl").read_text().splitlines())
    assert merged[1]["supersedes"] == merged[2]["supersedes"] == first["id"]
    (vault / LEDGER).write_bytes(_rechain(merged))
    assert verify_exit(vault).returncode == 0
    step = policy_in_force(vault / LEDGER)
    assert step is not None and [p for p, _ in step.signers] == ["alice", "carol"]
    # bob's change lost: his key signs nothing now
    (vault / "vt.toml").write_text(f'[signing]\nkey = "{bob}"\n')
    forge(vault, bob, "bob", note="DV1-0001.md")
    assert "(seq 3)" in verify_exit(vault).stderr


def test_a_fresh_clone_reaches_the_same_verdicts(tmp_path: Path) -> None:
    alice, mallory = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "mallory")
    vault = signing_vault(tmp_path, alice)
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    (vault / ".gitignore").write_text(".vt/\n05_ledger/*.lock\n")  # vt's memory stays local
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "signed from now on")
    honest = tmp_path / "honest"
    git(tmp_path, "clone", "-q", str(vault), str(honest))
    assert not (honest / ".vt").exists()
    assert run_vt("ledger", "verify", vault=honest).returncode == 0
    # the attack, committed: a key for alice in the file and an event it signs
    allow(vault, f"alice {public(alice)}", f"alice {public(mallory)}")
    (vault / "vt.toml").write_text("")
    forge(vault, mallory, "alice", note="DV1-0002.md")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "innocent")
    attacked = tmp_path / "attacked"
    git(tmp_path, "clone", "-q", str(vault), str(attacked))
    done = run_vt("ledger", "verify", vault=attacked)
    assert done.returncode == 3 and f"{LEDGER}:3: key SHA256:" in done.stderr


def test_the_standalone_verifier_reads_policy_events(tmp_path: Path) -> None:
    alice = keygen(tmp_path / "keys", "alice")
    vault = signing_vault(tmp_path, alice)
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    done = subprocess.run([sys.executable, str(REPO / "docs/examples/verify_ledger.py"),
                           str(vault / LEDGER)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = verify_ledger(vault / LEDGER, tmp_path / "state", SignaturePolicy.of(
        load_settings(vault)))  # fmt: skip
    assert result.ok and result.signed == 2


def test_the_audit_names_the_commit_that_weakens_the_policy_by_the_files(
    tmp_path: Path,
) -> None:
    """Each commit's new lines are judged by the policy its own ledger records."""
    alice, mallory = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "mallory")
    vault = signing_vault(tmp_path, alice)
    (vault / ".gitignore").write_text(".vt/\n05_ledger/*.lock\n")
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "signed from now on")
    assert run_vt("ledger", "audit", vault=vault).returncode == 0
    (vault / "vt.toml").write_text("")
    forge_unsigned(vault)
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "innocent", "--no-verify")
    weakened = git(vault, "rev-parse", "HEAD").stdout.strip()
    allow(vault, f"alice {public(alice)}", f"alice {public(mallory)}")
    # the forger writes the line itself: vt's gate refuses to append after line 3 now
    (accept,) = [ev for ev in events(vault) if ev["action"] == "ACCEPT"]
    forged = {k: v for k, v in accept.items() if k not in ("id", "seq", "prev", "hash", "sig")}
    forged.update(comment="forged", supersedes=accept["id"])
    forged["id"] = decision_id(forged)
    forged["sig"] = Signer(mallory).sign([signed_message(forged)])[0]
    (vault / LEDGER).write_bytes(_rechain([*events(vault), forged]))
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "also innocent", "--no-verify")
    admitted = git(vault, "rev-parse", "HEAD").stdout.strip()
    done = run_vt("ledger", "audit", vault=vault)
    assert done.returncode == 3, done.stdout
    assert weakened[:12] in done.stderr and admitted[:12] in done.stderr
    assert (f"{LEDGER}:3: commit {weakened[:12]} (alice <alice@example.org>): not signed, "
            "and the signing policy in the ledger (seq 1)") in done.stderr  # fmt: skip
    assert f"{LEDGER}:4: commit {admitted[:12]} (alice <alice@example.org>): key SHA256:" in (
        done.stderr)  # fmt: skip


@pytest.mark.parametrize("forged", [False, True])
def test_a_cold_verify_judges_every_line_by_the_policy(tmp_path: Path, forged: bool) -> None:
    """A cold verify (a fresh state folder) counts the signed events and finds the forged
    unsigned one."""
    alice = keygen(tmp_path / "keys", "alice")
    vault = signing_vault(tmp_path, alice)
    adopted(vault)
    apply_one(vault, "DV1-0001.md")
    apply_one(vault, "DV1-0002.md")
    if forged:
        (vault / "vt.toml").write_text("")
        forge_unsigned(vault, "DV1-0001.md")
    settings = load_settings(vault)
    policy = SignaturePolicy.of(settings)
    result = verify_ledger(settings.ledger_path, tmp_path / "state", policy)
    assert result.ok is not forged and result.signed == 3


def test_concurrent_policy_changes_merged_by_git_verify_and_audit(tmp_path: Path) -> None:
    """alice adds bob on one laptop and carol on another; git merges the ledgers with vt's
    merge driver: both changes were signed by a key the policy trusts, the later one in
    ledger order is in force, and the history audits clean."""
    from vault_tools.integrations.git import hook
    from vault_tools.integrations.init import init_vault

    alice, bob, carol = (keygen(tmp_path / "keys", n) for n in ("alice", "bob", "carol"))
    seed = signing_vault(tmp_path, alice, "seed")
    init_vault(load_settings(seed))
    adopted(seed)
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "vault, signing from now on")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")
    one, two = tmp_path / "one", tmp_path / "two"
    for clone in (one, two):
        git(tmp_path, "clone", "-q", "origin.git", clone.name)
        git(clone, "config", "user.name", "alice")
        git(clone, "config", "user.email", "alice@example.org")
        hook.install(load_settings(clone))
    for clone, name, key in ((one, "bob", bob), (two, "carol", carol)):
        done = run_vt("signers", "add", name, f"{key}.pub", vault=clone)
        assert done.returncode == 0, done.stderr
        git(clone, "add", "-A")
        git(clone, "commit", "-qm", f"{name} joins")
    git(one, "push", "-q", "origin", "main")
    git(two, "pull", "-q", "--no-rebase", "origin", "main")
    policies = [ev for ev in events(two) if ev["action"] == POLICY]
    assert len(policies) == 3
    assert policies[1]["supersedes"] == policies[2]["supersedes"] == policies[0]["id"]
    ok = verify_exit(two)
    assert ok.returncode == 0, ok.stderr
    step = policy_in_force(two / LEDGER)
    assert step is not None and step.id == policies[2]["id"]
    assert list(step.signers) == [tuple(s) for s in policies[2]["policy"]["signers"]]
    audited = run_vt("ledger", "audit", vault=two)
    assert audited.returncode == 0, audited.stderr


def test_a_principal_the_ledger_cannot_name_is_refused_before_appending(tmp_path: Path) -> None:
    alice = keygen(tmp_path / "keys", "alice")
    vault = signing_vault(tmp_path, alice)
    allow(vault, f"alice {public(alice)}", f'"Bob Lee" {public(alice)}')
    done = run_vt("signers", "adopt", vault=vault)
    assert done.returncode == 2 and "'Bob Lee'" in done.stderr
    assert not (vault / LEDGER).exists()


def test_verify_says_when_the_signing_policy_is_not_in_the_ledger_yet(tmp_path: Path) -> None:
    """Before `vt signers adopt`, the files decide and can be weakened by any commit:
    verify says so (exit 0: such a ledger verifies as it always did), and stops saying
    it once the policy is recorded."""
    vault = signing_vault(tmp_path, keygen(tmp_path / "keys", "alice"))
    apply_one(vault, "DV1-0001.md")
    before = verify_exit(vault)
    assert before.returncode == 0, before.stderr
    assert "the signing policy is not in the ledger yet" in before.stdout
    assert "`vt signers adopt` records it" in before.stdout
    adopted(vault)
    after = verify_exit(vault)
    assert after.returncode == 0 and "not in the ledger yet" not in after.stdout
