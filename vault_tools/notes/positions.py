"""Positions of JSON values: the line each value of a JSON block was written on.

`json.loads` keeps no positions, so a finding that names a JSON path (a schema error,
a review-assist warning) finds its line here, from the block's text:
- `line_of`: the line of one value (a schema error), scanning the text up to it;
- `value_lines`: the line of every value of a block at once ({path: line}), for a note
  that gets several warnings; a block laid out one value per line (as json.dumps and
  the pipeline write it) is mapped line by line, faster than token by token;
- `member_line`: the line of one `"key": "value"` member, found by a text search when
  the search can be sure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from json.encoder import encode_basestring as _encode  # C; keeps non-ASCII, as ensure_ascii=False
from types import MappingProxyType

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[{}\[\],:])|(?P<lit>[^\s{}\[\],:"]+))',
    re.DOTALL,
)


def _value_positions(text: str) -> Iterator[tuple[tuple, int]]:
    """Yield (path, 1-based line) for every value of a JSON document, in text order.

    A path is a tuple of object keys and array indexes, `()` for the root.
    Malformed input yields whatever was mapped before the first surprise.
    """
    stack: list[list] = []  # [kind, path, next index]
    pending_key: str | None = None
    pos = 0
    line = 1
    for match in _TOKEN.finditer(text):
        if match.start() != pos:
            return
        kind = match.lastgroup
        assert kind is not None  # every alternative of _TOKEN is a named group
        token = match.group(kind)
        line += text.count("\n", pos, match.start(kind))
        pos = match.end()
        if kind == "punct":
            if token in "}]":
                if stack:
                    stack.pop()
                continue
            if token in ",:":
                continue
        elif kind == "str" and pending_key is None and stack and stack[-1][0] == "obj":
            pending_key = _unquote(token)
            continue
        path = _child_path(stack, pending_key)
        pending_key = None
        yield path, line
        if token == "{":
            stack.append(["obj", path, 0])
        elif token == "[":
            stack.append(["arr", path, 0])


@lru_cache(maxsize=64)
def value_lines(text: str) -> Mapping[tuple, int]:
    """{path: 1-based line} for every value of a JSON document (the first one of a path).
    Read-only: every caller shares the memo's one answer."""
    dumped = _dumped_lines(text)
    if dumped is not None:
        return MappingProxyType(dumped)
    pretty = _one_value_a_line(text)
    if pretty is not None:
        return MappingProxyType(pretty)
    lines: dict[tuple, int] = {}
    for path, line in _value_positions(text):
        lines.setdefault(path, line)
    return MappingProxyType(lines)


# One value per line, as json.dumps(indent=…) and the pipeline write it: read line by
# line, several times faster than token by token; anything else takes the token scan.
_PRETTY = re.compile(
    r'\s*(?:"((?:[^"\\]|\\.)*)"\s*:\s*)?'
    r'(?:(?P<open>[{\[])|\{\s*\}|\[\s*\]|"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*|true|false|null)'
    r"\s*(?:,\s*)?"  # not `\s*,?\s*`: two runs that may take the same blanks backtrack
)  # quadratically when something else follows them
_CLOSE = re.compile(r"\s*[}\]]\s*(?:,\s*)?")


def _one_value_a_line(text: str) -> dict[tuple, int] | None:
    lines: dict[tuple, int] = {}
    stack: list[list] = []  # [is_object, path, next index]
    for number, line in enumerate(text.split("\n"), start=1):
        first = line.lstrip()[:1]
        if not first:
            continue
        if first in "}]" and _CLOSE.fullmatch(line):
            if not stack:
                return None
            stack.pop()
            continue
        match = _PRETTY.fullmatch(line)
        if match is None:
            return None
        key = match.group(1)
        if stack and stack[-1][0]:
            if key is None:
                return None
            path = (*stack[-1][1], _unquote(f'"{key}"'))
        elif key is not None:
            return None
        elif stack:
            path = (*stack[-1][1], stack[-1][2])
            stack[-1][2] += 1
        else:
            path = ()
        lines.setdefault(path, number)
        opener = match.group("open")
        if opener:
            stack.append([opener == "{", path, 0])
    return lines if not stack else None


def _dumped_lines(text: str) -> dict[tuple, int] | None:
    """The map of a block laid out as `json.dumps(indent=…, ensure_ascii=False)` writes it
    (what the pipeline writes), read off the parsed value: `json.loads` runs in C, and
    laying the value out again line by line is cheaper than reading the text's lines.
    None when the text is laid out otherwise."""
    newline = text.find("\n")
    if newline < 0:
        return None
    rest = text[newline + 1 :]
    indent = rest[: len(rest) - len(rest.lstrip(" \t"))]
    if not indent:
        return None
    try:
        value = json.loads(text)
        out: list[str] = []
        lines: dict[tuple, int] = {}
        _lay_out(value, (), "", "", indent, out, lines)
    except (ValueError, RecursionError):
        return None
    # the text is the value laid out one value per line, so each value is on its line
    return lines if "\n".join(out) == text else None


def _lay_out(
    value: object,
    path: tuple,
    head: str,
    pad: str,
    indent: str,
    out: list[str],
    lines: dict[tuple, int],
) -> None:
    """Append the lines json.dumps(indent=indent) writes for `value` (its first one
    starting with `head`) to `out`, and the line of it and of everything in it to `lines`.
    Raises ValueError for what json.loads cannot have made."""
    lines[path] = len(out) + 1
    kind = value.__class__
    if kind is dict and value:
        out.append(head + "{")
        inner = pad + indent
        for key, item in value.items():  # type: ignore[attr-defined]
            _lay_out(item, (*path, key), f"{inner}{_encode(key)}: ", inner, indent, out, lines)
            out[-1] += ","
        out[-1] = out[-1][:-1]
        out.append(pad + "}")
    elif kind is list and value:
        out.append(head + "[")
        inner = pad + indent
        for index, item in enumerate(value):  # type: ignore[arg-type]
            _lay_out(item, (*path, index), inner, inner, indent, out, lines)
            out[-1] += ","
        out[-1] = out[-1][:-1]
        out.append(pad + "]")
    else:
        out.append(head + _scalar(value))


def _scalar(value: object) -> str:
    kind = value.__class__
    if kind is str:
        return _encode(value)  # type: ignore[arg-type]
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):  # type: ignore[arg-type]
        return float.__repr__(value)
    if kind is dict:
        return "{}"
    if kind is list:
        return "[]"
    raise ValueError("not laid out here")  # NaN, Infinity: the line-by-line path maps them


def _child_path(stack: list[list], key: str | None) -> tuple:
    if not stack:
        return ()
    parent = stack[-1]
    if parent[0] == "obj":
        return (*parent[1], key)
    index = parent[2]
    parent[2] += 1
    return (*parent[1], index)


def _unquote(token: str) -> str:
    if "\\" not in token:
        return token[1:-1]
    try:
        return json.loads(token)
    except ValueError:
        return token[1:-1]


@lru_cache(maxsize=64)
def _key_spacing(key: str) -> re.Pattern:
    """The spacing around the colon after every occurrence of `key` as a member name."""
    return re.compile(re.escape(_encode(key)) + r"(\s*):(\s*)")


@lru_cache(maxsize=64)  # a note asks about several members of the same block
def _spelled_as_dumped(text: str, key: str) -> bool:
    if "\\u" in text or "\\/" in text:
        return False
    return all(spacing == ("", " ") for spacing in _key_spacing(key).findall(text))


def member_line(text: str, key: str, value: str) -> int | None:
    """The 1-based line of the member `key: value` (a string) in a JSON document, found
    without mapping the document; None when the cheap search cannot be sure.

    Sure means: no `\\u`/`\\/` escapes (so names and strings are spelled as json.dumps
    spells them), every member named `key` spaced as json.dumps(indent=…) spaces it, and
    that member with this value occurs once. An unescaped quote never occurs inside a
    string, so a match is a member name, not string content; with every `key` member
    spelled alike, the one match is the member the parsed value came from.
    """
    if not _spelled_as_dumped(text, key):
        return None
    needle = f"{_encode(key)}: {_encode(value)}"
    at = text.find(needle)
    if at < 0 or text.find(needle, at + 1) >= 0:
        return None
    return text.count("\n", 0, at) + 1


def line_of(text: str, path: tuple | list, first_line: int) -> int:
    """The note line of the value at `path` in a JSON block whose text starts at `first_line`.

    Stops scanning at the value; falls back to the nearest ancestor found, then to the
    block's first line.
    """
    path = tuple(path)
    best = 1
    for found, line in _value_positions(text):
        if found == path:
            return first_line + line - 1
        if path[: len(found)] == found:
            best = line
    return first_line + best - 1
