"""Benchmark signed ledger events: verifying them against verifying the same events
unsigned, and what signing adds to an apply run.

    python bench/bench_signing.py [--events 100000] [--runs 3] [--sign 200] [--dir DIR]

- verify: two ledgers of the same decisions (bench_ledger.py's realistic events), one
  unsigned, one with every event signed by one of three reviewers (ed25519 keys made by
  ssh-keygen; the signatures are made in this process with `cryptography`, in the SSHSIG
  format ssh-keygen writes, only to build the ledger quickly). Cold `verify_ledger` of each
  (a fresh state folder, every line parsed), alternated, `--runs` pairs; the ratio of each
  pair, signed / unsigned (goal: at most 3x).
- signing: `Signer.sign` (one `ssh-keygen -Y sign` call) of 1 and of `--sign` messages;
  the first is the cost of a run, the difference per message the cost of an event
  (goals: 20 ms per run, 5 ms per event).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ledger import decision  # noqa: E402
from cryptography.hazmat.primitives.serialization import load_ssh_private_key  # noqa: E402

from vault_tools.ledger.append import Ledger  # noqa: E402
from vault_tools.ledger.merge import _rechain  # noqa: E402
from vault_tools.ledger.signatures import SignaturePolicy  # noqa: E402
from vault_tools.ledger.signing import NAMESPACE, Signer, signed_message  # noqa: E402
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
    parser.add_argument("--sign", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench_signing_"))
    unsigned, signed, policy = build(root, args.events)
    print(f"{args.events} events: unsigned {unsigned.stat().st_size / 2**20:.1f} MiB, "
          f"signed {signed.stat().st_size / 2**20:.1f} MiB")  # fmt: skip
    ratios, cpu_ratios = [], []
    for run in range(args.runs):
        plain, plain_cpu = cold_verify(unsigned, policy, root / f"state-u{run}")
        with_sigs, with_cpu = cold_verify(signed, policy, root / f"state-s{run}")
        ratios.append(with_sigs / plain)
        cpu_ratios.append(with_cpu / plain_cpu)
        print(f"pair {run + 1}: unsigned {plain:.2f}s ({plain_cpu:.2f}s CPU), signed "
              f"{with_sigs:.2f}s ({with_cpu:.2f}s CPU), ratio {with_sigs / plain:.2f}x "
              f"(CPU {with_cpu / plain_cpu:.2f}x)")  # fmt: skip
    print(f"cold verify, signed / unsigned: median {statistics.median(ratios):.2f}x wall "
          f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x), "
          f"{statistics.median(cpu_ratios):.2f}x CPU; goal 3x")  # fmt: skip
    (run_wall, run_cpu), (event_wall, event_cpu) = signing_cost(root, args.sign)
    print(f"signing: {run_wall * 1000:.1f} ms per run ({run_cpu * 1000:.1f} ms CPU, one "
          f"ssh-keygen), {event_wall * 1000:.2f} ms per event ({event_cpu * 1000:.2f} ms CPU); "
          "goals 20 ms and 5 ms")  # fmt: skip


if __name__ == "__main__":
    main()
