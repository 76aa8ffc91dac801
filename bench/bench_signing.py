"""Benchmark signed ledger events: verifying them against verifying the same events
unsigned, and what signing adds to an apply run.

    python bench/bench_signing.py [--events 100000] [--runs 3] [--sign 200] [--dir DIR]

- verify: two ledgers of the same decisions (bench_ledger.py's realistic events), one
  unsigned, one with every event signed by one of three reviewers (ed25519 keys made by
  ssh-keygen; the signatures are made in this process with `cryptography`, in the SSHSIG
  format ssh-keygen writes, only to build the ledger quickly), each in a folder laid out
  as a vault with the allowed signers beside the ledger. A cold `vt ledger verify` of each
  (a fresh process, no `.vt/`: every line parsed, every signature checked), `--runs`
  rounds in the order A B, B A, ... (bench/measure.py, the benchmarks' harness); the
  ratio of each round, signed / unsigned, by wall and by CPU (goal: at most 3x).
- floor: the ed25519 check alone, timed in this process on `--floor` of the signed
  events (their signatures and signed data read beforehand), as verify runs it, in one
  process: libsodium's (through PyNaCl, as verify calls it) and OpenSSL's (through
  `cryptography`, one key object per reviewer), and vt's whole signature check of an
  event (`SignatureChecker.check`). With a whole unsigned event's verify (the CPU of
  the cold runs per event) this bounds the ratio: a signed event costs at least its
  unsigned verify plus the check, so the CPU ratio is at least 1 + check / unsigned.
- signing: `Signer.sign` (one `ssh-keygen -Y sign` call) of 1 and of `--sign` messages;
  the first is the cost of a run, the difference per message the cost of an event
  (goals: 20 ms per run, 5 ms per event).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ledger import LEDGER, decision  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: E402
from cryptography.hazmat.primitives.serialization import load_ssh_private_key  # noqa: E402
from measure import (  # noqa: E402  (bench/measure.py)
    ROOT,
    Measured,
    folder,
    interleaved,
    phase_clock,
    run_checked,
    spread,
    tree_env,
)
from nacl.bindings import crypto_sign_open  # noqa: E402

from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.ledger.merge import _rechain  # noqa: E402
from vault_tools.ledger.signatures import SignaturePolicy  # noqa: E402
from vault_tools.ledger.signing import NAMESPACE, Signer, signed_message  # noqa: E402
from vault_tools.ledger.sshformat import HASHES, decode, parse, signed_data  # noqa: E402

REVIEWERS = ("alice", "bob", "carol")


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def keygen(folder: Path, name: str) -> tuple[Path, str]:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
                   check=True)  # fmt: skip
    return key, " ".join(key.with_name(name + ".pub").read_text().split()[:2])


def sshsig(private: object, public_blob: bytes, message: bytes) -> str:
    """What `ssh-keygen -Y sign` writes (PROTOCOL.sshsig), without its armour."""
    signed = (b"SSHSIG" + _string(NAMESPACE.encode()) + _string(b"") + _string(b"sha512")
              + _string(hashlib.sha512(message).digest()))  # fmt: skip
    raw = private.sign(signed)  # type: ignore[attr-defined]
    blob = (b"SSHSIG" + struct.pack(">I", 1) + _string(public_blob) + _string(NAMESPACE.encode())
            + _string(b"") + _string(b"sha512")
            + _string(_string(b"ssh-ed25519") + _string(raw)))  # fmt: skip
    return base64.b64encode(blob).decode()


def build(root: Path, n: int) -> tuple[Path, Path, SignaturePolicy]:
    """An unsigned ledger of n events, and the same events signed; the signed one's policy."""
    keys, lines = {}, []
    for name in REVIEWERS:
        key, public = keygen(root, name)
        private = load_ssh_private_key(key.read_bytes(), password=None)
        keys[name] = (private, base64.b64decode(public.split()[1]))
        lines.append(f"{name} {public}")
    (root / "allowed_signers").write_text("\n".join(lines) + "\n")
    unsigned = root / "unsigned.jsonl"
    appended = Ledger(unsigned, root / "build-state").append(
        dict(decision(i), actor=REVIEWERS[i % 3]) for i in range(n)
    )
    for ev in appended:
        private, blob = keys[ev["actor"]]
        ev["sig"] = sshsig(private, blob, signed_message(ev))
    signed = root / "signed.jsonl"
    signed.write_bytes(_rechain(appended))
    return unsigned, signed, SignaturePolicy(root / "allowed_signers")


def vault_of(root: Path, name: str, ledger: Path) -> Path:
    """A folder laid out as a vault around `ledger`, the allowed signers beside it."""
    vault = root / name
    (vault / "05_ledger").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ledger, vault / LEDGER)
    shutil.copyfile(root / "allowed_signers", vault / "05_ledger" / "allowed_signers")
    return vault


def cold_verify(vault: Path) -> Measured:
    """One `vt ledger verify` of `vault`, from this checkout, in a fresh process: cold, no
    state of the appends to trust (the vault has no `.vt/`)."""
    command = [sys.executable, "-m", "vault_tools", "ledger", "verify", "--vault", str(vault)]
    return run_checked(command, env=tree_env(ROOT))


Check = tuple[bytes, bytes, bytes]  # (public key, signature, signed data) of an event


def checks_of(signed: Path, count: int) -> tuple[list[Check], list[dict]]:
    """The ed25519 checks of the first `count` signed events, and those events."""
    checks, events = [], []
    with signed.open("rb") as lines:
        for _, line in zip(range(count), lines, strict=False):
            ev = json.loads(line)
            found = parse(decode(ev["sig"]))
            message = signed_message(ev)
            digest = HASHES[found.hash_algo](message).digest()
            data = signed_data(NAMESPACE.encode(), found.hash_algo, digest)
            checks.append((found.public_key[-32:], found.signature, data))
            events.append(ev)
    return checks, events


def floor(checks: list[Check], events: list[dict], policy: SignaturePolicy) -> dict[str, float]:
    """CPU seconds per event of the ed25519 check alone (libsodium, OpenSSL) and of vt's
    whole signature check (a fresh checker: it reads each head once, as a verify does),
    in this one process, as a verify runs."""
    keys = {key: Ed25519PublicKey.from_public_bytes(key) for key, _, _ in checks}

    def libsodium() -> None:
        for key, signature, data in checks:
            crypto_sign_open(signature + data, key)

    def openssl() -> None:
        for key, signature, data in checks:
            keys[key].verify(signature, data)

    def checker() -> None:
        check = policy.checker().check
        for ev in events:
            if check(ev) is not None:
                raise AssertionError(check(ev))

    took = {}
    for name, work in (("libsodium", libsodium), ("openssl", openssl), ("vt", checker)):
        clock = phase_clock()
        work()
        took[name] = clock()[1] / len(checks)
    return took


def signing_cost(root: Path, count: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """((wall, CPU) of a run signing one event, (wall, CPU) of each further event)."""
    key, _ = keygen(root, "signer")
    signer = Signer(key)
    messages = [f'{{"id":"sha256:{i:064x}","ts":"2026-12-02T00:00:00Z"}}'.encode()
                for i in range(count)]  # fmt: skip
    one = min(_timed(lambda: signer.sign(messages[:1])) for _ in range(5))
    many = min(_timed(lambda: signer.sign(messages)) for _ in range(3))
    return one, tuple((m - o) / (count - 1) for m, o in zip(many, one, strict=True))  # type: ignore[return-value]


def _timed(work: object) -> tuple[float, float]:
    clock = phase_clock()
    work()  # type: ignore[operator]
    return clock()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3, help="rounds, each verifying both")
    parser.add_argument("--floor", type=int, default=10_000, help="events the floor times")
    parser.add_argument("--sign", type=int, default=200)
    parser.add_argument("--dir", type=folder, default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench_signing_", dir=args.dir))
    try:
        run(root, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args: argparse.Namespace) -> None:
    unsigned, signed, policy = build(root, args.events)
    print(f"{args.events} events: unsigned {unsigned.stat().st_size / 2**20:.1f} MiB, "
          f"signed {signed.stat().st_size / 2**20:.1f} MiB")  # fmt: skip
    vaults = {"unsigned": vault_of(root, "u", unsigned), "signed": vault_of(root, "s", signed)}
    figures = interleaved(
        {name: (lambda v=vault: cold_verify(v)) for name, vault in vaults.items()},
        args.runs,
        warmup=True,
    )
    for name in vaults:
        print(f"  {name}: wall median {figures.median(name, 'wall'):.2f} s, "
              f"CPU median {figures.median(name):.2f} s")  # fmt: skip
    wall, cpu = figures.ratios("signed", "unsigned", "wall"), figures.ratios("signed", "unsigned")
    print(f"cold vt ledger verify, signed / unsigned, {args.runs} rounds (A B, B A, ...), "
          f"min / median / max: wall {spread(wall, 2)}, CPU {spread(cpu, 2)}; goal 3x; "
          f"{figures.load(1)}")  # fmt: skip
    checks, events = checks_of(signed, min(args.floor, args.events))
    us = {name: took * 1e6 for name, took in floor(checks, events, policy).items()}
    plain_us = figures.median("unsigned") / args.events * 1e6
    signed_us = figures.median("signed") / args.events * 1e6
    print(f"floor, CPU per event (one process, {len(checks)} events): ed25519 check alone "
          f"{us['libsodium']:.1f} us with libsodium, {us['openssl']:.1f} us with OpenSSL (key "
          f"object kept); vt's whole signature check {us['vt']:.1f} us; a whole unsigned "
          f"event's cold verify {plain_us:.1f} us, a signed one's {signed_us:.1f} us (the "
          f"process's start-up included). So the CPU ratio is at least "
          f"{1 + us['libsodium'] / plain_us:.2f}x with libsodium "
          f"({1 + us['openssl'] / plain_us:.2f}x with OpenSSL); vt's check makes it "
          f"{1 + us['vt'] / plain_us:.2f}x")  # fmt: skip
    (run_wall, run_cpu), (event_wall, event_cpu) = signing_cost(root, args.sign)
    print(f"signing: {run_wall * 1000:.1f} ms per run ({run_cpu * 1000:.1f} ms CPU, one "
          f"ssh-keygen), {event_wall * 1000:.2f} ms per event ({event_cpu * 1000:.2f} ms CPU); "
          "goals 20 ms and 5 ms")  # fmt: skip


if __name__ == "__main__":
    main()
