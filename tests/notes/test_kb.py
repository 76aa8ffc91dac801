"""Entity targets resolve like Obsidian links, and never lead outside the vault."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import render_note, validate_vault
from vault_tools.notes import kb as kbmod
from vault_tools.notes.kb import KnowledgeBase, link_target, normalise
from vault_tools.notes.vault import markdown_files

KB = "04_knowledge_base"


def knowledge_base(vault: Path) -> KnowledgeBase:
    return KnowledgeBase(markdown_files(vault), KB)


@pytest.fixture
def vault(make_vault) -> Path:
    return make_vault({"DV1-0001.md": render_note()})


@pytest.mark.parametrize(
    "target",
    [
        "[[04_knowledge_base/Prefill]]",
        "04_knowledge_base/Prefill",
        "04_knowledge_base/Prefill.md",
        "04_knowledge_base/prefill",
        "04_KNOWLEDGE_BASE/PREFILL.MD",
        "[[04_knowledge_base/Prefill|the prefill phase]]",
        "[[04_knowledge_base/Prefill#Definition]]",
        "[[04_knowledge_base/Prefill#Definition|alias]]",
        "  [[04_knowledge_base/Prefill]]  ",
        "04_knowledge_base\\Prefill",
        "[[Prefill]]",
        "Prefill",
        "prefill.md",
    ],
)
def test_targets_that_resolve(vault: Path, target: str) -> None:
    found = knowledge_base(vault).resolve(target)
    assert found == kbmod.Resolution(kbmod.OK, f"{KB}/Prefill.md", f"{KB}/prefill")


def test_all_forms_of_one_note_share_a_key(vault: Path) -> None:
    base = knowledge_base(vault)
    keys = {
        base.resolve(t).key
        for t in ("[[04_knowledge_base/KV Cache|kv]]", "04_knowledge_base/kv cache.md", "KV Cache")
    }
    assert keys == {"04_knowledge_base/kv cache"}


def test_table_escaped_alias_resolves(vault: Path) -> None:
    assert link_target("[[04_knowledge_base/Prefill\\|alias]]") == "04_knowledge_base/Prefill"
    assert knowledge_base(vault).resolve("[[04_knowledge_base/Prefill\\|alias]]").status == "ok"


def test_unicode_normalisation_both_ways(make_vault) -> None:
    nfd_name = unicodedata.normalize("NFD", "Café Drafter")
    vault = make_vault(kb=[nfd_name])
    base = knowledge_base(vault)
    for target in (
        "04_knowledge_base/Café Drafter",
        f"{KB}/{nfd_name}",
        "[[04_knowledge_base/CAFÉ DRAFTER]]",
    ):
        assert base.resolve(target).status == kbmod.OK, target
    assert normalise("A\u0301.md") == normalise("Á") == "á"


@pytest.mark.parametrize(
    "target",
    [
        "04_knowledge_base/../../etc/passwd",
        "../outside",
        "[[04_knowledge_base/../04_knowledge_base/Prefill]]",
        "04_knowledge_base\\..\\..\\secret",
        "/etc/passwd",
        "[[/etc/passwd]]",
        "\\\\server\\share\\x",
        "C:\\Windows\\win",
        "c:/x",
        "~/notes/x",
    ],
)
def test_targets_that_escape(vault: Path, target: str) -> None:
    assert knowledge_base(vault).resolve(target).status == kbmod.ESCAPE


def test_absolute_path_to_a_real_kb_note_still_escapes(vault: Path) -> None:
    absolute = str(vault / KB / "Prefill")
    assert knowledge_base(vault).resolve(absolute).status == kbmod.ESCAPE


def test_symlink_in_kb_pointing_outside_the_vault_escapes(tmp_path: Path, vault: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# secret\n", encoding="utf-8")
    os.symlink(secret, vault / KB / "Leak.md")
    os.symlink(vault / KB / "Prefill.md", vault / KB / "Prefill Alias.md")  # stays inside
    base = knowledge_base(vault)
    assert base.resolve("04_knowledge_base/Leak").status == kbmod.ESCAPE
    assert base.resolve("[[Leak]]").status == kbmod.ESCAPE
    assert base.resolve("04_knowledge_base/Prefill Alias").status == kbmod.OK


def test_symlinked_folder_leading_out_is_not_followed(tmp_path: Path, vault: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Deep.md").write_text("# deep\n", encoding="utf-8")
    os.symlink(outside, vault / KB / "linked", target_is_directory=True)
    assert knowledge_base(vault).resolve("04_knowledge_base/linked/Deep").status != kbmod.OK


def test_symlink_loop_does_not_crash(vault: Path) -> None:
    os.symlink("Loop.md", vault / KB / "Loop.md")
    files = markdown_files(vault)
    assert any(f.relative == f"{KB}/Loop.md" for f in files)
    assert knowledge_base(vault).resolve("04_knowledge_base/Loop").status != kbmod.OK
    assert validate_vault(vault).errors == 0


def test_bare_name_resolves_only_when_unique(make_vault) -> None:
    vault = make_vault(
        kb={"Prefill.md": "# a\n", "sub/Prefill.md": "# b\n", "sub/Unique Thing.md": "# u\n"}
    )
    base = knowledge_base(vault)
    assert base.resolve("[[Unique Thing]]") == kbmod.Resolution(
        kbmod.OK, f"{KB}/sub/Unique Thing.md", f"{KB}/sub/unique thing"
    )
    assert base.resolve("[[Prefill]]").status == kbmod.MISSING  # two notes are named Prefill
    assert base.resolve("04_knowledge_base/Prefill").status == kbmod.OK  # a full path is exact


def test_target_outside_the_knowledge_base(vault: Path) -> None:
    base = knowledge_base(vault)
    found = base.resolve("[[03_claims/DV1-0001]]")
    assert (found.status, found.path) == (kbmod.OUTSIDE_KB, "03_claims/DV1-0001.md")
    assert base.resolve("DV1-0001").status == kbmod.OUTSIDE_KB  # bare name, unique, not in KB


def test_kb_prefix_is_a_folder_not_a_string_prefix(make_vault) -> None:
    vault = make_vault({"04_knowledge_base_old/Prefill.md": "# old\n"})
    found = knowledge_base(vault).resolve("04_knowledge_base_old/Prefill")
    assert found.status == kbmod.OUTSIDE_KB


@pytest.mark.parametrize(
    "target",
    [
        "04_knowledge_base/Nothing",
        "[[]]",
        "",
        "Nothing",
        "04_knowledge_base",
        "04_knowledge_base/Prefill/",
    ],
)
def test_targets_that_are_missing(vault: Path, target: str) -> None:
    assert knowledge_base(vault).resolve(target).status == kbmod.MISSING


def test_dot_folders_are_not_notes(vault: Path) -> None:
    (vault / ".obsidian" / "Hidden.md").write_text("# h\n", encoding="utf-8")
    (vault / ".trash").mkdir()
    (vault / ".trash" / "Gone.md").write_text("# g\n", encoding="utf-8")
    base = knowledge_base(vault)
    assert base.resolve(".obsidian/Hidden").status != kbmod.OK
    assert base.resolve("Gone").status == kbmod.MISSING
    assert all(not f.relative.startswith(".") for f in markdown_files(vault))


def test_digest_changes_with_the_file_list_only(vault: Path) -> None:
    before = knowledge_base(vault).digest
    (vault / KB / "Prefill.md").write_text("# changed content\n", encoding="utf-8")
    assert knowledge_base(vault).digest == before
    (vault / KB / "New Entity.md").write_text("# new\n", encoding="utf-8")
    assert knowledge_base(vault).digest != before


def test_notes_in_kb_lists_only_kb_notes(vault: Path) -> None:
    listed = knowledge_base(vault).notes_in_kb()
    assert f"{KB}/Prefill.md" in listed and all(p.startswith(f"{KB}/") for p in listed)
    assert "03_claims/DV1-0001.md" not in listed


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("[[04_knowledge_base/X|alias]]", "04_knowledge_base/X"),
        ("[[X#Heading]]", "X"),
        ("[[X#Heading|a]]", "X"),
        ("plain/X", "plain/X"),
        ("[[ X ]]", "X"),
    ],
)
def test_link_target(raw: str, expected: str) -> None:
    assert link_target(raw) == expected


# --- the compact index: same answers as a dict of every file ------------------------------


def _reference(base: KnowledgeBase, target: str) -> kbmod.Resolution:
    """The resolution by plain dicts of every file's key and name (the index before)."""
    by_key: dict[str, str] = {}
    by_name: dict[str, list[str]] = {}
    for relative in base.listing.paths:
        key = normalise(relative)
        by_key.setdefault(key, relative)
        by_name.setdefault(key.rsplit("/", 1)[-1], []).append(relative)
    link = link_target(target)
    key = normalise(link)
    if kbmod._escapes(link):
        return kbmod.Resolution(kbmod.ESCAPE, key=key)
    path = by_key.get(key)
    if path is None and "/" not in key:
        named = by_name.get(key, [])
        path = named[0] if len(named) == 1 else None
    if path is None:
        return kbmod.Resolution(kbmod.MISSING, key=key)
    if path in base.listing.escaping:
        return kbmod.Resolution(kbmod.ESCAPE, path, key)
    status = kbmod.OK if normalise(path).startswith(base.kb_prefix) else kbmod.OUTSIDE_KB
    return kbmod.Resolution(status, path, normalise(path))


@pytest.fixture
def mixed(tmp_path: Path, make_vault) -> Path:
    """Review notes in several folders, names shared across folders and by case."""
    vault = make_vault(
        {
            "DV1-0001.md": render_note(),
            "other/deep/R-2.md": render_note(),
            "Shared.md": "# in claims\n",
            "notes/Case.md": "# upper\n",
            "notes/case.md": "# lower\n",
            "notes/Only Here.md": "# o\n",
            "Prefill.md": "# a review folder's Prefill\n",
        },
        kb={
            "Shared.md": "# in kb\n",
            "sub/Deep Entity.md": "# d\n",
            "Twin.md": "# t\n",
            "TWIN.md": "# T\n",
        },
    )
    (tmp_path / "secret.md").write_text("# s\n", encoding="utf-8")
    os.symlink(tmp_path / "secret.md", vault / "notes" / "Leak.md")
    return vault


MIXED_TARGETS = [
    "[[03_claims/DV1-0001]]",
    "03_claims/dv1-0001.md",
    "[[DV1-0001]]",
    "[[other/deep/R-2]]",
    "other/Deep/r-2",
    "R-2",
    "[[Shared]]",
    "03_claims/Shared",
    "04_knowledge_base/Shared",
    "notes/case",
    "notes/Case",
    "[[Case]]",
    "Only Here",
    "[[notes/Only Here|x]]",
    "Deep Entity",
    "04_knowledge_base/sub/deep entity",
    "Twin",
    "04_knowledge_base/twin",
    "notes/Leak",
    "Leak",
    "Prefill",
    "04_knowledge_base/Prefill",
    "[[KV Cache]]",
    "Nothing",
    "notes/nothing",
    "04_knowledge_base/Nothing",
    "../x",
    "",
    "deep",
    "03_claims",
]


def test_targets_naming_review_notes_anywhere_are_outside_the_kb(mixed: Path) -> None:
    base = knowledge_base(mixed)
    for target in ("[[03_claims/DV1-0001]]", "DV1-0001", "03_CLAIMS/dv1-0001.md"):
        assert base.resolve(target) == kbmod.Resolution(
            kbmod.OUTSIDE_KB, "03_claims/DV1-0001.md", "03_claims/dv1-0001"
        ), target
    for target in ("[[other/deep/R-2]]", "r-2"):
        assert base.resolve(target) == kbmod.Resolution(
            kbmod.OUTSIDE_KB, "other/deep/R-2.md", "other/deep/r-2"
        ), target


def test_bare_names_across_folders(mixed: Path) -> None:
    base = knowledge_base(mixed)
    assert base.resolve("[[Shared]]").status == kbmod.MISSING  # in claims and in the KB
    assert base.resolve("03_claims/Shared").path == "03_claims/Shared.md"
    assert base.resolve("[[04_knowledge_base/Shared]]").status == kbmod.OK
    assert base.resolve("Only Here") == kbmod.Resolution(
        kbmod.OUTSIDE_KB, "notes/Only Here.md", "notes/only here"
    )
    assert base.resolve("Deep Entity") == kbmod.Resolution(
        kbmod.OK, f"{KB}/sub/Deep Entity.md", f"{KB}/sub/deep entity"
    )
    assert base.resolve("[[Case]]").status == kbmod.MISSING  # notes/Case.md and case.md
    assert base.resolve("Prefill").status == kbmod.MISSING  # in claims and in the KB
    assert base.resolve("notes/Leak").status == base.resolve("Leak").status == kbmod.ESCAPE


def test_keys_shared_by_case_resolve_to_the_first_listed(mixed: Path) -> None:
    base = knowledge_base(mixed)
    assert base.resolve("notes/case").path == "notes/Case.md"
    assert base.resolve("04_knowledge_base/twin").path == f"{KB}/TWIN.md"
    assert [p for p in base.notes_in_kb() if "win" in p.lower()] == [f"{KB}/TWIN.md"]


@pytest.mark.parametrize(
    "key_hash",
    [hash, lambda text: 0, lambda text: -len(text), lambda text: 2**62 + ord(text[:1] or " ")],
)
def test_the_index_answers_as_dicts_of_every_file(
    mixed: Path, key_hash, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hash collision (here forced) never resolves a target to another file."""
    monkeypatch.setattr(kbmod, "_key_hash", key_hash)
    base = knowledge_base(mixed)
    found = [base.resolve(target) for target in MIXED_TARGETS]
    assert found == [_reference(base, target) for target in MIXED_TARGETS]
    assert {r.status for r in found} == {kbmod.OK, kbmod.OUTSIDE_KB, kbmod.MISSING, kbmod.ESCAPE}
    monkeypatch.setattr(kbmod, "_key_hash", hash)
    assert knowledge_base(mixed).notes_in_kb() == base.notes_in_kb()


def test_an_empty_listing_resolves_nothing() -> None:
    from vault_tools.notes.vault import Listing

    base = KnowledgeBase(Listing([]), KB)
    assert base.resolve("[[Prefill]]").status == base.resolve("a/b").status == kbmod.MISSING
    assert base.notes_in_kb() == []
