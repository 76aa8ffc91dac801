"""The duplicate check's spill file, bit filter and hashes (`ClaimIds`) against the plain
rule: a dict from each claim_id to the notes that name it, in the order they came.

Generated notes with claim_ids from a few (unicode, lone surrogates), lines or none, and
some without a claim_id; checked with the records spilled every few bytes or never, a
bit filter of 8 bits or the real one, and 64-bit hashes or a weak hash that makes most
claim_ids collide (a collision must neither make nor hide a duplicate).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vault_tools.checks import duplicates
from vault_tools.findings import Finding, error

CLAIM_IDS = st.sampled_from(["ONE-1", "TWO-2", "證據-1", "x\udcff", "", "ONE-1 "]) | st.none()


def plain_duplicates(
    entries: list[tuple[str, str | None, int | None]], checked: set[str] | None
) -> list[tuple[str, list[Finding]]]:
    owners: dict[str, list[tuple[str, int | None]]] = {}
    for path, claim_id, line in entries:
        if claim_id is not None:
            owners.setdefault(claim_id, []).append((path, line))
    found: dict[str, list[Finding]] = {}
    for claim_id, notes in owners.items():
        for path, line in notes if len(notes) > 1 else []:
            if checked is None or path in checked:
                others = ", ".join(p for p, _ in notes if p != path)
                message = f"claim_id {claim_id!r} is also used by {others}"
                found.setdefault(path, []).append(error(path, line, "claim-id-duplicate", message))
    return sorted(found.items())


@settings(max_examples=100, deadline=None)
@given(
    notes=st.lists(st.tuples(CLAIM_IDS, st.none() | st.integers(1, 2**31 - 1)), max_size=30),
    spill=st.sampled_from([1, 7, 64, duplicates.SPILL_BYTES]),
    bits=st.sampled_from([8, duplicates.FILTER_BITS]),
    weak_hash=st.booleans(),
    checked_every=st.integers(0, 3),
)
def test_claim_ids_find_what_a_dict_of_the_claim_ids_finds(
    notes: list[tuple[str | None, int | None]],
    spill: int,
    bits: int,
    weak_hash: bool,
    checked_every: int,
) -> None:
    entries = [(f"03_claims/n{i}é.md", claim_id, line) for i, (claim_id, line) in enumerate(notes)]
    checked = None if not checked_every else {p for p, *_ in entries[::checked_every]}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(duplicates, "SPILL_BYTES", spill)  # records spilled every few bytes
        patch.setattr(duplicates, "FILTER_BITS", bits)  # most hashes meet in the filter
        if weak_hash:  # most claim_ids collide
            patch.setattr(duplicates, "_claim_hash", lambda claim_id: len(claim_id) % 3)
        found = _duplicates(entries, checked)
    assert found == plain_duplicates(entries, checked)


def _duplicates(
    entries: list[tuple[str, str | None, int | None]], checked: set[str] | None
) -> list[tuple[str, list[Finding]]]:
    with duplicates.ClaimIds() as claims:
        for path, claim_id, line in entries:
            entry = (path, "", (), claim_id, line, 0, 0)
            assert claims.add(entry) == (claim_id is not None)
        return claims.duplicates(checked)
