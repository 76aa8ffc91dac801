"""`vt demo`: the whole review cycle on a copy of the example vault."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from vault_tools.cli.common import JsonOption, finish
from vault_tools.cli.output import JSON, RICH, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode


@app.command()
def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the demo vault and print its path.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run the whole review cycle on a copy of the bundled example vault.

    validate → draft → edit a draft → preview → approve → apply → status →
    ledger verify → history, in a temporary folder, printing each step. Nothing outside
    that folder is touched. Exit 0 when every step did what it should.

    Example:

        vt demo

        vt demo --keep
    """
    from vault_tools.integrations.demo import run_demo

    reporter = Reporter(as_json)
    show = None if reporter.mode == JSON else (lambda step: _show_step(reporter, step))
    result = run_demo(keep=keep, on_step=show)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
    else:
        verdict = "every step did what it should" if result.ok else "a step failed"
        reporter.text("", "")
        reporter.text(f"Demo finished: {verdict}.", "bold green" if result.ok else "bold red")
        if result.kept is not None:
            reporter.text(f"The demo vault is kept at {result.kept}")
    finish(ExitCode.OK if result.ok else ExitCode.FINDINGS)


def _show_step(reporter: Reporter, step: Any) -> None:
    if reporter.mode == RICH:
        reporter.text("")
        reporter.text(f"{step.number}. {step.title}", "bold cyan")
        reporter.text(step.why, "italic")
        for line in step.lines:
            reporter.text(f"   {line}")
        reporter.text(
            "   ✓ ok" if step.ok else f"   ✗ {step.problem}", "green" if step.ok else "bold red"
        )
        return
    reporter.text("")
    reporter.text(f"== {step.number}. {step.title} ==")
    reporter.text(step.why)
    for line in step.lines:
        reporter.text(f"   {line}")
    reporter.text("   ok" if step.ok else f"   FAILED: {step.problem}")
