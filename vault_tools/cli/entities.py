"""`vt entities` and `vt entities new`."""

from __future__ import annotations

from typing import Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, VtError
from vault_tools.findings import counted

entities_app = typer.Typer(
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(entities_app, name="entities")


@entities_app.callback(invoke_without_command=True)
def entities(
    ctx: typer.Context,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """The knowledge base: entity notes, their use, missing targets, label conflicts.

    Lists every knowledge-base note with the review notes and accepted claims using it,
    the targets used but missing (with the notes using them), and surface labels mapped
    to different targets in different notes.

    Example:

        vt entities --vault ~/my-vault

        vt entities --json

        vt entities new "Tree Size" --alias "tree size" --dry-run
    """
    if ctx.invoked_subcommand is not None:
        return
    from vault_tools.integrations.entities import survey
    from vault_tools.store.claims import ClaimStore

    reporter = Reporter(as_json)
    try:
        settings = settings_for(vault)
        with ClaimStore.open(settings) as store:
            store.catch_up()  # the ledger may have grown (apply, git pull) since
            accepted = store.accepted_counts()
        report = survey(settings, accepted=accepted)
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
        reporter.json(report.to_json())
        finish(ExitCode.OK)
    width = max((len(e.title) for e in report.entities), default=10)
    reporter.text(f"{'entity':<{width}}  notes  accepted")
    for entity in report.entities:
        reporter.text(f"{entity.title:<{width}}  {len(entity.notes):>5}  {entity.accepted:>8}")
    for target in report.missing:
        reporter.text(
            f"\nmissing: {target.target} ({target.status}), used by {', '.join(target.notes)}",
            "yellow",
        )
    for conflict in report.conflicts:
        uses = "; ".join(f"{t} in {', '.join(n)}" for t, n in conflict.targets.items())
        reporter.text(f"\nlabel {conflict.label!r} maps to different targets: {uses}", "yellow")
    reporter.text(
        f"\n{counted(len(report.entities), 'entity')}, {counted(report.notes, 'review note')}, "
        f"{counted(len(report.missing), 'missing target')}, "
        f"{counted(len(report.conflicts), 'label conflict')}"
    )
    finish(ExitCode.OK)


@entities_app.command("new")
def new(
    name: Annotated[
        str,
        typer.Argument(
            help="The entity's name: the note's file name and title.", show_default=False
        ),
    ],
    alias: Annotated[
        list[str] | None,
        typer.Option("--alias", help="An alias (repeat for more).", show_default=False),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Write a new knowledge-base note NAME.md (never over an existing one).

    Example:

        vt entities new "Tree Size" --alias "tree size" --alias "draft tree size"
    """
    from vault_tools.integrations.entities import new_entity

    reporter = Reporter(as_json)
    result = new_entity(settings_for(vault, writes=True), name, alias or [], dry_run)
    if reporter.mode == JSON:
        reporter.json({**result.to_json(), "dry_run": dry_run})
        finish(ExitCode.OK)
    if dry_run:
        reporter.text(f"would write {result.path}:\n\n{result.text}")
    else:
        reporter.text(f"wrote {result.path}")
    for path in result.similar:
        reporter.text(f"note: {path} already has this name or alias", "yellow")
    finish(ExitCode.OK)
