"""`vt watch`: a thin command over integrations.watch — a rich live view, plain lines or JSON."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Annotated, Any

import typer

from vault_tools.cli import app
from vault_tools.cli.common import VaultOption, finish, settings_for
from vault_tools.errors import ExitCode, UsageError

LAST_EVENTS = 12  # events shown in the live view
LAST_FINDINGS = 10  # findings of the notes just saved shown in the live view
REFRESH = 0.25  # seconds between live-view refreshes at most (≤ 4 per second)


@app.command()
def watch(
    vault_argument: Annotated[
        Path | None,
        typer.Argument(
            metavar="[VAULT]", help="Vault folder (same as --vault).", show_default=False
        ),
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

        vt watch examples/vault

        vt watch --vault ~/vault --json | jq -c 'select(.errors > 0)'

        vt watch --debounce 300 --apply
    """
    if (
        vault_argument is not None
        and vault is not None
        and vault_argument.resolve() != vault.resolve()
    ):
        raise UsageError(f"two different vaults given: {vault_argument} and --vault {vault}")
    settings = settings_for(vault_argument or vault)

    from vault_tools.cli.report import Reporter
    from vault_tools.integrations.watch import Watcher

    reporter = Reporter(as_json)
    stop = threading.Event()
    view: _View = (
        _JsonView(stop)
        if reporter.mode == "json"
        else _LiveView(reporter.console, settings.vault)
        if reporter.mode == "rich"
        else _PlainView(stop)
    )
    watcher = Watcher(settings, view.add, debounce=debounce / 1000, apply=apply)
    _on_signals(stop, view)
    view.starting(settings.vault)
    watcher.start()
    try:
        view.run(stop, watcher)
    finally:
        watcher.stop()
        view.close()
    finish(ExitCode.OK)


def _on_signals(stop: threading.Event, view: _View) -> None:
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
        view.wake()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


class _View:
    """Where events go; `run` holds the main thread until `stop` is set."""

    def __init__(self) -> None:
        self.changed = threading.Event()

    def starting(self, vault: Path) -> None:
        pass

    def add(self, event: Any) -> None:  # called from the watcher's thread
        raise NotImplementedError

    def wake(self) -> None:
        self.changed.set()

    def run(self, stop: threading.Event, watcher: Any) -> None:
        # blocks without a timeout: an idle watcher costs no CPU; a signal wakes it
        stop.wait()

    def close(self) -> None:
        pass


class _JsonView(_View):
    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self.stop = stop

    def add(self, event: Any) -> None:
        try:
            sys.stdout.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):  # the reader went away: nothing left to do
            self.stop.set()


class _PlainView(_JsonView):
    """Piped without --json: one line per event, findings as `path:line: …` lines."""

    def starting(self, vault: Path) -> None:
        sys.stderr.write(f"vt watch: scanning {vault} …\n")

    def add(self, event: Any) -> None:
        try:
            sys.stdout.write(_plain(event))
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            self.stop.set()


def _plain(event: Any) -> str:
    time = event.ts[11:19]
    if event.event == "ready":
        return (
            f"{time} watching: {event.extra['notes']} notes, {event.extra['errors']} "
            f"errors, {event.extra['warnings']} warnings\n"
        )
    if event.event == "stopped":
        return f"{time} stopped\n"
    lines = [f"{time} {event.event:<9} {event.path or '-'}: {event.outcome()}\n"]
    lines += [f"  {finding.plain()}\n" for finding in event.findings]
    return "".join(lines)


class _LiveView(_View):
    """A calm terminal view: queue counts, the last events, the findings just made."""

    def __init__(self, console: Any, vault: Path) -> None:
        super().__init__()
        self.console = console
        self.vault = vault
        self.events: deque[Any] = deque(maxlen=LAST_EVENTS)
        self.findings: list[Any] = []
        self.lock = threading.Lock()
        self.watcher: Any = None

    def starting(self, vault: Path) -> None:
        self.console.print(f"[dim]vt watch: scanning {vault} …[/dim]")

    def add(self, event: Any) -> None:
        with self.lock:
            if event.event != "stopped":
                self.events.appendleft(event)
            if event.event in ("validated", "previewed", "error") and event.path:
                self.findings = list(event.findings)
        self.changed.set()

    def run(self, stop: threading.Event, watcher: Any) -> None:
        from rich.live import Live

        self.watcher = watcher
        with Live(
            self._render(), console=self.console, auto_refresh=False, transient=False
        ) as live:
            while not stop.is_set():
                self.changed.wait()
                self.changed.clear()
                live.update(self._render(), refresh=True)
                stop.wait(REFRESH)  # at most 4 refreshes a second, however busy

    def _render(self) -> Any:
        from rich.console import Group
        from rich.markup import escape
        from rich.table import Table

        counts = self.watcher.queue.counts() if self.watcher else {}
        header = f"[bold]vt watch[/bold] {escape(str(self.vault))}  [dim]Ctrl-C to stop[/dim]"
        queue = Table.grid(padding=(0, 2))
        queue.add_row(
            "[bold]review queue[/bold]",
            f"{counts.get('notes', 0)} notes",
            f"[red]{counts.get('invalid', 0)} invalid[/red]",
        )
        queue.add_row("by action", _counts(counts.get("by_action", {})), "")
        queue.add_row("by state", _counts(counts.get("by_state", {})), "")
        events = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
        for column in ("time", "event", "note", "outcome"):
            events.add_column(column, no_wrap=column != "outcome", overflow="fold")
        with self.lock:
            recent = list(self.events)
            findings = list(self.findings)
        for event in recent:
            colour = (
                "red"
                if event.errors or event.event == "error"
                else "yellow"
                if event.warnings
                else "green"
            )
            events.add_row(
                f"[dim]{event.ts[11:19]}[/dim]",
                event.event,
                escape(event.path or ""),
                f"[{colour}]{escape(event.outcome())}[/{colour}]",
            )
        parts: list[Any] = [header, queue, "", events]
        if findings:
            parts += ["", "[bold]findings of the note just saved[/bold]"]
            for finding in findings[:LAST_FINDINGS]:
                colour = "red" if finding.severity == "error" else "yellow"
                line = f"{finding.line:>5}" if finding.line else "    -"
                parts.append(
                    f"  [dim]{line}[/dim] [{colour}]{finding.severity:<7}[/{colour}] "
                    f"[cyan]{finding.code}[/cyan]  {escape(finding.message)}"
                )
            if len(findings) > LAST_FINDINGS:
                parts.append(f"  [dim]… and {len(findings) - LAST_FINDINGS} more[/dim]")
        return Group(*parts)

    def close(self) -> None:
        self.console.print("[dim]vt watch: stopped[/dim]")


def _counts(counts: dict[str, int]) -> str:
    return "  ".join(f"{key} {value}" for key, value in counts.items()) or "-"
