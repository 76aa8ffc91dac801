"""Checking the signatures of ledger events (docs/signing.md), in process.

Each signed event's `sig` must be an SSHSIG signature, in the namespace of vt decisions,
of `signed_message(event)`, made by a key that the allowed signers file (git's
`allowed_signers` format) lists for the event's `actor`, valid at the event's `ts`. The
formats are read by hand (sshformat.py); the cryptography, libsodium for ed25519 and
OpenSSL for RSA, is imported only when a signed event is met. Parsed keys and what the
file allows each (key, actor) are kept, so a ledger signed by a handful of reviewers
parses each key once; every signature is still checked on every verify.
"""

from __future__ import annotations

import binascii
import calendar
import hashlib
import re
import time
from binascii import a2b_base64, b2a_base64
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any

from vault_tools.config import Settings
from vault_tools.errors import UsageError
from vault_tools.ledger.signing import NAMESPACE
from vault_tools.ledger.sshformat import (
    HASHES,
    FormatError,
    PublicKey,
    decode,
    fingerprint,
    parse,
    public_key,
    signed_data,
    signer_line,
)

ALLOWED_SIGNERS = "allowed_signers"  # beside the ledger, unless vt.toml says otherwise
_DATE = re.compile(r"([0-9]{8})([0-9]{4})?([0-9]{2})?(Z?)")


@dataclass(frozen=True, slots=True)
class SignaturePolicy:
    """Where the allowed signers are, and from which `seq` every event must be signed
    (`required`). Without a file, a signed event cannot be checked and is a problem."""

    allowed_signers: Path | None = None
    required: bool = False
    required_from: int = 1

    @classmethod
    def of(cls, settings: Settings) -> SignaturePolicy:
        return cls(settings.allowed_signers_path, settings.signing_required,
                   settings.signatures_from)  # fmt: skip

    def digest(self) -> str:
        """Names this policy and the file's content: the gate trusts a prefix verified
        under the same policy only (a key removed from the file re-verifies everything)."""
        content = b""
        if self.allowed_signers is not None:
            try:
                content = self.allowed_signers.read_bytes()
            except FileNotFoundError:
                pass  # no file: as if signing were not set up
            except OSError:
                content = b"(unreadable)"
        if not content and not self.required:
            return NO_SIGNING
        state = f"{self.required}:{self.required_from}:".encode()
        return "sha256:" + hashlib.sha256(state + content).hexdigest()

    def checker(self) -> SignatureChecker:
        return SignatureChecker(self)


_NAMESPACE = NAMESPACE.encode()


@lru_cache(maxsize=4)
def _signed_prefix(hash_algo: bytes) -> bytes:
    """What an SSHSIG of a decision signs, up to the message's digest (the digest's
    length included): built once per hash algorithm, not once per event."""
    size = len(HASHES[hash_algo](b"").digest())
    return signed_data(_NAMESPACE, hash_algo, b"\0" * size)[:-size]


SIGNING_KEY = "signing"  # the state db's meta key for the policy the trusted prefix passed
NO_SIGNING = "none"  # the digest of a vault with no signing set up (and of vaults before it)


@dataclass(slots=True)
class KnownSigner:
    """A signer the allowed signers file names: its principals, validity and key."""

    line: int
    principals: list[str]
    valid_after: str | None  # as an event's ts, UTC
    valid_before: str | None
    namespaces: list[str] | None


@dataclass(frozen=True, slots=True)
class _Head:
    """What the head of an SSHSIG blob (all but the signature's bytes, whose length it
    ends with) was found to hold: any blob of that head plus that many bytes reads the same,
    so it is read once, not once per event (a reviewer signs thousands). It is kept under
    the base64 text of its whole 3-byte groups, which every `sig` of that head starts with:
    only the text after it (the signature's, and at most two bytes of the head) is decoded
    per event."""

    key_blob: bytes
    verifies: Callable[[bytes, bytes], bool]  # the key's check of (signature, signed data)
    signed_prefix: bytes  # what the signature signs, up to the message's digest
    digest: Callable[[bytes], Any]  # the hash algorithm's hashlib constructor
    rest: bytes  # the head's bytes after its whole 3-byte groups: what the tail starts with
    tail_size: int  # what the text after the groups decodes to: `rest` and the signature
    # by actor, the allowed signers entries of the key for that actor; None: one of them
    # allows it at any ts, so an event's ts need not be compared
    actors: dict[str, list[KnownSigner] | None] = field(default_factory=dict)


@dataclass(slots=True)
class SignatureChecker:
    """Checks the events of one verify; counts the signed and the unsigned."""

    policy: SignaturePolicy
    signed: int = 0
    unsigned: int = 0  # events before `required_from`, or in a vault not requiring any
    _entries: dict[bytes, list[KnownSigner]] | None = None
    _keys: dict[bytes, PublicKey | str] = field(default_factory=dict)
    _heads: dict[str, _Head] = field(default_factory=dict)  # by their groups' base64
    _cuts: list[int] = field(default_factory=list)  # the lengths of those texts

    def check(self, ev: dict) -> str | None:
        """The problem with this event's signature, or None."""
        sig = ev.get("sig")
        if sig is None:
            policy = self.policy
            if policy.required and ev["seq"] >= policy.required_from:
                return (f"not signed, and every event from seq {policy.required_from} must be "
                        "([signing] required in vt.toml)")  # fmt: skip
            self.unsigned += 1
            return None
        self.signed += 1
        return self._problem(ev, sig)

    def count(self, signed: bool) -> None:
        """An event of a prefix verified before, under this same policy."""
        if signed:
            self.signed += 1
        else:
            self.unsigned += 1

    def _problem(self, ev: dict, sig: str) -> str | None:
        for cut in self._cuts:
            head = self._heads.get(sig[:cut])
            if head is not None:
                signature = _signature(sig[cut:], head)
                if signature is not None:
                    return self._verified(ev, head, signature)
        # a head not met before, or a tail that does not fit its head: read whole, so
        # whatever is wrong is said as for any other signature
        try:
            blob = decode(sig)
        except FormatError as exc:
            return f"signature does not parse ({exc})"
        return self._read_head(ev, sig, blob)

    def _verified(self, ev: dict, head: _Head, signature: bytes) -> str | None:
        """The signature checked, then the key's right to sign for the actor at that ts."""
        if not head.verifies(signature, head.signed_prefix + head.digest(_message(ev)).digest()):
            return "bad signature: it does not sign this decision (edited after signing?)"
        actor, actors = ev["actor"], head.actors
        if actor not in actors:
            actors[actor] = self._entries_for(head.key_blob, actor)
        entries = actors[actor]
        return None if entries is None else self._not_allowed(ev, head.key_blob, entries)

    def _read_head(self, ev: dict, sig: str, blob: bytes) -> str | None:
        """A blob (`sig`, decoded) of a head not met before: read whole; its head kept if
        it is usable."""
        try:
            found = parse(blob)
        except FormatError as exc:
            return f"signature does not parse ({exc})"
        if found.namespace != _NAMESPACE:
            return f"signature made for namespace {found.namespace.decode(errors='replace')!r}"
        hash_algo = found.hash_algo
        if hash_algo not in HASHES:
            return f"signature hash {hash_algo.decode(errors='replace')!r} is not sha512 or sha256"
        key = self._key(found.public_key)
        if isinstance(key, str):
            return key
        size = len(found.signature)
        end = len(blob) - size  # of the head
        whole = end - end % 3  # its bytes in whole base64 groups
        head = _Head(found.public_key, key.verifier(found.sig_algo), _signed_prefix(hash_algo),
                     HASHES[hash_algo], blob[whole:end], end - whole + size)  # fmt: skip
        cut = whole // 3 * 4  # `sig` is canonical base64: its first `cut` characters
        self._heads[sig[:cut]] = head  # are those groups' text
        if cut not in self._cuts:
            self._cuts.append(cut)
        return self._verified(ev, head, found.signature)

    def _key(self, blob: bytes) -> PublicKey | str:
        """The parsed public key (kept: a reviewer signs thousands of events), or why not."""
        key = self._keys.get(blob)
        if key is None:
            try:
                key = public_key(blob)
            except FormatError as exc:
                key = f"signature's key is not usable ({exc})"
            self._keys[blob] = key
        return key

    def _entries_for(self, blob: bytes, actor: str) -> list[KnownSigner] | None:
        """The allowed signers entries that name this key for this actor; None when one of
        them allows it at any time."""
        entries = [e for e in self._signers().get(blob, []) if _principal_matches(actor, e)]
        for entry in entries:
            if entry.valid_after is None and entry.valid_before is None and for_vt(entry):
                return None
        return entries

    def _not_allowed(self, ev: dict, blob: bytes, entries: list[KnownSigner]) -> str | None:
        """Why the allowed signers file (these entries of this key for the event's actor)
        does not let this key sign for the actor at the event's ts, or None."""
        actor, ts = ev["actor"], ev["ts"]
        for entry in entries:
            if (
                (entry.valid_after is None or ts >= entry.valid_after)
                and (entry.valid_before is None or ts < entry.valid_before)
                and for_vt(entry)
            ):
                return None
        name = f"key {fingerprint(blob)}"
        if entries:
            windows = "; ".join(_window(e) for e in entries)
            return f"{name} of {actor!r} was not valid at {ts} ({windows})"
        if not self._signers().get(blob):
            return f"{name} is not in {self._where()}"
        return f"{name} is not allowed to sign for actor {actor!r} in {self._where()}"

    def _where(self) -> str:
        return str(self.policy.allowed_signers or ALLOWED_SIGNERS)

    def _signers(self) -> dict[bytes, list[KnownSigner]]:
        if self._entries is None:
            self._entries = read_allowed_signers(self.policy.allowed_signers)
        return self._entries


def signing_key_of(sig: str) -> str | None:
    """The fingerprint of the key that made `sig` (`SHA256:…`, as ssh-keygen -l prints it),
    None when it does not parse. Says who signed only once the signature has verified."""
    try:
        return fingerprint(parse(decode(sig)).public_key)
    except FormatError:
        return None


def _signature(text: str, head: _Head) -> bytes | None:
    """The signature's bytes, if `text` (what follows the head's groups in a `sig`) is the
    canonical base64 of the head's rest and a signature of the head's size, else None
    (then the head's text and `text` are the canonical base64 of the whole blob)."""
    try:
        raw = a2b_base64(text)
    except (binascii.Error, ValueError):  # ValueError: a character beyond ASCII
        return None
    if len(raw) != head.tail_size or not raw.startswith(head.rest):
        return None
    if b2a_base64(raw, newline=False) != text.encode():  # only what ssh-keygen writes
        return None
    return raw[len(head.rest) :]


def _message(ev: dict) -> bytes:
    """`signed_message(ev)` for an event whose id and ts passed the line checks (a sha and
    a timestamp need no escaping): one f-string instead of a serialisation per line."""
    return f'{{"id":"{ev["id"]}","ts":"{ev["ts"]}"}}'.encode()


def for_vt(entry: KnownSigner) -> bool:
    """Whether the entry's `namespaces` (if any) include vt's."""
    return entry.namespaces is None or any(fnmatchcase(NAMESPACE, n) for n in entry.namespaces)


def _window(entry: KnownSigner) -> str:
    after, before = entry.valid_after or "any time", entry.valid_before or "any time"
    if entry.namespaces is not None:
        return f"line {entry.line}: only for namespaces {','.join(entry.namespaces)}"
    return f"line {entry.line}: valid from {after} until {before}"


def _principal_matches(actor: str, entry: KnownSigner) -> bool:
    """ssh's pattern lists: `*` and `?` wildcards, a `!pattern` that matches excludes."""
    matched = False
    for pattern in entry.principals:
        if pattern.startswith("!"):
            if fnmatchcase(actor, pattern[1:]):
                return False
        elif fnmatchcase(actor, pattern):
            matched = True
    return matched


def read_allowed_signers(path: Path | None) -> dict[bytes, list[KnownSigner]]:
    """The file's entries by public key blob; a line that does not parse is a usage error
    naming it (`path:line`), as ssh-keygen refuses such a file."""
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the allowed signers: {exc}", str(path)) from exc
    entries: dict[bytes, list[KnownSigner]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key, entry = _signer_entry(line, number)
        except ValueError as exc:
            raise UsageError(f"not an allowed signers line: {exc}", str(path), number) from exc
        entries.setdefault(key, []).append(entry)
    return entries


def _signer_entry(line: str, number: int) -> tuple[bytes, KnownSigner]:
    """One line of the file (not blank, not a comment); ValueError when it does not parse."""
    signer = signer_line(line)
    options = signer.options
    if "cert-authority" in options:
        raise ValueError("cert-authority keys are not supported")
    entry = KnownSigner(
        number,
        signer.principals.split(","),
        _utc(options.get("valid-after")),
        _utc(options.get("valid-before")),
        options["namespaces"].split(",") if "namespaces" in options else None,
    )
    return signer.key, entry


def allowed_signers_problem(line: str) -> str | None:
    """Why a line of an allowed signers file is not one vt reads (None: it is, or it is
    blank or a comment): the rule `read_allowed_signers` holds every line to."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    try:
        _signer_entry(line, 0)
    except ValueError as exc:
        return str(exc)
    return None


def _utc(value: str | None) -> str | None:
    """ssh's YYYYMMDD[HHMM[SS]][Z] (local time without the Z) as an event's ts."""
    if value is None:
        return None
    found = _DATE.fullmatch(value)
    if found is None:
        raise ValueError(f"{value!r} is not YYYYMMDD[HHMM[SS]][Z]")
    day, hour_minute, second, zulu = found.groups()
    parsed = time.strptime(day + (hour_minute or "0000") + (second or "00"), "%Y%m%d%H%M%S")
    stamp = calendar.timegm(parsed) if zulu else time.mktime(parsed)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def principals_of_key(allowed_signers: Path | None, key_blob: bytes) -> list[str]:
    """The principals the allowed signers file lets `key_blob` sign vt decisions for, in
    file order; a pattern (`*`, `?`, `!`) names nobody in particular and is left out."""
    named: list[str] = []
    for entry in read_allowed_signers(allowed_signers).get(key_blob, []):
        if for_vt(entry):
            named += [p for p in entry.principals if not any(c in p for c in "*?!")]
    return list(dict.fromkeys(named))
