"""What checking a note needs besides the note: the schemas, the knowledge base, and which
findings are wanted."""

from __future__ import annotations

from dataclasses import dataclass

from vault_tools.checks.schemas import Schemas
from vault_tools.notes.kb import KnowledgeBase


@dataclass(slots=True)
class CheckContext:
    schemas: Schemas
    kb: KnowledgeBase
    disabled: frozenset[str] = frozenset()
    assist: bool = True  # the review-assist warnings; off where only errors matter (apply, hook)
