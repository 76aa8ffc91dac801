"""`vt ledger verify | audit | log | merge | resolve | forget`: the Decision Ledger's own commands.

Each subcommand is one function decorated with `@ledger_app.command()`, in the order
`vt ledger --help` lists them.
"""

from __future__ import annotations

import re
from datetime import date
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.config import Settings
from vault_tools.errors import ExitCode, IntegrityError, UsageError, VtError
from vault_tools.findings import counted
from vault_tools.vocabulary import LEDGER_ACTIONS, POLICY

if TYPE_CHECKING:
    from vault_tools.ledger.policy import PolicyStep

ACTIONS = (*LEDGER_ACTIONS, POLICY)

ledger_app = typer.Typer(
    help="The Decision Ledger: verify it, read its log.\n\n"
    "Example:\n\n    vt ledger verify --vault ~/my-vault",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(ledger_app, name="ledger")

_LINE_PREFIX = re.compile(r"^line \d+: ")
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?$")


def _where(ledger: str, line: int | None) -> str:
    return f"{ledger}:{line}" if line else ledger


@ledger_app.command()
def verify(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Check every line of the ledger: JSON, fields, id, hash, chain, duplicates, and every
    event verified before still there. Writes nothing (works on a read-only vault): a
    torn last line (an interrupted write) is reported, and the next `vt apply` or `vt
    revert` moves it to `<ledger>.torn`. Git conflict markers and CRLF line endings are
    named as such. Exit 3 when the ledger does not verify.

    Example:

        vt ledger verify --vault ~/my-vault

        vt ledger verify --json
    """
    from vault_tools.ledger.signatures import SignaturePolicy
    from vault_tools.ledger.verify import verify_ledger

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        policy = SignaturePolicy.of(settings)
        result = verify_ledger(settings.ledger_path, settings.state_dir, policy)
    except VtError as exc:
        reporter.fail(exc)
    code = ExitCode.OK if result.ok else ExitCode.INTEGRITY
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(code)
    if result.torn is not None:
        message = result.torn.message().replace(f"{settings.vault}/", "")
        reporter.error(f"{settings.ledger}: {message}")
    for problem in result.problems:
        reporter.error(
            f"{_where(settings.ledger, problem.line)}: {_LINE_PREFIX.sub('', problem.message)}"
        )
    if not result.ok:
        reporter.error(
            f"ledger does not verify: {counted(len(result.problems), 'problem')} in "
            f"{counted(result.events, 'event')}"
        )
    elif result.events == 0 and not settings.ledger_path.exists():
        reporter.text("no ledger yet (0 events)", "green")
    else:
        reporter.text(f"ledger ok: {counted(result.events, 'event')}, head {result.head}", "green")
    from vault_tools.ledger.policy import NOT_RECORDED, files_differ, policy_in_force

    step = policy_in_force(settings.ledger_path)
    if result.signed or settings.signing_required or step is not None:
        reporter.text(_signature_summary(result.signed, result.unsigned, settings, step))
    if step is not None and (differs := files_differ(settings.allowed_signers_path,
                                                     settings.signing_required, step)):  # fmt: skip
        reporter.text(differs)
    elif step is None and (result.signed or settings.signing_required):
        reporter.text(NOT_RECORDED, "yellow")
    finish(code)


@ledger_app.command()
def audit(
    rev: Annotated[
        str, typer.Argument(help="The commit whose history is audited.", show_default=True)
    ] = "HEAD",
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Check only the commits not reachable from this one (the last audited).",
            show_default=False,
        ),
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check the ledger through git history: every commit that touched it, merges
    included, may only have appended to its parent's ledger, and a merge keeps every
    event of every parent in each one's order. Runs in a fresh clone and in CI; a commit
    that shortened, reordered or rewrote the ledger is named with its author, exit 3.

    Example:

        vt ledger audit

        vt ledger audit --json
    """
    from vault_tools.integrations.git.audit import audit as audit_history
    from vault_tools.integrations.git.repo import GitRepo

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        repo = GitRepo.find(settings.vault)
        if repo is None:
            raise UsageError("not inside a git repository: the audit reads the ledger's "
                             "history from git", str(settings.vault))  # fmt: skip
        ledger = "/".join(part for part in (repo.relative(settings.vault), settings.ledger) if part)
        result = audit_history(repo, ledger, rev, since)
    except VtError as exc:
        reporter.fail(exc)
    code = ExitCode.OK if result.ok else ExitCode.INTEGRITY
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(code)
    for problem in result.problems:
        message = _LINE_PREFIX.sub("", problem.message)
        reporter.error(f"{_where(settings.ledger, problem.line)}: commit {problem.commit[:12]} "
                       f"({problem.author}): {message}")  # fmt: skip
    for sha in result.unresolved:
        reporter.text(f"{settings.ledger}: commit {sha[:12]} holds a ledger merged without "
                      "the vt merge driver (its events kept; `vt ledger resolve` re-chains "
                      "them)")  # fmt: skip
    after = f" after {result.since[:12]}" if result.since else ""
    checked = f"{counted(result.commits, 'commit')}{after}"
    if result.ok:
        reporter.text(f"ledger history ok: {checked} checked; {counted(result.events, 'event')} at "
                      f"{result.tip[:12]}", "green")  # fmt: skip
    else:
        problems = counted(len(result.problems), "problem")
        reporter.error(f"ledger history does not verify: {problems} in {checked}")
    finish(code)


def _signature_summary(
    signed: int, unsigned: int, settings: Settings, step: PolicyStep | None = None
) -> str:
    """How many events carry a checked signature, and how many were written unsigned
    before signatures were required (not tampering: the vault allows them)."""
    where = settings.allowed_signers or settings.relative(settings.allowed_signers_path)
    if step is not None:
        where = f"{step.where} (the events before it: {where})"
    text = f"signatures: {counted(signed, 'signed event')}, checked against {where}"
    if unsigned and step is not None:
        text += f"; {counted(unsigned, 'unsigned event')}, where none was required"
    elif unsigned:
        since = (f"before seq {settings.signatures_from}, from which they are required"
                 if settings.signing_required else "while signatures are not required")  # fmt: skip
        text += f"; {counted(unsigned, 'unsigned event')}, written {since}"
    return text


def _bound(value: str | None, option: str) -> str | None:
    if value is None:
        return None
    if not _TS.match(value):
        raise typer.BadParameter("use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ", param_hint=option)
    try:
        date.fromisoformat(value[:10])
    except ValueError:
        raise typer.BadParameter(f"{value} is not a date", param_hint=option) from None
    return value


def _log_line(ev: dict[str, Any]) -> str:
    comment = f"  {ev.get('comment')}" if ev.get("comment") else ""
    target = f" reverts {ev['reverts']}" if ev.get("reverts") else ""
    return (
        f"{ev.get('seq'):>6}  {ev.get('ts')}  {ev.get('action', '?'):<7} "
        f"{ev.get('claim_id')}  by {ev.get('actor')}  {ev.get('id')}{target}{comment}"
    )


@ledger_app.command()
def log(
    claim: Annotated[
        str | None, typer.Option("--claim", help="Only this claim's events.", show_default=False)
    ] = None,
    actor: Annotated[
        str | None, typer.Option("--actor", help="Only this actor's events.", show_default=False)
    ] = None,
    action: Annotated[
        str | None,
        typer.Option(
            "--action",
            help="Only ACCEPT, REJECT, REPAIR, REVERT or POLICY events.",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="From this day (YYYY-MM-DD) or second (…THH:MM:SSZ) on.",
            show_default=False,
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option("--until", help="Up to this day or second, inclusive.", show_default=False),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most N events.", show_default=False)
    ] = None,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """The ledger's events, newest first, optionally filtered. Only a ledger that passes
    the gate is shown (exit 3 otherwise, as for `vt status`).

    Example:

        vt ledger log --claim DV1-0001

        vt ledger log --actor alice --action REJECT --since 2026-11-01 --limit 20 --json
    """
    from vault_tools.ledger.append import Ledger
    from vault_tools.ledger.reader import iter_log
    from vault_tools.ledger.signatures import SignaturePolicy

    if action is not None and action.upper() not in ACTIONS:
        raise typer.BadParameter(f"must be one of {', '.join(ACTIONS)}", param_hint="--action")
    reporter = Reporter(as_json)
    settings = settings_for(vault)
    try:
        ledger = Ledger(settings.ledger_path, settings.state_dir, root=settings.vault,
                        policy=SignaturePolicy.of(settings), create_lock=False)  # fmt: skip
        head = ledger.trusted_head()
        events = list(
            islice(
                iter_log(
                    settings.ledger_path,
                    claim,
                    actor,
                    action.upper() if action else None,
                    _bound(since, "--since"),
                    _bound(until, "--until"),
                    head.size,
                ),
                limit,
            )
        )
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
        reporter.json({"events": events})
        finish(ExitCode.OK)
    for ev in events:
        reporter.text(_log_line(ev))
    if not events:
        reporter.error(
            "no events"
            + (" match" if any((claim, actor, action, since, until)) else ": the ledger is empty")
        )
    finish(ExitCode.OK)


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
    from vault_tools.integrations.git.hook import merge_driver

    try:
        merge_driver(base, ours, theirs)
    except IntegrityError as exc:
        Reporter().error(f"vt ledger merge: {exc}; the ledger is left as a conflict")
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
    from vault_tools.integrations.git.hook import resolve_file

    reporter = Reporter(as_json)
    result = resolve_file(settings_for(vault, writes=True), dry_run)
    if reporter.mode == JSON:
        reporter.json({**result.to_json(), "dry_run": dry_run})
        finish(ExitCode.OK)
    if not result.changed:
        reporter.text(f"{result.path}: nothing to resolve ({counted(result.kept, 'event')})")
    else:
        verb = "would keep" if dry_run else "kept"
        reporter.text(
            f"{result.path}: {verb} {counted(result.kept, 'event')}, "
            f"{counted(result.duplicates, 'duplicate')} dropped, re-chained"
        )
    finish(ExitCode.OK)


@ledger_app.command()
def forget(
    vault: VaultOption = None, dry_run: DryRunOption = False, as_json: JsonOption = False
) -> None:
    """Accept a ledger that lost events verified before (restored from an older copy, or
    deleted for a fresh start): list the events `.vt/` remembers that the ledger no longer
    holds, and forget them, so that the ledger as it stands is trusted again. The ledger
    itself must verify (exit 3 otherwise); nothing in it is changed. Notes still marked
    APPLIED for a forgotten event are refused by `vt apply` until `vt apply --record-lost`
    records their decisions again.

    Example:

        vt ledger forget --dry-run

        vt ledger forget --vault . --json
    """
    from vault_tools.ledger.lost import forget_lost
    from vault_tools.ledger.signatures import SignaturePolicy

    reporter = Reporter(as_json)
    settings = settings_for(vault, writes=True)
    try:
        result = forget_lost(
            settings.ledger_path,
            settings.state_dir,
            settings.vault,
            SignaturePolicy.of(settings),
            dry_run,
        )
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(ExitCode.OK)
    verb = "would forget" if dry_run else "forgot"
    for event_id, ts in result.forgotten:
        reporter.text(f"{verb}: {event_id} ({ts}), no longer in {result.path}")
    done = "would be forgotten (dry run: nothing written)" if dry_run else "forgotten"
    reporter.text(
        f"{result.path}: {counted(len(result.forgotten), 'lost event')} {done}; "
        f"the {counted(result.events, 'event')} it holds are verified as they stand"
    )
    finish(ExitCode.OK)
