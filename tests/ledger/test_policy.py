"""`policy_steps` finds the POLICY events through an mmap of the ledger, searching its
bytes for the start of a canonical POLICY line instead of parsing every line. Held here
to the plain rule: read the whole file (up to `size`), split it into lines, keep the
complete ones, parse each that begins as a canonical POLICY line does, and keep the
sound POLICY events (`step_of`).

Random ledgers: sound and unsound POLICY events, other events, the same events written
with spaces (not canonical), broken JSON behind a POLICY start, empty lines, CRLF, a
huge line, a torn tail, an empty file; read whole, up to a cut, and again as it grows.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.ledger.events import canonical
from vault_tools.ledger.policy import PolicyStep, policy_steps, step_of
from vault_tools.vocabulary import POLICY, POLICY_CLAIM_ID

START = b'{"action":"' + POLICY.encode() + b'",'  # what a canonical POLICY line begins with
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + "A" * 8


def plain_steps(data: bytes, size: int | None = None) -> list[PolicyStep]:
    """The plain rule, with no mmap and no search."""
    data = data if size is None else data[:size]
    steps = []
    for raw in data.split(b"\n")[:-1]:  # the last piece is a torn tail or empty
        if not raw.startswith(START):
            continue
        try:
            ev = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        step = step_of(ev)
        if step is not None:
            steps.append(step)
    return steps


@st.composite
def policy_events(draw: st.DrawFn) -> dict:
    signers = draw(
        st.lists(
            st.tuples(st.sampled_from(["alice", "bob", "carol@x"]), st.just(KEY)),
            max_size=3,
            unique=True,
        )
    )  # none: not a sound policy
    return {
        "action": POLICY,
        "actor": draw(st.sampled_from(["alice", "bob"])),
        "claim_id": draw(st.sampled_from([POLICY_CLAIM_ID, POLICY_CLAIM_ID, "DV1-0001"])),
        "id": draw(st.sampled_from(["sha256:" + "a" * 64, "x"])),
        "policy": {"required": draw(st.booleans()), "signers": [list(s) for s in signers]},
        "seq": draw(st.integers(1, 50) | st.just("7")),
        "comment": draw(st.sampled_from(["", "標準 ✓", "x" * 70_000])),  # a huge line too
    }


other_events = st.fixed_dictionaries(
    {"action": st.sampled_from(["ACCEPT", "REJECT"]), "seq": st.integers(1, 50)}
)
lines = st.one_of(
    policy_events().map(lambda ev: canonical(ev).encode()),
    policy_events().map(lambda ev: json.dumps(ev, ensure_ascii=False).encode()),  # spaces
    other_events.map(lambda ev: canonical(ev).encode()),
    st.sampled_from([b"", b"\r", START, START + b'"seq":1', b"<<<<<<< HEAD", b"\xff{"]),
)
endings = st.sampled_from([b"\n", b"\n", b"\r\n"])
torn_tails = st.sampled_from([b"", START + b'"seq', b"{"]) | lines  # a whole line, unended
ledgers = st.tuples(
    st.lists(st.tuples(lines, endings).map(b"".join), max_size=8),
    torn_tails,
    st.booleans(),  # a first empty line
).map(lambda p: (b"\n" if p[2] else b"") + b"".join(p[0]) + p[1])


def _ledger(tmp_path_factory: object, data: bytes) -> Path:
    path = tmp_path_factory.mktemp("policy") / "decision_ledger.jsonl"  # type: ignore[attr-defined]
    path.write_bytes(data)
    return path


@settings(max_examples=100, deadline=None)
@given(data=ledgers, cut=st.integers(0, 200_000), shift=st.integers(-1, 1))
def test_the_mmap_scan_finds_what_the_plain_rule_finds(
    tmp_path_factory: object, data: bytes, cut: int, shift: int
) -> None:
    path = _ledger(tmp_path_factory, data)
    assert policy_steps(path) == plain_steps(data)
    size = cut % (len(data) + 2)  # up to a byte anywhere, or past the end
    assert policy_steps(path, size) == plain_steps(data, size)
    ends = [n for n, byte in enumerate(data) if byte == 0x0A]
    if ends:  # a cut at a line's newline, or a byte either side of it
        size = max(0, ends[cut % len(ends)] + shift)
        assert policy_steps(path, size) == plain_steps(data, size)


@settings(max_examples=50, deadline=None)
@given(parts=st.lists(ledgers, min_size=1, max_size=4))
def test_a_ledger_growing_between_calls_is_read_as_it_is_now(
    tmp_path_factory: object, parts: list[bytes]
) -> None:
    """Appends, each possibly completing the torn tail before it: every call sees the
    file as it is then."""
    path = _ledger(tmp_path_factory, b"")
    data = b""
    assert policy_steps(path) == []  # an empty file: nothing to map
    for part in parts:
        data += part
        with path.open("ab") as handle:
            handle.write(part)
        assert policy_steps(path) == plain_steps(data)
