"""The hand-written SSHSIG reader (vault_tools/ledger/sshformat.py) against real signatures
made by `ssh-keygen -Y sign`: they verify, and every flipped byte, every truncation, a
wrong namespace, a wrong hash algorithm and a key of another type are refused; where
`ssh-keygen -Y verify` is asked the same question, it gives the same answer."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vault_tools.errors import UsageError
from vault_tools.ledger.signatures import SignatureChecker, SignaturePolicy, signing_key_of
from vault_tools.ledger.signing import NAMESPACE, signed_message
from vault_tools.ledger.sshformat import (
    FormatError,
    armour,
    dearmour,
    decode,
    parse,
    public_key,
    signer_line,
    string,
)

EVENT = {"seq": 1, "actor": "alice", "ts": "2026-12-02T08:00:00Z", "id": "sha256:" + "ab" * 32}
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


class Signed:
    """A key made by ssh-keygen, the allowed signers file naming it for alice, and
    ssh-keygen's armoured signature of EVENT's signed message."""

    def __init__(self, folder: Path, kind: str, *sign_options: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.key = folder / kind
        size = ["-b", "2048"] if kind == "rsa" else []
        _run("ssh-keygen", "-q", "-t", kind, *size, "-N", "", "-C", kind, "-f", str(self.key))
        self.public = " ".join(Path(f"{self.key}.pub").read_text().split()[:2])
        self.signers = folder / "allowed_signers"
        self.signers.write_text(f"alice {self.public}\n")
        self.armoured = sign(self.key, signed_message(EVENT), *sign_options)

    def problem(self, sig: str, event: dict = EVENT) -> str | None:
        """What verify says of `sig` on `event`, against this key's allowed signers."""
        return SignatureChecker(SignaturePolicy(self.signers, required=True)).check(
            dict(event, sig=sig)
        )

    def armour_problem(self, text: str) -> str | None:
        """What verify says of an armoured signature: refused when it does not dearmour."""
        try:
            blob = dearmour(text)
        except FormatError as exc:
            return str(exc)
        return self.problem(base64.b64encode(blob).decode())

    def ssh_keygen_accepts(self, text: str, message: bytes, namespace: str = NAMESPACE) -> bool:
        """`ssh-keygen -Y verify`, as docs/signing.md tells a reader without vt to run it."""
        sig = self.key.with_name("check.sig")
        sig.write_text(text)
        done = subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(self.signers), "-I", "alice",
             "-n", namespace, "-s", str(sig)],
            input=message, capture_output=True, check=False,
        )  # fmt: skip
        return done.returncode == 0


def _run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def sign(key: Path, message: bytes, *options: str, namespace: str = NAMESPACE) -> str:
    """ssh-keygen's armoured signature of `message`."""
    file = key.with_name(f"message-{len(list(key.parent.iterdir()))}")
    file.write_bytes(message)
    _run("ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace, *options, str(file))
    return file.with_name(file.name + ".sig").read_text()


@pytest.fixture(scope="module")
def ed25519(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return Signed(tmp_path_factory.mktemp("ed25519"), "ed25519")


@pytest.fixture(scope="module")
def rsa(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return Signed(tmp_path_factory.mktemp("rsa"), "rsa")


@pytest.fixture(params=["ed25519", "rsa"])
def signed(request: pytest.FixtureRequest) -> Signed:
    return request.getfixturevalue(request.param)


def sig_of(text: str) -> str:
    return base64.b64encode(dearmour(text)).decode()


def test_ssh_keygen_signatures_verify_and_round_trip(signed: Signed) -> None:
    assert signed.armour_problem(signed.armoured) is None
    sig = sig_of(signed.armoured)
    assert armour(sig) == signed.armoured  # vt's armour is ssh-keygen's, byte for byte
    assert signed.ssh_keygen_accepts(signed.armoured, signed_message(EVENT))


def test_a_sha256_signature_verifies(tmp_path: Path, ed25519: Signed) -> None:
    """ssh-keygen can hash with sha256 (`-O hashalg=sha256`): the other algorithm allowed."""
    text = sign(ed25519.key, signed_message(EVENT), "-O", "hashalg=sha256")
    assert parse(dearmour(text)).hash_algo == b"sha256"
    assert ed25519.armour_problem(text) is None


def test_the_fingerprint_is_ssh_keygens(signed: Signed) -> None:
    done = subprocess.run(["ssh-keygen", "-l", "-f", f"{signed.key}.pub"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert signing_key_of(sig_of(signed.armoured)) == done.stdout.split()[1]
    assert signing_key_of("not a signature") is None


def test_every_flipped_bit_of_the_armour_is_refused(signed: Signed) -> None:
    text = signed.armoured
    for at in range(len(text)):
        for bit in range(8):
            flipped = text[:at] + chr(ord(text[at]) ^ (1 << bit)) + text[at + 1 :]
            assert signed.armour_problem(flipped) is not None, (at, bit)


def test_every_truncation_is_refused(signed: Signed) -> None:
    text, sig = signed.armoured, sig_of(signed.armoured)
    for end in range(len(text)):
        assert signed.armour_problem(text[:end]) is not None, end
    for end in range(len(sig)):
        assert signed.problem(sig[:end]) is not None, end


@FUZZ
@given(data=st.data())
def test_any_changed_byte_of_the_sig_is_refused(ed25519: Signed, data: st.DataObject) -> None:
    """A byte of the base64 `sig`, or of the blob it encodes, changed to any other value."""
    sig = sig_of(ed25519.armoured)
    blob = base64.b64decode(sig)
    at = data.draw(st.integers(0, len(blob) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != blob[at]))
    changed = base64.b64encode(blob[:at] + bytes([value]) + blob[at + 1 :]).decode()
    assert ed25519.problem(changed) is not None
    at = data.draw(st.integers(0, len(sig) - 1))
    char = data.draw(st.characters(max_codepoint=255).filter(lambda c: c != sig[at]))
    assert ed25519.problem(sig[:at] + char + sig[at + 1 :]) is not None


def test_a_checker_that_has_read_the_head_still_checks_every_byte(signed: Signed) -> None:
    """The checker reads a signature's head (all before its bytes) once and keeps it: each
    later signature of that head is still checked whole, every byte of it."""
    checker = SignatureChecker(SignaturePolicy(signed.signers, required=True))
    sig = sig_of(signed.armoured)
    blob = base64.b64decode(sig)
    assert checker.check(dict(EVENT, sig=sig)) is None
    for at in range(len(blob)):
        for value in (blob[at] ^ 1, blob[at] ^ 0x80, (blob[at] + 77) % 256):
            changed = base64.b64encode(blob[:at] + bytes([value]) + blob[at + 1 :]).decode()
            assert checker.check(dict(EVENT, sig=changed)) is not None, (at, value)
        assert checker.check(dict(EVENT, sig=sig[: len(sig) - 4 * (at % 3 + 1)])) is not None
    assert checker.check(dict(EVENT, ts="2026-12-02T08:00:01Z", sig=sig)) is not None
    assert checker.check(dict(EVENT, actor="bob", sig=sig)) is not None
    assert checker.check(dict(EVENT, sig=sig)) is None
    assert checker.signed == 3 * len(blob) + len(blob) + 4


BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def test_a_checker_that_has_read_the_head_still_checks_every_character(signed: Signed) -> None:
    """The kept head is found by the base64 text of its whole 3-byte groups, and only the
    text after it is decoded per event: a `sig` edited anywhere, in its text (any other
    base64 character, the spare bits of its last character, one character more or less),
    is refused by a checker that has read its head as by a fresh one, with the same
    message. (An RSA head's bytes end inside a group, an ed25519 head's do not.)"""
    checker = SignatureChecker(SignaturePolicy(signed.signers, required=True))
    sig = sig_of(signed.armoured)
    assert checker.check(dict(EVENT, sig=sig)) is None
    edits = [sig[:at] + char + sig[at + 1 :] for at in range(len(sig)) for char in BASE64]
    end = len(sig.rstrip("="))
    spare = [sig[: end - 1] + BASE64[BASE64.index(sig[end - 1]) ^ bit] + sig[end:]
             for bit in (1, 2, 4, 8)]  # fmt: skip
    edits += spare + [sig + "A", sig + "=", sig[:-1], sig[:-2], "A" + sig, sig[:-1] + "é"]
    for changed in edits:
        if changed != sig:
            fresh = signed.problem(changed)
            assert fresh is not None, changed
            assert checker.check(dict(EVENT, sig=changed)) == fresh, changed
    assert checker.check(dict(EVENT, sig=sig)) is None  # the head is still kept, and fits


def test_one_checker_keeps_each_keys_head_apart(
    ed25519: Signed, rsa: Signed, tmp_path: Path
) -> None:
    """Two reviewers' keys, two hash algorithms, in one checker: each signature is checked
    against its own head, and a signature's bytes under another head of the same text
    length (the sha256 one, of the same key) do not verify."""
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"alice {ed25519.public}\nalice {rsa.public}\n")
    checker = SignatureChecker(SignaturePolicy(signers, required=True))
    ed_sig, rsa_sig = sig_of(ed25519.armoured), sig_of(rsa.armoured)
    sha256 = sig_of(sign(ed25519.key, signed_message(EVENT), "-O", "hashalg=sha256"))
    for sig in (ed_sig, rsa_sig, sha256, ed_sig, rsa_sig, sha256):
        assert checker.check(dict(EVENT, sig=sig)) is None
    cut = len(sha256) - 88  # an ed25519 signature's 64 bytes are the last 88 characters
    assert sha256[:cut] != ed_sig[:cut]
    bad = "bad signature: it does not sign this decision (edited after signing?)"
    assert checker.check(dict(EVENT, sig=sha256[:cut] + ed_sig[cut:])) == bad
    assert checker.check(dict(EVENT, sig=ed_sig[:cut] + sha256[cut:])) == bad
    spliced = dict(EVENT, sig=ed_sig[:cut] + rsa_sig[-88:])
    fresh = SignatureChecker(SignaturePolicy(signers, required=True)).check(spliced)
    assert fresh is not None and checker.check(spliced) == fresh
    assert checker.signed == 9


def test_one_checker_judges_each_actor_and_ts_as_a_fresh_one(
    ed25519: Signed, tmp_path: Path
) -> None:
    """What the allowed signers let a key do is kept per signature head and actor: an
    actor allowed at any time, only within a window, only for other namespaces, or not
    at all, each answered by one checker, in turn, as by a fresh checker."""
    signers = tmp_path / "allowed_signers"
    key = ed25519.public
    signers.write_text(
        f"bob {key}\n"
        f'alice valid-before="20260601Z" {key}\n'
        f'carol namespaces="git" {key}\n'
        f'dave valid-after="20270101Z" {key}\ndave {key}\n'
        f'"e*,!eve" valid-after="20260101Z",namespaces="vt-*" {key}\n'
    )
    early = dict(EVENT, ts="2026-01-01T00:00:00Z")
    signed = [
        dict(event, sig=sig_of(sign(ed25519.key, signed_message(event))))
        for event in (EVENT, early)
    ]
    checker = SignatureChecker(SignaturePolicy(signers, required=True))
    answers = {}
    for _ in range(2):
        for actor in ("bob", "alice", "carol", "dave", "erin", "eve", "frank", "alice", "bob"):
            for event in signed:
                mine = dict(event, actor=actor)
                fresh = SignatureChecker(SignaturePolicy(signers, required=True)).check(mine)
                assert checker.check(mine) == fresh, (actor, event["ts"])
                answers[actor, event["ts"]] = fresh
    assert answers["bob", EVENT["ts"]] is None and answers["dave", EVENT["ts"]] is None
    assert answers["alice", early["ts"]] is None and answers["alice", EVENT["ts"]] is not None
    assert answers["erin", EVENT["ts"]] is None and answers["erin", early["ts"]] is None
    for actor in ("carol", "eve", "frank"):
        assert answers[actor, EVENT["ts"]] is not None


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_ssh_keygen_refuses_what_vt_refuses(ed25519: Signed, data: st.DataObject) -> None:
    """The standalone check of docs/signing.md agrees on changed signatures."""
    blob = dearmour(ed25519.armoured)
    at = data.draw(st.integers(0, len(blob) - 1))
    value = data.draw(st.integers(0, 255).filter(lambda v: v != blob[at]))
    edited = blob[:at] + bytes([value]) + blob[at + 1 :]
    changed = base64.b64encode(edited).decode()
    assert ed25519.problem(changed) is not None
    if edited[6:10] == bytes(4):  # version 0: OpenSSH reads any version up to its own, 1
        return  # vt reads only 1, as docs/signing.md says: stricter, never laxer
    assert not ed25519.ssh_keygen_accepts(armour(changed), signed_message(EVENT))


@pytest.mark.parametrize("version", [0, 2, 1 << 24])
def test_a_signature_of_another_version_is_refused(ed25519: Signed, version: int) -> None:
    """Only version 1, as ssh-keygen writes it (OpenSSH itself reads a 0 too)."""
    blob = dearmour(ed25519.armoured)
    assert blob[6:10] == (1).to_bytes(4, "big")
    edited = blob[:6] + version.to_bytes(4, "big") + blob[10:]
    assert ed25519.problem(base64.b64encode(edited).decode()) is not None


def test_another_decision_is_refused_by_both(signed: Signed) -> None:
    other = dict(EVENT, ts="2026-12-02T08:00:01Z")
    assert signed.problem(sig_of(signed.armoured), other) == (
        "bad signature: it does not sign this decision (edited after signing?)"
    )
    assert not signed.ssh_keygen_accepts(signed.armoured, signed_message(other))


def test_a_wrong_namespace_is_refused(ed25519: Signed) -> None:
    text = sign(ed25519.key, signed_message(EVENT), namespace="git")
    assert ed25519.armour_problem(text) == "signature made for namespace 'git'"
    assert not ed25519.ssh_keygen_accepts(text, signed_message(EVENT))
    assert ed25519.ssh_keygen_accepts(text, signed_message(EVENT), namespace="git")


def _with(blob: bytes, **fields: bytes) -> str:
    """The SSHSIG blob with some of its fields replaced, as base64."""
    found = parse(blob)
    names = ("public_key", "namespace", "reserved", "hash_algo", "signature")
    values = {
        "public_key": found.public_key,
        "namespace": found.namespace,
        "reserved": b"",
        "hash_algo": found.hash_algo,
        "signature": string(found.sig_algo) + string(found.signature),
    }
    values.update(fields)
    out = blob[:10] + b"".join(string(values[name]) for name in names)
    return base64.b64encode(out).decode()


def test_a_wrong_hash_algorithm_is_refused(ed25519: Signed) -> None:
    blob = dearmour(ed25519.armoured)
    assert _with(blob) == sig_of(ed25519.armoured)  # _with rebuilds the blob exactly
    assert ed25519.problem(_with(blob, hash_algo=b"sha1")) == (
        "signature hash 'sha1' is not sha512 or sha256"
    )
    # named sha256 but made over sha512: the signed data differs
    assert ed25519.problem(_with(blob, hash_algo=b"sha256")) == (
        "bad signature: it does not sign this decision (edited after signing?)"
    )
    assert ed25519.problem(_with(blob, reserved=b"x")) == (
        "signature does not parse (its reserved field is not empty)"
    )


def _signature_field(blob: bytes) -> bytes:
    found = parse(blob)
    return string(found.sig_algo) + string(found.signature)


def test_a_signature_of_another_key_type_is_refused(ed25519: Signed, rsa: Signed) -> None:
    ed_blob, rsa_blob = dearmour(ed25519.armoured), dearmour(rsa.armoured)
    bad = "bad signature: it does not sign this decision (edited after signing?)"
    # an RSA signature under the ed25519 key, and the other way round
    assert ed25519.problem(_with(ed_blob, signature=_signature_field(rsa_blob))) == bad
    assert rsa.problem(_with(rsa_blob, signature=_signature_field(ed_blob))) == bad
    # the RSA signature relabelled with SHA-1's name, which ssh-keygen refuses
    rsa_sig = parse(rsa_blob).signature
    assert rsa.problem(_with(rsa_blob, signature=string(b"ssh-rsa") + string(rsa_sig))) == bad
    # relabelled with the other SHA-2: the check hashes with the wrong one
    relabelled = string(b"rsa-sha2-256") + string(rsa_sig)
    assert rsa.problem(_with(rsa_blob, signature=relabelled)) == bad


def test_a_key_of_an_unsupported_type_is_refused(tmp_path: Path) -> None:
    ecdsa = Signed(tmp_path, "ecdsa")
    problem = ecdsa.problem(sig_of(ecdsa.armoured))
    assert problem == "signature's key is not usable ('ecdsa-sha2-nistp256' keys are not supported)"
    with pytest.raises(FormatError):
        public_key(string(b"ssh-ed25519") + string(b"\1" * 31))


def test_decode_takes_only_canonical_base64(ed25519: Signed) -> None:
    sig = sig_of(ed25519.armoured)
    assert decode(sig) == base64.b64decode(sig)
    for other in (sig + "\n", " " + sig, sig.rstrip("=") if sig.endswith("=") else sig + "="):
        with pytest.raises(FormatError):
            decode(other)
    # the bits past the blob's last byte set: the same bytes, but not how ssh-keygen writes
    # them (OpenSSH refuses them too)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    end = len(sig.rstrip("="))
    slack = alphabet[alphabet.index(sig[end - 1]) | 1]
    assert slack != sig[end - 1], "the blob's length leaves no spare bit"
    other = sig[: end - 1] + slack + sig[end:]
    assert base64.b64decode(other) == base64.b64decode(sig)
    with pytest.raises(FormatError):
        decode(other)


def test_allowed_signers_lines() -> None:
    key = "AAAAC3NzaC1lZDI1NTE5AAAAIHZ6ZmJ0b2xxc3Fxd3R5dWlvcGFzZGZnaGprbHp4Y3Y="
    line = signer_line(f'"alice,bob" namespaces="git,vt-*",valid-after="20260101" '
                       f"ssh-ed25519 {key} a comment")  # fmt: skip
    assert (line.principals, line.key_type) == ("alice,bob", "ssh-ed25519")
    assert line.options == {"namespaces": "git,vt-*", "valid-after": "20260101"}
    assert line.key == base64.b64decode(key)
    plain = signer_line(f"alice\tssh-ed25519 {key}")
    assert (plain.principals, plain.options) == ("alice", {})
    assert signer_line(f"* cert-authority ssh-ed25519 {key}").options == {"cert-authority": ""}
    for wrong in (
        f"alice ssh-rsa {key}",  # the key is not of the type named
        f'alice namespaces="git ssh-ed25519 {key}',  # no closing quote
        f'alice valid-after="1",valid-after="2" ssh-ed25519 {key}',
        f"alice nope=1 ssh-ed25519 {key}",
        "alice ssh-ed25519",
        f'"alice ssh-ed25519 {key}',
    ):
        with pytest.raises(FormatError):
            signer_line(wrong)


def test_a_bad_allowed_signers_line_is_a_usage_error(ed25519: Signed, tmp_path: Path) -> None:
    path = tmp_path / "allowed_signers"
    path.write_text(f"# reviewers\n\nalice {ed25519.public}\nbob ssh-ed25519 @@@\n")
    with pytest.raises(UsageError) as caught:
        SignatureChecker(SignaturePolicy(path)).check(dict(EVENT, sig=sig_of(ed25519.armoured)))
    assert caught.value.line == 4
