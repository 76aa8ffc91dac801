"""The properties of a frontmatter the fast path cannot read, read with PyYAML strictly.

PyYAML's C parser does the scanning; we add what Obsidian properties need and a
plain `safe_load` would let through: duplicate keys are errors (YAML silently
keeps the last), anchors and aliases are refused (a YAML-bomb vector Obsidian
never writes), and dates stay strings so properties round-trip as JSON.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from vault_tools.findings import Finding, error
from vault_tools.notes.value_limits import CONTROL, control_finding, digits_limit, longest_number

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class PropertyLoader(_BASE):  # type: ignore[misc, valid-type]
    """SafeLoader without the timestamp resolver: `2026-11-29` stays a string."""


PropertyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()
}

# log10(60): the decimal digits each `:NN` group of a YAML 1.1 sexagesimal integer adds
_DIGITS_PER_GROUP = 1.7781512503836436


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    """YAML's int, but a sexagesimal one (`1:59:59`, base 60) too long to write as a JSON
    number is not computed: PyYAML adds its groups one by one to a growing integer, time
    quadratic in their number (minutes for a few hundred thousand). Its stand-in has one
    digit more than Python writes, so `_unwritable` reports it at its property's line."""
    text = loader.construct_scalar(node)
    limit = digits_limit()
    if limit and ":" in text:
        significant = text.lstrip("+-").lstrip("0:_")  # leading zero groups add nothing
        if significant.count(":") * _DIGITS_PER_GROUP > limit:
            return -(10**limit) if text.startswith("-") else 10**limit
    value: int = _BASE.construct_yaml_int(loader, node)
    return value


PropertyLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


@dataclass(slots=True)
class Loaded:
    """What a load found: the properties, the line of each, and the findings."""

    properties: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # key -> 1-based note line
    findings: list[Finding] = field(default_factory=list)


def load(source_lines: list[str], path: str) -> Loaded:
    """The properties of the frontmatter between the `---` lines (`source_lines`)."""
    loaded = Loaded()
    _read_into(loaded, source_lines, path)
    return loaded


def _read_into(fm: Loaded, source_lines: list[str], path: str) -> None:
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
    loader = PropertyLoader(source)
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
        # a quote left open makes PyYAML fail later, where it gave up: name the quote
        opened = _unclosed_quote_line(source_lines)
        if opened is not None and opened <= line:
            fm.findings.append(
                error(
                    path,
                    opened,
                    "yaml-syntax",
                    "invalid YAML: the quote opened on this line never closes",
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


# a property line at the left margin: inside an open quote it means the quote was not closed
_PROPERTY_LINE = re.compile(r"^[^\s#\"'-][^:]*:(\s|$)")


def _unclosed_quote_line(source_lines: list[str]) -> int | None:
    """The note line where a quote opens that never closes, or None.

    PyYAML names where it gave up: the end of the frontmatter, or a later line whose
    quote it took for the closing one. A quoted value may go on over indented lines;
    one still open at the end, or when the next property starts at the left margin,
    was left open on the line that opened it."""
    quote, opened_at = "", 0
    for number, text in enumerate(source_lines, start=2):
        if quote and _PROPERTY_LINE.match(text):
            return opened_at
        quote, opened_here = _quote_at_end(text, quote)
        if opened_here:
            opened_at = number
    return opened_at if quote else None


def _quote_at_end(text: str, quote: str) -> tuple[str, bool]:
    """The quote still open at the end of `text` ("" for none), entering it inside
    `quote`; and whether that quote opened on this line."""
    opened_here = False
    index, previous = 0, ""  # previous: the last non-blank character outside quotes
    while index < len(text):
        char = text[index]
        if quote == '"' and char == "\\":
            index += 1  # an escaped character
        elif quote == "'" and char == "'" and text[index + 1 : index + 2] == "'":
            index += 1  # '' is a quote inside single quotes
        elif quote and char == quote:
            quote, previous, opened_here = "", char, False
        elif not quote and char in "\"'" and previous in ("", ":", "-", "[", "{", ","):
            quote, opened_here = char, True
        elif not quote and char == "#" and (index == 0 or text[index - 1] in " \t"):
            break  # a comment
        elif not quote and char not in " \t":
            previous = char
        index += 1
    return quote, opened_here


def _construct_properties(loader: Any, node: yaml.MappingNode, path: str, fm: Loaded) -> None:
    """Properties keyed exactly as written (`true:` stays 'true'), values JSON-safe."""
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


_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):")


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


def _reject_aliases(source: str, path: str, fm: Loaded) -> bool:
    try:
        for event in yaml.parse(source, Loader=PropertyLoader):
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


def _duplicate_keys(node: yaml.Node, path: str, fm: Loaded) -> bool:
    """Report every key that repeats within one mapping, at any depth."""
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
    if isinstance(node, yaml.SequenceNode):
        return "list"
    return "single value"
