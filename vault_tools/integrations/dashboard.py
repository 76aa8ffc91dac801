"""`vt report`: the Review Dashboard, a vt-owned note at the vault root.

`Review Dashboard.md` shows inside Obsidian what `vt status`, `vt validate` and the Claim
Store know: the review queue by `review_action` and `review_state` (wikilinks to the
notes), the validation errors and review-assist warnings grouped by code, the accepted
claims per knowledge-base entity, and a Mermaid diagram of the accepted claims' entity
graph. Only the text between `<!-- vt:dashboard:start -->` and `<!-- vt:dashboard:end -->`
is vt's; the rest of the note is the user's and is kept byte for byte.

The content is a pure function of the vault and the ledger (no timestamps, everything
sorted), so the note is rewritten only when something it shows changed: Obsidian and
`vt watch` see no modification otherwise. The note has no `claim_id`, so no other command
takes it for a review note.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from vault_tools.config import Settings
from vault_tools.errors import VtError
from vault_tools.findings import CODES, ERROR, Finding, counted
from vault_tools.integrations.importer import create_file
from vault_tools.notes import frontmatter, markdown, writer
from vault_tools.notes import kb as kbmod
from vault_tools.notes.facts import surveyed
from vault_tools.notes.note import decode
from vault_tools.notes.vault import UNREAD_CODES, markdown_files, review_note_bytes
from vault_tools.review.fingerprint import recorded_preview_hash
from vault_tools.review.status import NoteInfo, info_of
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import (
    APPROVE_REPAIR,
    REQUEST_REPAIR,
    review_action,
    review_state,
)

Progress = Callable[[int, int], None]

DASHBOARD = "Review Dashboard.md"
BLOCK = "dashboard"
TAG = "vt-dashboard"
INTRO = (
    "Maintained by `vt report` (and `vt watch`) from the review notes and the Decision "
    "Ledger; text outside the vt markers is yours and is kept as you wrote it."
)
EDGE_LIMIT = 200  # Mermaid diagrams beyond a few hundred edges are unreadable (and slow)
GROUP_LIMIT = 500  # notes listed per queue group; the rest are counted
FINDING_LIMIT = 200  # findings listed per code: a large vault's would make a huge note


# ---------------------------------------------------------------------------
# what the dashboard shows


@dataclass(frozen=True, slots=True)
class QueueItem:
    path: str  # vault-relative
    claim_id: str
    action: str  # review_action (PENDING when unset)
    state: str  # review_state (NEW when unset)
    stale_preview: bool  # the drafts changed after `vt preview`


@dataclass(frozen=True, slots=True)
class Edge:
    """One accepted claim → entity edge, as the Claim Store holds it."""

    claim_id: str
    note: str  # the claim's review note, vault-relative
    entity_key: str  # normalised target: what two spellings of one entity share
    entity: str  # the entity's note path (resolved when in the knowledge base), no `.md`
    label: str  # the surface label


@dataclass(slots=True)
class EntityClaims:
    entity: str  # note path without `.md` (as resolved, else as written)
    resolved: bool  # the target is a knowledge-base note
    claims: list[tuple[str, str]] = field(default_factory=list)  # (claim_id, note), sorted


@dataclass(slots=True)
class Dashboard:
    notes: list[QueueItem] = field(default_factory=list)  # review notes, sorted by path
    claims: dict[str, int] = field(default_factory=dict)  # Claim Store status → count
    conflicts: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # validate's, sorted
    entities: list[EntityClaims] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        accepted = {cid for e in self.entities for cid, _ in e.claims}
        return {
            "notes": len(self.notes),
            "by_action": _counts(i.action for i in self.notes),
            "by_state": _counts(i.state for i in self.notes),
            "claims": self.claims,
            "findings": _counts(f.code for f in self.findings),
            # listed among the findings; each may be a review note nobody checked
            "unreadable": sum(f.code in UNREAD_CODES for f in self.findings),
            "accepted_claims": len(accepted),
            "entities": len(self.entities),
            "edges": len(self.edges),
            "edges_shown": min(len(self.edges), EDGE_LIMIT),
        }


def _counts(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return dict(sorted(counts.items()))


def collect(settings: Settings, store: ClaimStore, progress: Progress | None = None) -> Dashboard:
    """Everything the dashboard shows; `store` must be caught up by the caller."""
    from vault_tools.checks.validate import validate

    files = markdown_files(settings.vault)
    inside = [f.relative for f in files if not f.escapes]
    # each note parsed only when it changed since the last survey (notes/facts.py)
    found = surveyed(settings, inside, QUEUE_FACTS, (_queue_fact, _no_fact))
    dash = Dashboard(notes=[QueueItem(*fact) for _, fact in found if fact is not None])
    dash.claims = store.status_counts()
    dash.conflicts = store.conflicts()
    dash.findings = validate(settings, progress=progress).findings
    kb = kbmod.KnowledgeBase(files, settings.kb_dir)
    dash.edges = _edges(store, kb)
    dash.entities = _entities(dash.edges, kb)
    return dash


QUEUE_FACTS = "queue"  # the kind of fact kept


def _queue_fact(relative: str, raw: bytes) -> tuple | None:
    item = _queue_of(relative, raw)
    return None if item is None else tuple(getattr(item, name) for name in QueueItem.__slots__)


def _no_fact(relative: str, exc: OSError) -> None:
    return None  # unreadable: `vt validate`'s findings, which the dashboard lists, say why


def _prop(properties: dict[str, Any], key: str, default: str) -> str:
    value = properties.get(key)
    return default if value is None or value == "" else str(value)


def queue_item(settings: Settings, relative: str) -> QueueItem | None:
    """One vault file's place in the review queue, or None when it is not a review note.

    Only the frontmatter is parsed (a whole vault is read on every refresh); the body
    only for a repair note that records a preview hash, to tell whether it went stale.
    """
    raw = review_note_bytes(settings.vault, relative, settings.max_note_bytes)
    return None if raw is None else _queue_of(relative, raw)


def _queue_of(relative: str, raw: bytes) -> QueueItem | None:
    """`queue_item` of a file's bytes."""
    if b"claim_id" not in raw:
        return None
    text, _problem = decode(raw, relative)
    if text is None:
        return None
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    properties = frontmatter.read(lines, relative).properties
    if "claim_id" not in properties:
        return None
    action = review_action(properties)
    stale = False
    if action in (REQUEST_REPAIR, APPROVE_REPAIR) and recorded_preview_hash(properties):
        info = info_of(relative, raw)
        stale = isinstance(info, NoteInfo) and info.stale_preview
    return QueueItem(
        relative,
        _prop(properties, "claim_id", ""),
        action,
        review_state(properties),
        stale,
    )


def _edges(store: ClaimStore, kb: kbmod.KnowledgeBase) -> list[Edge]:
    edges = []
    for target, claim_id, _role, label, note in store.graph_rows():
        resolution = kb.resolve(target)
        if resolution.status == kbmod.OK and resolution.path is not None:
            entity = markdown.strip_md(resolution.path)
        else:
            entity = markdown.strip_md(kbmod.link_target(target))
        key = kbmod.normalise(kbmod.link_target(target))
        edges.append(Edge(claim_id, note, key, entity, label))
    edges.sort(key=lambda e: (e.entity_key, e.claim_id, e.label))
    return edges


def _entities(edges: list[Edge], kb: kbmod.KnowledgeBase) -> list[EntityClaims]:
    """Accepted claims per entity: most used first, then by path."""
    grouped: dict[str, EntityClaims] = {}
    for edge in edges:
        entry = grouped.get(edge.entity_key)
        if entry is None:
            resolved = kb.resolve(edge.entity).status == kbmod.OK
            entry = grouped[edge.entity_key] = EntityClaims(edge.entity, resolved)
        if (edge.claim_id, edge.note) not in entry.claims:
            entry.claims.append((edge.claim_id, edge.note))
    for entry in grouped.values():
        entry.claims.sort()
    return sorted(grouped.values(), key=lambda e: (-len(e.claims), e.entity.casefold(), e.entity))


# ---------------------------------------------------------------------------
# Markdown


_SPACE = re.compile(r"\s+")
# note text on the dashboard is shown literally: `markdown.text` (as `inline`), wikilinks
inline = markdown.text
wikilink = markdown.wikilink


def _queue_group(title: str, infos: list[QueueItem]) -> list[str]:
    lines = [f"#### {inline(title)} ({len(infos)})", ""]
    for info in infos[:GROUP_LIMIT]:
        lines.append(f"- {wikilink(info.path, info.claim_id or None)}")
    if len(infos) > GROUP_LIMIT:
        lines.append(f"- … and {len(infos) - GROUP_LIMIT} more (see `vt status`)")
    return [*lines, ""]


def _queue(dash: Dashboard) -> list[str]:
    claims = ", ".join(f"{k} {v}" for k, v in dash.claims.items()) or "none yet"
    lines = [
        "## Review queue",
        "",
        f"{counted(len(dash.notes), 'review note')}; claims in the Decision Ledger: {claims}.",
        "",
    ]
    for heading, key in (("By review_action", "action"), ("By review_state", "state")):
        lines += [f"### {heading}", ""]
        groups: dict[str, list[QueueItem]] = defaultdict(list)
        for info in dash.notes:
            groups[getattr(info, key)].append(info)
        if not groups:
            lines += ["No review notes.", ""]
        for name in sorted(groups):
            lines += _queue_group(name, groups[name])
    stale = [i for i in dash.notes if i.stale_preview]
    if stale or dash.conflicts:
        lines += ["### Needs attention", ""]
        for info in stale:
            lines.append(
                f"- {wikilink(info.path, info.claim_id or None)}: the drafts changed "
                "after `vt preview`; set REQUEST_REPAIR and preview again"
            )
        notes = {i.claim_id: i.path for i in dash.notes}
        for claim_id in dash.conflicts:
            link = wikilink(notes[claim_id], claim_id) if claim_id in notes else inline(claim_id)
            lines.append(f"- {link}: in CONFLICT (decided on two branches); decide again")
        lines.append("")
    return lines


def _finding_groups(title: str, findings: list[Finding], empty: str) -> list[str]:
    lines = [f"## {title}", ""]
    if not findings:
        return [*lines, empty, ""]
    groups: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        groups[finding.code].append(finding)
    for code in sorted(groups):
        meaning = CODES.get(code, "")
        lines += [f"### {code} ({len(groups[code])})", ""]
        if meaning:
            lines += [inline(meaning[:1].upper() + meaning[1:]) + ".", ""]
        for f in groups[code][:FINDING_LIMIT]:
            where = f" line {f.line}" if f.line else ""
            lines.append(f"- {wikilink(f.path)}{where}: {inline(f.message)}")
        if len(groups[code]) > FINDING_LIMIT:
            lines.append(f"- … and {len(groups[code]) - FINDING_LIMIT} more (see `vt validate`)")
        lines.append("")
    return lines


def _accepted(dash: Dashboard) -> list[str]:
    lines = ["## Accepted claims per entity", ""]
    if not dash.entities:
        return [*lines, "No accepted claims yet.", ""]
    for entry in dash.entities:
        name = (
            wikilink(entry.entity)
            if entry.resolved
            else f"{inline(entry.entity)} (not in the knowledge base)"
        )
        claims = ", ".join(wikilink(note, cid) for cid, note in entry.claims)
        lines.append(f"- {name} ({len(entry.claims)}): {claims}")
    return [*lines, ""]


def render(dash: Dashboard) -> str:
    """The dashboard block's content (LF endings; the writer adapts them to the note)."""
    errors = [f for f in dash.findings if f.severity == ERROR]
    # warnings: the review-assist ones, and any other a future check may add
    warnings = [f for f in dash.findings if f.severity != ERROR]
    lines = _queue(dash)
    lines += _finding_groups("Validation errors", errors, "None: every review note validates.")
    lines += _finding_groups("Review assist", warnings, "No review-assist warnings.")
    lines += _accepted(dash)
    lines += ["## Entity graph of the accepted claims", "", *mermaid(dash.edges)]
    return "\n".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------
# Mermaid


_ID_CHARS = re.compile(r"[^0-9A-Za-z]+")
# Mermaid entity codes: `#` first, since the other replacements introduce it
_LABEL_CODES = (
    ("#", "#35;"),
    ('"', "#quot;"),
    ("<", "#lt;"),
    (">", "#gt;"),
    ("`", "#96;"),
    ("|", "#124;"),
)


def mermaid_label(text: str) -> str:
    """A quoted Mermaid label that shows `text` literally (on one line)."""
    text = _SPACE.sub(" ", text).strip()
    for char, code in _LABEL_CODES:
        text = text.replace(char, code)
    return f'"{text}"'


class _NodeIds:
    """Stable, collision-free Mermaid node ids (ASCII letters, digits, `_`) per name."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.ids: dict[str, str] = {}
        self.used: set[str] = set()

    def get(self, name: str, readable: str | None = None) -> str:
        """The id of `name`, made from `readable` (default: the name itself)."""
        found = self.ids.get(name)
        if found is None:
            text = _ID_CHARS.sub("_", name if readable is None else readable).strip("_")
            base = f"{self.prefix}_{text or 'node'}"  # e.g. a name all in CJK
            found, n = base, 1
            while found in self.used:
                n += 1
                found = f"{base}_{n}"
            self.used.add(found)
            self.ids[name] = found
        return found


def mermaid(edges: list[Edge], limit: int = EDGE_LIMIT) -> list[str]:
    """Markdown lines: a ```mermaid flowchart of claim → entity edges (at most `limit`)."""
    if not edges:
        return ["No accepted claims yet.", ""]
    # when cut, keep the most used entities: the graph's hubs
    uses: dict[str, int] = defaultdict(int)
    for e in edges:
        uses[e.entity_key] += 1
    shown = sorted(edges, key=lambda e: (-uses[e.entity_key], e.entity_key, e.claim_id, e.label))[
        :limit
    ]
    claims, entities = _NodeIds("c"), _NodeIds("e")
    # ids are given in sorted order, so they do not depend on the edges' order
    for claim_id in sorted({e.claim_id for e in shown}):
        claims.get(claim_id)
    for key in sorted({e.entity_key for e in shown}):
        entities.get(key, key.rsplit("/", 1)[-1])
    names = {e.entity_key: e.entity.rsplit("/", 1)[-1] for e in shown}
    lines = ["```mermaid", "flowchart LR"]
    lines += [f"  {claims.ids[c]}[{mermaid_label(c)}]" for c in sorted(claims.ids)]
    node = entities.ids
    lines += [f"  {node[k]}[{mermaid_label(names[k])}]" for k in sorted(node)]
    for edge in shown:
        arrow = f"-->|{mermaid_label(edge.label)}|" if edge.label.strip() else "-->"
        lines.append(f"  {claims.ids[edge.claim_id]} {arrow} {node[edge.entity_key]}")
    # Obsidian opens the note named by a node's text when the node has this class
    nodes = [*sorted(claims.ids.values()), *sorted(entities.ids.values())]
    lines += [f"  class {','.join(nodes)} internal-link", "```", ""]
    if len(edges) > limit:
        lines += [
            f"Showing {limit} of {counted(len(edges), 'edge')} (the most used entities first); "
            "`vt export` lists every accepted claim.",
            "",
        ]
    return lines


# ---------------------------------------------------------------------------
# the note on disk


@dataclass(slots=True)
class ReportResult:
    path: str  # vault-relative
    changed: bool  # the note differs (or would differ) from what is on disk
    written: bool
    created: bool
    dry_run: bool
    content: str  # the block's content
    summary: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "changed": self.changed,
            "written": self.written,
            "created": self.created,
            "dry_run": self.dry_run,
            **self.summary,
        }


def initial_text(content: str) -> str:
    """The whole note as first written: frontmatter, title, intro, then vt's block."""
    head = f"---\ntags: [{TAG}]\n---\n# Review Dashboard\n\n{INTRO}\n"
    return writer.set_block(head, BLOCK, content)


def write_dashboard(settings: Settings, content: str, dry_run: bool = False) -> ReportResult:
    """Put `content` into the dashboard's block, creating the note if needed.

    Raises RefusedError when the note changed on disk while vt rewrote it, or when its
    markers are broken (two start markers, a start without an end).
    """
    try:
        return _write(settings, content, dry_run)
    except VtError as exc:
        exc.path = DASHBOARD  # every error here is about the dashboard: name it as the user sees it
        raise


def _write(settings: Settings, content: str, dry_run: bool) -> ReportResult:
    path = settings.vault / DASHBOARD
    result = ReportResult(DASHBOARD, False, False, False, dry_run, content)
    if not path.exists():
        result.changed = True
        if dry_run:
            return result
        if create_file(path, initial_text(content).encode("utf-8"), root=settings.vault):
            result.written = result.created = True
            return result
        # created by someone else meanwhile: update it like any existing dashboard
    snapshot = writer.read_snapshot(path)
    new_text = writer.set_block(snapshot.text, BLOCK, content)
    result.changed = new_text != snapshot.text
    if result.changed and not dry_run:
        result.written = writer.write_if_changed(snapshot, new_text, root=settings.vault)
    return result


def report(
    settings: Settings, dry_run: bool = False, progress: Progress | None = None
) -> ReportResult:
    """`vt report`: bring the Claim Store up to date, then (re)write the dashboard."""
    with ClaimStore.open(settings) as store:
        store.catch_up()
        dash = collect(settings, store, progress)
    result = write_dashboard(settings, render(dash), dry_run)
    result.summary = dash.summary()
    return result


def refresh_dashboard(settings: Settings) -> bool:
    """For `vt watch`: rewrite the dashboard if its content changed; True when written.

    Raises VtError (IntegrityError for a broken ledger, RefusedError for a dashboard
    edited meanwhile); the next refresh simply tries again.
    """
    return report(settings).written
