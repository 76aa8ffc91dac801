"""The git merge driver for the allowed signers file (`vt hook merge-signers %O %A %B %P`):
two reviewers adding their keys at once is a union, not a conflict (docs/signing.md).

The file is a set of lines, each standing alone (one signer, or a comment), so the
merge is a three-way merge of line sets: a line either side removed since the merge
base stays removed, a line either side added is kept. The merged file is the base's
lines that both sides kept, in the base's order, then ours' new lines, then theirs',
each once. The format rules stay intact: a side holding a line that is not an allowed
signers line (what `vt ledger verify` would refuse) is a conflict, left to git with
its usual markers, never kept silently.
"""

from __future__ import annotations

from pathlib import Path

from vault_tools.integrations.git.notemerge import merge_file
from vault_tools.ledger.signatures import allowed_signers_problem

SIGNERS_DRIVER_NAME = "vt allowed signers (a three-way union of lines)"


def _lines(data: bytes) -> list[str]:
    """The file's lines without their endings (a CR of CRLF included)."""
    lines = [line.rstrip("\r") for line in data.decode("utf-8").split("\n")]
    return lines[:-1] if lines and not lines[-1] else lines  # after the final newline


def _significant(lines: list[str]) -> list[str]:
    """The lines that count as members of the set: blank lines only space them out."""
    return [line for line in lines if line.strip()]


def merge_signers(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, bool]:
    """(the merged file, whether it merged cleanly); unclean: git's textual merge with
    markers, for a side with a malformed line or bytes that are not UTF-8."""
    if ours == theirs or theirs == base:
        return ours, True
    if ours == base:
        return theirs, True
    try:
        sides = [_lines(data) for data in (base, ours, theirs)]
    except UnicodeDecodeError:
        return merge_file(base, ours, theirs, "allowed_signers")
    if any(allowed_signers_problem(line) for side in sides[1:] for line in side):
        marked, _ = merge_file(base, ours, theirs, "allowed_signers")
        return marked, False  # even where git's lines merge, the bad line is the user's
    kept = set(_significant(sides[1])) & set(_significant(sides[2]))
    old = set(_significant(sides[0]))
    merged: list[str] = []
    for line in sides[0]:
        if not line.strip():  # the base's spacing, once, between lines kept
            if merged and merged[-1].strip():
                merged.append("")
        elif line in kept and line not in merged:
            merged.append(line)
    for side in sides[1:]:
        merged += [line for line in dict.fromkeys(_significant(side))
                   if line not in old and line not in merged]  # fmt: skip
    while merged and not merged[-1].strip():
        merged.pop()
    eol = "\r\n" if b"\r\n" in ours else "\n"
    text = "".join(line + eol for line in merged)
    return text.encode("utf-8"), True


def merge_driver(base: Path, ours: Path, theirs: Path) -> bool:
    """git's `%O %A %B`: the merged file written to `ours`; whether it merged cleanly."""
    from vault_tools.infra.textfiles import write_atomic

    merged, clean = merge_signers(base.read_bytes(), ours.read_bytes(), theirs.read_bytes())
    write_atomic(ours, merged, root=None)  # `ours` is git's own temporary file
    return clean
