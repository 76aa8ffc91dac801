"""Signed ledger events with real keys made by ssh-keygen and real git: signing on apply and
revert, verifying in process against the allowed signers, the merge driver keeping
signatures valid, `vt history` naming the key, and what an unsigned or forged event gets."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from vault_tools.checks.context import make_context
from vault_tools.config import load_settings
from vault_tools.errors import UsageError
from vault_tools.integrations.git import hook
from vault_tools.integrations.init import init_vault
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.events import decision_id, line_hash
from vault_tools.ledger.merge import _rechain
from vault_tools.ledger.reader import iter_events
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.ledger.signing import NAMESPACE, Signer, signed_message
from vault_tools.ledger.sshformat import armour, dearmour
from vault_tools.ledger.verify import verify_ledger
from vault_tools.review.apply import apply_notes
from vault_tools.review.candidates import examine
from vault_tools.review.revert import revert_event

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_VAULT = REPO / "examples" / "vault"
LEDGER = "05_ledger/decision_ledger.jsonl"
SIGNERS = "05_ledger/allowed_signers"

pytestmark = pytest.mark.usefixtures("isolated_git")


def keygen(folder: Path, name: str, kind: str = "ed25519") -> Path:
    """A new key pair made by ssh-keygen, no passphrase; the private key's path."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    extra = ["-b", "2048"] if kind == "rsa" else []
    subprocess.run(["ssh-keygen", "-q", "-t", kind, *extra, "-N", "", "-C", name, "-f", str(key)],
                   check=True, capture_output=True)  # fmt: skip
    return key


def public(key: Path) -> str:
    return " ".join(key.with_name(key.name + ".pub").read_text().split()[:2])


def allow(vault: Path, *lines: str) -> None:
    path = vault / SIGNERS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))


def vault_with(tmp_path: Path, name: str = "vault", signing: str = "") -> Path:
    """A git repository holding a copy of the example vault; `signing`: vt.toml's table."""
    vault = tmp_path / name
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vt"))
    git(vault, "init", "-q", "-b", "main")
    git(vault, "config", "user.name", "alice")
    git(vault, "config", "user.email", "alice@example.org")
    (vault / "vt.toml").write_text(f"[signing]\n{signing}" if signing else "")
    return vault


def use_git_key(vault: Path, key: Path) -> None:
    """git's own SSH signing setup, as a reviewer who signs commits has it."""
    git(vault, "config", "gpg.format", "ssh")
    git(vault, "config", "user.signingkey", str(key))


def forge(vault: Path, key: Path, actor: str, note: str = "DV1-0001.md") -> None:
    """The note's decision appended under `actor`'s name, signed with `key`, through the
    ledger's own append (vt apply refuses a key the allowed signers do not give the runner:
    this is a forger's ledger, or a vt that did not check)."""
    settings = load_settings(vault)
    cand = examine(settings, make_context(settings, assist=False), f"03_claims/{note}")
    assert cand is not None and cand.decision is not None
    ledger = Ledger(settings.ledger_path, settings.state_dir, root=vault,
                    policy=SignaturePolicy.of(settings), signer=Signer(key))  # fmt: skip
    ledger.append([{**cand.decision, "actor": actor, "supersedes": None}])


def apply_one(vault: Path, note: str) -> str:
    report = apply_notes(load_settings(vault), [vault / "03_claims" / note])
    assert len(report.applied) == 1, (report.refused, report.skipped)
    return report.applied[0].id


def verified(vault: Path) -> list[str]:
    """The messages of `vt ledger verify`'s problems, the vault's own policy."""
    settings = load_settings(vault)
    result = verify_ledger(settings.ledger_path, settings.state_dir, SignaturePolicy.of(settings))
    return [p.message for p in result.problems]


def events(vault: Path) -> list[dict]:
    return list(iter_events(vault / LEDGER))


def rewrite(vault: Path, evs: list[dict]) -> None:
    """The ledger written anew from `evs`, chained correctly, as a forger would, and the
    vault's memory dropped (a fresh clone's): only the signatures can tell."""
    (vault / LEDGER).write_bytes(_rechain(evs))
    shutil.rmtree(vault / ".vt", ignore_errors=True)


@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_a_signed_apply_verifies(tmp_path: Path, kind: str) -> None:
    key = keygen(tmp_path / "keys", "alice", kind)
    vault = vault_with(tmp_path, signing="required = true\n")
    use_git_key(vault, key)
    allow(vault, f'alice namespaces="{NAMESPACE}" {public(key)}')
    apply_one(vault, "DV1-0001.md")  # reviewer: alice
    apply_one(vault, "DV1-0002.md")
    evs = events(vault)
    assert [ev["actor"] for ev in evs] == ["alice", "alice"]
    assert all(ev["sig"] for ev in evs)
    assert verified(vault) == []
    done = run_vt("ledger", "verify", vault=vault)
    assert done.returncode == 0, done.stderr
    assert "signatures: 2 signed events" in done.stdout
    # the signature is over no chain field: the id and the line hash stand as always
    assert all(decision_id(ev) == ev["id"] and line_hash(ev) == ev["hash"] for ev in evs)


def test_ssh_keygen_verifies_a_signature_on_its_own(tmp_path: Path) -> None:
    """What docs/signing.md tells a reader without vt to run."""
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\n')
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0001.md")
    (ev,) = events(vault)
    sig = tmp_path / "event.sig"
    sig.write_text(armour(ev["sig"]))
    done = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(vault / SIGNERS), "-I", ev["actor"],
         "-n", NAMESPACE, "-s", str(sig)],
        input=signed_message(ev), capture_output=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert b'Good "vt-decision@vault_tools" signature for alice' in done.stdout


def test_revert_is_signed_and_history_names_the_key(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\nrequired = true\n')
    allow(vault, f"alice {public(key)}")
    first = apply_one(vault, "DV1-0002.md")
    revert_event(load_settings(vault), first, comment="by mistake")
    assert all("sig" in ev for ev in events(vault))
    assert verified(vault) == []
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", str(key)], capture_output=True,
                                 text=True, check=True).stdout.split()[1]  # fmt: skip
    done = run_vt("history", "DV1-0002", vault=vault)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(f"signed by alice with key {fingerprint}") == 2
    as_json = json.loads(run_vt("history", "DV1-0002", "--json", vault=vault).stdout)
    assert [e["signed_with"] for e in as_json["events"]] == [fingerprint, fingerprint]


def test_a_key_not_in_allowed_signers_is_refused(tmp_path: Path) -> None:
    alice, mallory = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "mallory")
    vault = vault_with(tmp_path, signing=f'key = "{mallory}"\n')
    allow(vault, f"alice {public(alice)}")
    with pytest.raises(UsageError, match="is not in the allowed signers"):
        apply_notes(load_settings(vault))  # vt apply refuses to sign as nobody
    assert not (vault / LEDGER).exists()
    forge(vault, mallory, "alice")  # appended: the gate checked the lines before it only
    (problem,) = verified(vault)
    assert problem.startswith("line 1: key SHA256:") and f"is not in {vault / SIGNERS}" in problem
    done = run_vt("ledger", "verify", vault=vault)
    assert done.returncode == 3
    assert f"{LEDGER}:1: key SHA256:" in done.stderr
    # and every command that trusts the ledger refuses it from then on
    shutil.rmtree(vault / ".vt")
    refused = run_vt("status", vault=vault)
    assert refused.returncode == 3 and "is not in" in refused.stderr


def test_another_reviewers_key_under_this_reviewers_name_is_refused(tmp_path: Path) -> None:
    alice, bob = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "bob", "rsa")
    vault = vault_with(tmp_path, signing=f'key = "{bob}"\n')
    allow(vault, f"alice {public(alice)}", f"bob {public(bob)}")
    # vt apply run with bob's key is bob's: alice's note is left for her own run
    report = apply_notes(load_settings(vault))
    assert not report.events
    assert [o.path for o in report.others] == ["03_claims/DV1-0001.md", "03_claims/DV1-0002.md"]
    forge(vault, bob, "alice")  # what a vt that did not check would have appended
    (problem,) = verified(vault)
    assert "is not allowed to sign for actor 'alice'" in problem


def test_a_forged_event_with_a_valid_chain_is_refused(tmp_path: Path) -> None:
    """The forgery the chain alone cannot catch: a decision edited under a reviewer's name,
    re-hashed and re-chained by hand, keeping the old signature."""
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\n')
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0001.md")
    (ev,) = events(vault)
    forged = dict(ev, comment="forged", action="REJECT", claim=None)
    forged["id"] = decision_id(forged)
    rewrite(vault, [forged])
    (problem,) = verified(vault)
    assert problem == (
        "line 1: bad signature: it does not sign this decision (edited after signing?)"
    )


def test_a_stripped_signature_is_refused_where_required(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\nrequired = true\n')
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0001.md")
    (ev,) = events(vault)
    rewrite(vault, [{k: v for k, v in ev.items() if k != "sig"}])
    assert verified(vault) == [
        "line 1: not signed, and every event from seq 1 must be ([signing] required in vt.toml)"
    ]
    assert run_vt("ledger", "verify", vault=vault).returncode == 3


def test_unsigned_events_before_signatures_were_required_are_not_tampering(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path)
    apply_one(vault, "DV1-0001.md")  # no signing set up yet: unsigned
    signing = f'[signing]\nkey = "{key}"\nrequired = true\nrequired_from = 2\n'
    (vault / "vt.toml").write_text(signing)
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0002.md")
    assert ["sig" in ev for ev in events(vault)] == [False, True]
    done = run_vt("ledger", "verify", vault=vault)
    assert done.returncode == 0, done.stderr
    assert "1 unsigned event, written before seq 2" in done.stdout
    # from seq 2 on, a missing signature is a problem again
    evs = events(vault)
    rewrite(vault, [evs[0], {k: v for k, v in evs[1].items() if k != "sig"}])
    assert verified(vault) == [
        "line 2: not signed, and every event from seq 2 must be ([signing] required in vt.toml)"
    ]


def test_required_without_a_key_refuses_before_appending(tmp_path: Path) -> None:
    vault = vault_with(tmp_path, signing="required = true\n")
    done = run_vt("apply", "03_claims/DV1-0001.md", vault=vault)
    assert done.returncode == 2
    assert "no signing key is set" in done.stderr and "user.signingkey" in done.stderr
    assert not (vault / LEDGER).exists()
    with pytest.raises(UsageError, match=r"\[signing\]"):
        apply_notes(load_settings(vault), [vault / "03_claims" / "DV1-0001.md"])


def test_a_key_outside_its_validity_window_is_refused(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\n')
    allow(vault, f'alice valid-before="20200101Z" {public(key)}')
    apply_one(vault, "DV1-0001.md")
    (problem,) = verified(vault)
    assert "was not valid at" in problem and "until 2020-01-01T00:00:00Z" in problem
    allow(vault, f'alice valid-after="20200101Z" {public(key)}')
    assert verified(vault) == []


def test_editing_allowed_signers_makes_the_gate_verify_again(tmp_path: Path) -> None:
    """A key removed from the file: the prefix trusted under the old file is not trusted."""
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\n')
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0001.md")
    assert run_vt("status", vault=vault).returncode == 0
    allow(vault, "# alice left the team")
    refused = run_vt("status", vault=vault)
    assert refused.returncode == 3 and "is not in" in refused.stderr


def test_signed_branches_merge_through_the_driver_and_still_verify(tmp_path: Path) -> None:
    alice_key = keygen(tmp_path / "keys", "alice")
    bob_key = keygen(tmp_path / "keys", "bob", "rsa")
    seed = vault_with(tmp_path, "seed")
    allow(seed, f"alice {public(alice_key)}", f"bob {public(bob_key)}")
    (seed / "vt.toml").write_text("[signing]\nrequired = true\n")
    init_vault(load_settings(seed))
    git(seed, "add", "-A")
    git(seed, "commit", "-qm", "vault")
    git(tmp_path, "clone", "-q", "--bare", str(seed), "origin.git")
    clones = {}
    for name, key in (("alice", alice_key), ("bob", bob_key)):
        git(tmp_path, "clone", "-q", "origin.git", name)
        clone = tmp_path / name
        git(clone, "config", "user.name", name)
        git(clone, "config", "user.email", f"{name}@example.org")
        use_git_key(clone, key)
        hook.install(load_settings(clone))
        clones[name] = clone
    alice, bob = clones["alice"], clones["bob"]
    apply_one(alice, "DV1-0001.md")  # reviewer: alice
    git(alice, "add", "-A")
    git(alice, "commit", "-qm", "alice accepts")  # through the pre-commit hook
    git(alice, "push", "-q", "origin", "main")
    for note in ("DV1-0004.md", "IX2-0328.md"):  # reviewer empty: bob, from git
        path = bob / "03_claims" / note
        text = path.read_text(encoding="utf-8")
        start = text.index("review_action: ")
        end = text.index("\n", start)
        path.write_text(text[:start] + "review_action: REJECT" + text[end:], encoding="utf-8")
        apply_one(bob, note)
    git(bob, "add", "-A")
    git(bob, "commit", "-qm", "bob rejects")
    done = git(bob, "pull", "-q", "--no-rebase", "--no-commit", "origin", "main", check=False)
    assert done.returncode == 0, done.stderr
    git(bob, "commit", "-q", "--no-edit")  # the hook verifies the merged, re-chained ledger
    merged = events(bob)
    assert [ev["actor"] for ev in merged] == ["bob", "bob", "alice"]
    assert [ev["seq"] for ev in merged] == [1, 2, 3]
    assert verified(bob) == []
    assert run_vt("ledger", "verify", vault=bob).returncode == 0


def test_the_hook_refuses_a_commit_of_a_forged_signature(tmp_path: Path) -> None:
    alice, mallory = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "mallory")
    vault = vault_with(tmp_path, signing=f'key = "{mallory}"\n')
    allow(vault, f"alice {public(alice)}")
    hook.install(load_settings(vault))
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "vault")
    forge(vault, mallory, "alice")
    git(vault, "add", "-A")
    done = git(vault, "commit", "-qm", "forged", check=False)
    assert done.returncode != 0
    assert "is not in" in done.stdout + done.stderr


def test_one_ssh_keygen_call_signs_a_whole_run(tmp_path: Path) -> None:
    """Many events, one Signer.sign: each gets its own signature of its own decision."""
    key = keygen(tmp_path / "keys", "alice")
    allow(tmp_path, f"alice {public(key)}")
    decisions = [
        {"action": "REJECT", "actor": "alice", "base": "sha256:" + "cd" * 32,
         "checks": {"check_source_claim": True}, "claim": None, "claim_id": f"C-{i}",
         "comment": "", "note": f"03_claims/C-{i}.md", "preview": None}
        for i in range(30)
    ]  # fmt: skip
    policy = SignaturePolicy(tmp_path / SIGNERS)
    ledger = Ledger(tmp_path / LEDGER, tmp_path / ".vt", policy=policy, signer=Signer(key))
    appended = ledger.append(decisions)
    assert len({ev["sig"] for ev in appended}) == 30
    result = verify_ledger(ledger.path, tmp_path / ".vt", policy)
    assert result.ok and result.signed == 30, result.problems


def test_vt_init_adds_the_reviewers_key(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path)
    init = ("init", str(vault), "--signer-key", str(key))
    done = run_vt(*init)
    assert done.returncode == 0, done.stderr
    assert "allowed alice to sign" in done.stdout
    line = (vault / SIGNERS).read_text()
    assert line == f'alice namespaces="{NAMESPACE}" {public(key)}\n'
    again = run_vt(*init)
    assert "already set up" in again.stdout
    # the key now signs (git's setup, the vault having opted in) and verifies
    use_git_key(vault, key)
    apply_one(vault, "DV1-0001.md")
    assert "sig" in events(vault)[0] and verified(vault) == []


def test_the_standalone_verifier_hands_a_signature_to_ssh_keygen(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice", "rsa")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\n')
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0001.md")
    script = [sys.executable, str(REPO / "docs" / "examples" / "verify_ledger.py")]
    work = tmp_path / "check"
    work.mkdir()
    whole = subprocess.run([*script, str(vault / LEDGER)], capture_output=True, text=True)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    done = subprocess.run([*script, str(vault / LEDGER), "1"], cwd=work, capture_output=True,
                          text=True, check=True)  # fmt: skip
    command = done.stdout.strip().replace("-f allowed_signers", f"-f {vault / SIGNERS}")
    assert command.startswith("ssh-keygen -Y verify")
    checked = subprocess.run(command, shell=True, cwd=work, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert 'Good "vt-decision@vault_tools" signature for alice' in checked.stdout


def test_a_vault_without_signing_keeps_the_prefix_it_trusted(tmp_path: Path) -> None:
    """No allowed signers file: the policy of a vault from before signing existed, so the
    gate's trusted prefix stays trusted (and a changed file is a changed policy)."""
    from vault_tools.ledger.signatures import NO_SIGNING

    path = tmp_path / "allowed_signers"
    assert SignaturePolicy(path).digest() == SignaturePolicy().digest() == NO_SIGNING
    path.write_text(
        "alice ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
    )
    assert SignaturePolicy(path).digest() != NO_SIGNING
    assert SignaturePolicy(required=True).digest() != NO_SIGNING


def test_a_signature_for_git_or_not_a_signature_at_all_is_refused(tmp_path: Path) -> None:
    key = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{key}"\n')
    allow(vault, f"alice {public(key)}")
    apply_one(vault, "DV1-0001.md")
    (ev,) = events(vault)
    message = tmp_path / "message"
    message.write_bytes(signed_message(ev))
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", "git", str(message)],
                   check=True, capture_output=True)  # fmt: skip
    as_git = base64.b64encode(dearmour(message.with_name("message.sig").read_text())).decode()
    rewrite(vault, [dict(ev, sig=as_git)])
    assert verified(vault) == ["line 1: signature made for namespace 'git'"]
    rewrite(vault, [dict(ev, sig=ev["sig"][:-8])])  # cut short
    (problem,) = verified(vault)
    assert problem.startswith("line 1: signature does not parse (")


def test_lines_this_clone_appended_are_checked_by_its_own_verify(tmp_path: Path) -> None:
    """A clone whose memory trusts the ledger appends an event signed with a key the
    allowed signers do not list for its actor: its own verify, with the memory, fails it
    as a fresh clone's does (the memory never trusts a line whose signature it did not
    check)."""
    alice, bob = keygen(tmp_path / "keys", "alice"), keygen(tmp_path / "keys", "bob")
    vault = vault_with(tmp_path, signing=f'key = "{alice}"\n')
    allow(vault, f"alice {public(alice)}", f"bob {public(bob)}")
    apply_one(vault, "DV1-0001.md")
    assert (
        run_vt("ledger", "verify", vault=vault).returncode == 0
    )  # line 1 trusted, signature checked
    # appended by this clone's own ledger code, in alice's name, signed with bob's key
    # (vt apply itself would leave alice's note to her: see tests/review/test_actor.py)
    forge(vault, bob, "alice", "DV1-0002.md")
    here = run_vt("ledger", "verify", vault=vault)
    assert here.returncode == 3, here.stdout + here.stderr
    assert f"{LEDGER}:2: key SHA256:" in here.stderr
    assert "is not allowed to sign for actor 'alice'" in here.stderr
    assert (vault / ".vt").is_dir()  # with its memory, not a fresh clone's
    again = run_vt("status", vault=vault)  # the gate of every command agrees
    assert again.returncode == 3 and "is not allowed to sign" in again.stderr
    shutil.rmtree(vault / ".vt")
    fresh = run_vt("ledger", "verify", vault=vault)
    assert fresh.returncode == 3 and f"{LEDGER}:2: key SHA256:" in fresh.stderr


def test_a_clones_own_well_signed_lines_are_remembered_checked(tmp_path: Path) -> None:
    """The memory stays: lines whose signatures the appender checked are trusted by the
    next verify, and counted as signed."""
    alice = keygen(tmp_path / "keys", "alice")
    vault = vault_with(tmp_path, signing=f'key = "{alice}"\n')
    allow(vault, f"alice {public(alice)}")
    apply_one(vault, "DV1-0001.md")
    apply_one(vault, "DV1-0002.md")
    done = run_vt("ledger", "verify", vault=vault)
    assert done.returncode == 0, done.stderr
    assert "signatures: 2 signed events" in done.stdout
