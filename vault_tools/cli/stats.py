"""`vt stats`: what the decisions say about the pipeline, the review and the assist."""

from __future__ import annotations

from typing import Annotated

import typer

from vault_tools.cli.common import JsonOption, VaultOption, finish, settings_for
from vault_tools.cli.output import JSON, Reporter
from vault_tools.cli.root import app
from vault_tools.errors import ExitCode, UsageError, VtError


@app.command()
def stats(
    min_claims: Annotated[
        int,
        typer.Option(
            "--min-claims",
            help="Fewest claims behind an agreement figure; below it: too few to say.",
        ),
    ] = 20,
    markdown: Annotated[
        bool,
        typer.Option("--markdown", help="Print the Review Dashboard's Markdown section."),
    ] = False,
    vault: VaultOption = None,
    as_json: JsonOption = False,
) -> None:
    """Quality numbers from the Decision Ledger.

    The pipeline: accept / repair / reject rates by run, model, prompt version, source
    article and section; the checklist items failed; the parts repairs changed. The
    review: decisions per reviewer per day, import to decision, agreement between
    reviewers (Cohen's kappa, Krippendorff's alpha). The review assist: each code's
    precision as reviewers judged it, and what it missed.

    Example:

        vt stats --vault ~/my-vault

        vt stats --json > stats.json

        vt stats --markdown --min-claims 50
    """
    from vault_tools.review.stats import vault_stats
    from vault_tools.review.stats_report import stats_section, text_lines

    reporter = Reporter(as_json)
    try:
        if min_claims < 2:
            raise UsageError("--min-claims must be 2 or more (agreement needs two claims)")
        if markdown and as_json:
            raise UsageError("--markdown and --json: choose one")
        result = vault_stats(settings_for(vault), min_claims)
    except VtError as exc:
        reporter.fail(exc)
    if reporter.mode == JSON:
        reporter.json(result.to_json())
        finish(ExitCode.OK)
    for line in stats_section(result) if markdown else text_lines(result):
        reporter.text(line)
    finish(ExitCode.OK)
