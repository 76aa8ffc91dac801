"""The OpenSSH formats of signed ledger events, read by hand (docs/signing.md): the SSHSIG
blob of `ssh-keygen -Y sign` (PROTOCOL.sshsig), its armour, the public keys it carries
(ed25519 and RSA, as ssh-keygen accepts them for SSHSIG) and the lines of an allowed
signers file.

Everything here is strict: a blob must be exactly what ssh-keygen writes (canonical
base64, no bytes after a field, an empty reserved field), else it is refused. The
signature checks themselves are libsodium's (ed25519, through PyNaCl: half the CPU of
OpenSSL's) and OpenSSL's (RSA, through `cryptography`), imported when the first key is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

MAGIC = b"SSHSIG"
ARMOUR = ("-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----")
HASHES = {b"sha512": hashlib.sha512, b"sha256": hashlib.sha256}  # PROTOCOL.sshsig's two
_U32 = struct.Struct(">I")
_RSA_MIN_BITS = 1024  # OpenSSH's SSH_RSA_MINIMUM_MODULUS_SIZE


class FormatError(ValueError):
    """Not what ssh-keygen writes; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Sshsig:
    """The fields of an SSHSIG blob, the signature split into its algorithm and bytes."""

    public_key: bytes  # the key's blob, as in a `.pub` file's base64
    namespace: bytes
    hash_algo: bytes
    sig_algo: bytes
    signature: bytes


def string(data: bytes) -> bytes:
    """An SSH wire string: its length, then its bytes."""
    return _U32.pack(len(data)) + data


def _strings(blob: bytes, at: int, count: int) -> list[bytes]:
    """`count` wire strings from `at`, which must end exactly at the blob's end."""
    fields = []
    for _ in range(count):
        if at + 4 > len(blob):
            raise FormatError("cut short")
        (size,) = _U32.unpack_from(blob, at)
        at += 4
        if at + size > len(blob):
            raise FormatError("cut short")
        fields.append(blob[at : at + size])
        at += size
    if at != len(blob):
        raise FormatError("bytes after its end")
    return fields


def decode(sig: str) -> bytes:
    """An event's `sig` (base64) as bytes; only the canonical encoding is accepted, so
    one blob has one `sig` (as OpenSSH's decoder, which refuses stray padding bits)."""
    try:
        blob = binascii.a2b_base64(sig)
    except (binascii.Error, ValueError) as exc:  # ValueError: a character beyond ASCII
        raise FormatError(f"not base64: {exc}") from exc
    # the re-encoding is canonical and has only base64 characters: equal, so was `sig`
    if binascii.b2a_base64(blob, newline=False).decode("ascii") != sig:
        raise FormatError("not base64 as ssh-keygen writes it")
    return blob


def parse(blob: bytes) -> Sshsig:
    """An SSHSIG blob's fields: magic, version 1, public key, namespace, reserved (empty),
    hash algorithm, and the signature (its algorithm's name and its bytes)."""
    if blob[:6] != MAGIC or blob[6:10] != b"\0\0\0\1":
        raise FormatError("not an SSHSIG signature of version 1")
    public_key, namespace, reserved, hash_algo, signature = _strings(blob, 10, 5)
    if reserved:
        raise FormatError("its reserved field is not empty")
    sig_algo, raw = _strings(signature, 0, 2)
    return Sshsig(public_key, namespace, hash_algo, sig_algo, raw)


def signed_data(namespace: bytes, hash_algo: bytes, digest: bytes) -> bytes:
    """What an SSHSIG signature signs (PROTOCOL.sshsig): the message's digest, framed."""
    return MAGIC + string(namespace) + string(b"") + string(hash_algo) + string(digest)


def fingerprint(key_blob: bytes) -> str:
    """`SHA256:…`, as `ssh-keygen -l` prints it."""
    digest = hashlib.sha256(key_blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


class PublicKey(Protocol):
    """A public key that checks signatures: `_Ed25519` or `_Rsa`."""

    def verifier(self, sig_algo: bytes) -> Callable[[bytes, bytes], bool]:
        """The check of signatures of algorithm `sig_algo`: (signature, data) -> whether
        the signature signs `data` with this key. Looked up once per signature head, not
        once per event."""
        ...


def _never(signature: bytes, data: bytes) -> bool:
    """The check of a signature algorithm the key cannot have made."""
    return False


class _Ed25519:
    """libsodium's check. It also refuses keys and signatures with non-canonical or
    small-order points, which OpenSSH's own check lets through and ssh-keygen never makes."""

    def __init__(self, raw: bytes) -> None:
        from nacl.bindings import crypto_sign_open
        from nacl.exceptions import BadSignatureError

        if len(raw) != 32:
            raise FormatError("an ed25519 key of other than 32 bytes")
        self._raw = raw
        # libsodium's call itself, not VerifyKey.verify's wrapper around it: 3 us less
        self._open = crypto_sign_open
        self._bad = BadSignatureError  # kept: an import per event costs a microsecond

    def verifier(self, sig_algo: bytes) -> Callable[[bytes, bytes], bool]:
        return self._verifies if sig_algo == b"ssh-ed25519" else _never

    def _verifies(self, signature: bytes, data: bytes) -> bool:
        if len(signature) != 64:
            return False
        try:
            self._open(signature + data, self._raw)  # the signed message is sig || data
        except self._bad:
            return False
        return True


class _Rsa:
    """OpenSSL's PKCS#1 v1.5 check, with SHA-512 or SHA-256 as the signature names."""

    def __init__(self, e: int, n: int) -> None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding, rsa

        if n.bit_length() < _RSA_MIN_BITS:
            raise FormatError(f"an RSA key of fewer than {_RSA_MIN_BITS} bits")
        try:
            self._key = rsa.RSAPublicNumbers(e, n).public_key()
        except ValueError as exc:  # e.g. an even or too small public exponent
            raise FormatError(f"not a usable RSA key ({exc})") from exc
        self._bad = InvalidSignature
        self._padding = padding.PKCS1v15()
        self._hashes = {b"rsa-sha2-512": hashes.SHA512(), b"rsa-sha2-256": hashes.SHA256()}

    def verifier(self, sig_algo: bytes) -> Callable[[bytes, bytes], bool]:
        digest = self._hashes.get(sig_algo)
        if digest is None:  # ssh-keygen refuses SHA-1 (`ssh-rsa`) in SSHSIG
            return _never

        def verifies(signature: bytes, data: bytes) -> bool:
            try:
                self._key.verify(signature, data, self._padding, digest)
            except self._bad:
                return False
            return True

        return verifies


def public_key(blob: bytes) -> PublicKey:
    """The key of a public key blob: ed25519 or RSA, the types ssh-keygen signs with here
    (others, such as ECDSA or security keys, are refused as not usable)."""
    if blob.startswith(string(b"ssh-ed25519")):
        (raw,) = _strings(blob, 15, 1)
        return _Ed25519(raw)
    if blob.startswith(string(b"ssh-rsa")):
        e, n = _strings(blob, 11, 2)
        return _Rsa(_mpint(e), _mpint(n))
    if len(blob) < 4:
        raise FormatError("cut short")
    kind = blob[4 : 4 + _U32.unpack_from(blob)[0]]
    raise FormatError(f"{kind.decode(errors='replace')!r} keys are not supported")


def _mpint(data: bytes) -> int:
    if not data or data[0] & 0x80:
        raise FormatError("an RSA number that is not positive")
    return int.from_bytes(data, "big")


def armour(sig: str) -> str:
    """An event's `sig` (base64) as the file `ssh-keygen -Y verify -s FILE` reads."""
    lines = [sig[i : i + 70] for i in range(0, len(sig), 70)]
    return "\n".join([ARMOUR[0], *lines, ARMOUR[1]]) + "\n"


def dearmour(text: str) -> bytes:
    """The blob of an armoured signature exactly as `ssh-keygen -Y sign` writes it: the
    BEGIN line, base64 lines of at most 70 characters, the END line, each ending in a
    newline; anything else is refused."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[0] != ARMOUR[0] or lines[-2:] != [ARMOUR[1], ""]:
        raise FormatError("not an armoured SSH signature")
    body = lines[1:-2]
    if any(len(line) > 70 for line in body) or any(len(line) != 70 for line in body[:-1]):
        raise FormatError("armoured lines of other than 70 characters")
    return decode("".join(body))


@dataclass(frozen=True, slots=True)
class SignerLine:
    """One line of an allowed signers file (ssh-keygen(1), ALLOWED SIGNERS)."""

    principals: str
    options: dict[str, str]
    key_type: str
    key: bytes  # the key's blob


_OPTIONS = ("cert-authority", "namespaces", "valid-after", "valid-before")


def signer_line(line: str) -> SignerLine:
    """`principals [options] keytype base64-key [comment]`, as sshsig.c reads it; the
    principals may be quoted, option values are quoted."""
    if line.startswith('"'):
        principals, quote, rest = line[1:].partition('"')
        if not quote:
            raise FormatError("no closing quote after the principals")
    else:
        principals, rest = (line.split(maxsplit=1) + [""])[:2]
    rest = rest.lstrip(" \t")
    options: dict[str, str] = {}
    first = rest.split(maxsplit=1)[0] if rest.split() else ""
    if "=" in first or "," in first or first.lower() == "cert-authority":
        rest = _options(rest, options)
    parts = rest.split(maxsplit=2)
    if len(parts) < 2:
        raise FormatError("no public key after the principals")
    key_type, encoded = parts[0], parts[1]
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FormatError(f"its key is not base64: {exc}") from exc
    if not key.startswith(string(key_type.encode())):
        raise FormatError(f"its key is not of type {key_type}")
    return SignerLine(principals, options, key_type, key)


def _options(rest: str, options: dict[str, str]) -> str:
    """Read the comma-separated options at the start of `rest` into `options`; what follows."""
    while rest and not rest[0].isspace():
        name = next((o for o in _OPTIONS if rest[: len(o)].lower() == o), None)
        if name is None:
            raise FormatError(f"unknown option at {rest.split()[0]!r}")
        if name in options:
            raise FormatError(f"option {name} given twice")
        rest = rest[len(name) :]
        if name == "cert-authority":
            options[name] = ""
        else:
            if rest[:2] != '="':
                raise FormatError(f'option {name} without ="…"')
            value, quote, rest = rest[2:].partition('"')
            if not quote:
                raise FormatError(f"option {name} without its closing quote")
            options[name] = value
        if rest[:1] == ",":
            rest = rest[1:]
    return rest.lstrip(" \t")
