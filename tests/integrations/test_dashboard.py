"""The Review Dashboard core (`vt report`): content, the user's text, idempotence, Mermaid."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import render_drafts, render_note, settings_for, validate_vault
from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.errors import RefusedError
from vault_tools.integrations import dashboard as dashmod
from vault_tools.integrations.dashboard import (
    BLOCK,
    DASHBOARD,
    Edge,
    inline,
    mermaid,
    mermaid_label,
    refresh_dashboard,
    report,
    wikilink,
)
from vault_tools.integrations.entities import survey
from vault_tools.notes.vault import markdown_files
from vault_tools.review.apply import apply_notes
from vault_tools.review.preview import preview_vault
from vault_tools.review.status import note_info, status
from vault_tools.store.claims import ClaimStore

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


def test_dashboard_of_accepted_rejected_and_repaired_claims(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    result = report(settings_for(vault, assist=True))
    assert result.written and result.created and result.changed
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    assert text.startswith("---\ntags: [vt-dashboard]\n---\n# Review Dashboard\n\n")
    assert text.count(START) == 1 and text.endswith(END + "\n")

    queue = section(text, "Review queue")
    assert (
        "6 review notes; claims in the Decision Ledger: ACCEPTED 1, REJECTED 1, "
        "REPAIRED 1." in queue
    )
    by_action = queue.split("### By review_state")[0]
    assert "#### APPROVE (1)\n\n- [[03_claims/DV1-0001|DV1-0001]]\n" in by_action
    assert "#### APPROVE_REPAIR (1)\n\n- [[03_claims/DV1-0003|DV1-0003]]\n" in by_action
    assert (
        "#### PENDING (2)\n\n- [[03_claims/DV1-0004|DV1-0004]]\n- [[03_claims/IX2-0328|IX2-0328]]\n"
    ) in by_action
    by_state = queue.split("### By review_state")[1]
    assert (
        "#### APPLIED (3)\n\n- [[03_claims/DV1-0001|DV1-0001]]\n"
        "- [[03_claims/DV1-0002|DV1-0002]]\n- [[03_claims/DV1-0003|DV1-0003]]\n"
    ) in by_state
    assert "#### PREVIEW_READY (1)\n\n- [[03_claims/SA260324R-0125|SA260324R-0125]]\n" in by_state
    # groups sorted by name
    titles = re.findall(r"^#### (\w+) \(", by_action, re.M)
    assert (
        titles
        == sorted(titles)
        == ["APPROVE", "APPROVE_REPAIR", "PENDING", "REJECT", "REQUEST_REPAIR"]
    )

    assert "None: every review note validates." in section(text, "Validation errors")
    assist = section(text, "Review assist")
    assert "### assist-mapping-unrelated (1)\n" in assist
    assert re.search(
        r"^- \[\[03_claims/IX2-0328\|IX2-0328\]\] line \d+: 'verification' is "
        r"mapped to 'IC design verification'",
        assist,
        re.M,
    )
    assert "\\[\\[04_knowledge_base/Draft Verification\\]\\]" in assist  # a suggestion, no link
    codes = re.findall(r"^### (\S+) \(", assist, re.M)
    assert codes == sorted(codes) and all(c.startswith("assist-") for c in codes)

    accepted = section(text, "Accepted claims per entity")
    assert "- [[04_knowledge_base/DFlash|DFlash]] (1): [[03_claims/DV1-0001|DV1-0001]]" in accepted
    # the repair's V2 entities, not its V1 ones
    assert (
        "- [[04_knowledge_base/Total Variation Loss|Total Variation Loss]] (1): "
        "[[03_claims/DV1-0003|DV1-0003]]" in accepted
    )
    assert "DV1-0002" not in accepted  # rejected

    nodes, edges = assert_valid_mermaid(mermaid_lines(text))
    assert sorted(v for k, v in nodes.items() if k.startswith("c_")) == ["DV1-0001", "DV1-0003"]
    assert "KL Divergence" in nodes.values() and "DFlash" in nodes.values()
    assert len(edges) == 6 and ("c_DV1_0001", "DFlash", "e_dflash") in edges
    assert result.summary["accepted_claims"] == 2 and result.summary["edges"] == 6


def test_the_dashboard_is_no_review_note_and_breaks_nothing(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault, assist=True)
    before = validate_vault(vault, assist=True).to_json()
    report(settings)
    after = validate_vault(vault, assist=True)
    assert after.to_json() == before and after.errors == 0 and after.notes == 6
    assert all(f.path != DASHBOARD for f in after.findings)
    again = apply_notes(settings)  # nothing to apply, and the dashboard is not touched
    assert not again.applied and not again.refused
    assert all(e.path != DASHBOARD for e in again.skipped)
    with ClaimStore.open(settings) as store:
        assert status(settings, store).notes == 6
    assert survey(settings).notes == 6


def test_conflicts_and_stale_previews_need_attention(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    preview_vault(settings)
    # the drafts change after the preview: stale
    edit(
        example_vault / "03_claims" / "DV1-0003.md",
        "以 KL-divergence 訓練",
        "以 KL divergence 訓練",
    )
    ledger = ledger_for(settings)
    (first,) = ledger.append([decision("DV1-0004")])
    ledger.append(
        [
            decision("DV1-0004", "REJECT", supersedes=first["id"]),
            decision("DV1-0004", "ACCEPT", supersedes=first["id"]),
        ]
    )
    report(settings)
    attention = section(
        (example_vault / DASHBOARD).read_text(encoding="utf-8"), "Review queue"
    ).split("### Needs attention\n", 1)[1]
    assert "- [[03_claims/DV1-0003|DV1-0003]]: the drafts changed after `vt preview`" in attention
    assert "- [[03_claims/DV1-0004|DV1-0004]]: in CONFLICT" in attention


def test_an_empty_vault_says_so(make_vault) -> None:
    vault = make_vault({})
    report(settings_for(vault))
    text = (vault / DASHBOARD).read_text(encoding="utf-8")
    assert "0 review notes; claims in the Decision Ledger: none yet." in text
    assert "No review notes." in text and "```mermaid" not in text
    assert section(text, "Entity graph of the accepted claims").strip() == "No accepted claims yet."


def test_long_queue_groups_are_cut(example_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dashmod, "GROUP_LIMIT", 1)
    report(settings_for(example_vault))
    text = (example_vault / DASHBOARD).read_text(encoding="utf-8")
    assert (
        "#### NEW (6)\n\n- [[03_claims/DV1-0001|DV1-0001]]\n- … and 5 more (see "
        "`vt status`)\n" in text
    )


def test_long_finding_groups_are_cut(example_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dashmod, "FINDING_LIMIT", 1)
    # a second note with DV1-0003's frame-expression warning makes a group of two
    twin = (example_vault / "03_claims" / "DV1-0003.md").read_text(encoding="utf-8")
    (example_vault / "03_claims" / "DV1-0099.md").write_text(
        twin.replace("DV1-0003", "DV1-0099"), encoding="utf-8"
    )
    report(settings_for(example_vault, assist=True))
    assist = section((example_vault / DASHBOARD).read_text(encoding="utf-8"), "Review assist")
    group = assist.split("### assist-frame-expression (2)\n", 1)[1].split("\n### ", 1)[0]
    items = [line for line in group.splitlines() if line.startswith("- ")]
    assert items[0].startswith("- [[03_claims/DV1-0003|DV1-0003]] line ")
    assert items[1:] == ["- … and 1 more (see `vt validate`)"]


def test_queue_items_agree_with_vt_status(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    (vault / "03_claims" / "X-1.md").write_text(
        render_note(claim_id="X-1", review_action="REQUEST_REPAIR", drafts=render_drafts()),
        encoding="utf-8",
    )
    settings = settings_for(vault)
    preview_vault(settings)
    # stale: SA260324R-0125's drafts change after its preview
    edit(
        vault / "03_claims" / "SA260324R-0125.md",
        "### V2 Atomic Claim Draft\n",
        "### V2 Atomic Claim Draft\n改 ",
    )
    (vault / "notes.md").write_text("claim_id is mentioned, but not a property\n")
    seen = 0
    for f in markdown_files(vault):
        mine, theirs = dashmod.queue_item(settings, f.relative), note_info(settings, f.relative)
        assert (mine is None) == (theirs is None), f.relative
        if mine is not None and theirs is not None:
            seen += 1
            assert (mine.path, mine.claim_id, mine.action, mine.state, mine.stale_preview) == (
                theirs.path,
                theirs.claim_id,
                theirs.action,
                theirs.state,
                theirs.stale_preview,
            )
    assert seen == 7
    stale = [
        i.path
        for i in (dashmod.queue_item(settings, f.relative) for f in markdown_files(vault))
        if i and i.stale_preview
    ]
    assert stale == ["03_claims/SA260324R-0125.md"]


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
    assert refresh_dashboard(settings) is False
    assert path.stat().st_mtime_ns == mtime
    # a new decision changes the content: rewritten once, then quiet again
    ledger_for(settings).append([decision("DV1-0004", claim=v1_claim("DV1-0004"))])
    assert refresh_dashboard(settings) is True
    assert "[[03_claims/DV1-0004|DV1-0004]]" in section(
        path.read_text(encoding="utf-8"), "Accepted claims per entity"
    )
    assert refresh_dashboard(settings) is False


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
    assert "[[03_claims/DV1-0001|DV1-0001]]" in section(new, "Accepted claims per entity")


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
    assert "## Review queue" in result.content
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
    lines = mermaid(edges)
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


def test_mermaid_is_capped_with_a_note() -> None:
    edges = [edge(f"C-{i}", f"E{i % 2}") for i in range(5)]  # E0: 3 claims, E1: 2
    lines = mermaid(edges, limit=3)
    body = lines[1 : lines.index("```", 1)]
    nodes, found = assert_valid_mermaid(body)
    assert len(found) == 3
    assert {nodes[t] for _s, _l, t in found} == {"E0"}  # the most used entity first
    assert (
        "Showing 3 of 5 edges (the most used entities first); `vt export` lists every "
        "accepted claim." in lines
    )
    assert not any("Showing" in line for line in mermaid(edges, limit=5))


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
    nodes, found = assert_valid_mermaid(mermaid_lines(text))
    labels = {label for _s, label, _t in found}
    assert labels == {"a #quot;warm#quot; [prefill] #lt;b#gt; #35;1", "草稿「驗證」"}
    assert "草稿 驗證" in nodes.values()
    assert "- [[04_knowledge_base/草稿 驗證|草稿 驗證]] (1): [[03_claims/Q-1|Q-1]]" in text


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
