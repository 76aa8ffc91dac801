"""`vt signers`: the signing policy recorded in the ledger (docs/signing.md, "The policy
in the ledger"). Each change appends one POLICY event holding the whole new policy,
signed by the run's key, which the policy in force must already trust (the first POLICY
event: the policy it adopts must list the key). A change the policy in force would
refuse is refused here, before anything is appended."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from vault_tools.config import Settings
from vault_tools.errors import RefusedError, UsageError
from vault_tools.ledger.events import canonical, sha256_id
from vault_tools.ledger.policy import (
    PolicyStep,
    policy_in_force,
    policy_value,
    signers_of_file,
)
from vault_tools.ledger.sshformat import FormatError, signer_line
from vault_tools.review.actor import public_blob, runner
from vault_tools.review.signer import signing_ledger
from vault_tools.vocabulary import POLICY, POLICY_CLAIM_ID

Signers = list[tuple[str, str]]


@dataclass(slots=True)
class PolicyChange:
    """One POLICY event appended (or, on a dry run, the one that would be)."""

    event: dict
    before: PolicyStep | None
    added: Signers = field(default_factory=list)
    removed: Signers = field(default_factory=list)
    dry_run: bool = False

    def to_json(self) -> dict:
        return {
            "event": self.event,
            "supersedes": self.before.id if self.before else None,
            "added": [list(s) for s in self.added],
            "removed": [list(s) for s in self.removed],
            "dry_run": self.dry_run,
        }


def adopt(settings: Settings, comment: str = "", dry_run: bool = False) -> PolicyChange:
    """Record the allowed signers file and `[signing] required` as the whole policy."""
    path = settings.allowed_signers_path
    if not path.is_file():
        raise UsageError("no allowed signers file to adopt (vt init --signer-key adds one)",
                         str(path))  # fmt: skip
    signers = signers_of_file(path)
    if not signers:
        raise UsageError("the allowed signers file names nobody for vt decisions", str(path))
    return _record(settings, settings.signing_required, signers, comment, dry_run)


def add(
    settings: Settings, principal: str, key: Path, comment: str = "", dry_run: bool = False
) -> PolicyChange:
    """The policy in force (else the allowed signers file, adopted) plus `key` for
    `principal`."""
    step = policy_in_force(settings.ledger_path)
    signers, required = _current(settings, step)
    return _record(settings, required, [*signers, (principal, _key_text(key))], comment,
                   dry_run)  # fmt: skip


def remove(
    settings: Settings,
    principal: str,
    key: Path | None = None,
    comment: str = "",
    dry_run: bool = False,
) -> PolicyChange:
    """The policy in force without `principal`'s keys (only `key`, when given)."""
    step = policy_in_force(settings.ledger_path)
    signers, required = _current(settings, step)
    text = _key_text(key) if key is not None else None
    kept = [s for s in signers if not (s[0] == principal and text in (None, s[1]))]
    if len(kept) == len(signers):
        raise RefusedError(f"{principal} has no such key in the signing policy")
    return _record(settings, required, kept, comment, dry_run)


def require(settings: Settings, required: bool, comment: str = "", dry_run: bool = False
            ) -> PolicyChange:  # fmt: skip
    """The policy in force with signatures required, or no longer required."""
    step = policy_in_force(settings.ledger_path)
    signers, _ = _current(settings, step)
    return _record(settings, required, signers, comment, dry_run)


def _current(settings: Settings, step: PolicyStep | None) -> tuple[Signers, bool]:
    if step is not None:
        return list(step.signers), step.required
    path = settings.allowed_signers_path
    return (signers_of_file(path) if path.is_file() else []), settings.signing_required


def _key_text(key: Path) -> str:
    """`ssh-ed25519 AAAA…` of a public key file (or of the `.pub` beside a private key)."""
    public = key if key.name.endswith(".pub") else key.with_name(key.name + ".pub")
    try:
        fields = public.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the public key: {exc}", str(public)) from exc
    try:
        signer_line(f"x {' '.join(fields[:2])}")
    except (FormatError, IndexError) as exc:
        raise UsageError(f"not an OpenSSH public key: {exc}", str(public)) from exc
    if fields[0] not in ("ssh-ed25519", "ssh-rsa"):
        raise UsageError(f"{fields[0]} keys are not supported (ed25519 or RSA)", str(public))
    return f"{fields[0]} {fields[1]}"


def _record(
    settings: Settings, required: bool, signers: Signers, comment: str, dry_run: bool
) -> PolicyChange:
    step = policy_in_force(settings.ledger_path)
    new = policy_value(required, signers)
    if not new["signers"]:
        raise RefusedError("a policy needs at least one signer")
    odd = [p for p, _ in signers if not p or any(c.isspace() or c in ',*?!"' for c in p)]
    if odd:  # the ledger names each principal in full, as an event's actor
        raise UsageError(f"a principal of the policy must be one name, without spaces, commas "
                         f"or patterns: {', '.join(map(repr, odd))}")  # fmt: skip
    if step is not None and new == policy_value(step.required, list(step.signers)):
        raise RefusedError(f"{step.where} already says this")
    ledger = signing_ledger(settings, root=settings.vault)
    if ledger.signer is None:
        raise UsageError("a POLICY event must be signed, and no signing key is set: set "
                         "[signing] key in vt.toml or git's user.signingkey")  # fmt: skip
    blob = public_blob(ledger.signer)
    judges = step.signers if step is not None else tuple(tuple(s) for s in new["signers"])
    if blob is None or not any(_blob_of(k) == blob for _, k in judges):
        where = step.where if step is not None else "the policy it adopts"
        raise RefusedError(f"the signing key {ledger.signer.shown} is not in {where}: "
                           "a signer it trusts must make this change")  # fmt: skip
    before: set[tuple[str, str]] = set(step.signers if step else ())
    after = {(p, k) for p, k in new["signers"]}
    actor = runner(settings, ledger.signer).name if step is not None else _adopter(new, blob)
    note = _vault_relative(settings, settings.allowed_signers_path)
    decision = {
        "action": POLICY, "actor": actor, "base": ledger_base(new), "checks": {},
        "claim": None, "claim_id": POLICY_CLAIM_ID, "comment": comment, "note": note,
        "policy": new, "preview": None, "v": 1,
    }  # fmt: skip
    change = PolicyChange({}, step, sorted(after - before), sorted(before - after), dry_run)
    if dry_run:
        change.event = decision
        return change
    with ledger.transaction() as txn:
        change.event = txn.append(decision)
    return change


def ledger_base(policy: dict) -> str:
    """A POLICY event's `base`: the sha256 of the policy it puts in force."""
    return sha256_id(canonical(policy).encode())


def _adopter(policy: dict, blob: bytes) -> str:
    """The first POLICY event's actor: the first principal it gives the run's key."""
    return next(p for p, k in policy["signers"] if _blob_of(k) == blob)


def _blob_of(key: str) -> bytes | None:
    try:
        return signer_line(f"x {key}").key
    except FormatError:
        return None


def _vault_relative(settings: Settings, path: Path) -> str:
    try:
        return path.resolve().relative_to(settings.vault.resolve()).as_posix()
    except ValueError:
        return path.name
