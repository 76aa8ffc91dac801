"""`vt validate`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO

import typer

from vault_tools.cli import app
from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.errors import ExitCode, VtError

if TYPE_CHECKING:
    from vault_tools.checks.report import Block
    from vault_tools.cli.report import Reporter


@app.command()
def validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Notes to check (default: every review note of the vault).", show_default=False
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check review notes against the schemas and the knowledge base.

    Findings are written as each note is checked, by path; a whole-vault run lists
    the claim-id-duplicate findings last.

    Example:

        vt validate --vault examples/vault

        vt validate 03_claims/SA260324R-0125.md --json
    """
    from vault_tools.checks.validate import validate_into
    from vault_tools.cli.report import Reporter

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    sink = _StreamSink(reporter)
    try:
        with reporter.progress("Validating notes") as progress:
            result = validate_into(settings, sink, paths or None, progress)
    except BaseException as exc:  # the error goes on to stderr and its exit code
        sink.close_json(exc)
        raise
    if reporter.mode == "json":
        counts = json.dumps(
            {"notes": result.notes, "errors": result.errors, "warnings": result.warnings}, indent=2
        )
        sink.open_json()
        reporter.out.write(("\n  ]," if sink.any else "],") + counts[1:] + "\n")
    else:
        summary = (
            f"{result.notes} notes checked: {result.errors} errors, {result.warnings} warnings"
        )
        if reporter.mode == "rich":
            style = "bold red" if result.errors else "bold green"
            reporter.text(("\n" if sink.any else "") + summary, style)
        else:
            reporter.error(summary)
    finish(ExitCode.FINDINGS if result.errors else ExitCode.OK)


class _StreamSink:
    """Writes each path's findings as the run gives them: pre-rendered lines when piped,
    array items of the JSON object's "findings", or rich text on a terminal."""

    def __init__(self, reporter: Reporter):
        self.reporter = reporter
        self.any = False  # whether a finding was written
        self._opened = False

    def open_json(self) -> None:
        """The JSON object's start, written with its first finding (or at the end), so
        that a run failing before any finding writes no partial object."""
        if not self._opened:
            self.reporter.out.write('{\n  "findings": [')
            self._opened = True

    def close_json(self, exc: BaseException) -> None:
        """End a JSON object cut short by `exc` with its "error", so that stdout holds one
        valid JSON document whatever happens (nothing at all when no finding was out)."""
        if self._opened:
            message = (
                str(exc)
                if isinstance(exc, VtError)
                else f"{type(exc).__name__}: {exc}".removesuffix(": ")
            )
            self.reporter.out.write(
                ("\n  ]," if self.any else "],")
                + '\n  "error": '
                + json.dumps(message, ensure_ascii=False)
                + "\n}\n"
            )
            self.reporter.out.flush()

    def block(self, block: Block) -> None:
        mode = self.reporter.mode
        if mode == "plain":
            self.reporter.plain_text(block.plain())
        elif mode == "json":
            self.open_json()
            for finding in block.findings():
                item = json.dumps(finding.to_json(), ensure_ascii=False, indent=2)
                self.reporter.out.write(
                    ("," if self.any else "") + "\n    " + item.replace("\n", "\n    ")
                )
                self.any = True
        else:
            self.reporter.findings(block.findings())
        self.any = True

    def text(self, memo: BinaryIO) -> bool:
        if self.reporter.mode != "plain":
            return False
        while chunk := memo.read(1 << 20):
            self.reporter.plain_text(chunk.decode())
        return True
