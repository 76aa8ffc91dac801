"""markdown.py and every renderer that copies note text into Markdown: hostile text
stays text. Each output is parsed back with a CommonMark parser (markdown-it, which rich
brings along): no raw HTML, no code span Dataview would run, and the text shows exactly
the characters it was given."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from vault_tools.findings import error, warning
from vault_tools.integrations.charts import Edge
from vault_tools.integrations.dashboard import (
    Dashboard,
    EntityCount,
    NeedGroup,
    NeedItem,
    needs,
    render,
)
from vault_tools.notes import markdown
from vault_tools.review.diff import Change, text_diff
from vault_tools.review.preview import PreviewResult
from vault_tools.review.preview import render_block as preview_block
from vault_tools.review.status import StatusReport
from vault_tools.store.graph import Use
from vault_tools.store.graph import render_block as kb_block

PARSER = MarkdownIt("commonmark").enable("table").enable("strikethrough")
DIFF_TAGS = {"<del>": "delete", "</del>": "equal", "<mark>": "insert", "</mark>": "equal"}
DATAVIEW = re.compile(r"^\s*\$?=")

HOSTILE = [
    '`$= dv.paragraph("x")`',
    "`= this.file.name`",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script> & &lt;b&gt;",
    "[[Secret note]] and [x](javascript:alert(1)) ![i](x.png)",
    "#tag ^block-id %%hidden%% ==marked== ~~gone~~ $x^2$ $$y$$",
    "*em* **strong** _em_ __strong__ a|b \\ back\\slash",
    "```js\nfence``` `` ` ``",
    "- a list?",
    "1. numbered?",
    "> quoted?",
    "# heading?",
    "line one\nline two\r\n\tline three",
    "review_state snake_case APPROVE_REPAIR",
]


def inline_runs(source: str) -> list[list[Token]]:
    """The inline children of every paragraph, heading and table cell of `source`."""
    return [t.children or [] for t in PARSER.parse(source) if t.type == "inline"]


def shown(children: list[Token]) -> str:
    """What a reader sees of one inline run (text and code, line breaks as spaces)."""
    return "".join(
        " " if c.type in ("softbreak", "hardbreak") else c.content
        for c in children
        if c.type in ("text", "code_inline", "softbreak", "hardbreak")
    )


def live(source: str) -> list[str]:
    """Everything in `source` a renderer would make live: HTML, a code span Dataview
    runs, links, images, emphasis (vt's own code spans and links are allowed, and the
    tags of a diff, `<del>` and `<mark>`, which vt writes itself)."""
    found = [t.type for t in PARSER.parse(source) if t.type == "html_block"]
    for children in inline_runs(source):
        for child in children:
            if child.type == "html_inline" and child.content in DIFF_TAGS:
                continue
            if child.type in (
                "html_inline",
                "link_open",
                "image",
                "em_open",
                "strong_open",
                "s_open",
            ):
                found.append(f"{child.type}: {child.content}")
            if child.type == "code_inline" and DATAVIEW.match(child.content):
                found.append(f"dataview: {child.content}")
    return found


def one_line(value: str) -> str:
    return " ".join(value.split())


@pytest.mark.parametrize("value", HOSTILE)
def test_text_shows_every_character_and_nothing_live(value: str) -> None:
    escaped = markdown.text(value)
    assert "\n" not in escaped
    assert live(escaped) == []
    runs = inline_runs(escaped)
    assert len(runs) == 1 and [c.type for c in runs[0]] == ["text"] * len(runs[0])
    assert shown(runs[0]) == one_line(value)
    # Obsidian's own syntax (wikilinks, tags, comments, highlights, math, block ids) is
    # not CommonMark: no such character is left without its backslash
    assert not re.search(r"(?<!\\)[\[\]#%=$^~`|*]", escaped.replace("\\\\", ""))


@pytest.mark.parametrize("value", HOSTILE)
def test_a_code_span_shows_its_text_and_dataview_never_runs(value: str) -> None:
    value = one_line(value)
    row = f"| a | b |\n|---|---|\n| {markdown.code_span(value)} | x |\n"
    assert live(row) == []
    cells = inline_runs(row)[2:]
    assert [shown(cell) for cell in cells] == [value.strip(), "x"]


def test_a_fence_is_longer_than_any_backtick_run() -> None:
    assert markdown.fence_for("plain") == "```"
    assert markdown.fence_for("a ``` b") == "````"
    assert markdown.fence_for("`````x``") == "``````"
    body = "+ ```\n+ <img src=x onerror=alert(1)>\n+ ````` more\n"
    fence = markdown.fence_for(body)
    tokens = PARSER.parse(f"{fence}diff\n{body}{fence}\n")
    assert [t.type for t in tokens] == ["fence"] and tokens[0].content == body


def test_wikilinks_take_no_escapes_so_what_they_cannot_show_is_replaced() -> None:
    assert markdown.wikilink("03_claims/X-1.md", "X-1") == "[[03_claims/X-1|X-1]]"
    assert (
        markdown.wikilink("03_claims/a.md", "`$= x` <b>") == "[[03_claims/a|'$= x' \u2039b\u203a]]"
    )
    # a target Obsidian cannot link stays escaped text
    assert markdown.wikilink("03_claims/a`b.md", "a`b") == "a\\`b"
    assert live(markdown.wikilink("03_claims/a.md", '`$= dv.paragraph("x")`')) == []


# --- the renderers ------------------------------------------------------------------------


def hostile_dashboard() -> Dashboard:
    """A Dashboard whose every piece of note or ledger text is hostile."""
    label, value, entity = HOSTILE[0], HOSTILE[2], HOSTILE[4]
    findings = [
        error("03_claims/A.md", 3, "properties-schema", f"bad value {value}"),
        warning("03_claims/A.md", None, "assist-mapping-label", HOSTILE[5]),
    ]
    groups = needs(StatusReport(), findings, [NeedItem("03_claims/B.md", "B-1", HOSTILE[6])], [])
    groups.append(
        NeedGroup(
            "Claims in CONFLICT", "decide again", [NeedItem("03_claims/C.md", "", HOSTILE[1])]
        )
    )
    return Dashboard(
        needs=groups,
        by_action_and_state={label: {value: 1}},
        claims={"ACCEPTED": 1},
        decisions=[("2026-03-01", h, "ACCEPT", 1) for h in HOSTILE],
        entities=[EntityCount(entity, False, 1)],
        edges=[Edge("A-1", "03_claims/A.md", "x", entity, label)],
        findings={"properties-schema": 1},
    )


def test_the_dashboard_copies_note_text_as_text() -> None:
    label, value, entity = HOSTILE[0], HOSTILE[2], HOSTILE[4]
    text = render(hostile_dashboard())
    # the diagrams are Mermaid's, checked in tests/integrations/test_dashboard_scale.py
    body = re.sub(r"```mermaid\n.*?```\n", "", text, flags=re.S)
    assert "```" not in body
    assert live(body) == []
    seen = [shown(run) for run in inline_runs(body)]
    assert label in seen and value in seen  # the table's row and column
    assert any(f"bad value {value}" in s for s in seen)
    assert any(one_line(HOSTILE[5]) in s for s in seen)
    assert any(one_line(HOSTILE[6]) in s for s in seen)
    assert f"{entity} (not in the knowledge base)" in seen
    assert any(HOSTILE[1] in s for s in seen)
    assert "<img" not in text and "`$=" not in text


def test_the_preview_block_copies_draft_values_as_text() -> None:
    value = HOSTILE[2]
    result = PreviewResult(
        "03_claims/A.md",
        "A-1",
        "REQUEST_REPAIR",
        "PREVIEW_FAILED",
        findings=[
            error(
                "03_claims/A.md",
                40,
                "claim-field",
                f"V2 Revision Metadata Draft: epistemic_mode {value!r} is not one "
                f"of ASSERTED, HEDGED; {HOSTILE[0]}",
            )
        ],
        changes=[
            Change("claim", "replace", "", "old claim", f"new ``` {value}"),
            Change("metadata", "replace", f"/{HOSTILE[0]}", "ASSERTED", value),
            Change("frame", "add", "/entities/0/label", None, HOSTILE[1]),
        ],
        preview_hash="sha256:" + "0" * 64,
    )
    block = preview_block(result)
    fences = [t for t in PARSER.parse(block) if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content.endswith(f"+ new ``` {value}\n")
    outside = block.replace(fences[0].content, "")
    assert live(outside) == []  # (the table's code spans show `<img …>` as code)
    seen = [shown(run) for run in inline_runs(block)]
    assert any(
        f"epistemic_mode '{value}' is not one of ASSERTED, HEDGED; {HOSTILE[0]}" in s for s in seen
    )
    # the table shows the JSON of each value in a code span, and the pointer
    assert json.dumps(value) in seen and f"/{HOSTILE[0]}" in seen
    assert json.dumps(HOSTILE[1]) in seen


def diff_views(line: str) -> tuple[str, str, str, str]:
    """A diff line as a reader sees it once rendered: (V1, V2, the text struck, the text
    marked), read from the inline tokens markdown-it makes of it."""
    [paragraph] = [t for t in PARSER.parse(line) if t.type == "inline"] or [None]
    parts: dict[str, list[str]] = {"equal": [], "delete": [], "insert": []}
    old: list[str] = []
    new: list[str] = []
    kind = "equal"
    for child in paragraph.children or [] if paragraph else []:
        if child.type == "html_inline":
            assert child.content in DIFF_TAGS, child.content  # no tag of the text's own
            kind = DIFF_TAGS[child.content]
            continue
        assert child.type in ("text", "softbreak"), child.type  # nothing else is live
        parts[kind].append(child.content)
        if kind != "insert":
            old.append(child.content)
        if kind != "delete":
            new.append(child.content)
    return "".join(old), "".join(new), "".join(parts["delete"]), "".join(parts["insert"])


def test_the_preview_diff_strikes_removed_words_and_marks_inserted_ones() -> None:
    old = "其 latency cost 約等於一次 decode step，**not** `x` [[Y]] ==z== ~~w~~ #t $m$ | a_b <i>"
    new = "其 latency cost 小於一次 decode step，**now** `x` [[Y]] ==z== ~~w~~ #t $m$ | a_b <i> ok"
    result = PreviewResult(
        "03_claims/A.md",
        "A-1",
        "REQUEST_REPAIR",
        "PREVIEW_READY",
        changes=[Change("claim", "replace", "", old, new)],
        claim_segments=text_diff(old, new),
        preview_hash="sha256:" + "0" * 64,
    )
    block = preview_block(result)
    line = block.split("### Atomic Claim\n\n", 1)[1].split("\n", 1)[0]
    html = PARSER.render(line)
    # the words changed, and only they, in the tags a reader sees struck and marked
    assert "<del>約等</del><mark>小</mark>於一次" in html
    assert "<del>not</del><mark>now</mark>" in html and "<mark> ok</mark>" in html
    assert "<s>" not in html and "<em>" not in html and "<code>" not in html
    assert "<a " not in html and "<i>" not in html and "&lt;i&gt;" in html
    v1, v2, struck, marked = diff_views(line)
    assert (v1, v2) == (old, new) and (struck, marked) == ("約等not", "小now ok")
    assert live(block.replace(line, "")) == []  # the rest of the block as before


def test_the_note_and_the_terminal_show_one_diff(example_vault) -> None:
    """A real `vt preview`: what its piped output marks in each claim (`[-…-]`, `{+…+}`)
    is what the note it writes strikes and marks once rendered."""
    from tests.conftest import run_vt

    note = example_vault / "03_claims/DV1-0003.md"
    text = note.read_text(encoding="utf-8")
    draft = text.index("### V2 Atomic Claim Draft")  # a word removed too, not only added
    note.write_text(text[:draft] + text[draft:].replace("並非最佳", "不是最佳", 1), "utf-8")
    done = run_vt("preview", vault=example_vault, check=0)
    terminal = dict(re.findall(r"^(\S+\.md) \(.*\n  claim: (.*)$", done.stdout, re.MULTILINE))
    assert sorted(terminal) == ["03_claims/DV1-0003.md", "03_claims/SA260324R-0125.md"]
    for path, claim in terminal.items():
        text = (example_vault / path).read_text(encoding="utf-8")
        line = text.split("### Atomic Claim\n\n", 1)[1].split("\n", 1)[0]
        _, _, struck, marked = diff_views(line)
        assert struck == "".join(re.findall(r"\[-(.*?)-\]", claim)), path
        assert marked == "".join(re.findall(r"\{\+(.*?)\+\}", claim)), path
        assert marked, path
    assert "[-並非-]{+不是+}" in terminal["03_claims/DV1-0003.md"]


# CJK, Latin words, spaces and every character of Markdown or Obsidian syntax
claim_texts = st.text(
    alphabet=st.sampled_from(list("為了驗證約等於小，。（）abXY 19\t*_~=|[]#<>&`$%^\\-+.!:/()")),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(claim_texts, claim_texts)
def test_any_claim_diff_renders_as_its_v1_and_v2(old: str, new: str) -> None:
    segments = text_diff(old, new)
    v1, v2, struck, marked = diff_views(markdown.diff_line(segments))
    assert one_line(v1) == one_line(old) and one_line(v2) == one_line(new)
    assert one_line(struck) == one_line("".join(t for k, t in segments if k == "delete"))
    assert one_line(marked) == one_line("".join(t for k, t in segments if k == "insert"))


def test_the_knowledge_base_block_copies_labels_as_text() -> None:
    uses = [Use("A-1", "comparison_entity_0", label, "03_claims/A.md") for label in HOSTILE]
    uses.append(Use('`$= dv.paragraph("x")`', "comparison_entity_1", "x", "03_claims/B.md"))
    block = kb_block(uses)
    assert live(block) == []
    seen = " ".join(shown(run) for run in inline_runs(block))
    for label in HOSTILE:
        assert f"comparison_entity_0, {one_line(label)}" in seen
    assert "<img" not in block and "`$=" not in block


def test_a_hostile_draft_value_lands_in_the_written_preview_as_text(make_vault) -> None:
    from tests.conftest import render_drafts, render_note, settings_for
    from vault_tools.review.preview import preview_vault

    value = '<img src=x onerror=alert(1)> `$= dv.paragraph("x")`'
    note = render_note(
        review_action="REQUEST_REPAIR",
        drafts=render_drafts(metadata={"epistemic_mode": value, "mapping_status": "COMPLETE"}),
    )
    vault = make_vault({"R.md": note})
    report = preview_vault(settings_for(vault))
    assert [p.state for p in report.previews] == ["PREVIEW_FAILED"]
    text = (vault / "03_claims" / "R.md").read_text(encoding="utf-8")
    block = text.split("<!-- vt:preview:start -->\n", 1)[1].split("<!-- vt:preview:end -->")[0]
    assert live(block) == []
    callout = [shown(run) for run in inline_runs(block.split("\n\n")[1])]
    assert any(json.dumps(value) in line for line in callout), callout  # as written
