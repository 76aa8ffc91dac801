"""What `vt ledger verify` finds: its problems and its result (verify.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from vault_tools.ledger.reader import TornInfo


@dataclass(frozen=True, slots=True)
class Problem:
    seq: int | None
    line: int | None
    message: str

    def to_json(self) -> dict:
        return {"seq": self.seq, "line": self.line, "message": self.message}


@dataclass(slots=True)
class VerifyResult:
    ok: bool
    events: int
    head: str
    problems: list[Problem] = field(default_factory=list)
    torn: TornInfo | None = None
    signed: int = 0  # events carrying a signature (each checked)
    unsigned: int = 0  # events without, where none was required (written before signing)

    def to_json(self) -> dict:
        """The `vt ledger verify --json` object (docs/json-output.md), plus `torn`."""
        torn = None
        if self.torn:
            torn = {"offset": self.torn.offset, "length": self.torn.length,
                    "backup": self.torn.backup, "message": self.torn.message()}  # fmt: skip
        return {
            "ok": self.ok,
            "events": self.events,
            "head": self.head,
            "problems": [p.to_json() for p in self.problems],
            "torn": torn,
            "signed": self.signed,
            "unsigned": self.unsigned,
        }
