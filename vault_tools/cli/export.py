"""`vt export`: the Claim Store's current claims as JSONL or CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, UsageError, VtError
from vault_tools.findings import counted


@app.command()
def export(
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="jsonl (one canonical JSON object per line) or csv (header row, UTF-8).",
        ),
    ] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write to this file (atomically) instead of stdout.",
            show_default=False,
        ),
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option(
            "--status",
            help="Only claims with this status (repeat for more): ACCEPTED, "
            "REPAIRED, REJECTED, REVERTED, CONFLICT.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export the Claim Store's current claims as JSONL or CSV.

    Sorted by claim_id, with claim_id, status, event_id, note, atomic_claim,
    epistemic_mode, mapping_status, semantic_frame and
    entities (JSON-encoded in CSV). The store is first brought up to date with the ledger.

    Example:

        vt export --vault ~/my-vault > ~/claims.jsonl

        vt export --format csv --status ACCEPTED --status REPAIRED -o accepted.csv

        vt export -o claims.jsonl --json
    """
    from vault_tools.store.export import export_claims

    reporter = Reporter(as_json)
    try:
        if as_json and output is None:
            raise UsageError(
                "--json needs --output FILE (without it the export itself goes to stdout)"
            )
        result = export_claims(settings_for(vault), fmt.lower(), output, status)
    except VtError as exc:
        reporter.fail(exc)
    if output is None:
        reporter.data(result.data)
        finish(ExitCode.OK)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
    else:
        reporter.text(
            f"exported {counted(result.claims, 'claim')} to {result.output} ({result.format})"
        )
    finish(ExitCode.OK)
