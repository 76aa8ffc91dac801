"""The memo of ledger/signatures.py against the function it memoizes (signing itself is
tested in test_signing.py and test_signing_policy.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.memo_oracle import check_memo, memo_test
from vault_tools.ledger import signatures
from vault_tools.ledger.sshformat import HASHES

MEMO_ARGS: dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]] = {
    "_signed_prefix": (st.tuples(st.sampled_from(sorted(HASHES))), None),
}


@pytest.mark.parametrize("name", memo_test(signatures, MEMO_ARGS))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(name: str, data: st.DataObject) -> None:
    args, fill = MEMO_ARGS[name]
    check_memo(getattr(signatures, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)
