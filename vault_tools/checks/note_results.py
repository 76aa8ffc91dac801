"""What one note contributes to a run, and its packed form: what the workers send back,
what the cache keeps and what the findings' blocks are made of.

Packed: (path, digest, stat, claim_id, claim_id_line, errors, warnings, wide, findings,
text), a plain tuple, the findings sorted and marshalled, `text` their piped output lines,
`wide` the (target, status, path) of each entity target the note named that resolves
outside the knowledge base's folder (by name, or to another folder): what its findings
depend on besides its own bytes and the knowledge base (see `KnowledgeBase.wide_facts`).
"""

from __future__ import annotations

import marshal
from typing import NamedTuple

from vault_tools.findings import ERROR, Finding, sort_key


class NoteResult(NamedTuple):
    """What one note contributes to a vault run (small, cacheable; a tuple so that the
    pool and the cache move thousands of them cheaply)."""

    path: str
    digest: str  # of the note's bytes: what the cache entry stands for
    stat: tuple[int, ...]  # (mtime_ns, ctime_ns, size, inode) when the bytes were read
    claim_id: str | None
    claim_id_line: int | None
    findings: tuple[Finding, ...]
    wide: tuple[tuple[str, str, str | None], ...] = ()


PATH, DIGEST, STAT, CLAIM_ID, CLAIM_ID_LINE, ERRORS, WARNINGS, WIDE, PACKED, TEXT = range(10)


def pack(result: NoteResult) -> tuple:
    """A NoteResult in the packed form (cheap to send between processes and to cache)."""
    findings = sorted(result.findings, key=sort_key)
    errors = sum(1 for f in findings if f.severity == ERROR)
    return (
        result.path,
        result.digest,
        result.stat,
        result.claim_id,
        result.claim_id_line,
        errors,
        len(findings) - errors,
        result.wide,
        marshal.dumps(tuple(map(tuple, findings))),
        plain_text(findings),
    )


def unpack_findings(packed: bytes) -> list[Finding]:
    return list(map(Finding._make, marshal.loads(packed)))


def plain_text(findings: list[Finding]) -> str:
    return "".join(
        [
            f"{f.path}:{f.line}: {f.code}: {f.message}\n"
            if f.line
            else f"{f.path}: {f.code}: {f.message}\n"
            for f in findings
        ]
    )
