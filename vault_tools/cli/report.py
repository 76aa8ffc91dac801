"""Reporters: turn core results into rich text (terminal), plain lines (piped) or JSON.

Rich is imported only when output goes to a terminal, so piped runs and the
pre-commit hook start fast.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from vault_tools.findings import ERROR, Finding

_MARKUP_TAG = re.compile(r"(?<!\\)\[/?[a-z][a-z0-9 #_.-]*\]")

JSON = "json"
RICH = "rich"
PLAIN = "plain"


class Reporter:
    def __init__(self, as_json: bool = False, out: TextIO | None = None, err: TextIO | None = None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.mode = JSON if as_json else (RICH if _is_terminal(self.out) else PLAIN)
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.out, highlight=False)
        return self._console

    def json(self, payload: dict[str, Any]) -> None:
        self.out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")

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

    def error(self, message: str) -> None:
        self.err.write(message + "\n")

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
            colour = "red" if finding.severity == ERROR else "yellow"
            line = f"{finding.line:>5}" if finding.line else "    -"
            self.console.print(
                f"  [dim]{line}[/dim]  [{colour}]{finding.severity:<7}[/{colour}]"
                f" [cyan]{finding.code}[/cyan]  {escape(finding.message)}"
            )

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


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def strip_markup(text: str) -> str:
    """Drop rich's `[style]…[/style]` tags for plain output."""
    return _MARKUP_TAG.sub("", text).replace("\\[", "[")
