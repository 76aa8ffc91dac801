"""`vt init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vault_tools.cli.common import DryRunOption, JsonOption, finish, settings_for, would
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, UsageError


@app.command()
def init(
    vault: Annotated[
        Path | None,
        typer.Argument(
            help="Vault folder (default: $VT_VAULT, else the nearest ancestor holding .obsidian/ "
            "or vt.toml).",
            show_default=False,
        ),
    ] = None,
    vault_option: Annotated[
        Path | None,
        typer.Option(
            "--vault",
            help="The vault folder, as every command takes it (the same as the argument).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOption = False,
    as_json: JsonOption = False,
    signer_key: Annotated[
        Path | None,
        typer.Option(
            "--signer-key",
            help="Add the current reviewer ([review] actor, else git user.name) with this SSH "
            "public key (or the .pub beside this private key) to the allowed signers, so "
            "their signed ledger events verify. "
            "Example: vt init --signer-key ~/.ssh/id_ed25519.pub",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Make a vault ready for vt (idempotent).

    Writes vt.toml with the defaults commented out; adds .vt/ and the ledger's lock files
    to .gitignore; registers vt's property types in .obsidian/types.json; in a git
    repository, installs the pre-commit hook and the ledger merge driver; with
    --signer-key, allows the current reviewer's key to sign ledger events. Prints each
    change it makes, and "already set up" when there is none.

    Example:

        vt init ~/my-vault

        vt init --vault ~/my-vault --dry-run

        vt init --signer-key ~/.ssh/id_ed25519.pub
    """
    from vault_tools.integrations.init import init_vault

    reporter = Reporter(as_json)
    if vault is not None and vault_option is not None and vault != vault_option:
        raise UsageError(f"two vaults given: {vault} and --vault {vault_option}")
    result = init_vault(
        settings_for(vault or vault_option, new_vault=True, writes=True), dry_run, signer_key
    )
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(ExitCode.OK)
    for change in result.changes:
        reporter.text(would(change) if dry_run else change)
    for note in result.notes:
        reporter.text(note, "yellow")
    if not result.changes:
        reporter.text(f"{result.vault}: already set up")
    finish(ExitCode.OK)
