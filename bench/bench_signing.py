"""Benchmark signed ledger events: verifying them against verifying the same events
unsigned, and what signing adds to an apply run.

    python bench/bench_signing.py [--events 100000] [--runs 3] [--sign 200] [--dir DIR]

- verify: two ledgers of the same decisions (bench_ledger.py's realistic events), one
  unsigned, one with every event signed by one of three reviewers (ed25519 keys made by
  ssh-keygen; the signatures are made in this process with `cryptography`, in the SSHSIG
  format ssh-keygen writes, only to build the ledger quickly). Cold `verify_ledger` of each
  (a fresh state folder, every line parsed), `--runs` pairs in the order A B B A; the ratio
  of each pair, signed / unsigned, by wall and by CPU (goal: at most 3x).
- floor: after each pair, the ed25519 check alone, timed on `--floor` of the signed
  events (their signatures and signed data read beforehand), in two processes at once as
  a cold verify runs: libsodium's (through PyNaCl, as verify calls it; also in one process
  alone) and OpenSSL's (through `cryptography`, one key object per reviewer), and vt's
  whole signature check of an event (`SignatureChecker.check`). With a whole unsigned
  event's verify (CPU of the cold runs per event) this bounds the ratio: a signed event
  costs at least its unsigned verify plus the check, so the CPU ratio is at least
  1 + check / unsigned.
- signing: `Signer.sign` (one `ssh-keygen -Y sign` call) of 1 and of `--sign` messages;
  the first is the cost of a run, the difference per message the cost of an event
  (goals: 20 ms per run, 5 ms per event).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ledger import decision  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey  # noqa: E402
from cryptography.hazmat.primitives.serialization import load_ssh_private_key  # noqa: E402
from nacl.bindings import crypto_sign_open  # noqa: E402

from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.ledger.merge import _rechain  # noqa: E402
from vault_tools.ledger.signatures import SignaturePolicy  # noqa: E402
from vault_tools.ledger.signing import NAMESPACE, Signer, signed_message  # noqa: E402
from vault_tools.ledger.sshformat import HASHES, decode, parse, signed_data  # noqa: E402
from vault_tools.ledger.verify import verify_ledger  # noqa: E402

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


def cpu() -> float:
    """CPU seconds of this process and its waited-for children (the verify helper,
    ssh-keygen): the figure a loaded machine distorts least."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cold_verify(path: Path, policy: SignaturePolicy, state: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one cold verify."""
    start, start_cpu = time.perf_counter(), cpu()
    result = verify_ledger(path, state, policy)
    took, took_cpu = time.perf_counter() - start, cpu() - start_cpu
    assert result.ok, result.problems[:3]
    return took, took_cpu


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
    whole signature check (a fresh checker: it reads each head once, as a verify does).
    Each runs as a cold verify does, half in a forked process at the same time (two busy
    cores each check a little slower than one); libsodium's also in one process alone."""
    keys = {key: Ed25519PublicKey.from_public_bytes(key) for key, _, _ in checks}

    def libsodium(part: slice) -> None:
        for key, signature, data in checks[part]:
            crypto_sign_open(signature + data, key)

    def openssl(part: slice) -> None:
        for key, signature, data in checks[part]:
            keys[key].verify(signature, data)

    def checker(part: slice) -> None:
        check = policy.checker().check
        for ev in events[part]:
            if check(ev) is not None:
                raise AssertionError(check(ev))

    start = cpu()
    libsodium(slice(None))
    took = {"libsodium alone": (cpu() - start) / len(checks)}
    for name, work in (("libsodium", libsodium), ("openssl", openssl), ("vt", checker)):
        took[name] = in_two(work, len(checks))
    return took


def in_two(work: Callable[[slice], None], count: int) -> float:
    """CPU seconds per item of `work` over `count` items, the second half in a forked
    process meanwhile (as a cold verify shares its lines with its helper)."""
    half = count // 2
    start = cpu()
    pid = os.fork()
    if pid == 0:  # the helper: checks the second half, and never returns
        status = 1
        try:
            work(slice(half, count))
            status = 0
        finally:
            os._exit(status)
    work(slice(0, half))
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        raise RuntimeError("the forked half of the floor failed")
    return (cpu() - start) / count


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
    start, start_cpu = time.perf_counter(), cpu()
    work()  # type: ignore[operator]
    return time.perf_counter() - start, cpu() - start_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--floor", type=int, default=10_000, help="events the floor times")
    parser.add_argument("--sign", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench_signing_"))
    unsigned, signed, policy = build(root, args.events)
    print(f"{args.events} events: unsigned {unsigned.stat().st_size / 2**20:.1f} MiB, "
          f"signed {signed.stat().st_size / 2**20:.1f} MiB; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    checks, events = checks_of(signed, min(args.floor, args.events))
    ratios, cpu_ratios, plain_cpus, signed_cpus = [], [], [], []
    floors: dict[str, list[float]] = {}
    for run in range(args.runs):
        # A B B A: each kind goes first in every other pair
        first, second = ("u", "s") if run % 2 == 0 else ("s", "u")
        timed = {kind: cold_verify(unsigned if kind == "u" else signed, policy,
                                   root / f"state-{kind}{run}")
                 for kind in (first, second)}  # fmt: skip
        (plain, plain_cpu), (with_sigs, with_cpu) = timed["u"], timed["s"]
        ratios.append(with_sigs / plain)
        cpu_ratios.append(with_cpu / plain_cpu)
        plain_cpus.append(plain_cpu / args.events)
        signed_cpus.append(with_cpu / args.events)
        for name, took in floor(checks, events, policy).items():
            floors.setdefault(name, []).append(took)
        print(f"pair {run + 1} ({first} first): unsigned {plain:.2f}s ({plain_cpu:.2f}s CPU), "
              f"signed {with_sigs:.2f}s ({with_cpu:.2f}s CPU), ratio {with_sigs / plain:.2f}x "
              f"(CPU {with_cpu / plain_cpu:.2f}x); load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"cold verify, signed / unsigned: median {statistics.median(ratios):.2f}x wall "
          f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x), "
          f"{statistics.median(cpu_ratios):.2f}x CPU (min {min(cpu_ratios):.2f}x, "
          f"max {max(cpu_ratios):.2f}x); goal 3x")  # fmt: skip
    us = {name: statistics.median(took) * 1e6 for name, took in floors.items()}
    plain_us, signed_us = statistics.median(plain_cpus) * 1e6, statistics.median(signed_cpus) * 1e6
    print(f"floor, CPU per event (medians of {args.runs}; two processes at once, as a cold "
          f"verify): ed25519 check alone {us['libsodium']:.1f} us with libsodium (one "
          f"process alone: {us['libsodium alone']:.1f} us), {us['openssl']:.1f} us with "
          f"OpenSSL (key object kept); vt's whole signature check {us['vt']:.1f} us; a whole "
          f"unsigned event's cold verify {plain_us:.1f} us, a signed one's {signed_us:.1f} us. "
          f"So the CPU ratio is at least {1 + us['libsodium'] / plain_us:.2f}x with libsodium "
          f"({1 + us['openssl'] / plain_us:.2f}x with OpenSSL); vt's check makes it "
          f"{1 + us['vt'] / plain_us:.2f}x")  # fmt: skip
    (run_wall, run_cpu), (event_wall, event_cpu) = signing_cost(root, args.sign)
    print(f"signing: {run_wall * 1000:.1f} ms per run ({run_cpu * 1000:.1f} ms CPU, one "
          f"ssh-keygen), {event_wall * 1000:.2f} ms per event ({event_cpu * 1000:.2f} ms CPU); "
          "goals 20 ms and 5 ms")  # fmt: skip


if __name__ == "__main__":
    main()
