"""The reporter's streamed JSON against the plain rule: `json.dumps` of the whole document.

`FindingStream` renders `vt validate --json`'s findings by one template (`json_items`)
and writes them in batches; `Reporter.json_streamed` writes `vt apply --json`'s items one
by one. Both promise the bytes `Reporter.json` writes for the whole object at once, so
generated findings (unicode, control characters, any line, packed or not, split into
blocks and batches of any size) and generated payloads (nested values, empty lists,
iterators) are held to those bytes, and parsed back to the values given.
"""

from __future__ import annotations

import ast
import io
import json
import marshal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import copy_example_vault
from vault_tools.checks.note_results import plain_text
from vault_tools.checks.sink import Block
from vault_tools.cli.output import FindingStream, Reporter, json_items
from vault_tools.errors import VtError
from vault_tools.findings import CODES, ERROR, WARNING, Finding

# every code point, lone surrogates and control characters included
TEXT = st.text(st.characters(blacklist_categories=()), max_size=12)
# severities and codes that a joined key of the two would confuse
SEPARATORS = st.sampled_from(["", "\0", "a", "a\0", "\0a"])
paths = st.sampled_from(["03_claims/a.md", "03_claims/b é.md", "x/標準.md"]) | TEXT
findings = st.builds(
    Finding,
    path=paths,
    line=st.none() | st.integers(0, 10) | st.integers(0, 2**62),
    severity=st.sampled_from([ERROR, WARNING]) | SEPARATORS | TEXT,
    code=st.sampled_from(sorted(CODES)) | SEPARATORS | TEXT,
    message=TEXT,
)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)
LISTS = st.lists(values, max_size=4)  # given as iterators
tails = st.dictionaries(TEXT, values, min_size=1, max_size=3)  # the run's counts, or "error"


def _reporter() -> tuple[Reporter, io.StringIO]:
    out = io.StringIO()
    return Reporter(as_json=True, out=out, err=io.StringIO()), out


def _whole(payload: dict[str, Any]) -> str:
    """What `Reporter.json` writes for the whole object: the plain rule."""
    reporter, out = _reporter()
    reporter.json(payload)
    return out.getvalue()


def _block(path: str, found: list[Finding], packed: bool) -> Block:
    """A block as a cold run makes it (Findings) or as the cache gives it (packed)."""
    if not packed:
        return Block.of(path, found)
    errors = sum(1 for f in found if f.severity == ERROR)
    payload = (marshal.dumps(tuple(map(tuple, found))), plain_text(found))
    return Block(path, errors, len(found) - errors, payload)


@settings(max_examples=100, deadline=None)
@given(
    blocks=st.lists(st.tuples(st.lists(findings, max_size=5), st.booleans()), max_size=6),
    tail=tails,
    batch=st.integers(1, 4),
)
def test_streamed_findings_are_the_bytes_of_one_json_dumps(
    blocks: list[tuple[list[Finding], bool]], tail: dict[str, Any], batch: int
) -> None:
    reporter, out = _reporter()
    stream = FindingStream(reporter)
    stream.BATCH = batch  # written in batches of every size, down to one finding
    given_findings: list[Finding] = []
    for found, packed in blocks:
        if found:
            stream.block(_block(found[0].path, found, packed))
            given_findings += found
    stream.close(tail)
    document = {"findings": [f.to_json() for f in given_findings], **tail}
    assert out.getvalue() == _whole(document)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(document))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(findings, max_size=8))
def test_json_items_are_json_dumps_of_each_finding(rows: list[Finding]) -> None:
    """Each item, with the separators FindingStream puts between them, is the finding
    as json.dumps writes it at the depth of "findings"'s items; plain tuples too."""
    items = json_items([tuple(r) for r in rows])
    rendered = "[" + ",".join(items) + ("\n  ]" if items else "]")
    expected = json.dumps([r.to_json() for r in rows], ensure_ascii=False, indent=2)
    assert rendered == expected.replace("\n", "\n  ")


@settings(max_examples=50, deadline=None)
@given(found=st.lists(findings, min_size=1, max_size=5), message=TEXT)
def test_a_run_cut_short_still_writes_one_json_document(found: list[Finding], message: str) -> None:
    reporter, out = _reporter()
    stream = FindingStream(reporter)
    stream.block(Block.of(found[0].path, found))
    stream.abort(VtError(message))
    document = {"findings": [f.to_json() for f in found], "error": message}
    assert out.getvalue() == _whole(document)


@settings(max_examples=100, deadline=None)
@given(
    payload=st.dictionaries(
        TEXT, st.tuples(values, st.booleans()) | st.tuples(LISTS, st.just(True)), max_size=4
    )
)
def test_json_streamed_is_the_bytes_of_reporter_json(payload: dict[str, tuple[Any, bool]]) -> None:
    """A list given as an iterator (apply's items, one per note) streams to the bytes
    of the whole list; empty lists and nested values included."""
    whole = {key: value for key, (value, _) in payload.items()}

    def streamed(value: Any, as_iterator: bool) -> Any:
        return iter(value) if as_iterator and isinstance(value, list) else value

    reporter, out = _reporter()
    given_payload = {key: streamed(*pair) for key, pair in payload.items()}
    reporter.json_streamed(given_payload)
    assert out.getvalue() == _whole(whole)


def test_a_piped_run_imports_neither_rich_nor_another_commands_core(tmp_path: Path) -> None:
    """The lazy imports of cli/ (docs/architecture.md): `vt validate` piped, in a real
    process, loads rich only for a terminal and no other command's core."""
    vault = copy_example_vault(tmp_path / "vault")
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.__stderr__.write(repr(sorted(sys.modules))))\n"
        "from vault_tools.__main__ import main\n"
        f"sys.argv = ['vt', 'validate', '--vault', {str(vault)!r}]\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stderr[done.stderr.index("[") :]))
    cores = {"vault_tools.review.apply", "vault_tools.review.preview", "vault_tools.review.stats"}
    assert "vault_tools.checks.validate" in loaded
    assert not loaded & ({"rich", "rich.console"} | cores)
