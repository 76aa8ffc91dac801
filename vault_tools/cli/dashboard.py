"""`vt report` (the Review Dashboard note) and `vt export` (the Claim Store as JSONL/CSV)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli import app
from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.ledger import fail
from vault_tools.errors import ExitCode, UsageError, VtError


@app.command()
def report(
    vault: VaultOption = None, as_json: JsonOption = False, dry_run: DryRunOption = False
) -> None:
    """Write the Review Dashboard note (`Review Dashboard.md`) at the vault root.

    It shows the review queue by review_action and review_state, validation errors and
    review-assist warnings
    by code, accepted claims per entity, and a Mermaid diagram of the accepted claims'
    entity graph. Only the text between its vt:dashboard markers is vt's; the note is
    rewritten only when that text changes.

    Exits 1 when a file or folder of the vault could not be read (the dashboard lists
    it among the validation errors).

    Example:

        vt report --vault examples/vault

        vt report --dry-run

        vt report --json
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.integrations.dashboard import report as run_report

    reporter = Reporter(as_json)
    try:
        settings = settings_for(vault)
        with reporter.progress("Reading notes") as progress:
            result = run_report(settings, dry_run, progress)
    except VtError as exc:
        fail(exc)
    # the dashboard is written all the same; the exit says some files went unread
    failed = ExitCode.FINDINGS if result.summary["unreadable"] else ExitCode.OK
    if reporter.mode == "json":
        reporter.json(result.to_json())
        finish(failed)
    if dry_run:
        verb = "would write" if result.changed else "up to date, would not write"
        reporter.text(f"{verb} {result.path} (dry run, nothing written)")
        if result.changed:
            reporter.text("")
            reporter.text(result.content.rstrip("\n"))
    elif result.written:
        reporter.text(f"{'created' if result.created else 'updated'} {result.path}")
    else:
        reporter.text(f"{result.path} is up to date (not rewritten)")
    s = result.summary
    reporter.text(
        f"{s['notes']} review notes, {s['accepted_claims']} accepted claims on "
        f"{s['entities']} entities, {sum(s['findings'].values())} findings; "
        f"graph: {s['edges_shown']} of {s['edges']} edges shown"
    )
    if s["unreadable"]:
        reporter.text(
            f"files or folders that could not be read: {s['unreadable']} (listed on "
            "the dashboard; see vt validate)",
            "red",
        )
    finish(failed)


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

        vt export --vault examples/vault > claims.jsonl

        vt export --format csv --status ACCEPTED --status REPAIRED -o accepted.csv

        vt export -o claims.jsonl --json
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.store.export import export_claims

    reporter = Reporter(as_json)
    try:
        if as_json and output is None:
            raise UsageError(
                "--json needs --output FILE (without it the export itself goes to stdout)"
            )
        result = export_claims(settings_for(vault), fmt.lower(), output, status)
    except VtError as exc:
        fail(exc)
    if output is None:
        _write_stdout(result.data)
        finish(ExitCode.OK)
    if reporter.mode == "json":
        reporter.json(result.to_json())
    else:
        reporter.text(f"exported {result.claims} claims to {result.output} ({result.format})")
    finish(ExitCode.OK)


def _write_stdout(data: bytes) -> None:
    """The export's bytes as they are (UTF-8, the CSV's CRLF rows), whatever the locale."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        sys.stdout.write(data.decode("utf-8"))
