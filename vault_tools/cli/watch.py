"""`vt watch`: a thin command over integrations.watch; the reporter renders its events
(a rich live view, plain lines or a JSON stream)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from vault_tools.cli.common import VaultOption, finish, settings_for
from vault_tools.cli.output import RICH, LiveView, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from vault_tools.integrations.watch import WatchEvent


@app.command()
def watch(
    vault_argument: Annotated[
        Path | None,
        typer.Argument(metavar="VAULT", help="Vault folder (same as --vault).", show_default=False),
    ] = None,
    vault: VaultOption = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply",
            help="Also apply decisions (APPROVE, APPROVE_REPAIR, REJECT) as their "
            "notes are saved, as vt apply does. Off by default.",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Stream one JSON object per event on stdout (no live view)."),
    ] = False,
    debounce: Annotated[
        int,
        typer.Option(
            "--debounce",
            metavar="MS",
            min=0,
            max=60_000,
            help="Quiet period per note before it is handled, in milliseconds.",
        ),
    ] = 150,
) -> None:
    """Watch the vault beside Obsidian: re-validate notes as they are saved, preview repairs.

    A saved review note is validated; a note marked REQUEST_REPAIR whose drafts changed
    gets its Repair Preview (as vt preview does); with --apply, a decided note is applied
    (as vt apply does). vt never reacts to its own writes and never writes a note whose
    bytes would not change. Ctrl-C or SIGTERM stops it cleanly.

    Example:

        vt watch ~/my-vault

        vt watch --vault ~/my-vault --json

        vt watch --debounce 300 --apply
    """
    if (
        vault_argument is not None
        and vault is not None
        and vault_argument.resolve() != vault.resolve()
    ):
        raise UsageError(f"two different vaults given: {vault_argument} and --vault {vault}")
    settings = settings_for(vault_argument or vault, writes=True)

    from vault_tools.integrations.watch import Watcher

    reporter = Reporter(as_json)
    stop = threading.Event()
    live = LiveView(reporter, settings.vault) if reporter.mode == RICH else None

    def on_event(event: WatchEvent) -> None:  # called from the watcher's thread
        if live is not None:
            live.add(event)
            return
        try:
            reporter.watch_event(event)
        except (BrokenPipeError, ValueError):  # the reader went away: nothing left to do
            stop.set()

    watcher = Watcher(settings, on_event, debounce=debounce / 1000, apply=apply)
    _on_signals(stop, live)
    reporter.watch_starting(settings.vault)
    watcher.start()
    try:
        if live is not None:
            live.run(stop, watcher)
        else:
            stop.wait()  # no timeout: an idle watcher costs no CPU; a signal wakes it
    finally:
        watcher.stop()
        if live is not None:
            live.close()
    finish(ExitCode.OK)


def _on_signals(stop: threading.Event, live: LiveView | None) -> None:
    """Ctrl-C and SIGTERM end the watch loop; the note being handled is finished first."""
    owner = os.getpid()

    def handler(signum: int, frame: Any) -> None:
        if os.getpid() != owner:
            # a forked pool worker of the startup scan inherited this handler: the pool
            # ends its workers with SIGTERM, so behave as if it were never installed
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        stop.set()
        if live is not None:
            live.wake()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
