"""The figures of `vt stats` as lines: plain text for the terminal, and a Markdown section
(tables, and Mermaid charts where a chart reads better) for the Review Dashboard."""

from __future__ import annotations

from typing import Any

from vault_tools.findings import counted
from vault_tools.review.stats import GROUPS, TOO_FEW, Stats

GROUP_TITLES = {
    "run": "run",
    "model": "model",
    "prompt_version": "prompt version",
    "article": "source article",
    "section": "section",
}
OUTCOME_KEYS = ("accepted", "repaired", "rejected")
# how many days of decisions the terminal and the section list (--json gives every day)
DAYS_SHOWN = 7
# the days the section's chart of decisions per day covers
DAYS_CHARTED = 14
# the values of a grouping listed, those with the most claims first (--json lists all):
# a vault of many articles would otherwise print a screen per grouping
VALUES_SHOWN = 10


def top_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The VALUES_SHOWN rows with the most claims (ties by value), and how many are left."""
    ranked = sorted(rows, key=lambda r: (-r["claims"], r["value"]))
    return ranked[:VALUES_SHOWN], max(0, len(rows) - VALUES_SHOWN)


def _more(left: int) -> str:
    return f"and {left} more (vt stats --json lists every one)"


def duration(seconds: float | None) -> str:
    """`3 d 4 h`, `2 h 5 min`, `40 s`: the two largest units."""
    if seconds is None:
        return "n/a"
    whole = int(round(seconds))
    units = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        if whole >= size or (name == "s" and not parts):
            parts.append(f"{whole // size} {name}")
            whole %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


def figure(fig: dict[str, Any]) -> str:
    value = fig["value"]
    return fig["verdict"] if value is None else f"{value:.3f}"


def _recent_days(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    days = sorted({r["day"] for r in rows})[-DAYS_SHOWN:]
    return [r for r in rows if r["day"] in days]


def text_lines(stats: Stats) -> list[str]:
    """The terminal report."""
    pipe, review, assist = stats.pipeline, stats.review, stats.assist
    outcomes = ", ".join(f"{k} {v}" for k, v in pipe["outcomes"].items()) or "none"
    lines = [
        f"{counted(stats.events, 'event')}, {counted(stats.claims, 'claim')}: {outcomes}",
        "",
        "the pipeline (rates of the decided claims: accepted / repaired / rejected)",
    ]
    for group in GROUPS:
        lines.append(f"  by {GROUP_TITLES[group]}:")
        shown, left = top_rows(pipe["by"][group])
        for row in shown:
            rates = " / ".join(percent(row[f"{o}_rate"]) for o in OUTCOME_KEYS)
            still = f", {row['open']} open" if row["open"] else ""
            lines.append(f"    {row['value']}: {row['decided']} decided, {rates}{still}")
        if left:
            lines.append(f"    {_more(left)}")
    lines.append("  checklist items marked failed:")
    for outcome, failed in pipe["failed_checks"].items():
        checks = ", ".join(f"{k} {n}" for k, n in failed["checks"].items())
        lines.append(f"    {outcome} ({counted(failed['claims'], 'claim')}): {checks}")
    changed = pipe["changed_parts"]
    parts = ", ".join(f"{k} {n}" for k, n in changed["parts"].items())
    lines.append(
        f"  parts the repairs changed ({counted(changed['repairs'], 'repair')}, "
        f"{changed['without_v1']} without a V1 to compare): {parts}"
    )
    lines += ["", "the review", "  decisions per reviewer per day (the last days):"]
    for row in _recent_days(review["decisions_per_day"]):
        lines.append(f"    {row['day']} {row['reviewer']}: {row['decisions']}")
    wait = review["import_to_decision"]
    lines.append(
        f"  import to decision: median {duration(wait['median_seconds'])}, "
        f"90th percentile {duration(wait['p90_seconds'])} "
        f"({counted(wait['claims'], 'claim')} with an import time)"
    )
    agree = review["agreement"]
    lines.append(
        f"  agreement on {counted(agree['claims'], 'claim')} decided without seeing each "
        f"other (under {counted(agree['min_claims'], 'claim')}: {TOO_FEW}):"
    )
    for pair in agree["pairs"]:
        a, b = pair["reviewers"]
        kappa = pair["kappa"]
        lines.append(
            f"    {a} / {b}: Cohen's kappa {figure(kappa)} "
            f"({counted(kappa['claims'], 'claim')}, {pair['agreed']} alike)"
        )
    alpha = agree["alpha"]
    lines.append(
        f"    everyone: Krippendorff's alpha {figure(alpha)} "
        f"({counted(alpha['claims'], 'claim')}, {counted(alpha['reviewers'], 'reviewer')})"
    )
    lines += ["", "the review assist (notes that carried a code, then as decided)"]
    for row in assist["codes"]:
        lines.append(
            f"  {row['code']}: {counted(row['notes'], 'note')}, accepted {row['accepted']}, "
            f"repaired {row['repaired']}, rejected {row['rejected']}: "
            f"precision {percent(row['precision'])}"
        )
    lines.append(
        f"  missed: {counted(assist['missed'], 'repaired or rejected note')} "
        f"without a warning; {counted(assist['not_recorded'], 'decided claim')} record no codes"
    )
    return lines


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _label(value: object) -> str:
    # a Mermaid label in double quotes: a double quote inside cannot be escaped
    return '"' + str(value).replace('"', "'").replace("\n", " ") + '"'


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(_cell(v) for v in row) + " |" for row in rows),
    ]


def _bar(title: str, labels: list[str], values: list[int], axis: str) -> list[str]:
    top = max([*values, 1])
    return [
        "```mermaid",
        "xychart-beta",
        f"    title {_label(title)}",
        f"    x-axis [{', '.join(_label(x) for x in labels)}]",
        f"    y-axis {_label(axis)} 0 --> {top}",
        f"    bar [{', '.join(str(v) for v in values)}]",
        "```",
    ]


def stats_section(stats: Stats, heading: str = "##") -> list[str]:
    """The Markdown section of the Review Dashboard: Markdown lines, without line ends."""
    pipe, review, assist = stats.pipeline, stats.review, stats.assist
    out = [f"{heading} Quality numbers", ""]
    out.append(
        f"From the Decision Ledger: {counted(stats.events, 'event')}, "
        f"{counted(stats.claims, 'claim')} (up to seq {stats.head['seq']})."
    )
    out.append("")
    if pipe["outcomes"]:
        out += ["```mermaid", "pie title Claims by status"]
        out += [f"    {_label(k)} : {v}" for k, v in pipe["outcomes"].items()]
        out += ["```", ""]
    out += [f"{heading}# The pipeline", ""]
    for group in GROUPS:
        rows, left = top_rows(pipe["by"][group])
        out += [
            f"By {GROUP_TITLES[group]}"
            + (f" (the {len(rows)} with the most claims)" if left else "")
            + ":",
            "",
        ]
        out += _table(
            [GROUP_TITLES[group], "decided", "accepted", "repaired", "rejected", "open"],
            [
                [
                    r["value"],
                    r["decided"],
                    *(percent(r[f"{o}_rate"]) for o in OUTCOME_KEYS),
                    r["open"],
                ]  # fmt: skip
                for r in rows
            ],
        )
        out.append("")
    out += ["Checklist items marked failed:", ""]
    checks = list(next(iter(pipe["failed_checks"].values()))["checks"])
    out += _table(
        ["status", "claims", *checks],
        [
            [status, f["claims"], *(f["checks"][c] for c in checks)]
            for status, f in pipe["failed_checks"].items()
        ],
    )
    out.append("")
    changed = pipe["changed_parts"]
    out.append(
        f"Parts the repairs changed ({counted(changed['repairs'], 'repair')}, "
        f"{changed['without_v1']} without a V1 to compare):"
    )
    out.append("")
    out += _bar(
        "Parts the repairs changed",
        list(changed["parts"]),
        list(changed["parts"].values()),
        "repairs",
    )
    out += ["", f"{heading}# The review", ""]
    per_day = review["decisions_per_day"]
    totals: dict[str, int] = {}
    for row in per_day:
        totals[row["day"]] = totals.get(row["day"], 0) + row["decisions"]
    charted = sorted(totals)[-DAYS_CHARTED:]
    if charted:
        out += _bar("Decisions per day", charted, [totals[d] for d in charted], "decisions")
        out.append("")
    recent = _recent_days(per_day)
    out += _table(["day", "reviewer", "decisions"],
                  [[r["day"], r["reviewer"], r["decisions"]] for r in recent])  # fmt: skip
    out.append("")
    wait = review["import_to_decision"]
    out.append(
        f"Import to decision: median {duration(wait['median_seconds'])}, 90th percentile "
        f"{duration(wait['p90_seconds'])} ({counted(wait['claims'], 'claim')})."
    )
    out.append("")
    agree = review["agreement"]
    out.append(
        f"Agreement on claims decided without seeing each other (under "
        f"{counted(agree['min_claims'], 'claim')}: {TOO_FEW}):"
    )
    out.append("")
    agreement_rows: list[list[object]] = [
        [" / ".join(p["reviewers"]), "Cohen's kappa", figure(p["kappa"]), p["kappa"]["claims"]]
        for p in agree["pairs"]
    ]
    alpha = agree["alpha"]
    agreement_rows.append(["everyone", "Krippendorff's alpha", figure(alpha), alpha["claims"]])
    out += _table(["reviewers", "measure", "value", "claims"], agreement_rows)
    out += ["", f"{heading}# The review assist", ""]
    out += _table(
        ["code", "notes", "accepted", "repaired", "rejected", "precision"],
        [
            [
                r["code"],
                r["notes"],
                r["accepted"],
                r["repaired"],
                r["rejected"],
                percent(r["precision"]),
            ]  # fmt: skip
            for r in assist["codes"]
        ],
    )
    out.append("")
    out.append(
        f"Missed: {counted(assist['missed'], 'repaired or rejected note')} without a "
        f"warning; {counted(assist['not_recorded'], 'decided claim')} record no codes."
    )
    return out
