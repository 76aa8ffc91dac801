"""The vault listing: plain sorted strings, the escaping symlinks apart, one digest."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from vault_tools.notes import kb as kbmod
from vault_tools.notes.kb import KnowledgeBase
from vault_tools.notes.vault import (
    Listing,
    MarkdownFile,
    NotAFile,
    TooLarge,
    list_vault,
    markdown_files,
    read_file,
    read_finding,
)

KB = "04_knowledge_base"


def _write(vault: Path, relative: str, text: str = "# x\n") -> None:
    path = vault / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    for relative in (
        "b.md",
        "a/z.md",
        "a/b.md",
        f"{KB}/Prefill.md",
        ".obsidian/h.md",
        "notes.txt",
        "a b/c.md",
    ):
        _write(vault, relative)
    return vault


def test_listing_is_sorted_strings_without_dot_folders(vault: Path) -> None:
    listing = list_vault(vault)
    assert listing.paths == [f"{KB}/Prefill.md", "a b/c.md", "a/b.md", "a/z.md", "b.md"]
    assert listing.escaping == frozenset()
    assert listing.inside() is listing.paths  # shared, not copied, when nothing escapes
    assert (
        listing.files() == markdown_files(vault) == [MarkdownFile(path) for path in listing.paths]
    )


def test_symlinks_leading_out_are_kept_apart(tmp_path: Path, vault: Path) -> None:
    (tmp_path / "secret.md").write_text("# s\n", encoding="utf-8")
    os.symlink(tmp_path / "secret.md", vault / "a" / "leak.md")
    os.symlink(vault / "b.md", vault / "a" / "inside.md")
    listing = list_vault(vault)
    assert listing.escaping == frozenset({"a/leak.md"})
    assert "a/leak.md" in listing.paths and "a/leak.md" not in listing.inside()
    assert "a/inside.md" in listing.inside()
    assert [f.relative for f in markdown_files(vault) if f.escapes] == ["a/leak.md"]
    assert Listing.of(markdown_files(vault)) == listing


def test_what_cannot_be_listed_or_read_is_a_problem_not_a_silence(
    tmp_path: Path, vault: Path
) -> None:
    os.mkfifo(vault / "a" / "pipe.md")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.md").write_text("# o\n", encoding="utf-8")
    os.symlink(tmp_path / "outside", vault / "linked")  # a folder leading outside
    os.symlink(vault / "a", vault / "alias")  # a folder inside: its notes are listed as a/
    os.symlink(tmp_path / "nowhere", vault / "gone")  # a dangling folder link
    listing = list_vault(vault)
    assert "a/pipe.md" not in listing.paths
    assert not [p for p in listing.paths if p.startswith(("linked/", "alias/", "gone/"))]
    assert [(f.path, f.code) for f in listing.problems] == [
        ("a/pipe.md", "not-a-file"),
        ("gone", "read-error"),
        ("linked", "read-error"),
    ]
    assert listing.findings("03_claims") == list(listing.problems)


def test_read_file_reads_only_a_regular_file_within_the_limit(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(NotAFile):  # at once: opening a FIFO no longer waits for a writer
        read_file(tmp_path / "pipe.md")
    with pytest.raises(NotAFile):
        read_file(tmp_path)
    (tmp_path / "n.md").write_bytes(b"x" * 100)
    assert read_file(tmp_path / "n.md", 100)[0] == b"x" * 100
    with pytest.raises(TooLarge) as caught:
        read_file(tmp_path / "n.md", 99)
    assert read_finding("n.md", caught.value).code == "note-too-large"
    with pytest.raises(OSError) as missing:
        read_file(tmp_path / "gone.md")
    assert read_finding("gone.md", missing.value).code == "read-error"


def _documented_digest(kb_dir: str, files: list[MarkdownFile]) -> str:
    lines = "\n".join(sorted(f"{f.relative}\t{int(f.escapes)}" for f in files))
    return hashlib.sha256(f"{kb_dir}\n{lines}".encode()).hexdigest()


def test_the_digest_is_of_the_whole_listing_fed_in_batches(tmp_path: Path, vault: Path) -> None:
    (tmp_path / "secret.md").write_text("# s\n", encoding="utf-8")
    os.symlink(tmp_path / "secret.md", vault / "a" / "leak.md")
    listing = list_vault(vault)
    expected = _documented_digest(KB, markdown_files(vault))
    assert KnowledgeBase(listing, KB).digest == expected
    assert KnowledgeBase(markdown_files(vault), KB).digest == expected
    for batch in (1, 2, 3, 1024):
        assert kbmod._listing_digest(KB, listing, batch) == expected
    assert KnowledgeBase(Listing([]), KB).digest == _documented_digest(KB, [])
    assert KnowledgeBase(Listing(listing.paths), KB).digest != expected  # escapes count


def test_given_notes_in_order_once_with_a_finding_for_each_bad_path(tmp_path: Path) -> None:
    from vault_tools.notes.vault import given_notes

    vault = tmp_path / "vault"
    (vault / "03_claims").mkdir(parents=True)
    for name in ("A.md", "B.md"):
        (vault / "03_claims" / name).write_text("x", encoding="utf-8")
    outside = tmp_path / "elsewhere.md"
    given = [
        vault / "03_claims/B.md",
        outside,
        vault / "03_claims/A.md",
        vault / "03_claims/B.md",
        vault / "03_claims/C.md",
    ]
    got = [
        (path, problem and (problem.code, problem.message))
        for path, problem in given_notes(vault, given)
    ]
    assert got == [
        ("03_claims/B.md", None),
        (str(outside), ("path-outside-vault", f"not inside the vault {vault}")),
        ("03_claims/A.md", None),
        ("03_claims/C.md", ("read-error", "no such file")),
    ]


def _many(vault: Path, count: int) -> list[str]:
    names = [f"n/{(i * 7919) % count:04d} é.md" for i in range(count)]  # scanned unsorted
    for relative in names + ["z/deep/a.md", "Zed.md"]:
        _write(vault, relative)
    return sorted(
        [
            *names,
            "z/deep/a.md",
            "Zed.md",
            f"{KB}/Prefill.md",
            "a b/c.md",
            "a/b.md",
            "a/z.md",
            "b.md",
        ]
    )


def test_a_large_listing_is_sorted_and_its_inside_leaves_out_escaping_links(
    tmp_path: Path, vault: Path
) -> None:
    expected = _many(vault, 300)
    (tmp_path / "secret.md").write_text("# s\n", encoding="utf-8")
    os.symlink(tmp_path / "secret.md", vault / "n" / "leak.md")
    expected = sorted([*expected, "n/leak.md"])
    listing = list_vault(vault)
    assert listing.paths == expected
    assert listing.escaping == frozenset({"n/leak.md"})
    assert listing.inside() == [p for p in expected if p != "n/leak.md"]


def test_a_given_note_a_symlink_leads_out_of_is_named_as_given(tmp_path: Path) -> None:
    """Inside the vault by name, outside once resolved: the same finding a vault run gives
    that note (not "not inside the vault", which would name the wrong thing)."""
    from vault_tools.infra.boundary import escaping_note
    from vault_tools.notes.vault import given_notes

    vault, outside = tmp_path / "vault", tmp_path / "outside"
    (vault / "03_claims").mkdir(parents=True)
    outside.mkdir()
    (outside / "X.md").write_text("x", encoding="utf-8")
    os.symlink(outside / "X.md", vault / "03_claims" / "X.md")
    os.symlink(outside, vault / "linked", target_is_directory=True)
    given = [vault / "03_claims" / "X.md", vault / "linked" / "X.md"]
    assert list(given_notes(vault, given)) == [
        ("03_claims/X.md", escaping_note("03_claims/X.md")),
        ("linked/X.md", escaping_note("linked/X.md")),
    ]


# ---------------------------------------------------------------- which file is a note

CLAIMS = "03_claims"
# path -> whether it is a note that vt validate, vt watch and the hook all check
NOTE_PATHS = {
    f"{CLAIMS}/A.md": True,
    f"{CLAIMS}/.hidden.md": False,  # a dot-file: editors' temp files, Obsidian's own
    f"{CLAIMS}/.hidden/B.md": False,  # in a dot-folder
    ".trash/C.md": False,
    f"{CLAIMS}/D.txt": False,
    f"{CLAIMS}/E.MD": False,  # the suffix as Obsidian writes it
    f"{CLAIMS}/deep/er/F.md": True,
    f"{CLAIMS}/link.md": True,  # a symlink named like a note
    "elsewhere/G.md": True,  # outside claims_dir, but it names a claim_id
}
PLAIN_PAGE = "elsewhere/page.md"  # outside claims_dir, no claim_id: a note, not a review note


@pytest.mark.usefixtures("isolated_git")
@pytest.mark.parametrize("first_commit", [True, False])
def test_validate_watch_and_hook_agree_on_which_files_are_notes(
    tmp_path: Path, first_commit: bool
) -> None:
    from tests.conftest import git, make_repo
    from vault_tools.checks.validate import validate
    from vault_tools.config import load_settings
    from vault_tools.integrations.git import hook
    from vault_tools.integrations.watch import Watcher, is_watched
    from vault_tools.notes.vault import is_note_path

    root = make_repo(tmp_path / "repo")
    if not first_commit:  # the hook lists what is staged against HEAD
        git(root, "commit", "-q", "--allow-empty", "-m", "start")
    vault = root / "vault"
    (vault / ".vt").mkdir(parents=True)
    # frontmatter that does not parse, naming a claim_id: an error in every checker
    broken = "---\nclaim_id: X\nreview_action: [\n---\n# X\n"
    for relative in NOTE_PATHS:
        if relative != f"{CLAIMS}/link.md":
            _write(vault, relative, broken)
    os.symlink("D.txt", vault / CLAIMS / "link.md")  # the target's text, under a note's name
    _write(vault, PLAIN_PAGE, "---\ntitle: [\n---\n# a page\n")
    settings = load_settings(vault)
    git(root, "add", "-A")

    by_validate = {f.path for f in validate(settings).findings}
    by_hook = {f.path for f in hook.run(settings).findings}
    watcher = Watcher(settings, lambda event: None, debounce=0)
    watcher.initial_scan()
    by_watch: set[str] = set()
    for relative in [*NOTE_PATHS, PLAIN_PAGE]:
        watcher.notice(str(vault / relative), False)
        while watcher.debouncer.pending():
            key = watcher.debouncer.next_due()
            assert key is not None
            by_watch |= {e.path for e in watcher.handle(key) if e.findings}

    expected = {relative for relative, note in NOTE_PATHS.items() if note}
    assert by_validate == expected
    assert by_hook == expected
    assert by_watch == expected
    for relative, note in NOTE_PATHS.items():
        assert is_note_path(relative) is note is is_watched(relative, settings), relative
    assert is_note_path(PLAIN_PAGE)


def test_a_path_missing_here_is_taken_from_the_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vt draft 03_claims/A.md --vault V` from another folder: the note of the vault.
    A path that names a file here keeps its shell meaning, and a vault-relative path
    that climbs out of the vault is still outside it."""
    from vault_tools.notes.vault import given_notes

    vault, here = tmp_path / "vault", tmp_path / "here"
    (vault / "03_claims").mkdir(parents=True)
    (here / "03_claims").mkdir(parents=True)
    (vault / "03_claims" / "A.md").write_text("x", encoding="utf-8")
    (vault / "03_claims" / "B.md").write_text("x", encoding="utf-8")
    (here / "03_claims" / "B.md").write_text("x", encoding="utf-8")  # B here, outside
    (tmp_path / "secret.md").write_text("x", encoding="utf-8")
    monkeypatch.chdir(here)
    given = [Path("03_claims/A.md"), Path("03_claims/B.md"), Path("../secret.md")]
    got = [(p, f and f.code) for p, f in given_notes(vault, given)]
    assert got == [
        ("03_claims/A.md", None),
        ("03_claims/B.md", "path-outside-vault"),
        ("../secret.md", "path-outside-vault"),
    ]
