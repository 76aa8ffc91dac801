"""`vt preview`'s cache in `.vt/`: a run with nothing to do shows what a full run shows,
and a note is previewed again when its bytes, the knowledge base or the schemas change."""

from __future__ import annotations

import json
import marshal
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import copy_example_vault, run_vt, settings_for
from vault_tools.infra import filestat
from vault_tools.review.preview import preview_vault
from vault_tools.review.preview_cache import CACHE_FILE, FORMAT

MARKED = "03_claims/DV1-0003.md"  # marked REQUEST_REPAIR in the example vault
SENTINEL = "from-the-cache"


def _vt_preview(vault: Path, *args: str) -> bytes:
    done = run_vt("preview", "--json", *args, vault=vault, text=False)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def _hash_of(vault: Path, path: str = MARKED, **options: bool) -> str | None:
    previews = preview_vault(settings_for(vault), **options).previews
    return next(p.preview_hash for p in previews if p.path == path)


def _plant_sentinel(vault: Path, path: str = MARKED) -> None:
    """Rewrite the cached result of `path` so that a run answered by the cache shows it."""
    cache = vault / ".vt" / CACHE_FILE
    fmt, key, saved_ns, aliases, listing, entries = marshal.loads(cache.read_bytes())
    stat, digest, packed, wide = entries[path]
    entries[path] = (stat, digest, (*packed[:6], SENTINEL), wide)
    cache.write_bytes(marshal.dumps((fmt, key, saved_ns, aliases, listing, entries)))


def _cached_vault(example_vault: Path) -> Path:
    """The example vault after two vault runs (the first writes the marked notes), with
    the sentinel planted; a run answered by the cache shows it."""
    preview_vault(settings_for(example_vault))
    preview_vault(settings_for(example_vault))
    _plant_sentinel(example_vault)
    assert _hash_of(example_vault) == SENTINEL
    _plant_sentinel(example_vault)  # the run above may have saved its own entry
    return example_vault


def test_runs_answered_by_the_cache_print_what_an_uncached_run_prints(
    example_vault: Path, tmp_path: Path
) -> None:
    first = _vt_preview(example_vault)
    second = _vt_preview(example_vault)  # the written notes read once and compared
    third = _vt_preview(example_vault)  # every note only stat'ed
    uncached = tmp_path / "uncached"
    shutil.copytree(example_vault, uncached)
    (uncached / ".vt" / CACHE_FILE).unlink()
    expected = _vt_preview(uncached).replace(str(uncached).encode(), str(example_vault).encode())
    assert b'"written": true' in first and b'"written": true' not in expected
    assert second == third == expected
    notes = sorted(p.name for p in (example_vault / "03_claims").iterdir())
    for name in notes:  # and nothing was written by the cached runs
        assert (example_vault / "03_claims" / name).read_bytes() == (
            uncached / "03_claims" / name
        ).read_bytes()


def test_an_edited_note_is_previewed_again(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    note = vault / MARKED
    info = note.stat()
    note.write_bytes(note.read_bytes() + b"\n")
    os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))  # its mtime restored
    assert _hash_of(vault) not in (None, SENTINEL)


def test_a_same_size_edit_with_its_stat_restored_is_previewed_again(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    note = vault / MARKED
    raw = note.read_bytes()
    at = raw.rindex(b"alice") if b"alice" in raw else raw.rindex(b"e")
    info = note.stat()
    note.write_bytes(raw[:at] + b"A" + raw[at + 1 :])
    os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert _hash_of(vault) != SENTINEL


def test_a_change_of_a_knowledge_base_notes_aliases_invalidates_it(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    kb_note = vault / "04_knowledge_base" / "KL Divergence.md"
    text = kb_note.read_text(encoding="utf-8")
    kb_note.write_text(text.replace("aliases: [", "aliases: [KLD, ", 1), encoding="utf-8")
    assert "aliases: [KLD, " in kb_note.read_text(encoding="utf-8")
    assert _hash_of(vault) != SENTINEL


def test_a_new_knowledge_base_note_invalidates_it(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    (vault / "04_knowledge_base" / "Total Variation Loss.md").unlink()
    assert _hash_of(vault) != SENTINEL


def test_a_note_added_or_removed_outside_the_knowledge_base_keeps_it(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    added = vault / "03_claims" / "Scratch.md"
    added.write_text("# notes of my own\n", "utf-8")
    assert _hash_of(vault) == SENTINEL
    added.unlink()
    assert _hash_of(vault) == SENTINEL


def test_a_file_added_that_changes_a_bare_draft_target_previews_it_again(
    example_vault: Path,
) -> None:
    note = example_vault / MARKED
    text = note.read_text("utf-8")
    note.write_text(text.replace('"04_knowledge_base/Likelihood Loss"', '"Likelihood Loss"'))
    vault = _cached_vault(example_vault)
    (vault / "06_other").mkdir()
    (vault / "06_other" / "Likelihood Loss.md").write_text("# two of them\n", "utf-8")
    assert _hash_of(vault) not in (None, SENTINEL)


def test_a_change_of_the_schemas_invalidates_it(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    (vault / "s").mkdir()
    (vault / "s" / "enums.json").write_text('{"epistemic_mode": ["CERTAIN"]}', "utf-8")
    (vault / "vt.toml").write_text('[paths]\nschemas_dir = "s"\n', "utf-8")
    assert _hash_of(vault) != SENTINEL


def test_a_cache_of_another_format_is_not_taken(example_vault: Path) -> None:
    """The format is bumped when what a kept result means changes (format 1 kept a claim
    cut into characters, and a block written before the diff marked words): such a
    cache is dropped, and every note is previewed again."""
    vault = _cached_vault(example_vault)
    cache = vault / ".vt" / CACHE_FILE
    fmt, *rest = marshal.loads(cache.read_bytes())
    assert fmt == FORMAT
    cache.write_bytes(marshal.dumps((FORMAT - 1, *rest)))
    assert _hash_of(vault) not in (None, SENTINEL)


def test_dry_runs_and_notes_given_never_take_it(example_vault: Path) -> None:
    vault = _cached_vault(example_vault)
    assert _hash_of(vault, dry_run=True) != SENTINEL
    given = preview_vault(settings_for(vault), [vault / MARKED]).previews
    assert [p.preview_hash for p in given] != [SENTINEL]
    assert _hash_of(vault) == SENTINEL  # neither touched the cache


def test_a_vault_whose_state_folder_cannot_be_written_still_previews(
    example_vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (example_vault / ".vt").symlink_to(outside)  # leads outside the vault: never written
    assert _hash_of(example_vault) is not None
    assert _hash_of(example_vault) is not None
    assert list(outside.iterdir()) == []


# --- the cache as a whole against the plain rule -------------------------------------
#
# The plain rule: a vault run of `vt preview` with no cache. After any history of edits
# (drafts, V1's claim, the evidence, V1's frame, the review action, a touch or the same
# bytes written again, a same-size edit with the mtime put back, vt.toml's disabled
# findings, the schemas, a knowledge-base note's aliases), a run that may answer from
# the cache reports what a run on a copy of the vault without `.vt/` reports, and leaves
# every note byte for byte as that run leaves it. RACY_NS is 0 so that notes are only
# stat'ed when they may be, and every edit waits for the file system's next tick.

TICK = 0.012  # past a 4 ms kernel tick, which stamps a file's times
SECOND = "03_claims/SA260324R-0125.md"  # the example vault's other REQUEST_REPAIR note
EDITS = [
    "draft",
    "claim",
    "evidence",
    "frame",
    "action",
    "touched",
    "same bytes written",
    "same size, mtime put back",
    "config",
    "schemas",
    "aliases",
]


def _line_after(text: str, heading: str, mark: str) -> str:
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(heading)) + 1
    while not lines[at].strip():
        at += 1
    lines[at] += mark
    return "\n".join(lines)


def _toggle(path: Path, one: str, other: str) -> None:
    text = path.read_text("utf-8")
    path.write_text(
        text.replace(one, other, 1) if one in text else text.replace(other, one, 1), "utf-8"
    )


def _edit(vault: Path, edit: str, n: int) -> None:
    time.sleep(TICK)
    note = vault / (MARKED if n % 2 else SECOND)
    text = note.read_text("utf-8")
    mark = f" e{n}"
    if edit == "draft":
        note.write_text(_line_after(text, "### V2 Atomic Claim Draft", mark), "utf-8")
    elif edit == "claim":
        note.write_text(_line_after(text, "## ② Atomic Claim", mark), "utf-8")
    elif edit == "evidence":
        note.write_text(_line_after(text, "### Evidence", mark), "utf-8")
    elif edit == "frame":
        _toggle(note, '"frame_type": "COMPARISON"', '"frame_type": "CAUSAL"')
    elif edit == "action":
        _toggle(note, "review_action: REQUEST_REPAIR", "review_action: PENDING")
    elif edit == "touched":
        os.utime(note)
    elif edit == "same bytes written":
        note.write_bytes(note.read_bytes())
    elif edit == "same size, mtime put back":
        info, raw = note.stat(), bytearray(note.read_bytes())
        heading = b"### V2 Atomic Claim Draft\n"  # a draft: what its preview shows
        at = raw.index(heading) + len(heading) + (n % 7)
        while not chr(raw[at]).isalpha() or raw[at] > 0x7F:  # an ASCII letter: still UTF-8
            at += 1
        raw[at] = ord("Q") if raw[at] != ord("Q") else ord("R")
        note.write_bytes(bytes(raw))
        os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif edit == "config":
        config = vault / "vt.toml"
        wanted = '[findings]\ndisable = ["assist-mode-unhedged", "frame-schema"]\n'
        config.write_text("" if config.is_file() and config.read_text() else wanted, "utf-8")
    elif edit == "schemas":
        enums = vault / "s" / "enums.json"
        enums.parent.mkdir(exist_ok=True)
        modes = ["ASSERTED", "HYPOTHETICAL"] if n % 2 else ["CERTAIN"]
        enums.write_text(json.dumps({"epistemic_mode": modes}), "utf-8")
        config = vault / "vt.toml"
        if not config.is_file() or "schemas_dir" not in config.read_text("utf-8"):
            with config.open("a", encoding="utf-8") as handle:
                handle.write('[paths]\nschemas_dir = "s"\n')
    elif edit == "aliases":
        _toggle(vault / "04_knowledge_base" / "KL Divergence.md", "aliases: [", "aliases: [KLD, ")


def _run(vault: Path) -> tuple[object, dict[str, bytes]]:
    report = preview_vault(settings_for(vault, assist=True)).to_json()
    shown = json.loads(json.dumps(report).replace(str(vault), "VAULT"))
    notes = {p.relative_to(vault).as_posix(): p.read_bytes() for p in sorted(vault.rglob("*.md"))}
    return shown, notes


@settings(max_examples=15, deadline=None)
@given(
    edits=st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 99)), min_size=1, max_size=4)
)
def test_a_run_from_the_cache_is_a_run_without_it(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("preview")
    vault = copy_example_vault(root / "vault")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(filestat, "RACY_NS", 0)
        _run(vault)  # writes the marked notes
        time.sleep(TICK)
        _run(vault)  # reads them back once; the next run only stats them
        for edit, n in edits:
            _edit(vault, edit, n)
            uncached = root / "uncached"
            shutil.rmtree(uncached, ignore_errors=True)
            shutil.copytree(vault, uncached, ignore=shutil.ignore_patterns(".vt"))
            assert _run(vault) == _run(uncached), (edit, edits)
