"""`vt ledger merge` (the git merge driver) and `vt ledger resolve`, on the `ledger` sub-app."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.ledger import ledger_app
from vault_tools.errors import ExitCode, IntegrityError


@ledger_app.command()
def merge(
    base: Annotated[
        Path, typer.Argument(help="The merge base's ledger (git's %O).", show_default=False)
    ],
    ours: Annotated[
        Path,
        typer.Argument(
            help="Our ledger (git's %A); the result is written here.", show_default=False
        ),
    ],
    theirs: Annotated[Path, typer.Argument(help="Their ledger (git's %B).", show_default=False)],
) -> None:
    """The git merge driver for the ledger.

    Keeps the common prefix, then ours, then theirs' new events re-chained (ids kept,
    duplicates dropped), written to OURS atomically. A side with an edited line, or
    one that dropped an event of the base, is refused: exit 1, and git reports a
    conflict. Registered by `vt hook install` / `vt init`.

    Example:

        vt ledger merge base.jsonl ours.jsonl theirs.jsonl

        git config merge.vt-ledger.driver "python -m vault_tools ledger merge %O %A %B"
    """
    from vault_tools.integrations.hook import merge_driver

    try:
        merge_driver(base, ours, theirs)
    except IntegrityError as exc:
        sys.stderr.write(f"vt ledger merge: {exc}; the ledger is left as a conflict\n")
        finish(ExitCode.FINDINGS)
    finish(ExitCode.OK)


@ledger_app.command()
def resolve(
    vault: VaultOption = None, dry_run: DryRunOption = False, as_json: JsonOption = False
) -> None:
    """Turn a ledger left with conflict markers, or merged by `merge=union`, into the
    merged ledger.

    The result is what the merge driver would have written: events in file order,
    duplicates by id dropped, re-chained. Then `git add` the ledger.

    Example:

        vt ledger resolve --vault . && git add 05_ledger/decision_ledger.jsonl
    """
    from vault_tools.cli.report import Reporter
    from vault_tools.integrations.hook import resolve_file

    reporter = Reporter(as_json)
    result = resolve_file(settings_for(vault), dry_run)
    if reporter.mode == "json":
        reporter.json({**result.to_json(), "dry_run": dry_run})
        finish(ExitCode.OK)
    if not result.changed:
        reporter.text(f"{result.path}: nothing to resolve ({result.kept} events)")
    else:
        verb = "would keep" if dry_run else "kept"
        reporter.text(
            f"{result.path}: {verb} {result.kept} events, {result.duplicates} "
            "duplicates dropped, re-chained"
        )
    finish(ExitCode.OK)
