"""Knowledge bases for the memos keyed by one: the example vault's, the same with a
note's aliases edited on disk, and one that reads no aliases."""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import strategies as st

from tests.conftest import EXAMPLE_VAULT
from tests.memo_oracle import texts
from vault_tools.notes.kb import KnowledgeBase
from vault_tools.notes.vault import markdown_files

KB_DIR = "04_knowledge_base"
TARGETS = [
    f"{KB_DIR}/KL Divergence",
    f"{KB_DIR}/KL Divergence.md",
    "KL Divergence",
    "Likelihood Loss",
    f"{KB_DIR}/Total Variation Loss",
    f"{KB_DIR}/Missing",
    "",
]


def knowledge_bases(tmp: Path) -> list[KnowledgeBase]:
    """Three knowledge bases over real files in `tmp`."""
    vault = tmp / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    edited = tmp / "edited"
    shutil.copytree(EXAMPLE_VAULT, edited)
    note = edited / KB_DIR / "KL Divergence.md"
    text = note.read_text("utf-8")
    assert "aliases: [" in text
    note.write_text(text.replace("aliases: [", "aliases: [KLD, Kullback, ", 1), "utf-8")
    return [
        KnowledgeBase(markdown_files(vault), KB_DIR, vault),
        KnowledgeBase(markdown_files(edited), KB_DIR, edited),
        KnowledgeBase(markdown_files(vault), KB_DIR),
    ]


def kb_calls(kbs: list[KnowledgeBase]) -> st.SearchStrategy[tuple]:
    """(knowledge base, target or path) pairs."""
    paths = sorted(kbs[0].alias_index()) if kbs else []  # none: only the names are asked
    return st.tuples(st.sampled_from(kbs), st.sampled_from(TARGETS + paths) | texts)
