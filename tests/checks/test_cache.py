"""`vt validate`'s cache as a whole against the plain rule: a run without it.

The cache keeps each note's findings under its stat signature and digest, the knowledge
base's folder and aliases, the targets a note resolved through the whole listing
(`WIDE`), and the piped output of the last unchanged run (the memo). After any history
of edits (a note's bytes, a same-size edit with the mtime put back, a touch, a note
added, removed or renamed, a knowledge-base note added, removed or given an alias, a
file elsewhere that a bare `[[Name]]` now resolves to, vt.toml's disabled findings, the
schemas), a warm run prints what a run on a copy without `.vt/` prints, piped and as
JSON. RACY_NS is 0 so that notes are only stat'ed when they may be, and every edit waits
for the file system's next tick.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_VAULT, copy_example_vault, each_alone, settings_for
from vault_tools.checks.validate import validate_into
from vault_tools.cli.output import FindingStream, Reporter
from vault_tools.infra import filestat

TICK = 0.012  # past a 4 ms kernel tick, which stamps a file's times
CLAIMS, KB = "03_claims", "04_knowledge_base"
NOTE = f"{CLAIMS}/DV1-0003.md"  # names "04_knowledge_base/Likelihood Loss" in its drafts
# knowledge-base notes the example notes name
NAMED = ["DSpark.md", "Total Variation Loss.md", "IC design verification.md", "Likelihood Loss.md"]
EDITS = [
    "claim edited",
    "same size, mtime put back",
    "touched",
    "note added",
    "note removed",
    "note renamed",
    "kb note added",
    "kb note removed",
    "alias added",
    "bare target elsewhere",
    "config",
    "schemas",
]


def _toggle(path: Path, one: str, other: str) -> None:
    text = path.read_text("utf-8")
    text = text.replace(one, other, 1) if one in text else text.replace(other, one, 1)
    path.write_text(text, "utf-8")


def _edit(vault: Path, edit: str, n: int) -> None:
    time.sleep(TICK)
    claims = sorted((vault / CLAIMS).glob("*.md"))
    note = claims[n % len(claims)] if claims else None
    if edit == "claim edited" and note is not None:
        _toggle(note, "- Epistemic Mode: ASSERTED", "- Epistemic Mode: MAYBE")
    elif edit == "same size, mtime put back" and note is not None:
        info = note.stat()
        _toggle(note, "review_action: ", "review_actioN: ")
        os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif edit == "touched" and note is not None:
        os.utime(note)
    elif edit == "note added":
        text = (EXAMPLE_VAULT / NOTE).read_text("utf-8").replace("DV1-0003", f"NEW-{n:04d}")
        (vault / CLAIMS / f"NEW-{n:04d}.md").write_text(text, "utf-8")
    elif edit == "note removed" and note is not None:
        note.unlink()
    elif edit == "note renamed" and note is not None:
        note.rename(note.with_name(f"renamed-{n}-{note.name}"))
    elif edit == "kb note added":
        (vault / KB / f"Entity {n}.md").write_text(f"---\naliases: [E{n}]\n---\n# E\n", "utf-8")
    elif edit == "kb note removed":  # one the notes name: removed, or put back
        kb_note = vault / KB / NAMED[n % len(NAMED)]
        if kb_note.is_file():
            kb_note.unlink()
        else:
            shutil.copyfile(EXAMPLE_VAULT / KB / kb_note.name, kb_note)
    elif edit == "alias added":  # the label IX2-0328 maps to it: its warning goes
        kb_note = vault / KB / "IC design verification.md"
        if kb_note.is_file():
            _toggle(kb_note, "aliases: [", "aliases: [verification, ")
    elif edit == "bare target elsewhere":
        if (vault / NOTE).is_file():
            _toggle(vault / NOTE, '"04_knowledge_base/Likelihood Loss"', '"Likelihood Loss"')
        other = vault / "06_other" / "Likelihood Loss.md"
        if other.is_file():
            other.unlink()
        else:
            other.parent.mkdir(exist_ok=True)
            other.write_text("# another one\n", "utf-8")
    elif edit == "config":
        config = vault / "vt.toml"
        wanted = '[findings]\ndisable = ["assist-frame-expression", "assist-mapping-unrelated"]\n'
        config.write_text("" if config.is_file() and config.read_text() else wanted, "utf-8")
    elif edit == "schemas":
        enums = vault / "s" / "enums.json"
        enums.parent.mkdir(exist_ok=True)
        modes = ["ASSERTED", "HYPOTHETICAL", "MAYBE"] if n % 2 else ["CERTAIN"]
        enums.write_text(json.dumps({"epistemic_mode": modes}), "utf-8")
        config = vault / "vt.toml"
        if not config.is_file() or "schemas_dir" not in config.read_text("utf-8"):
            with config.open("a", encoding="utf-8") as handle:
                handle.write('[paths]\nschemas_dir = "s"\n')


def _run(vault: Path) -> tuple[str, str, object]:
    """The piped output, the --json output and the counts of one vault run."""
    shown = []
    for as_json in (False, True):
        out = io.StringIO()
        stream = FindingStream(Reporter(as_json, out=out, err=io.StringIO()))
        summary = validate_into(settings_for(vault, assist=True), stream)
        if as_json:
            stream.close({"notes": summary.notes})
        shown.append(out.getvalue())
    return shown[0], shown[1], summary[:3]


@each_alone("edits", EDITS, 1)
@settings(max_examples=15, deadline=None)
@given(
    edits=st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 99)), min_size=1, max_size=5)
)
def test_a_warm_run_prints_what_a_run_without_the_cache_prints(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("validate")
    vault = copy_example_vault(root / "vault")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(filestat, "RACY_NS", 0)
        _run(vault)
        for edit, n in edits:
            _edit(vault, edit, n)
            cold = root / "cold"
            shutil.rmtree(cold, ignore_errors=True)
            shutil.copytree(vault, cold, ignore=shutil.ignore_patterns(".vt"))
            assert _run(vault) == _run(cold), (edit, edits)
            assert _run(vault) == _run(cold), (edit, edits)  # and from the memo
