"""The Review Dashboard at any size: the note stays small and readable at 100,000 notes
(built from plain data: `render` reads nothing), its charts parse in Mermaid itself
where node and Mermaid are installed, and a generated 10k vault's dashboard, made by
`vt apply` and `vt report` as a user runs them, keeps its limits."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_vt, synthetic_vault
from tests.integrations.test_dashboard import assert_valid_mermaid, block_of, section
from tests.notes.test_markdown import hostile_dashboard
from vault_tools.findings import Finding, error, warning
from vault_tools.integrations import dashboard as dashmod
from vault_tools.integrations.charts import Edge
from vault_tools.integrations.dashboard import (
    DASHBOARD,
    GRAPH_EDGES_EACH,
    GRAPH_ENTITIES,
    GROUP_LIMIT,
    SUBNOTE_DIR,
    Dashboard,
    EntityCount,
    NeedItem,
    needs,
    render,
    subnotes,
)
from vault_tools.review.status import StatusReport

BUDGET = 100_000  # bytes of the dashboard note, whatever the vault's size
FENCE = re.compile(r"^```mermaid\n(.*?)^```$", re.M | re.S)
LINK = re.compile(r"\[\[03_claims/")
LONG = "很長的說明 with a long English tail " * 12  # a reason far past REASON_CHARS


def diagrams(text: str) -> list[str]:
    return FENCE.findall(text)


def big_dashboard(notes: int = 100_000) -> Dashboard:
    """The plain data of a 100k-note vault in mid-review, its text long and awkward."""
    path = [f"03_claims/sub folder {i % 50}/SA{i:07d} 很長的檔名.md" for i in range(notes)]
    report = StatusReport(notes=notes)
    report.git_conflicts = [
        Finding(path[i], 12, "git-conflict", "git conflict markers", "error")
        for i in range(0, notes, 200)
    ]
    report.stale_previews = [
        {"path": path[i], "claim_id": f"C{i}", "review_action": "REQUEST_REPAIR"}
        for i in range(0, notes, 33)
    ]
    report.failed_previews = [
        {"path": path[i], "claim_id": f"C{i}", "review_action": "APPROVE_REPAIR"}
        for i in range(1, notes, 50)
    ]
    heads = [{"action": "ACCEPT", "actor": "alice"}, {"action": "REJECT", "actor": "陳怡君"}]
    report.conflicts = [
        {"claim_id": f"C{i}", "note": path[i], "heads": heads} for i in range(2, notes, 300)
    ]
    report.edited_since_apply = [
        {"path": path[i], "claim_id": f"C{i}", "reason": LONG} for i in range(3, notes, 100)
    ]
    report.disagreements = [
        {"path": path[i], "claim_id": f"C{i}", "kind": "unmarked", "reason": LONG}
        for i in range(4, notes, 200)
    ]
    report.unknown_actions = [
        {"path": path[i], "claim_id": f"C{i}", "review_action": "APPROVED"}
        for i in range(5, notes, 210)
    ]
    findings = [error(path[i], 40, "frame-schema", LONG) for i in range(6, notes, 17)]
    findings += [warning(path[i], 9, "assist-mode-hedged", LONG) for i in range(7, notes, 150)]
    findings += [error(path[i], None, "read-error", "cannot read") for i in range(8, notes, 2500)]
    refused = [NeedItem(path[i], f"C{i}", LONG) for i in range(9, notes, 30)]
    ready = [NeedItem(path[i], f"C{i}", "APPROVE") for i in range(10, notes, 45)]
    states = ("NEW", "PREVIEW_READY", "PREVIEW_FAILED", "APPLIED")
    table = {
        action: {state: notes // 30 for state in states}
        for action in ("PENDING", "REQUEST_REPAIR", "APPROVE_REPAIR", "APPROVE", "REJECT")
    }
    table['APPROVED "x" | <b>'] = {"NEW": 470}
    reviewers = [f'reviewer {r} 審查員 "q" #{r};' * 2 for r in range(40)]
    decisions = [
        (f"2026-{1 + d // 28:02d}-{1 + d % 28:02d}", reviewer, action, 3)
        for d in range(336)
        for reviewer in reviewers
        for action in ("ACCEPT", "REJECT", "REPAIR")
    ]
    entity_names = [f"04_knowledge_base/Entity {e} 實體 (long name)" for e in range(4400)]
    edges = [
        Edge(
            f"C{i}",
            path[i],
            entity_names[(i * k) % 4400].casefold(),
            entity_names[(i * k) % 4400],
            LONG,
        )
        for i in range(0, notes, 2)
        for k in (1, 7, 13)
    ]
    counts: dict[str, set[str]] = {}
    for e in edges:
        counts.setdefault(e.entity, set()).add(e.claim_id)
    entities = sorted(
        (EntityCount(name, True, len(ids)) for name, ids in counts.items()),
        key=lambda e: (-e.claims, e.entity),
    )
    return Dashboard(
        needs=needs(report, findings, refused, ready),
        by_action_and_state=table,
        claims={"ACCEPTED": 30_000, "REJECTED": 9_000, "REPAIRED": 2_000, "CONFLICT": 333},
        decisions=decisions,
        entities=entities,
        edges=edges,
        findings={"frame-schema": 5883},
    )


def check_structure(source: str) -> None:
    """Each diagram is one the Python side knows how to check: pie, bars or flowchart."""
    lines = source.splitlines()
    if lines[0] == "pie showData":
        assert lines[1].startswith("  title ")
        for line in lines[2:]:
            assert re.fullmatch(r'  "[^"\n]+" : \d+', line), line
    elif lines[0] == "xychart-beta":
        assert re.fullmatch(r'  title "[^"]*"', lines[1])
        names = re.fullmatch(r"  x-axis \[(.*)\]", lines[2])
        assert names is not None
        labels = re.findall(r'"([^"]*)"', names.group(1))
        assert names.group(1) == ", ".join(f'"{x}"' for x in labels)
        assert re.fullmatch(r'  y-axis "[^"]*" 0 --> \d+', lines[3])
        values = re.fullmatch(r"  bar \[([\d, ]*)\]", lines[4])
        assert values is not None and len(values.group(1).split(", ")) == len(labels)
        assert len(lines) == 5
    else:
        assert_valid_mermaid(lines)


def test_a_100k_note_dashboard_stays_small_and_bounded() -> None:
    dash = big_dashboard()
    text = render(dash)
    size = len(text.encode("utf-8"))
    assert size < BUDGET, size
    groups = re.findall(r"^### (.+) \((\d+)\)$", text, re.M)
    assert len(groups) == 12 and all(int(n) > GROUP_LIMIT for _t, n in groups)
    # at most GROUP_LIMIT links a group, then one to its sub-note
    assert len(LINK.findall(text)) == 12 * GROUP_LIMIT
    for title, n in groups:
        assert f"- … {int(n) - GROUP_LIMIT} more: [[{SUBNOTE_DIR}/{title}|all {n}]]" in text
    assert "By code: frame-schema 5882.\n" in text  # read-error has its own group
    assert "By code: assist-mode-hedged 667.\n" in text
    # no part of the note but "Needs you" lists a review note
    assert not LINK.search(text.split("\n## Progress\n", 1)[1])
    found = diagrams(text)
    assert [d.splitlines()[0] for d in found] == [
        "pie showData",
        "pie showData",
        "xychart-beta",
        "xychart-beta",
        "flowchart LR",
    ]
    for source in found:
        check_structure(source)
    per_day = found[2].splitlines()
    assert per_day[2].count('"') == 2 * dashmod.DAYS
    per_reviewer = found[3].splitlines()
    assert per_reviewer[2].count('"') == 2 * (dashmod.REVIEWERS + 1)  # and "28 others"
    _nodes, edges = assert_valid_mermaid(found[4].splitlines())
    targets = [t for _s, _l, t in edges]
    assert len(set(targets)) == GRAPH_ENTITIES
    assert all(targets.count(t) == GRAPH_EDGES_EACH for t in set(targets))
    assert f"Showing {len(edges)} of {len(dash.edges)} edges: at most" in text
    table = text.split("## Accepted claims per entity\n", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"^\| \[\[04_knowledge_base/", table, re.M)) == dashmod.TOP_ENTITIES


def test_every_long_group_has_a_subnote_listing_it_whole() -> None:
    dash = big_dashboard(20_000)
    written = subnotes(dash)
    assert set(written) == {
        f"{SUBNOTE_DIR}/{g.title}.md" for g in dash.needs if len(g.items) > GROUP_LIMIT
    }
    for group in dash.needs:
        body = written.get(f"{SUBNOTE_DIR}/{group.title}.md")
        if body is not None:
            assert body.count("\n- ") == len(group.items)
            long = [i for i in group.items if len(i.reason) > dashmod.REASON_CHARS]
            assert not long or "…" not in body  # reasons whole, where the dashboard cuts


# --- the charts against Mermaid itself ---------------------------------------------------

# Reads a JSON list of diagram sources on stdin and prints, for each, whether Mermaid's
# own parser accepts it. VT_MERMAID_DIR is a folder where `npm install mermaid jsdom` ran.
MERMAID_PARSE = """
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
const req = createRequire(join(process.env.VT_MERMAID_DIR, "package.json"));
const load = async (name) => import(pathToFileURL(req.resolve(name)).href);
const { JSDOM } = await load("jsdom");
const dom = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const mermaid = (await load("mermaid")).default;
mermaid.initialize({ startOnLoad: false });
let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const source of JSON.parse(input)) {
  try {
    await mermaid.parse(source);
    out.push("ok");
  } catch (e) {
    out.push(String(e && e.message ? e.message : e).slice(0, 400));
  }
}
process.stdout.write(JSON.stringify(out));
"""


def mermaid_parse(sources: list[str], tmp_path: Path) -> list[str]:
    where = os.environ.get("VT_MERMAID_DIR", "")
    node = shutil.which("node")
    if not node or not where or not (Path(where) / "node_modules" / "mermaid").is_dir():
        pytest.skip("needs node and VT_MERMAID_DIR with mermaid and jsdom (docs/commands.md)")
    script = tmp_path / "parse.mjs"
    script.write_text(MERMAID_PARSE, encoding="utf-8")
    done = subprocess.run(
        [node, str(script)],
        input=json.dumps(sources),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_charts_parse_in_mermaid(tmp_path: Path) -> None:
    sources = diagrams(render(big_dashboard(5_000))) + diagrams(render(hostile_dashboard()))
    assert len(sources) == 10
    # a broken diagram is caught: the check can fail
    results = mermaid_parse([*sources, "xychart-beta\n  bar [1, ]\n"], tmp_path)
    assert results[:-1] == ["ok"] * len(sources)
    assert results[-1] != "ok"


# --- a generated 10k vault, as a user runs vt on it --------------------------------------


@pytest.mark.slow
def test_the_dashboard_of_a_10k_vault(tmp_path: Path) -> None:
    vault, _planted = synthetic_vault(tmp_path / "vault", 10_000, seed=7, defects=0.05)
    # one recorder for everyone: the generated notes name four reviewers
    (vault / "vt.toml").write_text("[review]\nrecord_for_reviewers = true\n", encoding="utf-8")
    run_vt("apply", vault=vault, check=1, timeout=900)  # some approvals are refused
    done = run_vt("report", "--json", vault=vault, check=0, timeout=900)
    summary = json.loads(done.stdout)
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < BUDGET / 2
    assert summary["notes"] == 10_000 and summary["accepted_claims"] > 1000
    block = block_of(text)
    assert re.findall(r"^## (.+)$", block, re.M)[:2] == ["Needs you", "Progress"]
    needs_ = summary["needs"]
    assert needs_["Validation errors"] > GROUP_LIMIT and needs_["Refused approvals"] > GROUP_LIMIT
    for title, count in needs_.items():
        group = section(text, "Needs you").split(f"### {title} ({count})\n", 1)[1]
        group = group.split("\n### ", 1)[0]
        shown = [line for line in group.splitlines() if line.startswith("- [[03_claims/")]
        assert len(shown) == min(count, GROUP_LIMIT)
        sub = vault / SUBNOTE_DIR / f"{title}.md"
        assert sub.is_file() is (count > GROUP_LIMIT)
        if count > GROUP_LIMIT:
            listed = sub.read_text(encoding="utf-8").count("\n- [[03_claims/")
            assert listed == count
    assert sorted(summary["subnotes_written"]) == sorted(
        f"{SUBNOTE_DIR}/{t}.md" for t, n in needs_.items() if n > GROUP_LIMIT
    )
    # decided notes are counted in Progress, not listed
    assert not LINK.search(block.split("\n## Progress\n", 1)[1])
    # the dashboard's own charts (the quality numbers' are vt stats', tested with it)
    quality = section(text, "Quality numbers")
    assert quality and "```mermaid" in quality
    for source in diagrams(text.replace(quality, "")):
        check_structure(source)
    graph = diagrams(section(text, "Entity graph of the accepted claims"))[0]
    _nodes, edges = assert_valid_mermaid(graph.splitlines())
    targets = [t for _s, _l, t in edges]
    assert len(set(targets)) == GRAPH_ENTITIES
    assert max(targets.count(t) for t in set(targets)) == GRAPH_EDGES_EACH
    # the same run again: nothing to rewrite
    again = json.loads(run_vt("report", "--json", vault=vault, check=0, timeout=900).stdout)
    assert not again["written"] and not again["subnotes_written"]
