"""`vt stats`'s cache against the plain rule: the figures computed with no cache.

The cache keeps the last figures under the ledger's head, and what each note added
under its stat signature. After any history of changes (a decided note's section or
V1 claim edited, a same-size edit with the mtime put back, a touch, a note removed, one
more decision applied), the figures `vault_stats` gives are those of a run on a copy of
the vault without `.vt/`. RACY_NS is 0 so that notes are only stat'ed when they may be,
and every change waits for the file system's next tick.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import copy_example_vault, each_alone, settings_for
from vault_tools.infra import filestat
from vault_tools.review.apply import apply_notes
from vault_tools.review.stats import vault_stats

TICK = 0.012  # past a 4 ms kernel tick, which stamps a file's times
DECIDED = ["03_claims/DV1-0001.md", "03_claims/DV1-0002.md"]  # alice's, in the example
PENDING = ["03_claims/DV1-0004.md", "03_claims/IX2-0328.md"]
CHANGES = [
    "section edited",
    "claim edited",
    "same size, mtime put back",
    "touched",
    "note removed",
    "decision applied",
]


def _replace_line(path: Path, start: str, new: str) -> None:
    text = path.read_text("utf-8")
    at = text.index(start)
    end = text.index("\n", at)
    path.write_text(text[:at] + new + text[end:], "utf-8")


def _change(vault: Path, change: str, n: int) -> None:
    time.sleep(TICK)
    note = vault / DECIDED[n % len(DECIDED)]
    if change == "decision applied":
        pending = vault / PENDING[n % len(PENDING)]
        if pending.is_file():
            _replace_line(pending, "review_action: ", "review_action: REJECT")
            apply_notes(settings_for(vault))
    elif not note.is_file():
        return
    elif change == "section edited":
        _replace_line(note, "- Section: ", f"- Section: part {n}")
    elif change == "claim edited":
        text = note.read_text("utf-8")
        at = text.index("## ② Atomic Claim\n") + len("## ② Atomic Claim\n")
        end = text.index("\n\n- Epistemic Mode", at)
        note.write_text(text[:at] + f"\nclaim number {n}" + text[end:], "utf-8")
    elif change == "same size, mtime put back":
        info, raw = note.stat(), bytearray(note.read_bytes())
        at = raw.index(b"- Section: ") + len(b"- Section: ")
        raw[at] = ord("Q") if raw[at] != ord("Q") else ord("R")
        note.write_bytes(bytes(raw))
        os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif change == "touched":
        os.utime(note)
    elif change == "note removed":
        note.unlink()


def _figures(vault: Path) -> dict:
    return vault_stats(settings_for(vault)).to_json()


@each_alone("changes", CHANGES)
@settings(max_examples=12, deadline=None)
@given(
    changes=st.lists(st.tuples(st.sampled_from(CHANGES), st.integers(0, 9)), min_size=1, max_size=4)
)
def test_figures_from_the_cache_are_the_figures_without_it(
    tmp_path_factory: pytest.TempPathFactory, changes: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("stats")
    vault = copy_example_vault(root / "vault")
    apply_notes(settings_for(vault))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(filestat, "RACY_NS", 0)
        time.sleep(TICK)
        _figures(vault)
        for change, n in changes:
            _change(vault, change, n)
            cold = root / "cold"
            shutil.rmtree(cold, ignore_errors=True)
            shutil.copytree(vault, cold, ignore=shutil.ignore_patterns(".vt"))
            assert _figures(vault) == _figures(cold), (change, changes)
