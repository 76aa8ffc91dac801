"""Fixtures of the review assist's tests."""

from __future__ import annotations

import pytest

from tests.checks.assist.kbs import knowledge_bases
from vault_tools.notes.kb import KnowledgeBase


@pytest.fixture(scope="module")
def kbs(tmp_path_factory: pytest.TempPathFactory) -> list[KnowledgeBase]:
    """Knowledge bases of a few shapes (tests/checks/assist/kbs.py), made once a module."""
    return knowledge_bases(tmp_path_factory.mktemp("kbs"))
