"""`vt preview`: the Repair Preview of notes marked REQUEST_REPAIR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, RICH, Reporter, rich_finding
from vault_tools.cli.printable import printable
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode
from vault_tools.findings import counted
from vault_tools.vocabulary import PREVIEW_FAILED, PREVIEW_READY


@app.command()
def preview(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Notes to preview (default: every note marked review_action: REQUEST_REPAIR). "
            "Only notes marked REQUEST_REPAIR are written; others are shown.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="List every note previewed, also those already up to date (by default a "
            "vault run counts them in its last line). Example: vt preview -v",
        ),
    ] = False,
) -> None:
    """Repair Preview: validate the V2 drafts and show the V1 → V2 changes.

    For notes marked review_action: REQUEST_REPAIR the preview is also written into the
    note (a Repair Preview section, review_state PREVIEW_READY or PREVIEW_FAILED, and
    vt_preview_hash). Nothing else is written: no ledger, no claim store, no other note.
    A vault run lists the notes it wrote or found failing anew; notes whose preview is up
    to date are counted in its last line, or listed with -v or when notes are named.

    Example:

        vt preview --vault ~/my-vault

        vt preview 03_claims/DV1-0003.md --dry-run

        vt preview -v

        vt preview --json
    """
    from vault_tools.review.preview import preview_vault

    reporter = Reporter(as_json)
    settings = settings_for(vault, writes=True)
    with reporter.progress("Previewing notes") as progress:
        report = preview_vault(settings, paths or None, dry_run, progress)
    if reporter.mode == JSON:
        reporter.json(report.to_json())
    elif not report.previews:
        reporter.text("nothing to preview: no note is marked review_action: REQUEST_REPAIR")
    else:
        listed = report.previews
        if not (verbose or paths):  # a vault run says what is new, and counts the rest
            listed = [result for result in listed if not result.up_to_date]
        for result in listed:
            _show(reporter, result)
        _summary(reporter, report.previews, dry_run, len(report.previews) - len(listed))
    finish(ExitCode.FINDINGS if report.failed else ExitCode.OK)


def _show(reporter: Reporter, result: Any) -> None:
    if reporter.mode == RICH:
        _show_rich(reporter, result)
    else:
        _show_plain(reporter, result)


def _status(result: Any) -> str:
    if result.state is None:
        return "no preview"
    if result.written:
        return f"{result.state}, written"
    return f"{result.state}, {result.remark}" if result.remark else result.state


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _show_plain(reporter: Reporter, result: Any) -> None:
    claim = f" ({result.claim_id})" if result.claim_id else ""
    reporter.text(f"{result.path}{claim}: {_status(result)}")
    reporter.findings(result.findings)
    if result.state is None:
        return
    if result.unread:
        reporter.text(f"  {result.unread_text}")
    if result.unchanged:
        reporter.text("  no changes: the drafts equal V1")
        return
    from vault_tools.review.diff import plain_change_lines

    for line in plain_change_lines(result.claim_segments, result.changes):
        reporter.text(f"  {line}")


def _show_rich(reporter: Reporter, result: Any) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    console = reporter.console
    colour = {PREVIEW_READY: "green", PREVIEW_FAILED: "red"}.get(result.state, "red")
    claim = f" [dim]({escape(result.claim_id)})[/dim]" if result.claim_id else ""
    console.print(
        f"\n[bold]{escape(result.path)}[/bold]{claim}  "
        f"[{colour}]{escape(_status(result))}[/{colour}]"
    )
    for finding in result.findings:
        console.print("  " + rich_finding(finding))
    if result.state is None:
        return
    if result.unread:
        console.print(f"  [yellow]{escape(result.unread_text)}[/yellow]")
    if result.unchanged:
        console.print("  [dim]no changes: the drafts equal V1[/dim]")
        return
    if result.claim_segments:
        styles = {"equal": "", "delete": "red strike", "insert": "bold green"}
        text = Text("  claim: ")
        for kind, part in result.claim_segments:
            text.append(printable(part), style=styles[kind] or None)
        console.print(text)
    rows = [c for c in result.changes if c.field != "claim"]
    if rows:
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
        for column in ("", "field", "pointer"):
            table.add_column(column, no_wrap=True)
        for column in ("V1", "V2"):
            table.add_column(column, overflow="fold", ratio=1)
        signs = {
            "add": "[green]+[/green]",
            "remove": "[red]-[/red]",
            "replace": "[yellow]~[/yellow]",
        }
        for change in rows:
            old = "" if change.op == "add" else f"[red]{escape(_value(change.old))}[/red]"
            new = "" if change.op == "remove" else f"[green]{escape(_value(change.new))}[/green]"
            table.add_row(
                signs.get(change.op, change.op),
                change.field,
                escape(change.pointer or "/"),
                old,
                new,
            )
        console.print(table)


def _summary(reporter: Reporter, previews: list[Any], dry_run: bool, unlisted: int) -> None:
    ready = sum(p.state == PREVIEW_READY and not p.failed for p in previews)
    failed = sum(p.failed for p in previews)
    written = sum(p.written for p in previews)
    would = counted(sum(p.would_write for p in previews), "note")
    tail = f"dry run: would write {would}, nothing written" if dry_run else f"{written} written"
    summary = f"{len(previews)} previewed: {ready} ready, {failed} failed; {tail}"
    if unlisted:
        summary += f"; {unlisted} up to date, not listed (vt preview -v lists them)"
    reporter.summary(summary, bool(failed), gap=unlisted < len(previews))
