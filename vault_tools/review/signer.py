"""Whose key signs the events a run appends (docs/signing.md): `[signing] key` in vt.toml,
else git's own SSH signing setup (`gpg.format = ssh`, `user.signingkey`) once the vault
has set signing up (an allowed signers file, or `required = true`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from vault_tools.config import CONFIG_FILE, Settings
from vault_tools.errors import UsageError
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.policy import policy_in_force
from vault_tools.ledger.signatures import SignaturePolicy
from vault_tools.ledger.signing import Signer

HOW_TO_SET_A_KEY = (
    'set one in vt.toml (`[signing]` then `key = "~/.ssh/id_ed25519"`), or use git\'s: '
    "`git config gpg.format ssh` and `git config user.signingkey ~/.ssh/id_ed25519.pub`"
)


def signing_ledger(settings: Settings, *, root: Path | None = None) -> Ledger:
    """The vault's ledger, checking signatures by its policy and signing what it appends.
    Refuses (before anything is appended) when signatures are required and no key is set."""
    return Ledger(settings.ledger_path, settings.state_dir, root=root,
                  policy=SignaturePolicy.of(settings), signer=signer_for(settings))  # fmt: skip


def signer_for(settings: Settings) -> Signer | None:
    """The run's signer, or None when the vault does not sign."""
    if settings.signing_key is not None:
        return _signer(settings, settings.signing_key, "[signing] key in vt.toml")
    # once the ledger records a policy, it says whether events must be signed (policy.py)
    step = policy_in_force(settings.ledger_path)
    required = step.required if step is not None else settings.signing_required
    opted_in = required or step is not None or settings.allowed_signers_path.is_file()
    git_key = _git_signing_key(str(settings.vault)) if opted_in else None
    if git_key is not None:
        return _signer(settings, git_key, "git config user.signingkey")
    if required:
        why = step.where if step is not None else "[signing] required = true"
        raise UsageError(
            f"signatures are required ({why}) but no signing key is set: {HOW_TO_SET_A_KEY}",
            CONFIG_FILE,
        )
    return None


def _signer(settings: Settings, key: str, source: str) -> Signer:
    literal = key.removeprefix("key::")
    if literal.startswith(("ssh-", "ecdsa-", "sk-")):  # a public key, its private half in the agent
        return Signer(Path("key.pub"), public=literal)
    path = settings.vault / Path(key).expanduser()
    if not path.is_file():
        raise UsageError(f"the signing key ({source}) is not a file: {path}; {HOW_TO_SET_A_KEY}",
                         CONFIG_FILE)  # fmt: skip
    return Signer(path)


def _git_signing_key(folder: str) -> str | None:
    """git's SSH signing key, if git is set up to sign with SSH keys."""
    if _git_config(folder, "gpg.format") != "ssh":
        return None
    return _git_config(folder, "user.signingkey")


def _git_config(folder: str, key: str) -> str | None:
    try:
        done = subprocess.run(["git", "config", "--get", key], cwd=folder, capture_output=True,
                              text=True, timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None
