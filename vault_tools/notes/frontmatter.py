"""Read a note's YAML frontmatter (Obsidian properties) strictly and safely.

PyYAML's C parser does the scanning; we add what Obsidian properties need and a
plain `safe_load` would let through: duplicate keys are errors (YAML silently
keeps the last), anchors and aliases are refused (a YAML-bomb vector Obsidian
never writes), and dates stay strings so properties round-trip as JSON.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from vault_tools.findings import Finding, error

if TYPE_CHECKING:
    import yaml


@cache
def _loader() -> Any:
    """The YAML loader class, made on first use: most notes take the fast path, and a
    warm `vt validate` never needs PyYAML (about 12 ms to import)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class _PropertyLoader(base):  # type: ignore[misc, valid-type]
        """SafeLoader without the timestamp resolver: `2026-11-29` stays a string."""

    _PropertyLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return _PropertyLoader


def __getattr__(name: str) -> Any:
    if name == "_PropertyLoader":
        return _loader()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(slots=True)
class FrontMatter:
    present: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # key -> 1-based note line
    body_index: int = 0  # index into the note's lines of the first body line
    end_line: int = 0  # 1-based line of the closing '---' (0 when absent)
    findings: list[Finding] = field(default_factory=list)


def read(lines: list[str], path: str) -> FrontMatter:
    """Parse the frontmatter at the top of `lines` (line endings already stripped)."""
    fm = FrontMatter()
    if not lines or lines[0].rstrip() != "---":
        return fm
    fm.present = True
    close = _closing_line(lines)
    if close is None:
        fm.findings.append(
            error(
                path,
                1,
                "frontmatter-unclosed",
                "the frontmatter opened on line 1 never closes with '---'",
            )
        )
        fm.body_index = len(lines)
        return fm
    fm.body_index = close + 1
    fm.end_line = close + 1
    _load(lines[1:close], path, fm)
    return fm


def _closing_line(lines: list[str]) -> int | None:
    """The index of the line closing the frontmatter (`---` or `...`, trailing blanks
    allowed), or None. The usual bare `---` is found by list.index; only when a line
    before it might close too is each line looked at."""
    try:
        close = lines.index("---", 1)
    except ValueError:
        close = len(lines)
    if not any(
        map(str.startswith, itertools.islice(lines, 1, close), itertools.repeat(("---", "...")))
    ):
        return close if close < len(lines) else None
    return next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)


def _load(source_lines: list[str], path: str, fm: FrontMatter) -> None:
    simple = _simple_properties(source_lines)
    if simple is not None:
        fm.properties, fm.lines = simple
        return
    import yaml

    source = "\n".join(source_lines)
    if CONTROL.search(source):
        # reported here with its line; YAML would refuse the whole frontmatter for it, so
        # the properties are read with the character replaced (the note stays a review
        # note, and its finding keeps apply from recording it)
        for number, text in enumerate(source_lines, start=2):
            if found := CONTROL.search(text):
                key = _KEY.match(text)
                fm.findings.append(
                    control_finding(
                        path,
                        number,
                        f"property '{key.group(1)}'" if key else "the frontmatter",
                        found.group(),
                    )
                )
        source = CONTROL.sub("\ufffd", source)

    if ("&" in source or "*" in source) and _reject_aliases(source, path, fm):
        return
    loader = _loader()(source)
    try:
        node = loader.get_single_node()
        if node is None:
            return
        if not isinstance(node, yaml.MappingNode):
            fm.findings.append(
                error(
                    path,
                    node.start_mark.line + 2,
                    "yaml-not-mapping",
                    f"the frontmatter must be a mapping of properties, not a {_node_kind(node)}",
                )
            )
            return
        _duplicate_keys(node, path, fm)  # reported; the first occurrence of a key is used
        _construct_properties(loader, node, path, fm)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark else 2
        if source.lstrip().startswith(("- ", "[")):
            fm.findings.append(
                error(
                    path,
                    2,
                    "yaml-not-mapping",
                    "the frontmatter must be a mapping of properties, but it starts as a list",
                )
            )
            return
        fm.findings.append(error(path, line, "yaml-syntax", f"invalid YAML: {exc.problem}"))
        return
    except ValueError as exc:
        fm.findings.append(_value_error(source, path, exc))
        return
    except (yaml.YAMLError, RecursionError, TypeError) as exc:
        fm.findings.append(error(path, 2, "yaml-syntax", f"invalid YAML: {exc}"))
        return
    finally:
        loader.dispose()


def _construct_properties(loader: Any, node: yaml.MappingNode, path: str, fm: FrontMatter) -> None:
    """Properties keyed exactly as written (`true:` stays 'true'), values JSON-safe."""
    import yaml

    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 2
        if not isinstance(key_node, yaml.ScalarNode):
            fm.findings.append(
                error(path, line, "yaml-syntax", "invalid YAML: a property name must be plain text")
            )
            continue
        name = key_node.value
        if name in fm.properties:
            continue
        value = loader.construct_object(value_node, deep=True)
        problem = _not_json(value)
        if problem:
            fm.findings.append(
                error(
                    path,
                    line,
                    "yaml-syntax",
                    f"property '{name}' holds {problem}; properties hold text, "
                    "numbers, booleans, lists and mappings",
                )
            )
            continue
        if (found := _control_in(value)) is not None:  # written as a YAML escape (\0, \x01)
            fm.findings.append(control_finding(path, line, f"property '{name}'", found))
        if (number := _unwritable(value)) is not None:
            fm.findings.append(
                error(
                    path,
                    line,
                    "number-too-large",
                    f"property '{name}' holds {number}, which no JSON number carries",
                )
            )
            continue
        fm.properties[name] = value
        fm.lines[name] = line


def _not_json(value: Any) -> str | None:
    """What makes a constructed value unlike JSON (a set, bytes, a date …), else None."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    if isinstance(value, list):
        return next((p for p in map(_not_json, value) if p), None)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            return "a mapping whose keys are not all text"
        return next((p for p in map(_not_json, value.values()) if p), None)
    return f"a {type(value).__name__} value"


# NUL and the other C0 control characters but TAB, LF and CR, and DEL: invisible in
# Obsidian, they would reach the ledger (and whoever reads it) unseen. The one rule for
# what a property value or a claim text must not hold.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def control_finding(path: str, line: int, what: str, character: str) -> Finding:
    return error(
        path,
        line,
        "control-character",
        f"{what} holds the control character U+{ord(character):04X}; remove it",
    )


def _control_in(value: Any) -> str | None:
    """The first control character in a property value's text (keys included)."""
    if isinstance(value, str):
        found = CONTROL.search(value)
        return found.group() if found else None
    if isinstance(value, list):
        return next((c for c in map(_control_in, value) if c), None)
    if isinstance(value, dict):
        return next((c for c in map(_control_in, (*value, *value.values())) if c), None)
    return None


def _unwritable(value: Any) -> str | None:
    """What in a value no JSON carries: `.nan`, an infinity (`.inf`, a float beyond a
    double) or an integer of more digits than Python writes (a long `0x…` is read
    without the limit on digits, and fails only when it is written)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else repr(value)
    if isinstance(value, int) and not isinstance(value, bool):
        limit = digits_limit()
        # 10**limit has about 3.32 bits a digit: a shorter integer cannot reach it
        if limit and value.bit_length() > 3 * limit and abs(value) >= 10**limit:
            return f"an integer of more than {limit:,} digits"
        return None
    if isinstance(value, list):
        return next((c for c in map(_unwritable, value) if c), None)
    if isinstance(value, dict):
        return next((c for c in map(_unwritable, value.values()) if c), None)
    return None


_DIGITS = re.compile(r"\d+")
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):")


def digits_limit() -> int:
    """How many digits Python turns into an int (0: no limit; before 3.10.7, none)."""
    return getattr(sys, "get_int_max_str_digits", lambda: 0)()


def longest_number(text: str) -> tuple[int, int]:
    """(1-based line, digits) of the longest run of digits in `text` (linear: one scan)."""
    best = max(_DIGITS.finditer(text), key=lambda m: m.end() - m.start(), default=None)
    if best is None:
        return 1, 0
    return text.count("\n", 0, best.start()) + 1, best.end() - best.start()


def _value_error(source: str, path: str, exc: ValueError) -> Finding:
    """A ValueError while constructing the properties: an integer too long to convert
    (Python's limit on int() of a string), else whatever the value was."""
    line, digits = longest_number(source)
    if digits_limit() and digits > digits_limit():
        return error(
            path,
            line + 1,
            "number-too-large",
            f"a number of {digits:,} digits (vt reads at most {digits_limit():,})",
        )
    return error(path, 2, "yaml-syntax", f"invalid YAML: {exc}")


# Obsidian writes most properties as `key: value` lines. Those are read without
# PyYAML when every line is unambiguous; anything else takes the full YAML path.
# matched against the line less its trailing blanks (a lazy value before `[ \t]*` tried
# every blank of a long run)
_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*))?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# a flow-list item may be several words (`aliases: [prefill, warm prefill]`)
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*(?: [A-Za-z0-9_.-]+)*")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
# plain words YAML 1.1 reads as something other than a string
_NOT_STRINGS = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "null Null NULL .inf .Inf .INF .nan .NaN .NAN".split()
)
_NO_VALUE = object()


def simple_properties(source: str) -> tuple[dict[str, Any], dict[str, int]] | None:
    """Properties and their lines when every line is a simple `key: value`, else None."""
    return _simple_properties(source.split("\n"))


def _simple_properties(source_lines: list[str]) -> tuple[dict[str, Any], dict[str, int]] | None:
    properties: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(source_lines, start=2):
        entry = _SEEN_LINES.get(line) or _simple_line(line)
        if entry is None or entry[0] in properties:
            return None
        key, value = entry
        properties[key] = value.copy() if type(value) is list else value
        lines[key] = number
    return properties, lines


# Most property lines repeat from note to note (`review_action: PENDING`, `tags: [...]`):
# each distinct line is read once (without the memo, parsing took 15% longer and a cold
# `vt validate` of 10k notes 5% more CPU, in a paired benchmark). It is bounded: the first
# _SEEN_LINES_MAX short lines, then no more (lines past it just take the regex), so it
# holds at most about a megabyte. Kept for the process: an entry depends on the line's
# text alone (a short line holds no number near Python's limit on digits), so no later
# call can read it differently; a caller gets a copy of a list value.
_SEEN_LINES: dict[str, tuple[str, Any]] = {}
_SEEN_LINES_MAX = 4096
_SEEN_LINE_LENGTH = 200  # longer lines are not kept
_UNIQUE_KEYS = frozenset({"claim_id"})  # a line no other note repeats: not worth keeping


def _simple_line(line: str) -> tuple[str, Any] | None:
    content = line.rstrip(" \t")
    match = _SIMPLE_LINE.fullmatch(content)
    if match is None or match.group(1) in _NOT_STRINGS:
        return None
    text = match.group(2)
    value = _simple_value("" if text is None and len(content) < len(line) else text)
    if value is _NO_VALUE:
        return None
    entry = (match.group(1), value)
    if (
        len(_SEEN_LINES) < _SEEN_LINES_MAX
        and len(line) <= _SEEN_LINE_LENGTH
        and entry[0] not in _UNIQUE_KEYS
    ):
        _SEEN_LINES[line] = entry
    return entry


def _simple_value(text: str | None) -> Any:
    if not text:
        return None if text is None else _NO_VALUE
    first = text[0]
    if first == '"' or first == "'":
        inner = text[1:-1]
        if (
            len(text) >= 2
            and text[-1] == first
            and first not in inner
            and "\\" not in inner
            and not CONTROL.search(inner)
        ):
            return inner
        return _NO_VALUE
    if first == "[" and text[-1] == "]":
        items = [item.strip() for item in text[1:-1].split(",")]
        if items == [""]:
            return []
        if all(_WORDS.fullmatch(item) and item not in _NOT_STRINGS for item in items):
            return items
        return _NO_VALUE
    if text == "true" or text == "false":
        return text == "true"
    if _INTEGER.fullmatch(text):
        limit = digits_limit()
        return int(text) if not limit or len(text) <= limit else _NO_VALUE  # YAML reports it
    if _WORD.fullmatch(text) and text not in _NOT_STRINGS:
        return text
    return _NO_VALUE


def _reject_aliases(source: str, path: str, fm: FrontMatter) -> bool:
    import yaml

    try:
        for event in yaml.parse(source, Loader=_loader()):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                mark = event.start_mark  # the parser marks every event it makes
                fm.findings.append(
                    error(
                        path,
                        mark.line + 2 if mark else None,
                        "yaml-alias",
                        "YAML anchors and aliases are not allowed in properties",
                    )
                )
                return True
    except yaml.YAMLError:
        return False  # reported as a syntax error by the full load
    return False


def _duplicate_keys(node: yaml.Node, path: str, fm: FrontMatter) -> bool:
    """Report every key that repeats within one mapping, at any depth."""
    import yaml

    found = False
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key, value in current.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else repr(key)
                line = key.start_mark.line + 2
                if name in seen:
                    fm.findings.append(
                        error(
                            path,
                            line,
                            "yaml-duplicate-key",
                            f"property '{name}' appears twice (first on line "
                            f"{seen[name]}, which is the one used)",
                        )
                    )
                    found = True
                else:
                    seen[name] = line
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
    return found


def _node_kind(node: yaml.Node) -> str:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return "list"
    return "single value"
