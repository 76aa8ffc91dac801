"""`vt preview`'s cache in `.vt/`: a run with nothing to do shows what a full run shows,
and a note is previewed again when its bytes, the knowledge base or the schemas change."""

from __future__ import annotations

import marshal
import os
import shutil
from pathlib import Path

from tests.conftest import run_vt, settings_for
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
