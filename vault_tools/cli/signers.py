"""`vt signers show | adopt | add | remove | require`: the signing policy in the ledger.

Each subcommand is one function decorated with `@signers_app.command()`, in the order
`vt signers --help` lists them; the core is `review/signers.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, VtError

if TYPE_CHECKING:
    from vault_tools.review.signers import PolicyChange

signers_app = typer.Typer(
    help="The signing policy in the ledger: who may sign for whom, and whether every event "
    "must be signed. Each change is a POLICY event signed by a key the policy trusts.\n\n"
    "Example:\n\n    vt signers adopt",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(signers_app, name="signers")

CommentOption = Annotated[str, typer.Option("--comment", help="Why the policy changes.")]
PrincipalArg = Annotated[
    str,
    typer.Argument(help="The name the key signs for (the reviewer's actor).", show_default=False),
]


@signers_app.command()
def show(vault: VaultOption = None, as_json: JsonOption = False) -> None:
    """Print the signing policy in force: the ledger's last POLICY event, or, when the
    ledger records none, say that vt.toml and the allowed signers file decide.

    Example:

        vt signers show
    """
    from vault_tools.ledger.policy import policy_in_force

    reporter = Reporter(as_json)
    settings = settings_for(vault)
    step = policy_in_force(settings.ledger_path)
    if reporter.mode == JSON:
        reporter.json({"policy": None if step is None else {
            "seq": step.seq, "id": step.id, "actor": step.actor, "required": step.required,
            "signers": [list(s) for s in step.signers]}})  # fmt: skip
        finish(ExitCode.OK)
    if step is None:
        reporter.text("the ledger records no signing policy: vt.toml and the allowed signers "
                      "file decide (vt signers adopt records them)")  # fmt: skip
        finish(ExitCode.OK)
    required = "required" if step.required else "not required"
    reporter.text(f"{step.where}, by {step.actor}: signatures {required}")
    for principal, key in step.signers:
        reporter.text(f"  {principal} {key[:40]}…")
    finish(ExitCode.OK)


@signers_app.command()
def adopt(
    vault: VaultOption = None,
    comment: CommentOption = "",
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Record the allowed signers file and `[signing] required` of vt.toml as the whole
    signing policy, in a POLICY event signed by the run's key. The first one starts the
    policy in the ledger: from it on, editing those files changes nothing until another
    signed POLICY event records the change. Refused (exit 1) when the policy in force
    does not trust the run's key.

    Example:

        vt signers adopt --comment "signing from now on"
    """
    from vault_tools.review.signers import adopt as adopt_policy

    _report(Reporter(as_json), lambda: adopt_policy(settings_for(vault, writes=True), comment,
                                                    dry_run))  # fmt: skip


@signers_app.command()
def add(
    principal: PrincipalArg,
    key: Annotated[
        Path, typer.Argument(help="The reviewer's public key (KEY.pub).", show_default=False)
    ],  # fmt: skip
    vault: VaultOption = None,
    comment: CommentOption = "",
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Let KEY sign for PRINCIPAL: a POLICY event of the policy in force plus that key,
    signed by the run's key, which the policy in force must trust.

    Example:

        vt signers add bob bob_ed25519.pub --comment "bob joins the review"
    """
    from vault_tools.review.signers import add as add_signer

    _report(Reporter(as_json), lambda: add_signer(settings_for(vault, writes=True), principal,
                                                  key, comment, dry_run))  # fmt: skip


@signers_app.command()
def remove(
    principal: PrincipalArg,
    key: Annotated[
        Path | None,
        typer.Argument(help="Only this key of PRINCIPAL's (KEY.pub).", show_default=False),
    ] = None,  # fmt: skip
    vault: VaultOption = None,
    comment: CommentOption = "",
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Stop PRINCIPAL's keys (or only KEY) from signing: the events they signed before
    stay valid, later ones fail verify.

    Example:

        vt signers remove bob --comment "bob left the team"
    """
    from vault_tools.review.signers import remove as remove_signer

    _report(Reporter(as_json), lambda: remove_signer(settings_for(vault, writes=True),
                                                     principal, key, comment, dry_run))  # fmt: skip


@signers_app.command()
def require(
    off: Annotated[bool, typer.Option("--off", help="No longer require signatures.")] = False,
    vault: VaultOption = None,
    comment: CommentOption = "",
    as_json: JsonOption = False,
    dry_run: DryRunOption = False,
) -> None:
    """Require every later event to be signed (or, with --off, no longer), by a POLICY
    event signed by a key the policy in force trusts.

    Example:

        vt signers require
    """
    from vault_tools.review.signers import require as require_signatures

    _report(Reporter(as_json), lambda: require_signatures(settings_for(vault, writes=True),
                                                          not off, comment, dry_run))  # fmt: skip


def _report(reporter: Reporter, change: Callable[[], PolicyChange]) -> None:
    try:
        result = change()
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(ExitCode.OK)
    ev = result.event
    if result.dry_run:
        reporter.text("would append: " + json.dumps(ev, ensure_ascii=False, sort_keys=True))
    for principal, key in result.added:
        reporter.text(f"+ {principal} {key[:40]}…")
    for principal, key in result.removed:
        reporter.text(f"- {principal} {key[:40]}…")
    required = "required" if ev["policy"]["required"] else "not required"
    if not result.dry_run:
        reporter.text(f"recorded the signing policy at seq {ev['seq']} (signatures {required}), "
                      f"{ev['id']}", "green")  # fmt: skip
    finish(ExitCode.OK)
