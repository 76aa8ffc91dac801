"""`vt hook install | uninstall | run | merge-note | refresh`: vt's git hooks and drivers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import (
    DryRunOption,
    JsonOption,
    VaultOption,
    finish,
    settings_for,
    would,
)
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode
from vault_tools.findings import counted

hook_app = typer.Typer(
    help="The git pre-commit hook that checks staged review notes and the staged ledger.\n\n"
    "Example:\n\n    vt hook install --vault .",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(hook_app, name="hook")


def _report_changes(changes: list[str], as_json: bool, dry_run: bool, none: str) -> None:
    reporter = Reporter(as_json)
    if reporter.mode == JSON:
        reporter.json({"changes": changes, "dry_run": dry_run})
        return
    for change in changes:
        reporter.text(would(change) if dry_run else change)
    if not changes:
        reporter.text(none)


@hook_app.command()
def install(
    vault: VaultOption = None, dry_run: DryRunOption = False, as_json: JsonOption = False
) -> None:
    """Install the pre-commit hook, the ledger, note and allowed signers merge drivers,
    and the post-merge / post-checkout / post-commit / post-rewrite hooks that refresh
    the Claim Store, the blocks and the marks after a pull, and commit what they rewrote.

    The hooks go to `git rev-parse --git-path hooks` (so core.hooksPath is honoured);
    the merge drivers are registered in the repository's git config and .gitattributes.

    A pre-commit hook vt did not write is kept: moved to pre-commit.vt-chained and run
    first. Installing twice changes nothing.

    Example:

        vt hook install --vault .
    """
    from vault_tools.integrations.git.hook import install as run_install

    changes = run_install(settings_for(vault, writes=True, setting_up=True), dry_run)
    _report_changes(
        changes, as_json, dry_run, "the hook and the merge driver are already installed"
    )
    finish(ExitCode.OK)


@hook_app.command()
def uninstall(
    vault: VaultOption = None, dry_run: DryRunOption = False, as_json: JsonOption = False
) -> None:
    """Remove vt's hooks and merge drivers.

    A chained hook is restored; the merge drivers' git config and .gitattributes lines go.

    Example:

        vt hook uninstall --vault .
    """
    from vault_tools.integrations.git.hook import uninstall as run_uninstall

    changes = run_uninstall(settings_for(vault, writes=True, setting_up=True), dry_run)
    _report_changes(changes, as_json, dry_run, "nothing of vt's hook is installed")
    finish(ExitCode.OK)


@hook_app.command()
def run(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Files to check as they are on disk: the review notes among them, and the "
            "ledger if it is one (what the pre-commit framework passes). Default: what git "
            "has staged.",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check the staged notes and ledger (what the hook runs), or the files given.

    Without FILES it reads the index, not the working tree: every staged review note
    must validate, and the staged ledger may only append to HEAD's (in a merge: keep
    every event of both parents) with a valid chain. Given FILES (the pre-commit
    framework passes them; `pre-commit run --all-files` passes every file, as in CI),
    it checks the review notes among them and the ledger if it is among them, as they
    are on disk; other files are passed over. Writes nothing. Exit 1 refuses the commit.

    Example:

        vt hook run --vault .

        vt hook run 03_claims/DV1-0001.md 05_ledger/decision_ledger.jsonl --vault .
    """
    from vault_tools.cli.hook_run import check_and_report

    finish(check_and_report(vault, as_json, files or ()))


@hook_app.command("merge-note")
def merge_note(
    base: Annotated[Path, typer.Argument(help="The merge base's note (git's %O).")],
    ours: Annotated[Path, typer.Argument(help="Our note (git's %A); the result goes here.")],
    theirs: Annotated[Path, typer.Argument(help="Their note (git's %B).")],
    path: Annotated[str, typer.Argument(help="The note's path (git's %P).")] = "note.md",
) -> None:
    """The git merge driver for notes: vt's bytes settled, the rest merged by git.

    review_state, the vt_* properties and vt's blocks are taken from the side that
    changed them (ours when both did; the post-merge hook recomputes them from the
    merged ledger); the user's bytes go through `git merge-file`. Exit 1 leaves a real
    content conflict to git, with its usual markers. Registered by `vt hook install`.

    Example:

        git config merge.vt-note.driver "python -m vault_tools hook merge-note %O %A %B %P"
    """
    from vault_tools.integrations.git.notemerge import merge_driver

    clean = merge_driver(base, ours, theirs, path)
    finish(ExitCode.OK if clean else ExitCode.FINDINGS)


@hook_app.command("merge-signers")
def merge_signers(
    base: Annotated[Path, typer.Argument(help="The merge base's file (git's %O).")],
    ours: Annotated[Path, typer.Argument(help="Our file (git's %A); the result goes here.")],
    theirs: Annotated[Path, typer.Argument(help="Their file (git's %B).")],
) -> None:
    """The git merge driver for the allowed signers file: a three-way union of lines.

    A line either side removed stays removed, a line either side added is kept (the
    base's order, then ours' new lines, then theirs'), each once. A side with a line
    that is not an allowed signers line is a conflict (exit 1), left to git with its
    markers. Registered by `vt hook install`.

    Example:

        git config merge.vt-signers.driver "python -m vault_tools hook merge-signers %O %A %B"
    """
    from vault_tools.integrations.git.signersmerge import merge_driver as run_driver

    clean = run_driver(base, ours, theirs)
    finish(ExitCode.OK if clean else ExitCode.FINDINGS)


@hook_app.command()
def refresh(
    vault: VaultOption = None,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            help="The git hook running it (post-merge, post-commit, post-checkout): after "
            "a merge or a pull, what the refresh rewrote is committed.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Bring the Claim Store, the knowledge-base blocks and the review notes' marks
    (`review_state`, `vt_event_id`, `vt_applied_at`) up to date with the ledger (what
    the post-merge and post-checkout hooks run after a pull or a checkout). Nothing is
    appended to the ledger and no byte of a note but vt's own is written.

    A ledger that arrived with conflict markers (committed by a clone without vt's
    merge driver) is repaired first, as `vt ledger resolve` does; commit it.

    Run by the post-merge or post-commit hook (`--after`), the files it rewrote that
    held no uncommitted edit go into the merge commit just made (amended), or into a
    commit of their own after a fast-forward, so `git status` stays clean.

    Example:

        vt hook refresh --vault .
    """
    from vault_tools.integrations.git.pullcommit import AMEND, refresh_and_commit

    repaired, result, remarked, committed = refresh_and_commit(
        settings_for(vault, writes=True), after or ""
    )
    reporter = Reporter()
    if repaired is not None:
        reporter.text(
            f"vt: {repaired.path} came with conflict markers: repaired, "
            f"{counted(repaired.kept, 'event')} kept"
            + ("" if committed.committed else "; commit it")
        )
    if result.kb_notes_written:
        written = counted(len(result.kb_notes_written), "knowledge-base note")
        reporter.text(f"vt: {written} brought up to date")
    if remarked.marked:
        marked = counted(len(remarked.marked), "review note")
        reporter.text(f"vt: {marked} marked as the ledger records them")
    if committed.committed:
        where = "the merge commit" if committed.how == AMEND else "a commit of their own"
        files = counted(len(committed.committed), "refreshed file")
        reporter.text(f"vt: {files} committed in {where}")
    for path in committed.left:
        reporter.error(f"vt: {path}: refreshed beside your uncommitted edit; not committed")
    if committed.problem is not None:
        reporter.error(f"vt: the refreshed files are not committed: {committed.problem}")
    for problem in [*result.kb_problems, *remarked.problems]:
        reporter.error(f"vt: {problem}")
    finish(ExitCode.OK)
