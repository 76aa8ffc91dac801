"""Who runs this command: the actor of every event it appends (docs/workflow.md, "Who
records what").

An event's `actor` is the person who ran the command that wrote it, never a name read from
a note: in a signing vault the principal the run's key signs for (by the signing policy in
the ledger once it records one, else by the allowed signers file);
else `[review] actor` in vt.toml; else git's `user.name` (then `user.email`); else the OS
user. A note whose `reviewer` names somebody else is that person's decision, which only
their own run records (or, in a vault that sets `[review] record_for_reviewers`, a run
that records it as theirs and names itself as the recorder).
"""

from __future__ import annotations

import base64
import getpass
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vault_tools.config import CONFIG_FILE, Settings
from vault_tools.errors import UsageError
from vault_tools.ledger.policy import policy_in_force
from vault_tools.ledger.signatures import principals_of_key
from vault_tools.ledger.signing import Signer
from vault_tools.review.signer import signer_for


@dataclass(frozen=True, slots=True)
class Runner:
    """The person running this command, and every name a note may call them by."""

    name: str  # the `actor` of the events this run appends
    names: frozenset[str]  # casefolded: the actor, `[review] actor`, git's name and email

    def decided(self, reviewer: str | None) -> bool:
        """Whether a note whose `reviewer` is this is the runner's own decision: a note
        that names nobody is (in a team, every note names its reviewer)."""
        reviewer = (reviewer or "").strip()
        return not reviewer or reviewer.casefold() in self.names


def decided_by(reviewer: str) -> str:
    """Why a run leaves a note alone: it is `reviewer`'s decision, theirs to record."""
    return f"decided by {reviewer} in the note; {reviewer}'s vt apply records it"


def runner(settings: Settings, signer: Signer | None = None) -> Runner:
    """Who runs this command (see the module's rule); `signer` is the run's, if it signs.
    A signing run is the principal its key signs for, and a note is its own only when the
    note's reviewer is one of the principals the allowed signers give that key: the
    signature proves nothing else."""
    git_name = _git_config(str(settings.vault), "user.name")
    git_email = _git_config(str(settings.vault), "user.email")
    plain = settings.actor or git_name or git_email or _os_user()
    if signer is None:
        names = {n.casefold() for n in (plain, settings.actor, git_name, git_email) if n}
        return Runner(plain, frozenset(names))
    principals = _principals(settings, signer)
    name = next((p for p in principals if p.casefold() == plain.casefold()), principals[0])
    return Runner(name, frozenset(p.casefold() for p in principals))


def runner_of(settings: Settings) -> Runner:
    """`runner`, with the vault's own signer (loaded here: revert, status and init)."""
    return runner(settings, signer_for(settings))


def _principals(settings: Settings, signer: Signer) -> list[str]:
    """The principals the allowed signers let the run's key sign vt decisions for."""
    blob = public_blob(signer)
    step = policy_in_force(settings.ledger_path)  # once recorded, the ledger's policy names
    if step is not None:
        named = step.principals_of(blob) if blob else []
        if not named:
            raise UsageError(
                f"the signing key {signer.shown} is not in {step.where}: a signer it "
                "trusts adds it (vt signers add NAME KEY.pub)",
                CONFIG_FILE,
            )
        return named
    named = principals_of_key(settings.allowed_signers_path, blob) if blob else []
    if not named:
        raise UsageError(
            f"the signing key {signer.shown} is not in the allowed signers "
            f"({settings.allowed_signers_path}) for vt decisions: add your line there "
            "(vt init --signer-key KEY.pub adds it) and commit it",
            CONFIG_FILE,
        )
    return named


def public_blob(signer: Signer) -> bytes | None:
    """The public key of the run's key: given as such, beside it as KEY.pub, or derived
    by `ssh-keygen -y` (which a passphrase-protected key without an agent cannot do)."""
    text = signer.public
    if text is None:
        key = signer.key
        pub = key if key.suffix == ".pub" else key.with_name(key.name + ".pub")
        try:
            text = pub.read_text(encoding="utf-8")
        except OSError:
            text = _derived_public(key)
    parts = (text or "").split()
    try:
        return base64.b64decode(parts[1], validate=True) if len(parts) >= 2 else None
    except ValueError:
        return None


def _derived_public(key: Path) -> str | None:
    try:
        command = ["ssh-keygen", "-y", "-f", str(key)]
        done = subprocess.run(
            command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _git_config(folder: str, key: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "config", key],
            cwd=folder,
            capture_output=True,
            encoding="utf-8",  # git's bytes, not the locale's code page (Windows)
            errors="replace",
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = done.stdout.strip()
    return value if done.returncode == 0 and value else None


def _os_user() -> str:
    try:
        return getpass.getuser() or "unknown"
    # no passwd entry (containers); no pwd module and no USERNAME (Windows)
    except (KeyError, OSError, ImportError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"
