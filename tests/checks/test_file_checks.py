"""The memo of checks/file_checks.py against the function it memoizes; what a pool's
workers inherit from the parent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import example_context, render_drafts, render_note
from tests.memo_oracle import check_memo, memo_test
from vault_tools.checks import file_checks
from vault_tools.checks.context import CheckContext
from vault_tools.checks.rules import NOTE_SCHEMAS, check_note
from vault_tools.checks.schemas import SchemaError, Schemas
from vault_tools.notes.note import parse_note

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_note_checks": (st.just(()), None),
}


@pytest.mark.parametrize("name", memo_test(file_checks, MEMO_ARGS))
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(file_checks, name), data.draw(st.lists(args, min_size=1, max_size=2)), fill)


class _Recording(Schemas):
    """The real schemas, noting the name of every schema a check asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def check(self, name: str, instance: Any) -> list[SchemaError]:
        self.asked.add(name)
        return super().check(name, instance)


def test_the_schemas_compiled_before_a_fork_are_every_one_a_note_is_checked_against(
    example_vault: Path,
) -> None:
    # what the parent compiles before forking is all the workers use: a schema a check
    # asks for and NOTE_SCHEMAS misses would be compiled again in every worker
    base = example_context()
    ctx = CheckContext(_Recording(), base.kb, assist=False)
    file_checks._import_checks(ctx)
    assert set(ctx.schemas._fast) == set(NOTE_SCHEMAS)
    drafted = render_note(drafts=render_drafts(metadata={"epistemic_mode": 3}))
    notes = [parse_note(p.read_bytes(), p.name) for p in (example_vault / "03_claims").iterdir()]
    notes.append(parse_note(drafted.encode(), "drafted.md"))
    for note in notes:
        check_note(note, ctx)
    assert ctx.schemas.asked == set(NOTE_SCHEMAS)  # type: ignore[attr-defined]
