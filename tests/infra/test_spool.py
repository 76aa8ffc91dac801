"""infra/spool.py: records out in the order they went in, from a temporary file."""

from __future__ import annotations

import pytest

from vault_tools.infra.spool import Spool, SpooledList


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


def test_a_spooled_list_reads_as_the_list_it_was_given() -> None:
    records = [{"path": f"03_claims/N-{i:05}.md", "seq": i} for i in range(700)]
    spooled: SpooledList[dict] = SpooledList()
    assert not spooled and spooled == [] and len(spooled) == 0
    for record in records:
        spooled.append(record)
    assert spooled and len(spooled) == 700
    assert list(spooled) == records and spooled == records and spooled != records[:-1]
    assert spooled[0] == records[0] and spooled[699] == spooled[-1] == records[-1]
    with pytest.raises(IndexError):
        spooled[700]
    assert SpooledList(iter(records)) == spooled


def test_a_spooled_list_sorts_as_a_list_does() -> None:
    records = [(f"b/{i % 10}.md", i) for i in range(600)]
    spooled = SpooledList(records)
    spooled.sort(key=lambda r: r[0])
    assert list(spooled) == sorted(records, key=lambda r: r[0])  # stable, as list.sort
    in_order = SpooledList(sorted(records))
    in_order.sort(key=lambda r: r[0])
    assert list(in_order) == sorted(records)


def test_a_spooled_list_is_read_to_the_end_when_nothing_else_holds_it() -> None:
    def made() -> SpooledList[int]:
        return SpooledList(range(300))

    assert [n for n in made()] == list(range(300))  # noqa: C416 - the point of the test
