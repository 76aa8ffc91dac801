"""vt's block markers, read one way by the note parser, the writer and the watcher."""

from __future__ import annotations

import pytest

from tests.conftest import DEFAULT_CLAIM, render_note
from vault_tools.notes import markers, writer
from vault_tools.notes.note import parse_note


@pytest.mark.parametrize(
    ("line", "read"),
    [
        ("<!-- vt:preview:start -->", ("preview", "start")),
        ("<!--vt:preview:start-->", ("preview", "start")),
        ("   <!--\tvt:claims:end -->  \r\n", ("claims", "end")),
        ("<!-- vt:dashboard:end -->\n", ("dashboard", "end")),
        ("    <!-- vt:preview:start -->", None),  # 4 spaces: indented code
        ("<!-- vt:preview:start --> and text", None),
        ("<!-- vt:Preview:start -->", None),
        ("<!-- vt:preview:begin -->", None),
        ("<!-- a comment -->", None),
        ("text <!-- vt:preview:start -->", None),
        ("", None),
    ],
)
def test_read_marker(line: str, read: tuple[str, str] | None) -> None:
    assert markers.read_marker(line) == read


def test_vt_writes_the_marker_it_reads() -> None:
    for which in (markers.START, markers.END):
        assert markers.read_marker(markers.marker("preview", which)) == ("preview", which)


SPELLINGS = [
    ("<!-- vt:x:start -->", "<!-- vt:x:end -->"),
    ("<!--vt:x:start-->", "<!--vt:x:end-->"),
    ("  <!--  vt:x:start\t-->", "<!-- vt:x:end -->  "),
]


@pytest.mark.parametrize(("start", "end"), SPELLINGS)
def test_the_parser_the_writer_and_the_watcher_find_the_same_block(start: str, end: str) -> None:
    """A block in the Atomic Claim section: the parser leaves its text out of the claim,
    the writer finds it (and its content) and the watcher's check sees its start."""
    claim = f"{DEFAULT_CLAIM}\n{start}\nvt's words, not the reviewer's\n{end}"
    text = render_note(claim=claim)
    note = parse_note(text.encode(), "03_claims/X.md")
    assert note.claim is not None
    assert note.claim.text.value == DEFAULT_CLAIM
    assert writer.block_names(text) == ["x"]
    assert writer.block_content(text, "x") == "vt's words, not the reviewer's\n"
    assert markers.has_start(text.encode(), "x")
    assert not markers.has_start(text.encode(), "preview")


def test_a_marker_in_code_or_in_text_is_no_marker() -> None:
    text = render_note(claim=f"{DEFAULT_CLAIM} <!-- vt:x:start -->")
    assert writer.block_names(text) == []
    assert not markers.has_start(text.encode(), "x")
