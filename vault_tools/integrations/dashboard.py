"""`vt report`: the Review Dashboard, a vt-owned note at the vault root.

`Review Dashboard.md` is where a reviewer starts in Obsidian. First what needs them
(notes with git conflict markers, validation errors, approvals `vt apply` would refuse
and why, failed and stale previews, claims in CONFLICT, notes edited since apply, …),
each group with its count and at most `GROUP_LIMIT` links; a longer group is listed whole
in a sub-note of its own in the `Review Dashboard/` folder, which vt writes too. Then
progress: review notes by `review_action` × `review_state`, Mermaid charts of the queue
and of the ledger's decisions per day and per reviewer, the entities with most accepted
claims, and a small entity graph. Decided notes are counted, never listed one by one, so
the note stays small however large the vault.

Only the text between `<!-- vt:dashboard:start -->` and `<!-- vt:dashboard:end -->` is
vt's; the rest of the note is the user's and is kept byte for byte. The content is a pure
function of the vault and the ledger (no timestamps, everything sorted), so the note is
rewritten only when something it shows changed. The note has no `claim_id`, so no other
command takes it for a review note.

`integrations/dashboard_state.py` gathers the plain data (a `Dashboard`) and runs `vt
report`; here `needs` sorts it into groups, `render` and `subnotes` turn it into text
without reading anything (`SECTIONS` lists the sections in their order), and
`write_dashboard` / `write_subnotes` put the text into the notes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.findings import ERROR, Finding, counted
from vault_tools.integrations.charts import Edge, bars, flowchart, pie, spread
from vault_tools.integrations.importer import create_file
from vault_tools.notes import markdown, writer
from vault_tools.notes.conflicts import GIT_CONFLICT
from vault_tools.notes.vault import UNREAD_CODES
from vault_tools.review.status import SETTLE, UNMARKED, StatusReport
from vault_tools.review.verdict import REVERTED
from vault_tools.vocabulary import REVIEW_ACTIONS, REVIEW_STATES

DASHBOARD = "Review Dashboard.md"
SUBNOTE_DIR = "Review Dashboard"  # vt's sub-notes: one per group too long to list here
BLOCK = "dashboard"
TAG = "vt-dashboard"
INTRO = (
    "Maintained by `vt report` (and `vt watch`) from the review notes and the Decision "
    "Ledger; text outside the vt markers is yours and is kept as you wrote it."
)
GROUP_LIMIT = 20  # links per group on the dashboard; the sub-note lists them all
REASON_CHARS = 200  # a reason longer than this is cut on the dashboard (not in sub-notes)
TOP_ENTITIES = 25  # rows of "Accepted claims per entity"
GRAPH_ENTITIES = 12  # entities in the graph, and edges each may draw: Mermaid lays out
GRAPH_EDGES_EACH = 4  # a few dozen edges legibly, and a column of hundreds badly
DAYS = 30  # days in "decisions per day", ending on the latest decision's
REVIEWERS = 12  # bars in "decisions per reviewer"; the rest share one
CODES_SHOWN = 10  # finding codes counted in a finding group's "By code" line
UNREAD = "Unreadable files"


# ---------------------------------------------------------------------------
# what the dashboard shows: plain data


@dataclass(frozen=True, slots=True)
class NeedItem:
    """One line of a group: a file, and why it needs the reviewer."""

    path: str  # vault-relative
    label: str  # the link's text ("": the file's name)
    reason: str
    line: int | None = None


@dataclass(slots=True)
class NeedGroup:
    title: str  # also the name of its sub-note
    hint: str  # what the reviewer does about it
    items: list[NeedItem] = field(default_factory=list)
    by_code: bool = False  # a finding group: its counts per finding code are shown too


@dataclass(frozen=True, slots=True)
class EntityCount:
    entity: str  # note path without `.md` (as resolved, else as written)
    resolved: bool  # the target is a knowledge-base note
    claims: int  # accepted claims naming it


@dataclass(slots=True)
class Dashboard:
    needs: list[NeedGroup] = field(default_factory=list)  # in the order shown; empty ones too
    by_action_and_state: dict[str, dict[str, int]] = field(default_factory=dict)
    claims: dict[str, int] = field(default_factory=dict)  # Claim Store status → count
    decisions: list[tuple[str, str, str, int]] = field(default_factory=list)  # day, actor, …
    entities: list[EntityCount] = field(default_factory=list)  # most accepted claims first
    edges: list[Edge] = field(default_factory=list)
    findings: dict[str, int] = field(default_factory=dict)  # validate's, code → count
    unreadable: int = 0  # files and folders that could not be read
    quality: list[str] = field(default_factory=list)  # `vt stats`'s section, as lines

    def summary(self) -> dict[str, Any]:
        by_action: Counter[str] = Counter()
        by_state: Counter[str] = Counter()
        for action, states in self.by_action_and_state.items():
            for state, n in states.items():
                by_action[action] += n
                by_state[state] += n
        return {
            "notes": sum(by_action.values()),
            "by_action": dict(sorted(by_action.items())),
            "by_state": dict(sorted(by_state.items())),
            "claims": self.claims,
            "findings": dict(sorted(self.findings.items())),
            "unreadable": self.unreadable,
            "needs": {g.title: len(g.items) for g in self.needs if g.items},
            "accepted_claims": len({e.claim_id for e in self.edges}),
            "entities": len(self.entities),
            "edges": len(self.edges),
            "edges_shown": len(spread(self.edges, GRAPH_ENTITIES, GRAPH_EDGES_EACH)),
        }


# ---------------------------------------------------------------------------
# "Needs you": which notes need the reviewer, and why


def _status_items(entries: list[dict[str, Any]], reason: Callable[[dict], str]) -> list[NeedItem]:
    return [NeedItem(e["path"], e.get("claim_id") or "", reason(e)) for e in entries]


def _finding_items(findings: Iterable[Finding]) -> list[NeedItem]:
    return [NeedItem(f.path, "", f"{f.code}: {f.message}", f.line) for f in sorted(findings)]


def needs(
    report: StatusReport, findings: list[Finding], refused: list[NeedItem], ready: list[NeedItem]
) -> list[NeedGroup]:
    """The groups of "Needs you", most urgent first: a pure function of status's report,
    validate's findings and what apply would do with the decided notes."""
    errors = [f for f in findings if f.severity == ERROR]
    warnings = [f for f in findings if f.severity != ERROR]
    listed_apart = UNREAD_CODES | {GIT_CONFLICT}  # each has its own group
    heads = {c["claim_id"]: c for c in report.conflicts}
    return [
        NeedGroup(
            "Git conflict markers",
            "a merge left these notes with conflict markers; no decision is read from "
            "them until you resolve them",
            _finding_items(report.git_conflicts),
        ),
        NeedGroup(
            "Validation errors",
            "fix what `vt validate` reports; an approval of a note with errors is refused",
            _finding_items(f for f in errors if f.code not in listed_apart),
            by_code=True,
        ),
        NeedGroup(
            "Refused approvals",
            "`vt apply` refuses these decisions, for the reason given",
            sorted(refused, key=lambda i: i.path),
        ),
        NeedGroup(
            "Failed previews",
            "the note's Repair Preview says why; fix the V2 drafts, set REQUEST_REPAIR "
            "and run `vt preview`",
            _status_items(report.failed_previews, lambda e: e["review_action"]),
        ),
        NeedGroup(
            "Stale previews",
            "the drafts changed after `vt preview`; set REQUEST_REPAIR and preview again",
            _status_items(report.stale_previews, lambda e: e["review_action"]),
        ),
        NeedGroup(
            "Claims in CONFLICT",
            f"decided differently on two branches: {SETTLE}",
            [
                NeedItem(
                    c["note"],
                    c["claim_id"],
                    "heads " + ", ".join(f"{h['action']} by {h['actor']}" for h in c["heads"]),
                )
                for c in (heads[k] for k in sorted(heads))
            ],
        ),
        NeedGroup(
            "Edited since apply",
            "the note no longer says what the ledger recorded: decide again, or undo the edit",
            _status_items(report.edited_since_apply, lambda e: e["reason"]),
        ),
        NeedGroup(
            "Note and ledger disagree",
            "what `vt status` reports for these notes, with what to do",
            _status_items(
                [d for d in report.disagreements if d["kind"] in (UNMARKED, REVERTED)],
                lambda e: e["reason"],
            ),
        ),
        NeedGroup(
            "Unknown review_action",
            f"no command acts on these notes: set review_action to one of "
            f"{', '.join(REVIEW_ACTIONS)}",
            _status_items(report.unknown_actions, lambda e: f"review_action {e['review_action']}"),
        ),
        NeedGroup(
            UNREAD,
            "each may hide a review note nobody checked; see `vt validate`",
            _finding_items(f for f in findings if f.code in UNREAD_CODES),
        ),
        NeedGroup(
            "Review-assist warnings",
            "hints, not errors: check the claim against its source",
            _finding_items(warnings),
            by_code=True,
        ),
        NeedGroup(
            "Ready for vt apply",
            "decided and checked: `vt apply` records these",
            sorted(ready, key=lambda i: i.path),
        ),
    ]


# ---------------------------------------------------------------------------
# Markdown: each section a pure function of the Dashboard


# note text on the dashboard is shown literally: `markdown.text` (as `inline`), wikilinks
inline = markdown.text
wikilink = markdown.wikilink


def subnote_path(group: NeedGroup) -> str:
    return f"{SUBNOTE_DIR}/{group.title}.md"


def _in_table(link: str) -> str:
    """A wikilink inside a table cell: Obsidian reads `\\|` there as the alias's bar."""
    # a target Obsidian cannot link is escaped text already (`markdown.text`)
    return link.replace("|", "\\|") if link.startswith("[[") else link


def _item_line(item: NeedItem, cut: int | None = REASON_CHARS) -> str:
    where = f" line {item.line}" if item.line else ""
    reason = item.reason
    if cut is not None and len(reason) > cut:
        reason = reason[:cut] + "…"
    return f"- {wikilink(item.path, item.label or None)}{where}: {inline(reason)}"


def _group(group: NeedGroup) -> list[str]:
    hint = group.hint[:1].upper() + group.hint[1:]
    # the hint is vt's own Markdown (its `vt …` are code spans), never note text
    lines = [f"### {group.title} ({len(group.items)})", "", hint + ".", ""]
    if group.by_code:
        codes = Counter(i.reason.split(":", 1)[0] for i in group.items)
        ranked = sorted(codes.items(), key=lambda c: (-c[1], c[0]))
        shown = ", ".join(f"{code} {n}" for code, n in ranked[:CODES_SHOWN])
        rest = len(ranked) - CODES_SHOWN
        tail = f" and {counted(rest, 'more code')}" if rest > 0 else ""
        lines += [inline(f"By code: {shown}{tail}."), ""]
    lines += [_item_line(i) for i in group.items[:GROUP_LIMIT]]
    more = len(group.items) - GROUP_LIMIT
    if more > 0:
        lines.append(f"- … {more} more: {wikilink(subnote_path(group), f'all {len(group.items)}')}")
    return [*lines, ""]


def _needs(dash: Dashboard) -> list[str]:
    lines = ["## Needs you", ""]
    groups = [g for g in dash.needs if g.items]
    if not groups:
        return [*lines, "Nothing: every note validates and no decision waits.", ""]
    counts = "; ".join(f"{g.title}: {len(g.items)}" for g in groups)
    lines += [f"{counts}.", ""]
    for group in groups:
        lines += _group(group)
    return lines


def _table(by_action_and_state: Mapping[str, Mapping[str, int]]) -> list[str]:
    """review_action × review_state, the vocabulary's order first, then other values."""
    seen = {s for states in by_action_and_state.values() for s in states}
    states = [s for s in REVIEW_STATES if s in seen] + sorted(seen - set(REVIEW_STATES))
    actions = [a for a in REVIEW_ACTIONS if a in by_action_and_state]
    actions += sorted(set(by_action_and_state) - set(REVIEW_ACTIONS))
    head = ["review_action", *(inline(s) for s in states), "total"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    totals: Counter[str] = Counter()
    for action in actions:
        row = by_action_and_state[action]
        totals.update(row)
        cells = [str(row.get(s, 0)) for s in states]
        lines.append(f"| {inline(action)} | {' | '.join(cells)} | {sum(row.values())} |")
    cells = [str(totals[s]) for s in states]
    lines.append(f"| total | {' | '.join(cells)} | {sum(totals.values())} |")
    return [*lines, ""]


def _per_day(decisions: list[tuple[str, str, str, int]]) -> list[tuple[str, int]]:
    per_day: Counter[date] = Counter()
    for day, _actor, _action, n in decisions:
        try:
            per_day[date.fromisoformat(day)] += n
        except ValueError:  # the ledger's check allows no other ts; skip rather than fail
            continue
    if not per_day:
        return []
    last = max(per_day)
    first = max(min(per_day), last - timedelta(days=DAYS - 1))
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    return [(d.strftime("%m-%d"), per_day[d]) for d in days]


def _per_reviewer(decisions: list[tuple[str, str, str, int]]) -> list[tuple[str, int]]:
    per: Counter[str] = Counter()
    for _day, actor, _action, n in decisions:
        per[actor] += n
    ranked = sorted(per.items(), key=lambda a: (-a[1], a[0]))
    shown = ranked[:REVIEWERS]
    rest = sum(n for _a, n in ranked[REVIEWERS:])
    return [*shown, (f"{len(ranked) - REVIEWERS} others", rest)] if rest else shown


def _progress(dash: Dashboard) -> list[str]:
    summary = dash.summary()
    claims = ", ".join(f"{k} {v}" for k, v in dash.claims.items()) or "none yet"
    lines = [
        "## Progress",
        "",
        f"{counted(summary['notes'], 'review note')}; claims in the Decision Ledger: {claims}.",
        "",
    ]
    if not summary["notes"]:
        return [*lines, "No review notes.", ""]
    lines += [
        "### Review notes by review_action and review_state",
        "",
        *_table(dash.by_action_and_state),
    ]
    lines += pie("Review notes by review_action", summary["by_action"])
    if dash.claims:
        lines += pie("Claims by status in the Decision Ledger", dash.claims)
    per_day = _per_day(dash.decisions)
    if per_day:
        total = sum(n for *_rest, n in dash.decisions)
        lines += [f"{counted(total, 'decision')} in the ledger.", ""]
        lines += bars(f"Decisions per day (at most the last {DAYS})", "decisions", per_day)
        lines += bars("Decisions per reviewer", "decisions", _per_reviewer(dash.decisions))
    return lines


def _accepted(dash: Dashboard) -> list[str]:
    lines = ["## Accepted claims per entity", ""]
    if not dash.entities:
        return [*lines, "No accepted claims yet.", ""]
    lines += [
        "Each knowledge-base note lists its accepted claims in its `vt:claims` block.",
        "",
        "| entity | accepted claims |",
        "|---|---|",
    ]
    for e in dash.entities[:TOP_ENTITIES]:
        name = (
            _in_table(wikilink(e.entity))
            if e.resolved
            else f"{inline(e.entity)} (not in the knowledge base)"
        )
        lines.append(f"| {name} | {e.claims} |")
    rest = dash.entities[TOP_ENTITIES:]
    if rest:
        n = sum(e.claims for e in rest)
        lines += [
            "",
            f"… and {counted(len(rest), 'more entity')} ({n} claim uses); `vt entities` "
            "lists them.",
        ]
    return [*lines, ""]


def _graph(dash: Dashboard) -> list[str]:
    lines = ["## Entity graph of the accepted claims", ""]
    if not dash.edges:
        return [*lines, "No accepted claims yet.", ""]
    shown = spread(dash.edges, GRAPH_ENTITIES, GRAPH_EDGES_EACH)
    lines += flowchart(shown)
    if len(shown) < len(dash.edges):
        lines += [
            f"Showing {len(shown)} of {counted(len(dash.edges), 'edge')}: at most "
            f"{counted(GRAPH_EDGES_EACH, 'claim')} of each of the "
            f"{counted(GRAPH_ENTITIES, 'entity')} with the most accepted claims; "
            "`vt export` lists every accepted claim.",
            "",
        ]
    return lines


def _quality(dash: Dashboard) -> list[str]:
    return [*dash.quality, ""] if dash.quality else []


Section = Callable[[Dashboard], list[str]]
# the dashboard's sections in order; a new one is a function of the Dashboard (its data
# a field there, filled by `dashboard_state.py`) and a row here
SECTIONS: list[tuple[str, Section]] = [
    ("needs", _needs),
    ("progress", _progress),
    ("quality", _quality),
    ("entities", _accepted),
    ("graph", _graph),
]


def render(dash: Dashboard) -> str:
    """The dashboard block's content (LF endings; the writer adapts them to the note)."""
    lines: list[str] = []
    for _name, section in SECTIONS:
        lines += section(dash)
    return "\n".join(lines).rstrip("\n") + "\n"


def subnote(group: NeedGroup) -> str:
    """The block of a group's sub-note: every item of the group."""
    lines = [
        f"{counted(len(group.items), 'note')} in this group of the {wikilink(DASHBOARD)}: "
        f"{group.hint}.",
        "",
    ]
    # a sub-note is a list to work through, not bounded: each reason whole
    lines += [_item_line(i, cut=None) for i in group.items] or ["None now."]
    return "\n".join(lines) + "\n"


def subnotes(dash: Dashboard, existing: Iterable[str] = ()) -> dict[str, str]:
    """Sub-note path → block content: for each group longer than the dashboard shows,
    and each group whose sub-note exists already (so none is left saying what no longer
    holds)."""
    keep = set(existing)
    return {
        subnote_path(g): subnote(g)
        for g in dash.needs
        if len(g.items) > GROUP_LIMIT or subnote_path(g) in keep
    }


# ---------------------------------------------------------------------------
# the notes on disk


@dataclass(slots=True)
class ReportResult:
    path: str  # vault-relative
    changed: bool  # the note differs (or would differ) from what is on disk
    written: bool
    created: bool
    dry_run: bool
    content: str  # the block's content
    summary: dict[str, Any] = field(default_factory=dict)
    # sub-notes that differ (or would differ) from what is on disk, and those written
    subnotes_changed: list[str] = field(default_factory=list)
    subnotes_written: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changed": self.changed,
            "written": self.written,
            "created": self.created,
            "dry_run": self.dry_run,
            "subnotes_changed": self.subnotes_changed,
            "subnotes_written": self.subnotes_written,
            **self.summary,
        }


def initial_text(content: str, title: str = "Review Dashboard", intro: str = INTRO) -> str:
    """The whole note as first written: frontmatter, title, intro, then vt's block."""
    head = f"---\ntags: [{TAG}]\n---\n# {title}\n\n{intro}\n"
    return writer.set_block(head, BLOCK, content)


def write_dashboard(settings: Settings, content: str, dry_run: bool = False) -> ReportResult:
    """Put `content` into the dashboard's block, creating the note if needed.

    Raises RefusedError when the note changed on disk while vt rewrote it, or when its
    markers are broken (two start markers, a start without an end).
    """
    return _write_note(settings, DASHBOARD, initial_text(content), content, dry_run)


def _write_note(
    settings: Settings, relative: str, initial: str, content: str, dry_run: bool
) -> ReportResult:
    try:
        return _write(settings, relative, initial, content, dry_run)
    except VtError as exc:
        exc.path = relative  # every error here is about this note: name it as the user sees it
        raise


def _write(
    settings: Settings, relative: str, initial: str, content: str, dry_run: bool
) -> ReportResult:
    path = settings.vault / relative
    result = ReportResult(relative, False, False, False, dry_run, content)
    if not path.exists():
        result.changed = True
        if dry_run:
            return result
        if create_file(path, initial.encode("utf-8"), root=settings.vault):
            result.written = result.created = True
            return result
        # created by someone else meanwhile: update it like any existing note of vt's
    snapshot = writer.read_snapshot(path)
    new_text = writer.set_block(snapshot.text, BLOCK, content)
    result.changed = new_text != snapshot.text
    if result.changed and not dry_run:
        result.written = writer.write_if_changed(snapshot, new_text, root=settings.vault)
    return result


SUBNOTE_INTRO = "Written by `vt report` with the dashboard; text outside the vt markers is yours."


def write_subnotes(settings: Settings, dash: Dashboard, result: ReportResult) -> None:
    """Write the sub-notes of `dash` (see `subnotes`), noting them in `result`."""
    titles = {subnote_path(g): g.title for g in dash.needs}
    existing = [p for p in titles if (settings.vault / p).is_file()]
    for relative, content in subnotes(dash, existing).items():
        initial = initial_text(content, titles[relative], SUBNOTE_INTRO)
        done = _write_note(settings, relative, initial, content, result.dry_run)
        if done.changed:
            result.subnotes_changed.append(relative)
        if done.written:
            result.subnotes_written.append(relative)
