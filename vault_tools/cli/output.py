"""The one reporter: every command hands its core result (plain dataclasses) to a `Reporter`.

Three modes, chosen once per run: rich text on a terminal, `path:line: code: message`
lines when piped, JSON (through the `json` module) with `--json`. Messages and problems
go to stderr in every mode. Rich is imported only when output goes to a terminal, so
piped runs and the pre-commit hook start fast.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from json.encoder import encode_basestring as _json_string  # json.dumps's, ensure_ascii=False
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn, TextIO

from vault_tools.cli.printable import printable, printable_stream
from vault_tools.cli.running import finish
from vault_tools.errors import VtError
from vault_tools.findings import ERROR, WARNING, Finding, counted

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Group

    from vault_tools.checks.validate import Block
    from vault_tools.config import Settings
    from vault_tools.integrations.watch import ReviewQueue, Watcher, WatchEvent

LAST_EVENTS = 12  # events shown in vt watch's live view
PANEL_NOTES = 8  # notes with findings shown in the live view's panel
PANEL_FINDINGS = 3  # findings shown under each of them
REFRESH = 0.25  # seconds between live-view refreshes at most (≤ 4 per second)

_MARKUP_TAG = re.compile(r"(?<!\\)\[/?[a-z][a-z0-9 #_.-]*\]")

JSON = "json"
RICH = "rich"
PLAIN = "plain"


class Reporter:
    """Where a command's output goes: stdout for results, stderr for messages."""

    def __init__(self, as_json: bool = False, out: TextIO | None = None, err: TextIO | None = None):
        # every write of the reporter goes through `printable`: control characters of a
        # note or a ledger field are escaped whatever the mode (see cli/printable.py)
        self.out = printable_stream(out or sys.stdout)
        self.err = printable_stream(err or sys.stderr)
        self.mode = JSON if as_json else (RICH if _is_terminal(self.out) else PLAIN)
        self._console: Any = None

    @property
    def console(self) -> Any:
        """Rich's console on the stream itself (its own colours are terminal commands),
        with every text it is given made `printable` first (`_PrintableConsole`)."""
        if self._console is None:
            self._console = _printable_console(getattr(self.out, "raw", self.out))
        return self._console

    def json(self, payload: dict[str, Any]) -> None:
        """The command's one JSON object, indented."""
        self.out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")

    def json_streamed(self, payload: dict[str, Any]) -> None:
        """The same bytes as `json(payload)`, but a value given as an iterator (of what
        would be a list's items) is rendered and written item by item, never held whole
        (`vt apply --json`: an item per note)."""
        write = self.out.write
        for n, (key, value) in enumerate(payload.items()):
            write(("{" if n == 0 else ",") + "\n  " + _json_string(key) + ": ")
            if isinstance(value, Iterator):
                opened = False
                for item in value:
                    text = json.dumps(item, ensure_ascii=False, indent=2)
                    write(("[" if not opened else ",") + "\n    " + text.replace("\n", "\n    "))
                    opened = True
                write("\n  ]" if opened else "[]")
            else:
                write(json.dumps(value, ensure_ascii=False, indent=2).replace("\n", "\n  "))
        write("\n}\n" if payload else "{}\n")

    def json_line(self, payload: dict[str, Any]) -> None:
        """One JSON object on one line, flushed (`vt hook run`, each event of `vt watch`)."""
        self.out.write(json.dumps(payload, ensure_ascii=False) + "\n")
        self.out.flush()

    def data(self, data: bytes) -> None:
        """Bytes as they are, whatever the locale (`vt export`'s UTF-8, CSV's CRLF rows)."""
        self.out.flush()
        buffer = getattr(self.out, "buffer", None)
        if _is_terminal(self.out):  # what a terminal shows is printable; a file gets bytes
            self.out.write(data.decode("utf-8", "replace").replace("\r\n", "\n"))
            self.out.flush()
        elif buffer is not None:
            buffer.write(data)
            buffer.flush()
        else:
            self.out.write(data.decode("utf-8"))

    def text(self, message: str, style: str = "") -> None:
        """A line of human output (suppressed in JSON mode)."""
        if self.mode == JSON:
            return
        if self.mode == RICH:
            self.console.print(message, style=style or None, markup=False)
        else:
            self.out.write(message + "\n")

    def markup(self, message: str) -> None:
        """A line with rich markup on a terminal; the markup stripped when piped."""
        if self.mode == RICH:
            self.console.print(message)
        elif self.mode == PLAIN:
            self.out.write(strip_markup(message) + "\n")

    def summary(self, message: str, failed: bool, gap: bool = False) -> None:
        """A run's last line: bold on a terminal (after a blank line with `gap`); on
        stderr when piped, so that stdout holds only the findings' lines."""
        if self.mode == RICH:
            self.text(("\n" if gap else "") + message, "bold red" if failed else "bold green")
        else:
            self.error(message)

    def error(self, message: str) -> None:
        self.err.write(message + "\n")

    def fail(self, exc: VtError) -> NoReturn:
        """A VtError as `vt: path:line: message` and its exit code (as `run_app` does)."""
        self.error(f"vt: {exc}")
        finish(exc.exit_code)

    def findings(self, findings: list[Finding]) -> None:
        if self.mode == PLAIN:
            for finding in findings:
                self.out.write(finding.plain() + "\n")
        elif self.mode == RICH:
            self._rich_findings(findings)

    def plain_text(self, text: str) -> None:
        """Findings already rendered as piped lines (written only when piped)."""
        if self.mode == PLAIN:
            self.out.write(text)

    def _rich_findings(self, findings: list[Finding]) -> None:
        from rich.markup import escape

        current = None
        for finding in findings:
            if finding.path != current:
                current = finding.path
                self.console.print(f"\n[bold]{escape(finding.path)}[/bold]")
            self.console.print("  " + rich_finding(finding))

    def watch_starting(self, vault: Path) -> None:
        message = f"vt watch: scanning {vault} …"
        if self.mode == RICH:
            self.text(message, "dim")
        elif self.mode == PLAIN:
            self.error(message)

    def watch_event(self, event: WatchEvent) -> None:
        """One event of `vt watch` as it happens: a JSON line, or plain lines (findings as
        `path:line: …`). Raises BrokenPipeError (or ValueError) when the reader went away."""
        if self.mode == JSON:
            self.json_line(watch_json(event))
        else:
            self.out.write(_watch_lines(event))
            self.out.flush()

    @contextmanager
    def progress(self, description: str) -> Iterator[Callable[[int, int], None] | None]:
        """A progress callback on a terminal (for long runs); None when piped or JSON."""
        if self.mode != RICH:
            yield None
            return
        from rich.progress import Progress

        with Progress(console=self.console, transient=True) as bar:
            task = bar.add_task(description, total=None)

            def update(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield update


class FindingStream:
    """`vt validate`'s findings written as the run gives them, path by path (a
    `checks.validate.Sink`): pre-rendered lines when piped, rich text on a terminal, or
    the items of the JSON object's "findings"."""

    # The one JSON object is written in pieces: findings leave as they are found, so
    # memory stays flat (10k notes, 39k findings: 31 MiB, not the 91 MiB of one
    # json.dumps), and a run failing midway still ends its document. Each finding is
    # rendered once, straight from its tuple, by `json_item` (json.dumps with indent
    # runs the json module's pure-Python encoder: 4x the time of the plain run).
    BATCH = 512  # findings rendered before a write

    def __init__(self, reporter: Reporter):
        self.reporter = reporter
        self.any = False  # whether a finding was given
        self._opened = False
        self._written = False  # whether a JSON item is out
        self._pending: list[str] = []

    def block(self, block: Block) -> None:
        mode = self.reporter.mode
        if mode == PLAIN:
            self.reporter.plain_text(block.plain())
        elif mode == JSON:
            self._open()
            self._pending += json_items(block.rows())
            if len(self._pending) >= self.BATCH:
                self._write_pending()
        else:
            self.reporter.findings(block.findings())
        self.any = True

    def text(self, memo: BinaryIO) -> bool:
        if self.reporter.mode != PLAIN:
            return False
        while chunk := memo.read(1 << 20):
            self.reporter.plain_text(chunk.decode())
        return True

    def close(self, tail: dict[str, Any]) -> None:
        """End the JSON object with `tail`'s keys after the findings."""
        self._open()
        self._write_pending()
        rest = json.dumps(tail, ensure_ascii=False, indent=2)[1:]  # its "{" is the object's
        self.reporter.out.write(("\n  ]," if self._written else "],") + rest + "\n")

    def abort(self, exc: BaseException) -> None:
        """End a JSON object cut short by `exc` with its "error", so that stdout holds one
        valid JSON document whatever happens (nothing at all when no finding was out)."""
        if self._opened:
            message = (
                str(exc)
                if isinstance(exc, VtError)
                else f"{type(exc).__name__}: {exc}".removesuffix(": ")
            )
            self.close({"error": message})
            self.reporter.out.flush()

    def _open(self) -> None:
        """The JSON object's start, written with its first finding (or at the end), so
        that a run failing before any finding writes no partial object."""
        if not self._opened:
            self.reporter.out.write('{\n  "findings": [')
            self._opened = True

    def _write_pending(self) -> None:
        """The findings rendered so far, as items of "findings"."""
        if self._pending:
            self.reporter.out.write(("," if self._written else "") + ",".join(self._pending))
            self._written = True
            self._pending.clear()


# A finding as an item of "findings", byte for byte what json.dumps(..., indent=2,
# ensure_ascii=False) writes for `Finding.to_json()` at that depth: its strings through
# the same encoder function, its line through int.__repr__ as json does. A block's
# findings share their path (mostly), and severities and codes are few: each is encoded once.
_PATH, _LINE, _SEVERITY, _CODE, _MESSAGE = (f'      "{name}": ' for name in Finding._fields)
# (severity, code) -> their JSON strings with what comes before: a tuple, since no
# separator joined into one string can tell ("a\0", "b") from ("a", "\0b")
_NAMES: dict[tuple[str, str], str] = {}


def json_items(rows: Iterable[tuple[Any, ...]]) -> list[str]:
    """Findings of one path (`Finding`s or their plain tuples) as items of "findings"."""
    items: list[str] = []
    head = last = None
    names = _NAMES
    for path, line, severity, code, message in rows:
        if path != last:
            head, last = f"\n    {{\n{_PATH}{_json_string(path)},\n{_LINE}", path
        kind = names.get((severity, code))
        if kind is None:
            kind = names[severity, code] = (
                f",\n{_SEVERITY}{_json_string(severity)},\n{_CODE}{_json_string(code)},\n"
            )
        items.append(
            f"{head}{'null' if line is None else int.__repr__(line)}{kind}"
            f"{_MESSAGE}{_json_string(message)}\n    }}"
        )
    return items


# -- renderings shared by several commands ----------------------------------------------


SEVERITY_COLOURS = {ERROR: "red", WARNING: "yellow"}


def rich_finding(finding: Finding) -> str:
    """One finding as a rich markup line: line number, severity, code, message. The one
    rendering of a finding on a terminal (validate, preview, the watch's live view), so
    that a severity has one colour everywhere."""
    from rich.markup import escape

    colour = SEVERITY_COLOURS.get(finding.severity, "red")
    line = f"{finding.line:>5}" if finding.line else "    -"
    return (
        f"[dim]{line}[/dim]  [{colour}]{finding.severity:<7}[/{colour}]"
        f" [cyan]{finding.code}[/cyan]  {escape(finding.message)}"
    )


def show_torn(reporter: Reporter, settings: Settings, torn: Any) -> None:
    """A torn last line the run moved aside (ledger.TornInfo), said on stderr."""
    if torn is not None:
        reporter.error(
            f"vt: {settings.ledger}: " + torn.message().replace(f"{settings.vault}/", "")
        )


def show_refresh(reporter: Reporter, refreshed: Any) -> None:
    """What the Claim Store refresh did (store.RefreshResult)."""
    written = list(refreshed.kb_notes_written)
    reporter.text(
        f"claim store: {counted(refreshed.catch_up.new_events, 'new event')} projected; "
        f"{counted(len(written), 'knowledge-base note')} updated",
        "dim",
    )
    for problem in getattr(refreshed, "kb_problems", []):
        reporter.error(f"vt: {problem}")


# -- vt watch ------------------------------------------------------------------------------


def watch_json(event: WatchEvent) -> dict[str, Any]:
    """A watch event as its line of `vt watch --json` (docs/json-output.md)."""
    payload: dict[str, Any] = {
        "ts": event.ts,
        "event": event.event,
        "path": event.path,
        "claim_id": event.claim_id,
        "findings": [f.to_json() for f in event.findings],
        "state": event.state,
        "review_action": event.review_action,
        "errors": event.errors,
        "warnings": event.warnings,
    }
    if event.message:
        payload["message"] = event.message
    payload.update(event.extra)
    return payload


def watch_outcome(event: WatchEvent) -> str:
    """A few words for a human: what happened to the note."""
    if event.message:
        return event.message
    if event.event == "ready":
        extra = event.extra
        return (
            f"{counted(extra.get('notes', 0), 'note')}, "
            f"{counted(extra.get('errors', 0), 'error')}, "
            f"{counted(extra.get('warnings', 0), 'warning')}"
        )
    if event.event == "previewed":
        written = "written" if event.extra.get("written") else "not written"
        return f"{event.state or 'no preview'}, {written}"
    if event.event == "validated" and event.findings:
        return f"{counted(event.errors, 'error')}, {counted(event.warnings, 'warning')}"
    return "valid" if event.event == "validated" else event.event


def _watch_lines(event: WatchEvent) -> str:
    time = event.ts[11:19]
    if event.event == "ready":
        return (
            f"{time} watching: {counted(event.extra['notes'], 'note')}, "
            f"{counted(event.extra['errors'], 'error')}, "
            f"{counted(event.extra['warnings'], 'warning')}\n"
        )
    if event.event == "stopped":
        return f"{time} stopped\n"
    lines = [f"{time} {event.event:<9} {event.path or '-'}: {watch_outcome(event)}\n"]
    lines += [f"  {finding.plain()}\n" for finding in event.findings]
    return "".join(lines)


class LiveView:
    """`vt watch` on a terminal: queue counts, the last events, and a panel of the notes
    that still have findings (kept by the watcher's queue: a note leaves it when a save
    fixes it, whatever was saved after it)."""

    def __init__(self, reporter: Reporter, vault: Path) -> None:
        self.reporter = reporter
        self.vault = vault
        self.events: deque[WatchEvent] = deque(maxlen=LAST_EVENTS)
        self.lock = threading.Lock()
        self.changed = threading.Event()
        self.queue: ReviewQueue | None = None

    def add(self, event: WatchEvent) -> None:  # called from the watcher's thread
        with self.lock:
            if event.event != "stopped":
                self.events.appendleft(event)
        self.changed.set()

    def wake(self) -> None:
        self.changed.set()

    def run(self, stop: threading.Event, watcher: Watcher) -> None:
        """Hold the main thread, redrawing on change, until `stop` is set."""
        from rich.live import Live

        self.queue = watcher.queue
        with Live(
            self._render(), console=self.reporter.console, auto_refresh=False, transient=False
        ) as live:
            while not stop.is_set():
                self.changed.wait()  # no timeout: an idle watcher costs no CPU
                self.changed.clear()
                live.update(self._render(), refresh=True)
                stop.wait(REFRESH)  # at most 4 refreshes a second, however busy

    def close(self) -> None:
        self.reporter.text("vt watch: stopped", "dim")

    def _render(self) -> Group:
        from rich.console import Group
        from rich.markup import escape

        header = f"[bold]vt watch[/bold] {escape(str(self.vault))}  [dim]Ctrl-C to stop[/dim]"
        with self.lock:
            recent = list(self.events)
        parts: list[Any] = [header, self._queue(), "", _events_table(recent), ""]
        return Group(*parts, *self._flagged())

    def _flagged(self) -> list[str]:
        """The panel: the notes that still have findings, each with its first ones."""
        from rich.markup import escape

        total, first = self.queue.with_findings(PANEL_NOTES) if self.queue else (0, [])
        if not total:
            return ["[green]no note has findings[/green]"]
        parts = [f"[bold]notes with findings[/bold]  {counted(total, 'note')}"]
        for path, status in first:
            parts.append(
                f"[bold]{escape(path)}[/bold]  [dim]{counted(status.errors, 'error')}, "
                f"{counted(status.warnings, 'warning')}[/dim]"
            )
            parts += ["  " + rich_finding(f) for f in status.findings[:PANEL_FINDINGS]]
            if len(status.findings) > PANEL_FINDINGS:
                parts.append(f"  [dim]… and {len(status.findings) - PANEL_FINDINGS} more[/dim]")
        if total > len(first):
            parts.append(f"[dim]… and {counted(total - len(first), 'more note')}[/dim]")
        return parts

    def _queue(self) -> Any:
        from rich.table import Table

        counts = self.queue.counts() if self.queue else {}
        queue = Table.grid(padding=(0, 2))
        queue.add_row(
            "[bold]review queue[/bold]",
            counted(counts.get("notes", 0), "note"),
            f"[red]{counts.get('invalid', 0)} invalid[/red]",
        )
        queue.add_row("by action", _spaced(counts.get("by_action", {})), "")
        queue.add_row("by state", _spaced(counts.get("by_state", {})), "")
        return queue


def _events_table(recent: list[WatchEvent]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    events = Table(box=None, padding=(0, 1), show_header=True, header_style="bold")
    for column in ("time", "event", "note", "outcome"):
        events.add_column(column, no_wrap=column != "outcome", overflow="fold")
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
            f"[{colour}]{escape(watch_outcome(event))}[/{colour}]",
        )
    return events


def _spaced(counts: dict[str, int]) -> str:
    return "  ".join(f"{key} {value}" for key, value in counts.items()) or "-"


def _printable_console(stream: TextIO) -> Any:
    """A rich Console on `stream` that makes every text it renders `printable`: every
    string it prints, markup or not, and every table cell passes through `render_str`;
    `Text` built by hand is made printable where it is built."""
    from rich.console import Console

    class _PrintableConsole(Console):
        def render_str(self, text: str, *args: Any, **kwargs: Any) -> Any:
            return super().render_str(printable(text), *args, **kwargs)

    return _PrintableConsole(file=stream, highlight=False)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def strip_markup(text: str) -> str:
    """Drop rich's `[style]…[/style]` tags for plain output."""
    return _MARKUP_TAG.sub("", text).replace("\\[", "[")
