"""The cyclic collector paused over a block (infra/gcpause.py): paused inside, as it was
after, whatever the block does."""

from __future__ import annotations

import gc

import pytest

from vault_tools.infra.gcpause import gc_paused


@pytest.fixture(autouse=True)
def collector_on() -> object:
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_on_again_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_block_inside_another_leaves_it_paused_for_the_outer() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_an_error_and_left_off_when_it_was_off() -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("the block failed")
    assert gc.isenabled()
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_cyclic_garbage_of_the_block_is_collected_once_it_runs_again() -> None:
    class Node:
        pass

    with gc_paused():
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        del node
        left = sum(isinstance(o, Node) for o in gc.get_objects())
    assert left == 1
    gc.collect()
    assert not any(isinstance(o, Node) for o in gc.get_objects())
