"""What every command shares: the --vault and --json options, settings, exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# every command takes these from here, with the options
from vault_tools.cli.running import finish, run_guarded, settings_for

__all__ = [
    "DryRunOption",
    "JsonOption",
    "VaultOption",
    "finish",
    "run_app",
    "settings_for",
    "would",
]

VaultOption = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        help="Vault folder (default: $VT_VAULT, else the nearest ancestor "
        "holding .obsidian/ or vt.toml).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Show what would happen; write nothing.")
]


# the past tense a setting-up change is reported in -> what a dry run says instead
_WOULD = {
    "wrote": "would write",
    "added": "would add",
    "registered": "would register",
    "installed": "would install",
    "updated": "would update",
    "moved": "would move",
    "removed": "would remove",
    "restored": "would restore",
    "left": "would leave",
    "git": "would run: git",
}


def would(change: str) -> str:
    """`wrote vt.toml` as a dry run says it: `would write vt.toml`. The core reports what
    it did in the past tense; a verb missing from the table still reads as a plan."""
    verb, _, rest = change.partition(" ")
    return f"{_WOULD[verb]} {rest}" if verb in _WOULD else f"would: {change}"


def run_app(app: typer.Typer) -> None:
    """Run the CLI through `run_guarded`. Usage errors are Typer's own (exit 2)."""
    run_guarded(app)
