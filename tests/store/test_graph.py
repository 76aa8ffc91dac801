"""Knowledge-base claims blocks: written, idempotent, removed, other bytes preserved."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import copy_example_vault
from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.config import load_settings
from vault_tools.store.claims import ClaimStore
from vault_tools.store.graph import HEADER, sync_kb_blocks
from vault_tools.store.refresh import refresh

KB = "04_knowledge_base"


def kb_bytes(vault: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (vault / KB).glob("*.md")}


def test_blocks_written_idempotent_and_removed(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    settings = load_settings(vault)
    prefill = vault / KB / "Prefill.md"
    original = prefill.read_bytes()
    decode_original = (vault / KB / "Decode.md").read_bytes()
    ledger = ledger_for(settings)
    ledger.append(
        [
            decision("SA260324R-0125", note="03_claims/SA260324R-0125.md"),
            decision(
                "DV1-0001",
                claim=v1_claim("DV1-0001", targets=("Prefill",)),
                note="03_claims/DV1-0001.md",
            ),
        ]
    )
    first = refresh(settings)
    assert first.kb_notes_written == [f"{KB}/Decode.md", f"{KB}/Prefill.md"]
    text = prefill.read_text(encoding="utf-8")
    assert text.startswith(original.decode())  # every byte before the block is kept
    assert text[len(original.decode()) :] == (
        "\n<!-- vt:claims:start -->\n"
        f"{HEADER}\n"
        "- [[03_claims/DV1-0001|DV1-0001]] — comparison_entity_0, prefill\n"
        "- [[03_claims/SA260324R-0125|SA260324R-0125]] — comparison_entity_0, prefill\n"
        "<!-- vt:claims:end -->\n"
    )
    before = kb_bytes(vault)
    second = refresh(settings)
    assert second.kb_notes_written == [] and second.catch_up.new_events == 0
    assert kb_bytes(vault) == before  # bytes and mtimes: nothing touched

    # the claim is rejected later: Decode loses its block, Prefill keeps DV1-0001 only
    ledger.append([decision("SA260324R-0125", "REJECT")])
    third = refresh(settings)
    assert third.kb_notes_written == [f"{KB}/Decode.md", f"{KB}/Prefill.md"]
    assert (vault / KB / "Decode.md").read_bytes() == decode_original
    assert "SA260324R-0125" not in prefill.read_text(encoding="utf-8")
    ledger.append([decision("DV1-0001", "REJECT")])
    refresh(settings)
    assert prefill.read_bytes() == original


def test_human_edits_around_the_block_are_kept(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    settings = load_settings(vault)
    note = vault / KB / "Decode.md"
    ledger = ledger_for(settings)
    ledger.append([decision("SA260324R-0125")])
    refresh(settings)
    edited = note.read_text(encoding="utf-8").replace("\n", "\r\n")
    edited += "\r\nA human's note after.\r\n"
    note.write_bytes(("\ufeff" + edited).encode())
    ledger.append([decision("DV1-0002", note="03_claims/DV1-0002.md")])
    assert refresh(settings).kb_notes_written == [f"{KB}/Decode.md", f"{KB}/Prefill.md"]
    raw = note.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and raw.endswith(b"\r\nA human's note after.\r\n")
    assert b"[[03_claims/DV1-0002|DV1-0002]]" in raw and b"\n" not in raw.replace(b"\r\n", b"")


def test_a_refused_note_is_reported_not_fatal(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    settings = load_settings(vault)
    broken = vault / KB / "Decode.md"
    broken.write_text(
        broken.read_text(encoding="utf-8") + "\n<!-- vt:claims:start -->\n", encoding="utf-8"
    )
    ledger_for(settings).append([decision("SA260324R-0125")])
    result = refresh(settings)
    assert result.kb_notes_written == [f"{KB}/Prefill.md"]
    assert len(result.kb_problems) == 1
    assert result.kb_problems[0].startswith(f"{KB}/Decode.md:")
    assert "markers are broken" in result.kb_problems[0]


def test_unresolved_targets_get_no_block(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    settings = load_settings(vault)
    claim = v1_claim("X", targets=("Nowhere", "../escape", "Prefill"))
    ledger_for(settings).append([decision("X", claim=claim)])
    with ClaimStore.open(settings) as store:
        store.catch_up()
        problems: list[str] = []
        assert sync_kb_blocks(settings, store, problems) == [f"{KB}/Prefill.md"]
        assert problems == []
    assert not (vault / KB / "Nowhere.md").exists()


def test_concurrent_edit_between_read_and_write_is_refused(tmp_path: Path, monkeypatch) -> None:
    from vault_tools.notes import writer

    vault = copy_example_vault(tmp_path / "vault")
    settings = load_settings(vault)
    ledger_for(settings).append([decision("SA260324R-0125")])
    real = writer.read_snapshot

    def read_then_obsidian_saves(path: Path, *limit: int | None) -> writer.Snapshot:
        snapshot = real(path, *limit)
        if path.name == "Decode.md":
            path.write_text(snapshot.text + "saved by Obsidian\n", encoding="utf-8")
            os.utime(path, ns=(1, 1))
        return snapshot

    monkeypatch.setattr(writer, "read_snapshot", read_then_obsidian_saves)
    result = refresh(settings)
    assert result.kb_notes_written == [f"{KB}/Prefill.md"]
    assert any("changed on disk" in p for p in result.kb_problems)
    assert (vault / KB / "Decode.md").read_text(encoding="utf-8").endswith("saved by Obsidian\n")
