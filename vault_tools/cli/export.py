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
    dataset: Annotated[
        Path | None,
        typer.Option(
            "--dataset",
            help="Write the decided claims to this file as a dataset instead: one JSON "
            "line per claim with its evidence, V1, final version, decision, changed "
            "parts, assist codes, provenance and reviewer (docs/dataset.md).",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Export the Claim Store's current claims as JSONL or CSV, or a dataset.

    Sorted by claim_id, with claim_id, status, event_id, note, atomic_claim,
    epistemic_mode, mapping_status, semantic_frame and
    entities (JSON-encoded in CSV). The store is first brought up to date with the ledger.
    With --dataset FILE, every decided claim's line joins its decision event with its
    note (schemas/dataset-record.schema.json); --format, --output and --status do not
    apply to it.

    Example:

        vt export --vault ~/my-vault > ~/claims.jsonl

        vt export --format csv --status ACCEPTED --status REPAIRED -o accepted.csv

        vt export -o claims.jsonl --json

        vt export --dataset reviewed.jsonl
    """
    reporter = Reporter(as_json)
    if dataset is not None:
        _export_dataset(reporter, dataset, vault, fmt.lower() != "jsonl" or output or status)
    from vault_tools.store.export import export_claims

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


def _export_dataset(reporter: Reporter, dataset: Path, vault: Path | None, other: object) -> None:
    from vault_tools.integrations.dataset import export_dataset

    try:
        if other:
            raise UsageError("--dataset writes its own file; --format, --output and --status "
                             "are for the claims export")  # fmt: skip
        result = export_dataset(settings_for(vault), dataset)
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
    else:
        notes = (
            f"; {counted(result.without_note, 'claim')} without a readable note"
            if result.without_note
            else ""
        )
        changed = (
            f"; {counted(result.v1_changed, 'note')} whose V1 changed since the decision"
            if result.v1_changed
            else ""
        )
        reporter.text(
            f"exported {counted(result.claims, 'decided claim')} to {result.output} "
            f"(dataset){notes}{changed}"
        )
    finish(ExitCode.OK)
