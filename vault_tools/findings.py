"""Findings: what vt reports about a note, each with a stable code and a note line.

`CODES` is the registry of every code vt can emit; docs/finding-codes.md's table is checked
against it by the tests, so a new code cannot ship undocumented.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

ERROR = "error"
WARNING = "warning"

# code -> one-line meaning (documented in docs/finding-codes.md)
CODES: dict[str, str] = {
    # reading the file
    "encoding": "the file is not valid UTF-8",
    "line-endings": "a line ends in CR alone (old Mac OS line endings), which vt does not read "
    "as a line break; convert the note to LF or CRLF",
    "not-review-note": "a path given on the command line is not a review note (no `claim_id`)",
    "path-outside-vault": "a path given on the command line lies outside the vault",
    "read-error": "the file or folder could not be read (permissions, vanished, a note or "
    "folder that a symlink leads outside the vault)",
    "not-a-file": "a `.md` path that is not a regular file (a FIFO, socket, device or "
    "folder); never read",
    "note-too-large": "the note is larger than `[limits] max_note_bytes` (default 5 MB); not read",
    "control-character": "a property or the claim text holds a NUL or another control character",
    "number-too-large": "a number in the properties or a JSON block is too large to read "
    "exactly (over 4300 digits, or beyond a double)",
    "git-conflict": "git conflict markers left in the note by a merge (`<<<<<<<`, `=======`, "
    "`>>>>>>>`); no decision is read from it until they are resolved",
    # frontmatter
    "frontmatter-unclosed": "the frontmatter opens with `---` but never closes",
    "yaml-syntax": "the frontmatter is not valid YAML",
    "yaml-not-mapping": "the frontmatter is YAML but not a mapping of properties",
    "yaml-duplicate-key": "a property appears twice in the frontmatter",
    "yaml-alias": "the frontmatter uses YAML anchors or aliases (never used by Obsidian)",
    "properties-schema": "a property is missing or has a value the schema does not allow",
    # body structure
    "section-missing": "a required section (Source, Atomic Claim, Semantic Frame, Mapping) "
    "is missing",
    "section-duplicate": "a section appears twice",
    "source-field": "a Source field (Source, Section, Line hint, Evidence) is missing or malformed",
    "claim-empty": "the atomic claim (or its V2 draft) has no text",
    "claim-field": "the claim's Epistemic Mode or Mapping Status is missing or not allowed",
    "json-missing": "a section that needs a ```json block has none",
    "json-multiple": "a section holds two JSON blocks where one belongs",
    "json-syntax": "a JSON block does not parse",
    "frame-schema": "the semantic frame (or its V2 draft) does not match the schema",
    "metadata-schema": "the V2 revision metadata does not match the schema",
    "draft-incomplete": "the V2 Draft section lacks one of its three blocks",
    "mapping-table": "a row of the mapping table is malformed",
    "mapping-mismatch": "the mapping table and the frame's entities disagree",
    # knowledge base and vault-wide checks
    "kb-target-missing": "an entity target does not resolve to a note in the vault",
    "kb-target-escape": "an entity target leads outside the vault (`..`, absolute, symlink)",
    "kb-target-outside-kb": "an entity target resolves to a note outside the knowledge base",
    "mapping-complete-unresolved": "`Mapping Status: COMPLETE` while an entity does not resolve",
    "claim-id-duplicate": "two notes use the same `claim_id`",
    # the staged ledger, checked by the pre-commit hook
    "ledger-rewritten": "a commit changes or drops ledger lines instead of only appending",
    "ledger-conflict-markers": "the staged ledger holds git conflict markers (run vt ledger "
    "resolve)",
    "decision-unrecorded": "a commit carries a decided note with no event while this clone's "
    "ledger does not verify (vt apply could not record it); the message says what unblocks it",
    "ledger-invalid": "the staged ledger does not verify (broken chain, torn or bad line)",
    # vt draft / vt preview
    "drafts-missing": "`vt preview`: the note has no V2 Draft section (run `vt draft` first)",
    "drafts-exist": "`vt draft`: the note already has a V2 Draft section; nothing written",
    "write-refused": "the note changed on disk since vt read it, or its vt markers are "
    "broken; not written",
    "repair-unchanged": "`vt preview` and `vt apply`: the V2 drafts equal V1, so the repair "
    "would change nothing (the preview fails, apply refuses `APPROVE_REPAIR`)",
    # review assist (warnings; vault_tools/checks/assist/)
    "assist-mapping-label": "a surface label matches neither its target's title nor its aliases",
    "assist-mapping-unrelated": "the target's title has words found nowhere in the claim, "
    "evidence or context (a different concept)",
    "assist-mapping-complete": "`Mapping Status: COMPLETE` while the condition text says an "
    "entity has no canonical entry",
    "assist-frame-label": "a frame entity's label does not occur in the claim text",
    "assist-frame-expression": "the comparison_expression says what the claim text does not",
    "assist-frame-number": "a numeric_mentions value occurs in neither the claim nor the evidence",
    "assist-claim-number": "a number in the claim is not in the evidence",
    "assist-mode-hedged": "the evidence hedges (may, might, 可能 …) but the claim is ASSERTED",
    "assist-mode-unhedged": "the claim is HYPOTHETICAL but neither it nor the evidence hedges",
    "assist-claim-reversed": "the claim turns round the evidence's comparison (B above A "
    "where the evidence sets A above B)",
    "assist-claim-condition": "the evidence states a condition (when, if, depending on, at "
    "high …) that neither the claim nor condition_text keeps",
    "assist-claim-unit": "a number of the claim has another unit than in the evidence "
    "(tokens, %, ×/倍, ms, s, GB, per million)",
    "assist-claim-negation": "the claim loses the evidence's negation (not, never, fail to …) "
    "or adds one (不, 沒有, 無法 …) the evidence lacks",
    "assist-claim-quantifier": "the claim makes the evidence's quantifier stronger (most → "
    "all, often → always, 多數 → 所有) or weaker (all → some)",
    "assist-claim-inverted": "the claim turns the evidence's condition into its opposite "
    "(only when X → even if not X, 即使 … 也)",
    "assist-claim-attribution": "the claim gives the statement to another source than the "
    "one the evidence names (According to A → 根據 B)",
    "assist-claim-entity": "the claim and the frame name an entity that neither the evidence "
    "nor its context mentions under any of its names",
    "assist-frame-operator": "the frame's operator is against the claim's words (更高 / "
    "more with LESS_THAN, 約等於 / roughly with GREATER_THAN …)",
    "assist-frame-metric": "the frame's metric is none of those the claim's words name "
    "(latency, throughput, acceptance rate, cost, compute)",
}


class Finding(NamedTuple):
    """One finding. A NamedTuple: vaults have tens of thousands of warnings, and tuples
    are what the process pool and the cache move around fastest."""

    path: str  # vault-relative, '/'-separated
    line: int | None  # 1-based line in the note file
    severity: str  # ERROR | WARNING
    code: str
    message: str

    def to_json(self) -> dict[str, object]:
        return self._asdict()

    def plain(self) -> str:
        """The piped form: `path:line: code: message`."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.code}: {self.message}"


def error(path: str, line: int | None, code: str, message: str) -> Finding:
    assert code in CODES, code
    return Finding(path, line, ERROR, code, message)


def warning(path: str, line: int | None, code: str, message: str) -> Finding:
    assert code in CODES, code
    return Finding(path, line, WARNING, code, message)


def sort_key(finding: Finding) -> tuple[str, int, str, str]:
    return (finding.path, finding.line or 0, finding.code, finding.message)


def severity_counts(findings: Iterable[Finding]) -> tuple[int, int]:
    """(errors, warnings) among `findings`."""
    errors = warnings = 0
    for finding in findings:
        if finding.severity == ERROR:
            errors += 1
        elif finding.severity == WARNING:
            warnings += 1
    return errors, warnings


def counted(count: int, noun: str) -> str:
    """`1 error`, `2 errors`, `3 entities`: a count with its noun in the number it takes.
    Every count vt prints goes through here, so none reads "1 errors"."""
    if count == 1:
        return f"{count} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u"):
        return f"{count} {noun[:-1]}ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return f"{count} {noun}es"
    return f"{count} {noun}s"
