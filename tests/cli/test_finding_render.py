"""A finding on a terminal is rendered by one function, `rich_finding`: vt validate, vt
preview and vt watch's live view show a severity in the same colour (error red, warning
yellow), and no other module renders one of its own."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from vault_tools.cli.output import RICH, LiveView, Reporter
from vault_tools.cli.preview import _show_rich
from vault_tools.findings import error, warning
from vault_tools.integrations.watch import NoteStatus, ReviewQueue
from vault_tools.review.preview import PreviewResult

FINDINGS = [
    error("03_claims/a.md", 12, "frame-schema", "the frame is not valid"),
    warning("03_claims/a.md", None, "mapping-mismatch", "a term to look at"),
]
RED, YELLOW = "\x1b[31m", "\x1b[33m"
PACKAGE = Path(__file__).resolve().parents[2] / "vault_tools"


def _terminal() -> tuple[Reporter, io.StringIO]:
    out = io.StringIO()
    reporter = Reporter(out=out)
    reporter.mode = RICH
    reporter._console = Console(
        file=out, force_terminal=True, color_system="standard", width=200, highlight=False
    )
    return reporter, out


def _finding_lines(text: str) -> list[str]:
    codes = [finding.code for finding in FINDINGS]
    return [line for line in text.splitlines() if any(code in line for code in codes)]


def test_validate_preview_and_watch_colour_a_finding_alike() -> None:
    validate, out = _terminal()
    validate.findings(FINDINGS)
    shown_by_validate = _finding_lines(out.getvalue())

    preview, out = _terminal()
    _show_rich(preview, PreviewResult("03_claims/a.md", findings=list(FINDINGS)))
    shown_by_preview = _finding_lines(out.getvalue())

    watch, out = _terminal()
    view = LiveView(watch, Path("vault"))
    view.queue = ReviewQueue()
    view.queue.set(
        "03_claims/a.md", NoteStatus("A-1", "PENDING", "NEW", 1, 1, "", findings=tuple(FINDINGS))
    )
    watch.console.print(view._render())
    shown_by_watch = _finding_lines(out.getvalue())

    assert len(shown_by_validate) == 2
    assert RED + "error" in shown_by_validate[0]
    assert YELLOW + "warning" in shown_by_validate[1]
    assert shown_by_preview == shown_by_validate
    assert shown_by_watch == shown_by_validate


# a severity formatted into markup, or a colour chosen from a severity
_RENDERED = re.compile(r"\{[^{}]*\.severity[^{}]*\}.*\[/|\[/.*\{[^{}]*\.severity[^{}]*\}")
_COLOURED = re.compile(r"\"(red|yellow)\"\s+if\s+[\w.]*severity")


def test_no_module_renders_a_finding_of_its_own() -> None:
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() == "cli/output.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _RENDERED.search(line) or _COLOURED.search(line):
                copies.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert copies == [], "render findings with cli.reporter.rich_finding"
