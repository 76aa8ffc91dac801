"""What checking a note needs besides the note: the schemas, the knowledge base, and which
findings are wanted; `make_context` gathers them for a vault."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from vault_tools.checks.schemas import Schemas
from vault_tools.config import Settings
from vault_tools.notes.kb import KnowledgeBase
from vault_tools.notes.vault import Listing, list_vault


@dataclass(slots=True)
class CheckContext:
    schemas: Schemas
    kb: KnowledgeBase
    disabled: frozenset[str] = frozenset()
    assist: bool = True  # the review-assist warnings; off where only errors matter (apply, hook)


def make_context(
    settings: Settings, files: Listing | Iterable | None = None, assist: bool = True
) -> CheckContext:
    """Schemas and knowledge base for checking notes; `assist=False` for errors only.

    `files`: the vault's listing, or its `MarkdownFile`s (listed now when None)."""
    files = list_vault(settings.vault) if files is None else files
    return context_for(
        settings,
        Schemas(settings.schemas_dir),
        KnowledgeBase(files, settings.kb_dir, settings.vault),
        assist,
    )


def context_for(
    settings: Settings, schemas: Schemas, kb: KnowledgeBase, assist: bool = True
) -> CheckContext:
    return CheckContext(schemas, kb, settings.disabled_findings, assist)
