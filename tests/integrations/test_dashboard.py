"""The Review Dashboard core (`vt report`): content, the user's text, idempotence, Mermaid."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.conftest import render_note, settings_for, validate_vault
from tests.review.test_status import set_props
from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.errors import RefusedError
from vault_tools.integrations import dashboard as dashmod
from vault_tools.integrations.charts import Edge, flowchart, mermaid_label, spread
from vault_tools.integrations.dashboard import (
    BLOCK,
    DASHBOARD,
    SUBNOTE_DIR,
    inline,
    wikilink,
)
from vault_tools.integrations.dashboard_state import LiveDashboard, report
from vault_tools.review.apply import apply_notes
from vault_tools.review.preview import preview_vault

GRAPH = "Entity graph of the accepted claims"
ACCEPTED = "Accepted claims per entity"
START = f"<!-- vt:{BLOCK}:start -->"
END = f"<!-- vt:{BLOCK}:end -->"
NODE = re.compile(r'^  ([A-Za-z0-9_]+)\["([^"]*)"\]$')
EDGE = re.compile(r'^  ([A-Za-z0-9_]+) -->(?:\|"([^"]*)"\|)? ([A-Za-z0-9_]+)$')
CLASS = re.compile(r"^  class ([A-Za-z0-9_]+(?:,[A-Za-z0-9_]+)*) internal-link$")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def decided_vault(vault: Path) -> Path:
    """The example vault after the real preview + apply: DV1-0001 accepted, DV1-0002
    rejected, DV1-0003 repaired (previewed, then approved with every check true)."""
    assert preview_vault(settings_for(vault)).previews
    note = vault / "03_claims" / "DV1-0003.md"
    edit(note, "review_action: REQUEST_REPAIR", "review_action: APPROVE_REPAIR")
    edit(note, "check_claim_frame: false", "check_claim_frame: true")
    applied = apply_notes(settings_for(vault))
    assert not applied.refused
    assert [(a.path, a.action) for a in applied.applied] == [
        ("03_claims/DV1-0001.md", "ACCEPT"),
        ("03_claims/DV1-0002.md", "REJECT"),
        ("03_claims/DV1-0003.md", "REPAIR"),
    ]
    return vault


def block_of(text: str) -> str:
    return text.split(START + "\n", 1)[1].split(END, 1)[0]


def section(text: str, heading: str) -> str:
    """The lines of one `## heading` of the dashboard block."""
    return block_of(text).split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def mermaid_lines(text: str) -> list[str]:
    return text.split("```mermaid\n", 1)[1].split("```", 1)[0].splitlines()


def assert_valid_mermaid(lines: list[str]) -> tuple[dict[str, str], list[tuple]]:
    """Every line is a node, an edge or the class line; labels hold no raw `"`."""
    assert lines[0] == "flowchart LR"
    nodes: dict[str, str] = {}
    edges = []
    for line in lines[1:]:
        if m := NODE.match(line):
            assert m.group(1) not in nodes
            nodes[m.group(1)] = m.group(2)
        elif m := EDGE.match(line):
            edges.append(m.groups())
        else:
            assert CLASS.match(line), line
    for source, _label, target in edges:
        assert source in nodes and target in nodes
    return nodes, edges


# --- content ---------------------------------------------------------------------


def links(text: str) -> list[str]:
    return re.findall(r"\[\[([^\]|\\]+)", text)


def group_of(text: str, title: str) -> str:
    """The lines of one `### title (n)` group of "Needs you"."""
    needs = section(text, "Needs you")
    return needs.split(f"### {title} (", 1)[1].split("\n### ", 1)[0]


def test_dashboard_of_accepted_rejected_and_repaired_claims(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    result = report(settings_for(vault, assist=True))
    assert result.written and result.created and result.changed
    assert not result.subnotes_changed and not (vault / SUBNOTE_DIR).exists()
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    assert text.startswith("---\ntags: [vt-dashboard]\n---\n# Review Dashboard\n\n")
    assert text.count(START) == 1 and text.endswith(END + "\n")
    headings = re.findall(r"^## (.+)$", block_of(text), re.M)
    assert headings == [
        "Needs you",
        "Progress",
        "Quality numbers",
        "Accepted claims per entity",
        "Entity graph of the accepted claims",
    ]

    # what needs the reviewer: here only review assist's hints
    needs = section(text, "Needs you")
    assert re.findall(r"^### (.+)$", needs, re.M) == ["Review-assist warnings (2)"]
    assert re.search(
        r"^- \[\[03_claims/IX2-0328\|IX2-0328\]\] line \d+: assist-mapping-unrelated: "
        r"'verification' is mapped to 'IC design verification'",
        needs,
        re.M,
    )

    progress = section(text, "Progress")
    assert (
        "6 review notes; claims in the Decision Ledger: ACCEPTED 1, REJECTED 1, "
        "REPAIRED 1." in progress
    )
    assert (
        "| review_action | NEW | PREVIEW_READY | APPLIED | total |\n"
        "|---|---|---|---|---|\n"
        "| PENDING | 2 | 0 | 0 | 2 |\n"
        "| REQUEST_REPAIR | 0 | 1 | 0 | 1 |\n"
        "| APPROVE_REPAIR | 0 | 0 | 1 | 1 |\n"
        "| APPROVE | 0 | 0 | 1 | 1 |\n"
        "| REJECT | 0 | 0 | 1 | 1 |\n"
        "| total | 2 | 1 | 3 | 6 |\n" in progress
    )
    # decided notes are counted, not listed
    assert links(progress) == []
    assert "pie showData\n  title Review notes by review_action\n" in progress
    assert '  "PENDING" : 2\n' in progress
    assert "3 decisions in the ledger." in progress
    per_reviewer = progress.split('title "Decisions per reviewer"', 1)[1]
    assert '  x-axis ["alice"]\n  y-axis "decisions" 0 --> 3\n  bar [3]\n' in per_reviewer

    accepted = section(text, "Accepted claims per entity")
    assert "| [[04_knowledge_base/DFlash\\|DFlash]] | 1 |" in accepted
    # the repair's V2 entities, not its V1 ones
    assert "| [[04_knowledge_base/Total Variation Loss\\|Total Variation Loss]] | 1 |" in accepted
    assert "03_claims" not in accepted  # claims are listed on the knowledge-base notes

    nodes, edges = assert_valid_mermaid(mermaid_lines(section(text, GRAPH)))
    assert sorted(v for k, v in nodes.items() if k.startswith("c_")) == ["DV1-0001", "DV1-0003"]
    assert "KL Divergence" in nodes.values() and "DFlash" in nodes.values()
    assert len(edges) == 6 and ("c_DV1_0001", "DFlash", "e_dflash") in edges
    assert result.summary["accepted_claims"] == 2 and result.summary["edges"] == 6


def test_the_table_renders_with_its_links(example_vault: Path) -> None:
    """The `\\|` of a wikilink in a table cell keeps the cell whole (as Obsidian reads it)."""
    report(settings_for(decided_vault(example_vault)))
    accepted = section((example_vault / DASHBOARD).read_text(encoding="utf-8"), ACCEPTED)
    tokens = MarkdownIt("commonmark").enable("table").parse(accepted)
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "[[04_knowledge_base/DFlash|DFlash]]" in cells
    assert cells[cells.index("[[04_knowledge_base/DFlash|DFlash]]") + 1] == "1"


def test_what_needs_the_reviewer(example_vault: Path) -> None:
    """Each kind of trouble in its group, with apply's and status's own reasons."""
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    # an approval apply refuses: its checks are not ticked
    edit(vault / "03_claims/DV1-0004.md", "review_action: PENDING", "review_action: APPROVE")
    # an approval apply would record
    edit(vault / "03_claims/IX2-0328.md", "review_action: PENDING", "review_action: REJECT")
    # a failed preview: drafts that do not parse
    set_props(vault, "03_claims/SA260324R-0125.md", review_state="PREVIEW_FAILED")
    # edited since apply
    edit(vault / "03_claims/DV1-0002.md", "review_action: REJECT", "review_action: APPROVE")
    # an unknown action, and git conflict markers
    (vault / "03_claims" / "X-1.md").write_text(
        render_note(claim_id="X-1", review_action="APROVE"), encoding="utf-8"
    )
    (vault / "03_claims" / "X-2.md").write_text(
        render_note(claim_id="X-2").replace(
            "## ② Atomic Claim", "<<<<<<< HEAD\n=======\n>>>>>>> b\n## ② Atomic Claim"
        ),
        encoding="utf-8",
    )
    # a claim in CONFLICT
    ledger = ledger_for(settings)
    (first,) = ledger.append([decision("Q-1")])
    ledger.append(
        [
            decision("Q-1", "REJECT", supersedes=first["id"]),
            decision("Q-1", "ACCEPT", supersedes=first["id"]),
        ]
    )
    result = report(settings)
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    needs = section(text, "Needs you")
    titles = re.findall(r"^### (.+) \(\d+\)$", needs, re.M)
    assert titles == [
        "Git conflict markers",
        "Validation errors",
        "Refused approvals",
        "Failed previews",
        "Claims in CONFLICT",
        "Edited since apply",
        "Unknown review_action",
        "Ready for vt apply",
    ]
    assert "- [[03_claims/X-2|X-2]] line " in group_of(text, "Git conflict markers")
    errors = group_of(text, "Validation errors")
    assert "- [[03_claims/X-1|X-1]] line " in errors
    codes = re.search(r"^By code: (.+)\.$", errors, re.M)
    assert codes is not None and "properties-schema 1" in codes.group(1)
    assert re.search(
        r"^- \[\[03_claims/DV1-0004\|DV1-0004\]\]: APPROVE: unchecked: check_",
        group_of(text, "Refused approvals"),
        re.M,
    )
    assert "- [[03_claims/SA260324R-0125|SA260324R-0125]]: REQUEST_REPAIR" in group_of(
        text, "Failed previews"
    )
    conflict = group_of(text, "Claims in CONFLICT")
    assert "- [[03_claims/Q-1|Q-1]]: heads REJECT by ann, ACCEPT by ann" in conflict
    assert "- [[03_claims/DV1-0002|DV1-0002]]: review_action is now APPROVE" in group_of(
        text, "Edited since apply"
    )
    assert "- [[03_claims/X-1|X-1]]: review_action APROVE" in group_of(
        text, "Unknown review_action"
    )
    ready = group_of(text, "Ready for vt apply")
    assert "- [[03_claims/IX2-0328|IX2-0328]]: REJECT" in ready
    # what the dashboard says apply refuses, apply refuses; what it says apply records,
    # apply records
    refused = set(links(group_of(text, "Refused approvals")))
    assert "03_claims/DV1-0004" in refused
    assert result.summary["needs"]["Refused approvals"] == len(refused)
    applied = apply_notes(settings)
    assert {r.path.removesuffix(".md") for r in applied.refused} >= refused
    assert {a.path.removesuffix(".md") for a in applied.applied} == set(links(ready))


def test_stale_previews_need_attention(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    preview_vault(settings)
    # the drafts change after the preview: stale
    edit(
        example_vault / "03_claims" / "DV1-0003.md",
        "以 KL-divergence 訓練",
        "以 KL divergence 訓練",
    )
    report(settings)
    stale = group_of((example_vault / DASHBOARD).read_text(encoding="utf-8"), "Stale previews")
    assert "- [[03_claims/DV1-0003|DV1-0003]]: REQUEST_REPAIR" in stale


def test_an_empty_vault_says_so(make_vault) -> None:
    vault = make_vault({})
    report(settings_for(vault))
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    assert "0 review notes; claims in the Decision Ledger: none yet." in text
    assert "Nothing: every note validates and no decision waits." in text
    assert "No review notes." in text and "```mermaid" not in text
    assert section(text, GRAPH).strip() == "No accepted claims yet."


def test_a_long_group_gets_a_subnote(example_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past GROUP_LIMIT the group links its sub-note, which lists it whole; the sub-note
    follows the group down to "None now." and keeps the user's text."""
    monkeypatch.setattr(dashmod, "GROUP_LIMIT", 1)
    settings = settings_for(example_vault, assist=True)
    result = report(settings)
    text = (example_vault / DASHBOARD).read_text(encoding="utf-8")
    group = group_of(text, "Review-assist warnings")
    items = [line for line in group.splitlines() if line.startswith("- ")]
    assert len(items) == 2 and items[0].startswith("- [[03_claims/DV1-0003|DV1-0003]] line ")
    assert items[1] == f"- … 1 more: [[{SUBNOTE_DIR}/Review-assist warnings|all 2]]"
    sub = example_vault / SUBNOTE_DIR / "Review-assist warnings.md"
    assert f"{SUBNOTE_DIR}/Review-assist warnings.md" in result.subnotes_written
    listed = [
        line for line in sub.read_text(encoding="utf-8").splitlines() if line.startswith("- ")
    ]
    assert [line.split("]]")[0] for line in listed] == [
        "- [[03_claims/DV1-0003|DV1-0003",
        "- [[03_claims/IX2-0328|IX2-0328",
    ]
    assert not report(settings).subnotes_written  # nothing changed: nothing written
    with sub.open("a", encoding="utf-8") as f:
        f.write("\nmy note on these\n")
    report(settings_for(example_vault, assist=False))  # the group is gone
    kept = sub.read_text(encoding="utf-8")
    assert "None now." in kept and "03_claims" not in kept and kept.endswith("my note on these\n")
    assert validate_vault(example_vault).notes == 6  # sub-notes are no review notes


# --- the note on disk ----------------------------------------------------------------


def test_second_run_writes_nothing(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    assert report(settings).written
    path = vault / DASHBOARD
    raw, mtime = path.read_bytes(), path.stat().st_mtime_ns
    os.utime(path, ns=(mtime - 10_000_000_000, mtime - 10_000_000_000))  # an older mtime
    mtime = path.stat().st_mtime_ns
    again = report(settings)
    assert not again.written and not again.changed and not again.created
    assert path.read_bytes() == raw and path.stat().st_mtime_ns == mtime
    live = LiveDashboard()
    assert live.refresh(settings) is False
    assert path.stat().st_mtime_ns == mtime
    # a new decision changes the content: rewritten once, then quiet again
    ledger_for(settings).append([decision("DV1-0004", claim=v1_claim("DV1-0004"))])
    assert live.refresh(settings) is True
    assert "| [[04_knowledge_base/Prefill\\|Prefill]] | 1 |" in section(
        path.read_text(encoding="utf-8"), ACCEPTED
    )
    assert live.refresh(settings) is False


def test_users_text_outside_the_markers_is_kept(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    report(settings)
    path = example_vault / DASHBOARD
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    inner, tail = rest.split(END, 1)
    # the user rewrites the frontmatter and intro, and writes below the block
    mine_head = (
        "---\ntags: [vt-dashboard, mine]\ncssclasses: wide\n---\n# My queue\n\n"
        "Notes 📝 with [[links]] and trailing spaces   \n\n"
    )
    mine_tail = "\n\n## My notes\n- keep me\t(tab)\n- no final newline"
    path.write_bytes((mine_head + START + inner + END + mine_tail).encode("utf-8"))
    ledger_for(settings).append([decision("DV1-0001")])
    assert report(settings).written
    new = path.read_bytes().decode("utf-8")
    assert new.startswith(mine_head + START + "\n") and new.endswith(END + mine_tail)
    assert block_of(new) != inner.lstrip("\n")
    assert "[[04_knowledge_base/Prefill\\|Prefill]] | 1 |" in section(new, ACCEPTED)


def test_crlf_and_bom_are_kept(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    report(settings)
    path = example_vault / DASHBOARD
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    assert not report(settings).written  # same content, other line endings: untouched
    ledger_for(settings).append([decision("DV1-0001")])
    assert report(settings).written
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf---\r\n") and b"\n" not in raw.replace(b"\r\n", b"")


def test_markers_removed_by_the_user_get_a_new_block_at_the_end(example_vault: Path) -> None:
    path = example_vault / DASHBOARD
    path.write_text("---\ntags: [vt-dashboard]\n---\nmy own text\n", encoding="utf-8")
    assert report(settings_for(example_vault)).written
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\ntags: [vt-dashboard]\n---\nmy own text\n\n" + START)


def test_broken_markers_are_refused_and_nothing_written(example_vault: Path) -> None:
    path = example_vault / DASHBOARD
    raw = f"intro\n{START}\nold\n{START}\n{END}\n".encode()
    path.write_bytes(raw)
    with pytest.raises(RefusedError) as caught:
        report(settings_for(example_vault))
    assert caught.value.line == 4 and "markers are broken" in caught.value.message
    assert caught.value.path == DASHBOARD
    assert path.read_bytes() == raw


def test_dry_run_writes_nothing(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    result = report(settings, dry_run=True)
    assert result.changed and not result.written and not (example_vault / DASHBOARD).exists()
    assert "## Needs you" in result.content
    report(settings)
    path = example_vault / DASHBOARD
    raw = path.read_bytes()
    ledger_for(settings).append([decision("DV1-0001")])
    result = report(settings, dry_run=True)
    assert result.changed and not result.written and path.read_bytes() == raw


# --- Markdown and Mermaid escaping ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('say "hi"', '"say #quot;hi#quot;"'),
        ("[x] (y) {z}", '"[x] (y) {z}"'),
        ("驗證 draft token", '"驗證 draft token"'),
        ("C# <b>bold</b>", '"C#35; #lt;b#gt;bold#lt;/b#gt;"'),
        ("`code` a|b", '"#96;code#96; a#124;b"'),
        ("two\nlines\t x", '"two lines x"'),
    ],
)
def test_mermaid_labels(text: str, label: str) -> None:
    assert mermaid_label(text) == label


def edge(claim: str, entity: str, label: str = "x") -> Edge:
    return Edge(
        claim,
        f"03_claims/{claim}.md",
        f"04_knowledge_base/{entity}".casefold(),
        f"04_knowledge_base/{entity}",
        label,
    )


def test_mermaid_node_ids_are_sanitised_and_unique() -> None:
    edges = [
        edge("A-1", "Prefill", 'the "warm" prefill [k]'),
        edge("A_1", "Prefill"),
        edge("驗證-1", "驗證", "驗證"),
        edge("驗證-2", "預填"),
        edge("end", "o"),
    ]
    lines = flowchart(edges)
    assert lines[0] == "```mermaid" and "```" in lines
    nodes, found = assert_valid_mermaid(lines[1 : lines.index("```", 1)])
    claims = {v: k for k, v in nodes.items() if k.startswith("c_")}
    assert claims == {
        "A-1": "c_A_1",
        "A_1": "c_A_1_2",
        "end": "c_end",
        "驗證-1": "c_1",
        "驗證-2": "c_2",
    }
    assert {nodes["e_node"], nodes["e_node_2"]} == {"驗證", "預填"}
    entities = {v: k for k, v in nodes.items() if k.startswith("e_")}
    assert set(entities) == {"Prefill", "驗證", "預填", "o"}
    assert len(set(entities.values())) == 4
    assert (claims["A-1"], "the #quot;warm#quot; prefill [k]", entities["Prefill"]) in found
    assert (claims["驗證-1"], "驗證", entities["驗證"]) in found


def test_the_graph_spreads_its_edges_over_entities() -> None:
    """A hub entity cannot take the whole graph: each of the most used entities gets
    edges in turn, up to the same number each."""
    edges = [edge(f"H-{i:03}", "Hub") for i in range(300)]
    edges += [edge(f"C-{i}", f"E{i % 5}") for i in range(15)]  # E0..E4: 3 claims each
    edges += [edge("L-1", "Lonely")]
    shown = spread(edges, entities=4, per_entity=2)
    per: dict[str, int] = {}
    for e in shown:
        per[e.entity] = per.get(e.entity, 0) + 1
    assert per == {
        "04_knowledge_base/Hub": 2,
        "04_knowledge_base/E0": 2,
        "04_knowledge_base/E1": 2,
        "04_knowledge_base/E2": 2,
    }
    assert spread(edges[:2], entities=4, per_entity=9) == edges[:2]
    nodes, found = assert_valid_mermaid(flowchart(shown)[1:-2])
    assert len(found) == 8 and len([n for n in nodes if n.startswith("e_")]) == 4


def test_the_dashboard_says_what_the_graph_leaves_out(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    claims = [decision(f"Q-{i}", claim=v1_claim(f"Q-{i}", ("Prefill", f"E{i}"))) for i in range(9)]
    ledger_for(settings).append(claims)
    report(settings)
    graph = section((example_vault / DASHBOARD).read_text(encoding="utf-8"), GRAPH)
    nodes, found = assert_valid_mermaid(mermaid_lines(graph))
    assert sum(t == "e_prefill" for _s, _l, t in found) == dashmod.GRAPH_EDGES_EACH
    assert len(found) < 18
    assert f"Showing {len(found)} of 18 edges: at most {dashmod.GRAPH_EDGES_EACH} claims" in graph


def test_dashboard_graph_of_labels_with_quotes_brackets_and_cjk(example_vault: Path) -> None:
    (example_vault / "04_knowledge_base" / "草稿 驗證.md").write_text(
        "# 草稿 驗證\n", encoding="utf-8"
    )
    claim = v1_claim("Q-1", ("Prefill", "草稿 驗證"))
    claim["semantic_frame"]["entities"][0]["label"] = 'a "warm" [prefill] <b> #1'
    claim["semantic_frame"]["entities"][1]["label"] = "草稿「驗證」"
    settings = settings_for(example_vault)
    ledger_for(settings).append([decision("Q-1", claim=claim)])
    report(settings)
    text = (example_vault / DASHBOARD).read_text(encoding="utf-8")
    nodes, found = assert_valid_mermaid(mermaid_lines(section(text, GRAPH)))
    labels = {label for _s, label, _t in found}
    assert labels == {"a #quot;warm#quot; [prefill] #lt;b#gt; #35;1", "草稿「驗證」"}
    assert "草稿 驗證" in nodes.values()
    assert "| [[04_knowledge_base/草稿 驗證\\|草稿 驗證]] | 1 |" in text


def test_inline_escapes_obsidian_syntax_and_code_spans() -> None:
    assert (
        inline("see [[X]] #tag $x$ %%c%% ==h== <b>")
        == "see \\[\\[X\\]\\] \\#tag \\$x\\$ \\%\\%c\\%\\% \\=\\=h\\=\\= &lt;b&gt;"
    )
    # a code span would be live (Dataview runs `= …` and `$= …` spans): escaped too
    assert (
        inline("`Mapping Status: [[x]]` and a|b\nnext")
        == "\\`Mapping Status: \\[\\[x\\]\\]\\` and a\\|b next"
    )
    assert inline("one ` backtick") == "one \\` backtick"


def test_wikilinks() -> None:
    assert wikilink("03_claims/X-1.md", "X-1") == "[[03_claims/X-1|X-1]]"
    assert wikilink("04_knowledge_base/KV Cache.md") == "[[04_knowledge_base/KV Cache|KV Cache]]"
    assert wikilink("Top.md") == "[[Top]]"
    assert wikilink("03_claims/a.md", "a|b]]") == "[[03_claims/a|a_b__]]"
    # a path Obsidian cannot link stays text
    assert wikilink("03_claims/a#b.md", "a#b") == "a\\#b"
