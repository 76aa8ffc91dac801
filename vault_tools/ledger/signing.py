"""Signing ledger events with the reviewer's SSH key (docs/signing.md).

A signature is made by `ssh-keygen -Y sign`, so the ssh-agent, hardware keys and
passphrases work as they do for git's own SSH signing. One `ssh-keygen` call signs every
event of a run (it signs each file it is given), so a run pays for one process start.
"""

from __future__ import annotations

import base64
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vault_tools.errors import RefusedError
from vault_tools.ledger.events import canonical
from vault_tools.ledger.sshformat import FormatError, dearmour

NAMESPACE = "vt-decision@vault_tools"
# files per ssh-keygen call: keeps the command line far below the system's limit
_PER_CALL = 1000


def signed_message(event: dict) -> bytes:
    """What an event's `sig` signs: its decision (`id`, which covers what was decided,
    about which claim, by whom) and when (`ts`); not the chain fields, so a merge that
    re-chains the event keeps its signature valid."""
    return canonical({"id": event["id"], "ts": event["ts"]}).encode()


class SigningError(RefusedError):
    """The key could not sign (ssh-keygen failed): nothing was appended."""


@dataclass(frozen=True, slots=True)
class Signer:
    """Signs with `key`: a private key file, or a public key whose private half is in
    the ssh-agent (ssh-keygen asks the agent, as git does)."""

    key: Path
    public: str | None = None  # git's `key::ssh-ed25519 AAAA…`: the key itself, not a file

    def sign(self, messages: Sequence[bytes]) -> list[str]:
        """One base64 `sig` per message, in order; raises SigningError naming the key."""
        sigs: list[str] = []
        with tempfile.TemporaryDirectory(prefix="vt-sign-") as tmp:
            key = self.key
            if self.public is not None:
                key = Path(tmp) / "key.pub"
                key.write_text(self.public + "\n")
            for start in range(0, len(messages), _PER_CALL):
                chunk = messages[start : start + _PER_CALL]
                files = [Path(tmp) / f"{start + i}" for i in range(len(chunk))]
                for file, message in zip(files, chunk, strict=True):
                    file.write_bytes(message)
                self._run(key, files)
                sigs += [self._read(f.with_name(f.name + ".sig")) for f in files]
        return sigs

    def _read(self, sig_file: Path) -> str:
        try:
            return base64.b64encode(dearmour(sig_file.read_text())).decode()
        except FormatError as exc:
            unexpected = f"ssh-keygen wrote an unexpected signature with {self.shown}: {exc}"
            raise SigningError(unexpected) from exc

    @property
    def shown(self) -> str:
        return self.public[:40] + "…" if self.public else str(self.key)

    def _run(self, key: Path, files: list[Path]) -> None:
        command = ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", NAMESPACE]
        try:
            # stdin stays the terminal's: ssh-keygen asks there for a key's passphrase
            done = subprocess.run(
                [*command, *map(str, files)], capture_output=True, text=True, check=False
            )
        except OSError as exc:
            raise SigningError(f"cannot run ssh-keygen to sign: {exc}", self.shown) from exc
        if done.returncode != 0:
            said = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
            raise SigningError(
                f"ssh-keygen could not sign with this key ({said}); nothing was appended",
                self.shown,
            )
