"""The property every memo of vt holds (docs/architecture.md, "Speed machinery"): a
memoized function answers what the function itself (`memo.__wrapped__`, unwrapped
through every memo) answers, for
any inputs in any order, also once the memo is full and evicting; and what it returns
cannot be changed by a caller, so no call can leak into a later one.

A test module of the package's mirror (tests/PKG/test_MODULE.py) lists, in `MEMO_ARGS`,
a strategy of argument tuples for each memo of its module; `memo_names` finds the memos
in the module's source, so that a memo added without a strategy fails its test.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from types import FunctionType, MappingProxyType, ModuleType
from typing import Any

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "assist_cases"


def memo_names(module: ModuleType) -> set[str]:
    """The names the module binds to a functools memo: `@lru_cache` / `@cache` on a def,
    or `name = lru_cache(...)(function)`."""
    tree = ast.parse(inspect.getsource(module))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_is_memo_call(d) for d in node.decorator_list):
                names.add(node.name)
        elif isinstance(node, ast.Assign) and _is_memo_call(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _is_memo_call(node: ast.expr) -> bool:
    while isinstance(node, ast.Call):
        node = node.func
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name in {"lru_cache", "cache"}


def frozen(value: object) -> bool:
    """Whether no caller can change `value` (or anything in it) in place."""
    if value is None or isinstance(value, (str, bytes, int, float, Decimal, re.Pattern)):
        return True
    if isinstance(value, (tuple, frozenset)):
        return all(frozen(v) for v in value)
    if isinstance(value, MappingProxyType):
        return all(frozen(k) and frozen(v) for k, v in value.items())
    return isinstance(value, FunctionType)  # imported or built on first need, then shared


def shape(value: object) -> object:
    """`value` as a plain, ordered value whose equality also tells apart what `==` takes
    as equal but a caller would see differently (Decimal("1.0") and Decimal("1"), 1 and
    True, a tuple and a list)."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [shape(v) for v in value])
    if isinstance(value, (frozenset, set)):
        return (type(value).__name__, sorted(map(repr, map(shape, value))))
    if isinstance(value, Mapping):
        return (type(value).__name__, sorted((repr(shape(k)), shape(v)) for k, v in value.items()))
    if isinstance(value, re.Pattern):
        return ("Pattern", value.pattern, value.flags)
    if isinstance(value, FunctionType):
        return ("function", value.__module__, value.__qualname__)
    return (type(value).__name__, repr(value))


def check_memo(memo: Any, calls: list[tuple], fill: Callable[[int], tuple] | None) -> None:
    """Each of `calls` answered by `memo` as by its function, twice over (hits, and
    misses after evictions), with the memo full from the start when `fill` gives
    distinct fillers (filled once per memo: the later examples keep it full)."""
    plain = inspect.unwrap(memo)  # a memo of a memo is held to the function itself
    maxsize = memo.cache_parameters()["maxsize"]
    if fill is not None and maxsize is not None and memo not in _FILLED:
        memo.cache_clear()
        for n in range(maxsize + 8):
            memo(*fill(n))
        _FILLED.add(memo)
    for args in calls + calls[::-1]:
        got = memo(*args)
        assert frozen(got), f"{memo.__qualname__}{args!r} returns a mutable {type(got).__name__}"
        assert shape(got) == shape(plain(*args)), f"{memo.__qualname__}{args!r}"
    if fill is not None and maxsize is not None:
        assert memo.cache_info().currsize == maxsize  # full, so every miss evicted


_FILLED: set[Any] = set()


def numbered(n: int) -> tuple:
    """A filler for a memo of one text: distinct texts with words, digits and CJK."""
    return (f"filler {n} 標準 {n * 7} times",)


# texts made of the pieces the review assist reads for: the claims, evidence and labels
# of its test notes, cut at spaces and CJK punctuation, and a few characters around them
_PIECES = sorted(
    {
        piece
        for case in sorted(CASES.glob("*.md"))
        for line in case.read_text("utf-8").splitlines()
        if line and not line.startswith(("---", "#", "|", "<!--", "```", "- ", ">"))
        for piece in re.split(r"[\s，。；：、]+", line)
        if 0 < len(piece) <= 24
    }
)
pieces = st.sampled_from(_PIECES)
characters = st.sampled_from(
    list("0123456789,.-%×xX~≈$()（）「」“”'\"ＡＢ１２３ｋ十百万亿 \n") + ["s", "n't", "İ", "ß", "ﬁ"]
)
texts = (
    st.lists(pieces | characters | st.text(max_size=3), max_size=10).map(" ".join)
    | st.lists(pieces | characters, max_size=8).map("".join)
    | st.text(max_size=12)
)
one_text = st.tuples(texts)


def memo_test(module: ModuleType, memo_args: Mapping[str, Any]) -> list[str]:
    """The module's memos, sorted; fails when one has no strategy in `memo_args` or a
    strategy names no memo (the test would then hold nothing)."""
    found = memo_names(module)
    assert found == set(memo_args), (
        f"{module.__name__}: memos without a strategy: {sorted(found - set(memo_args))}, "
        f"strategies without a memo: {sorted(set(memo_args) - found)}"
    )
    for name in found:
        assert isinstance(getattr(module, name), functools._lru_cache_wrapper), name
    return sorted(found)
