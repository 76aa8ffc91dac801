"""Git conflict markers left in a note by a merge: `<<<<<<<`, `|||||||` (diff3),
`=======`, `>>>>>>>`. Such a note says two things at once, so vt reads no decision from
it and names the marker lines (`git-conflict`) in validate, status and apply.

Only a whole block counts (an opening marker, the separator, the closing marker, in that
order): a line of seven `=` alone is a Markdown heading underline, not a conflict."""

from __future__ import annotations

from vault_tools.findings import Finding, error
from vault_tools.vocabulary import BASE_MARKER, CONFLICT_MARKERS, conflict_marker

GIT_CONFLICT = "git-conflict"
_OPEN, _, _SEPARATOR, _CLOSE = CONFLICT_MARKERS
_MARKER_STARTS = frozenset(chr(marker[0]) for marker in CONFLICT_MARKERS)


def conflict_blocks(lines: list[str]) -> list[list[int]]:
    """The 1-based line numbers of each whole block's marker lines, in order."""
    blocks: list[list[int]] = []
    current: list[int] | None = None
    separated = False
    for n, line in enumerate(lines, 1):
        if line[:1] not in _MARKER_STARTS:  # most lines: no encoding needed
            continue
        marker = conflict_marker(line.encode("utf-8", "surrogateescape"))
        if marker == _OPEN:
            current, separated = [n], False
        elif current is None:
            continue
        elif marker == BASE_MARKER and not separated:
            current.append(n)
        elif marker == _SEPARATOR and not separated:
            current.append(n)
            separated = True
        elif marker == _CLOSE and separated:
            blocks.append([*current, n])
            current = None
    return blocks


def conflict_findings(text: str, lines: list[str], path: str) -> list[Finding]:
    """One `git-conflict` error per block of conflict markers in the note."""
    # a search for one character is several times quicker than for the seven of a
    # marker, and most notes hold no `<` at all
    if "<" not in text or "<<<<<<<" not in text:
        return []
    return [
        error(
            path,
            block[0],
            GIT_CONFLICT,
            f"git conflict markers at lines {', '.join(map(str, block))}: a merge left "
            "both sides here; keep what the note should say and delete the marker lines",
        )
        for block in conflict_blocks(lines)
    ]


def has_conflict(findings: list[Finding]) -> Finding | None:
    """The first `git-conflict` finding among a note's findings, if any."""
    return next((f for f in findings if f.code == GIT_CONFLICT), None)
