"""The signing policy in the ledger (docs/signing.md, "The policy in the ledger").

A POLICY event puts a whole signing policy in force: whether every later event must be
signed, and which keys may sign for which principal. It must be signed by a key the
policy in force before it lists for its actor; the first one, by a key it lists itself.
From the first POLICY event on, verify judges every later event by the policy in force
at its line, never by vt.toml or the allowed signers file: editing those changes nothing
until a signed POLICY event records the change. The events before the first POLICY event
are judged by the files, as in a vault that never recorded a policy.

The POLICY events are found without parsing the other lines: a canonical line starts
with its `action`, the first key in sorted order.
"""

from __future__ import annotations

import mmap
from base64 import b64decode, b64encode
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from vault_tools.errors import VtError
from vault_tools.ledger.events import load_json, policy_problems
from vault_tools.ledger.reader import open_ledger_binary
from vault_tools.ledger.signatures import (
    KnownSigner,
    SignatureChecker,
    SignaturePolicy,
    for_vt,
    read_allowed_signers,
)
from vault_tools.ledger.signing import NAMESPACE
from vault_tools.ledger.sshformat import FormatError, signer_line
from vault_tools.vocabulary import POLICY, POLICY_CLAIM_ID

_START = b'{"action":"' + POLICY.encode() + b'",'


@dataclass(frozen=True, slots=True)
class PolicyStep:
    """One POLICY event of the ledger: the policy in force from the line after it."""

    seq: int
    id: str
    actor: str
    required: bool
    signers: tuple[tuple[str, str], ...]  # (principal, "ssh-ed25519 AAAA…"), as recorded

    @property
    def where(self) -> str:
        return f"the signing policy in the ledger (seq {self.seq})"

    def principals_of(self, key_blob: bytes) -> list[str]:
        """The principals this policy lets `key_blob` sign for, in its order."""
        return [p for p, key in self.signers if _blob(key) == key_blob]


def policy_steps(path: Path | str, size: int | None = None) -> list[PolicyStep]:
    """The ledger's POLICY events in ledger order (up to byte `size`), each as it states
    itself: a line that is not a sound POLICY event is left out here and reported by
    verify at its line."""
    try:
        handle = open_ledger_binary(path)  # a regular file, or exit 3 (never a FIFO)
    except FileNotFoundError:
        return []
    with handle:
        try:
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file
            return []
        with data:
            end = len(data) if size is None else min(size, len(data))
            steps: list[PolicyStep] = []
            at = 0 if data[: len(_START)] == _START else data.find(b"\n" + _START, 0, end)
            while 0 <= at < end:
                start = at if at == 0 and data[:1] == b"{" else at + 1
                stop = data.find(b"\n", start, end)
                if stop < 0:
                    break  # a torn tail is not an event
                step = _step(data[start:stop])
                if step is not None:
                    steps.append(step)
                at = data.find(b"\n" + _START, stop, end)
            return steps


def _step(line: bytes) -> PolicyStep | None:
    try:
        ev = load_json(line)
    except ValueError:
        return None
    return step_of(ev)


def step_of(ev: object) -> PolicyStep | None:
    """A POLICY event as the policy it puts in force; None when it is not a sound one."""
    if (
        type(ev) is not dict
        or ev.get("claim_id") != POLICY_CLAIM_ID
        or type(ev.get("seq")) is not int
        or type(ev.get("id")) is not str
        or type(ev.get("actor")) is not str
        or policy_problems(ev.get("policy"))
    ):
        return None
    policy = ev["policy"]
    signers = tuple((p, k) for p, k in policy["signers"])
    return PolicyStep(ev["seq"], ev["id"], ev["actor"], policy["required"], signers)


def policy_in_force(path: Path | str) -> PolicyStep | None:
    """The ledger's last POLICY event: the policy a new event is judged by (None: the
    ledger records none, the files decide)."""
    steps = policy_steps(path)
    return steps[-1] if steps else None


def files_differ(allowed_signers: Path, required: bool, step: PolicyStep) -> str | None:
    """What to tell when vt.toml's `required` or the allowed signers file propose another
    policy than the one in force (they decide nothing once the ledger records one)."""
    try:
        signers = signers_of_file(allowed_signers) if allowed_signers.is_file() else []
    except VtError:
        signers = []
    if signers and policy_value(required, signers) == policy_value(
        step.required, list(step.signers)
    ):
        return None
    return (f"vt.toml's [signing] required and {allowed_signers.name} propose another policy "
            f"than {step.where}, which decides: `vt signers adopt` records them, signed by "
            "a key it trusts")  # fmt: skip


NOT_RECORDED = (
    "the signing policy is not in the ledger yet: vt.toml and the allowed signers file "
    "decide, and anyone who can commit can weaken them; `vt signers adopt` records it, "
    "signed (docs/signing.md)"
)


def policy_value(required: bool, signers: list[tuple[str, str]]) -> dict:
    """A POLICY event's `policy`: its signers sorted, each once."""
    return {"required": required, "signers": [list(s) for s in sorted(set(signers))]}


def signers_of_file(allowed_signers: Path) -> list[tuple[str, str]]:
    """What adopting the allowed signers file records: (principal, key) for every
    principal named in full on a line valid for vt decisions. Validity windows are not
    carried over: from the POLICY event on, a key stops signing when a later POLICY event
    drops it."""
    entries = read_allowed_signers(allowed_signers)  # refuses a line that does not parse
    keys = _key_texts(allowed_signers)
    found: list[tuple[str, str]] = []
    for blob, listed in entries.items():
        for entry in listed:
            if for_vt(entry):
                found += [(p, keys[blob]) for p in entry.principals if not _pattern(p)]
    return found


def _key_texts(path: Path) -> dict[bytes, str]:
    texts: dict[bytes, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.strip().startswith("#"):
            try:
                signer = signer_line(line.strip())
            except FormatError:
                continue
            texts[signer.key] = f"{signer.key_type} {b64encode(signer.key).decode()}"
    return texts


def _pattern(principal: str) -> bool:
    return any(c in principal for c in "*?!") or not principal.strip()


def _blob(key: str) -> bytes | None:
    try:
        return b64decode(key.split()[1], validate=True)
    except (IndexError, ValueError):
        return None


@dataclass(slots=True)
class _StepChecker(SignatureChecker):
    """The signatures checked against one POLICY event's signers instead of a file."""

    step: PolicyStep | None = None

    def _signers(self) -> dict[bytes, list[KnownSigner]]:
        if self._entries is None:
            assert self.step is not None
            entries: dict[bytes, list[KnownSigner]] = {}
            for number, (principal, key) in enumerate(self.step.signers, 1):
                blob = _blob(key)
                if blob is not None:
                    entries.setdefault(blob, []).append(
                        KnownSigner(number, [principal], None, None, [NAMESPACE])
                    )
            self._entries = entries
        return self._entries

    def _where(self) -> str:
        assert self.step is not None
        return self.step.where


@dataclass(slots=True)
class PolicyChecker(SignatureChecker):
    """Judges each event by the policy in force at its seq: the files' (`policy`) before
    the ledger's first POLICY event, that event's own signers for itself, and from then on
    the last POLICY event before it. `files`: False when the caller checks no signature
    by the files (the events before the first POLICY event are then only counted)."""

    steps: tuple[PolicyStep, ...] = ()
    files: bool = True
    _seqs: list[int] = field(default_factory=list)
    _judges: dict[int, _StepChecker] = field(default_factory=dict)

    def check(self, ev: dict) -> str | None:
        if not self._seqs:
            self._seqs = [s.seq for s in self.steps]
        seq = ev["seq"]
        before = bisect_left(self._seqs, seq)  # the steps strictly before this event
        if ev["action"] == POLICY:
            own = self.steps[before] if before < len(self.steps) else None
            judge = self.steps[before - 1] if before else own
            if judge is None or own is None or own.seq != seq:
                judge = None  # not the line the scan found: not canonical, said by verify
            return self._signed_under(ev, judge, required=True)
        if not before:
            if self.files:
                return SignatureChecker.check(self, ev)
            self.count("sig" in ev)
            return None
        step = self.steps[before - 1]
        return self._signed_under(ev, step, step.required)

    def _signed_under(self, ev: dict, step: PolicyStep | None, required: bool) -> str | None:
        sig = ev.get("sig")
        if sig is None:
            if required and step is not None:
                return f"not signed, and {step.where} requires every later event to be"
            self.unsigned += 1
            return None
        self.signed += 1
        if step is None:
            return "a POLICY event the ledger's policy cannot judge (not canonical?)"
        judge = self._judges.get(step.seq)
        if judge is None:
            judge = self._judges[step.seq] = _StepChecker(SignaturePolicy(), step=step)
        return judge._problem(ev, sig)


def checker_for(
    policy: SignaturePolicy | None, path: Path | str, size: int | None = None
) -> SignatureChecker | None:
    """The signature checker of one verify of the ledger at `path`: by the policy in the
    ledger once it records one, else by the files (`policy`; None: no signature checked)."""
    steps = policy_steps(path, size)
    if not steps:
        return policy.checker() if policy is not None else None
    return PolicyChecker(policy or SignaturePolicy(), steps=tuple(steps), files=policy is not None)
