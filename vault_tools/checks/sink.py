"""Where a run's findings go: path by path to a `Sink` (the CLI prints them as they
come), or gathered into a `ValidateReport` for library callers; and the counts."""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import Any, BinaryIO, NamedTuple, Protocol

from vault_tools.checks.note_results import plain_text, unpack_findings
from vault_tools.findings import ERROR, Finding, severity_counts, sort_key


class MemoWriter(Protocol):
    """Where a whole-vault run's piped text is kept as it is emitted (cache.py's memo)."""

    def write(self, data: bytes, /) -> int: ...


class Summary(NamedTuple):
    notes: int
    errors: int
    warnings: int
    # `path: message` when the result cache could not be written (the run went on)
    cache_failure: str | None = None


class Block:
    """The sorted findings of one path: packed (with their piped text), or Findings."""

    __slots__ = ("path", "errors", "warnings", "_payload", "_list")

    def __init__(
        self,
        path: str,
        errors: int,
        warnings: int,
        payload: tuple | None = None,
        findings: list[Finding] | None = None,
    ):
        self.path, self.errors, self.warnings = path, errors, warnings
        self._payload, self._list = payload, findings

    @classmethod
    def of(cls, path: str, findings: list[Finding]) -> Block:
        errors = sum(1 for f in findings if f.severity == ERROR)
        return cls(path, errors, len(findings) - errors, findings=findings)

    def findings(self) -> list[Finding]:
        if self._list is None:
            assert self._payload is not None
            return unpack_findings(self._payload[0])
        return self._list

    def rows(self) -> Sequence[tuple[Any, ...]]:
        """The findings as plain (path, line, severity, code, message) tuples, without
        making a `Finding` of each (what `--json` renders)."""
        if self._list is None:
            assert self._payload is not None
            rows: tuple[tuple[Any, ...], ...] = marshal.loads(self._payload[0])
            return rows
        return self._list

    def plain(self) -> str:
        """The piped output lines of the findings."""
        if self._list is None:
            assert self._payload is not None
            return self._payload[1]
        return plain_text(self._list)


class Sink(Protocol):
    """Where a run's findings go, path by path, as they are known."""

    def block(self, block: Block) -> None: ...

    def text(self, memo: BinaryIO) -> bool:
        """Take the whole piped output of an unchanged vault (UTF-8) instead of its
        blocks: True if taken, False to be given the blocks."""
        ...


class ValidateReport:
    """The notes checked and their findings, sorted by (path, line, code, message)."""

    def __init__(self, notes: int = 0, findings: list[Finding] | None = None):
        self.notes = notes
        self.findings = findings if findings is not None else []

    @property
    def errors(self) -> int:
        return severity_counts(self.findings)[0]

    @property
    def warnings(self) -> int:
        return severity_counts(self.findings)[1]

    def plain(self) -> str:
        """Every finding as a `path:line: code: message` line (the piped output)."""
        return plain_text(self.findings)

    def to_json(self) -> dict:
        return {
            "notes": self.notes,
            "errors": self.errors,
            "warnings": self.warnings,
            "findings": [f.to_json() for f in self.findings],
        }


class Collector:
    """A sink keeping every finding (for library callers)."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def block(self, block: Block) -> None:
        self.findings.extend(block.findings())

    def text(self, memo: BinaryIO) -> bool:
        return False


class Emitter:
    """Blocks to the sink (and their piped text to the memo), counted."""

    def __init__(self, sink: Sink, memo: MemoWriter | None):
        self.sink, self.memo = sink, memo
        self.errors = self.warnings = 0

    def block(self, block: Block) -> None:
        self.errors += block.errors
        self.warnings += block.warnings
        if self.memo is not None:
            self.memo.write(block.plain().encode())
        self.sink.block(block)

    def findings(self, path: str, findings: list[Finding]) -> None:
        self.block(Block.of(path, sorted(findings, key=sort_key)))
