"""notes.identity, the one answer to "did this note change": the bytes of a note with the
stat signature they were read under, one digest, and no other module with a rule of its
own."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from vault_tools.infra.filestat import RACY_NS, renamed_unchanged, stat_signature, unchanged
from vault_tools.notes import writer
from vault_tools.notes.identity import content_digest, new_digest, read_with_stat


@pytest.mark.parametrize("size", [0, 1, 4095, 70_000, 300_001])
def test_reads_every_byte_with_the_signature_of_the_file(tmp_path: Path, size: int) -> None:
    note = tmp_path / "note.md"
    data = os.urandom(size)
    note.write_bytes(data)
    raw, signature = read_with_stat(str(note))
    assert raw == data
    assert signature == stat_signature(os.stat(note))


def test_a_missing_file_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_with_stat(str(tmp_path / "gone.md"))


def test_a_signature_proves_nothing_within_racy_ns_of_the_save(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"one")
    info = os.stat(note)
    signature = stat_signature(info)
    changed = max(info.st_mtime_ns, info.st_ctime_ns)
    assert unchanged(info, signature, changed + RACY_NS + 1)
    assert not unchanged(info, signature, changed + RACY_NS)  # racily clean: read it
    assert not unchanged(info, signature, changed)


def test_a_restored_mtime_or_a_new_mode_is_seen(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"one")
    before = os.stat(note)
    time.sleep(0.01)
    note.write_bytes(b"two")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))  # a restored mtime
    assert stat_signature(os.stat(note)) != stat_signature(before)  # ctime moved on
    signature = stat_signature(os.stat(note))
    time.sleep(0.01)
    os.chmod(note, 0o600)
    assert stat_signature(os.stat(note)) != signature


def test_one_digest_of_a_note_whole_or_fed_in_pieces() -> None:
    data = os.urandom(10_000)
    pieces = new_digest()
    for start in range(0, len(data), 999):
        pieces.update(data[start : start + 999])
    assert pieces.hexdigest() == content_digest(data)
    assert content_digest(data) != content_digest(data[:-1])


def test_the_writer_checks_a_write_against_the_same_signature(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"one\n")
    snapshot = writer.read_snapshot(note)
    assert snapshot.signature == stat_signature(os.stat(note))
    assert snapshot.signature == read_with_stat(note)[1]


# "did this note change": the digest and the stat signature are made here and only here
PACKAGE = Path(__file__).resolve().parents[2] / "vault_tools"
# the digest in notes/identity.py, the stat signature (the ledger's too) in infra/filestat.py
HOMES = {"notes/identity.py", "infra/filestat.py"}
COPIES = [
    re.compile(r"\bblake2b\b"),
    re.compile(r"\bst_(mtime|ctime)(_ns)?\b"),
    re.compile(r"sha256\([\w.]*raw\b"),  # a digest of a note's bytes
    re.compile(r"\bRACY_NS\s*="),
]


def test_no_module_tells_a_changed_note_by_its_own_rule() -> None:
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in HOMES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(pattern.search(line) for pattern in COPIES):
                copies.append(f"{relative}:{number}: {line.strip()}")
    assert copies == [], (
        "use notes.identity (content_digest) and infra.filestat (stat_signature, unchanged)"
    )


def test_a_file_vt_renamed_is_unchanged_whatever_its_ctime(tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_bytes(b"one")
    signature = stat_signature(os.stat(note))
    time.sleep(0.01)
    moved = tmp_path / "moved.md"
    os.rename(note, moved)
    assert renamed_unchanged(os.stat(moved), signature)
    time.sleep(0.01)
    moved.write_bytes(b"two")
    assert not renamed_unchanged(os.stat(moved), signature)
