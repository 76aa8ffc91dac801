"""The allowed signers' merge driver: a three-way union of lines, its format rules intact
(a malformed line is a conflict); and over real git, two reviewers adding their keys at
once with `vt init --signer-key` merge without a conflict."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest

from tests.conftest import git, run_vt
from tests.integrations.git.test_merge_git import two_clones
from tests.ledger.test_signing import keygen
from tests.review.test_apply_conflicts import vt_json
from vault_tools.integrations.git.signersmerge import merge_signers
from vault_tools.ledger.signatures import allowed_signers_problem

SIGNERS = "05_ledger/allowed_signers"


def signer(name: str) -> str:
    """An allowed signers line with a well-formed (not a real) ed25519 key for `name`."""
    blob = b"".join(struct.pack(">I", len(p)) + p for p in (b"ssh-ed25519", name.encode() * 8))
    key = base64.b64encode(blob).decode()
    line = f'{name} namespaces="vt-ledger" ssh-ed25519 {key}'
    assert allowed_signers_problem(line) is None
    return line


def text(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def merged(base: bytes, ours: bytes, theirs: bytes) -> tuple[list[str], bool]:
    out, clean = merge_signers(base, ours, theirs)
    return out.decode().splitlines(), clean


A, B, C, D = (signer(name) for name in ("alice", "bob", "carol", "dave"))


def test_keys_added_on_both_sides_are_a_union_in_a_stable_order() -> None:
    lines, clean = merged(text("# team", A), text("# team", A, B), text("# team", A, C, B))
    assert clean and lines == ["# team", A, B, C]  # base, ours' new, theirs' new; once each


def test_a_line_removed_on_one_side_stays_removed() -> None:
    lines, clean = merged(text(A, B, C), text(A, C, D), text(A, B, C))
    assert clean and lines == [A, C, D]  # only ours changed: ours
    lines, clean = merged(text(A, B, C), text(A, C, D), text(B, C, A, B))
    assert clean and lines == [A, C, D]  # theirs reordered and kept B: ours removed it


def test_the_base_spacing_stays_and_no_line_twice() -> None:
    lines, clean = merged(text(A, "", B), text(A, "", B, C), text(A, "", B, C, D))
    assert clean and lines == [A, "", B, C, D]


def test_a_malformed_line_on_either_side_is_a_conflict() -> None:
    for bad_side in (0, 1):
        sides = [text(A, B), text(A, C)]
        sides[bad_side] = sides[bad_side] + b"carol ssh-ed25519 not-base64!\n"
        out, clean = merge_signers(text(A), *sides)
        assert not clean
        assert b"not-base64!" in out  # left to the user, never dropped or kept silently


def test_two_reviewers_add_their_keys_at_once_over_git(tmp_path: Path) -> None:
    alice, bob = two_clones(tmp_path)
    lines = {}
    for clone in (alice, bob):
        key = keygen(tmp_path / "keys", clone.name)
        assert vt_json(clone, "init", "--signer-key", str(key))["changes"]
        lines[clone.name] = (clone / SIGNERS).read_text(encoding="utf-8").strip()
        git(clone, "add", "-A")
        git(clone, "commit", "-qm", f"{clone.name}'s key")
    assert "merge=vt-signers" in (bob / ".gitattributes").read_text(encoding="utf-8")
    git(alice, "push", "-q", "origin", "main")
    done = git(bob, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (bob / SIGNERS).read_text(encoding="utf-8") == f"{lines['bob']}\n{lines['alice']}\n"
    assert git(bob, "status", "--porcelain").stdout == ""
    assert run_vt("ledger", "verify", vault=bob).returncode == 0


def test_uninstall_removes_the_signers_driver(tmp_path: Path) -> None:
    alice, _ = two_clones(tmp_path)
    assert git(alice, "config", "merge.vt-signers.driver").stdout.strip()
    assert run_vt("hook", "uninstall", vault=alice).returncode == 0
    assert git(alice, "config", "merge.vt-signers.driver", check=False).returncode != 0
    attributes = alice / ".gitattributes"
    assert not attributes.exists() or "vt-signers" not in attributes.read_text(encoding="utf-8")


pytestmark = pytest.mark.usefixtures("isolated_git")
