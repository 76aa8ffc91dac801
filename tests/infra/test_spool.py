"""infra/spool.py: records out in the order they went in, from a temporary file."""

from __future__ import annotations

from vault_tools.infra.spool import Spool


def test_records_come_back_in_order_in_batches_and_again() -> None:
    records = [(f"03_claims/N-{i:05}.md", {"seq": i, "claim": "x" * (i % 7)}) for i in range(1000)]
    with Spool() as spool:
        for record in records:
            spool.add(record)
        assert spool.count == 1000
        assert list(spool) == records
        batches = list(spool.batches(300))
        assert [len(b) for b in batches] == [300, 300, 300, 100]
        assert [r for b in batches for r in b] == records  # a second and third pass
        spool.add("one more")  # added after reading: read in its place at the end
        assert list(spool)[-2:] == [records[-1], "one more"]


def test_an_empty_spool_and_a_closed_one_yield_nothing() -> None:
    spool = Spool()
    assert list(spool) == [] and list(spool.batches(10)) == []
    spool.add(1)
    assert list(spool) == [1]
    spool.close()
    assert list(spool) == []
