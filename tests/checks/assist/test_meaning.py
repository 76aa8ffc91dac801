"""The memos of checks/assist/meaning.py against the functions they memoize."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.checks.assist.kbs import TARGETS, kb_calls, knowledge_bases
from tests.memo_oracle import check_memo, memo_test, numbered, one_text, pieces, texts
from vault_tools.checks.assist import meaning
from vault_tools.checks.assist.cues import lowered
from vault_tools.checks.assist.reading import name_mentioned
from vault_tools.notes.kb import KnowledgeBase

names = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.lists(pieces, max_size=3).map(tuple)),
    max_size=3,
    unique_by=lambda pair: pair[0],
).map(tuple)


def memo_args(
    kbs: list[KnowledgeBase],
) -> dict[str, tuple[st.SearchStrategy[tuple[Any, ...]], Any]]:
    return {
        "_target_names": (kb_calls(kbs), lambda n: (kbs[0], f"filler {n}")),
        "_ranking": (st.tuples(texts, names), lambda n: (f"{n} is faster", ())),
        "_label_names": (
            st.tuples(st.sampled_from([None, *kbs]), st.sampled_from(TARGETS) | texts, pieces),
            lambda n: (None, f"filler {n}", "label"),
        ),
        "_lowered_texts": (st.lists(texts, max_size=3).map(lambda t: (tuple(t),)), numbered),
        "_lowered_name": (one_text, numbered),
    }


@pytest.mark.parametrize("name", memo_test(meaning, memo_args([])))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_memo_answers_as_its_function(
    kbs: list[KnowledgeBase], name: str, data: st.DataObject
) -> None:
    args, fill = memo_args(kbs)[name]
    check_memo(getattr(meaning, name), data.draw(st.lists(args, min_size=1, max_size=6)), fill)


def test_a_knowledge_base_edited_on_disk_is_another_key(tmp_path: Path) -> None:
    """The memo keyed by a knowledge base answers each by its own aliases."""
    first, edited, _ = knowledge_bases(tmp_path)
    target = "04_knowledge_base/KL Divergence"
    assert "KLD" not in meaning._target_names(first, target)
    assert "KLD" in meaning._target_names(edited, target)


def _plain_entity_names(
    kb: KnowledgeBase | None, entities: tuple[tuple[str, str], ...]
) -> meaning.Names:
    """The rule: the names of each key gathered from every entity of that key, then
    each name once."""
    names: dict[str, list[str]] = {}
    for key, label in entities:
        known = names.setdefault(key, [])
        known.append(label)
        known.extend(meaning._target_names(kb, key) if kb is not None else ())
    return tuple((key, tuple(meaning.distinct_names(known))) for key, known in names.items())


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_each_entity_named_on_its_own_names_the_frame_as_the_rule(
    kbs: list[KnowledgeBase], data: st.DataObject
) -> None:
    """A frame whose keys differ takes each entity's names from a memo of that entity;
    a key written twice (its labels gathered) takes the rule's way."""
    kb = data.draw(st.sampled_from([None, *kbs]))
    entities = data.draw(
        st.lists(st.tuples(st.sampled_from(TARGETS) | texts, pieces | texts), max_size=4).map(tuple)
    )
    assert meaning._entity_names(kb, entities) == _plain_entity_names(kb, entities)


def _plain_mentioned(names: list[str], texts: tuple[str, ...]) -> bool:
    """The rule: each name lowered, looked for in the lowered texts joined (one apart
    when it holds the joint), then by its words."""
    lows = [lowered(text) for text in texts]
    joined = meaning._SEPARATOR.join(lows)
    for name in map(lowered, names):
        if name in joined if meaning._SEPARATOR not in name else any(name in t for t in lows):
            return True
    seen = [name_mentioned(name, texts) for name in names]
    return any(seen) or all(s is None for s in seen)


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        pieces | texts | st.sampled_from(["KV Cache", "kv", "Ｋｖ", "İ", "Σ", "ß"]), max_size=3
    ),
    st.lists(texts | st.sampled_from(["KV Cache ΑΣ", "kv cache", "ＫＶ Cache", "İs"]), max_size=3),
)
def test_an_entity_is_mentioned_as_the_rule_finds_it(names: list[str], texts: list[str]) -> None:
    """A name written as is in an ASCII text is found without lowering the texts; any
    other name, or text, takes the rule's way."""
    assert meaning._mentioned(names, tuple(texts)) == _plain_mentioned(names, tuple(texts))
