"""Map JSON values back to the lines they were written on.

`json.loads` keeps no positions, so when a schema error names a JSON path we
re-scan the block's text once to find the line of that value. This runs only on
the error path, so it favours being small over being fast.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[{}\[\],:])|(?P<lit>[^\s{}\[\],:"]+))',
    re.DOTALL,
)


def value_lines(text: str) -> dict[tuple, int]:
    """Return {path: 1-based line} for every value in a JSON document.

    A path is a tuple of object keys and array indexes, `()` for the root.
    Malformed input yields whatever was mapped before the first surprise.
    """
    lines: dict[tuple, int] = {}
    # stack entries: [container_kind, path, next_index_or_key, expecting_key]
    stack: list[list] = []
    pending_key: str | None = None
    pos = 0
    line = 1
    for match in _TOKEN.finditer(text):
        if match.start() != pos:
            break
        line += text.count("\n", pos, match.start(match.lastgroup))
        pos = match.end()
        token = match.group(match.lastgroup)
        kind = match.lastgroup
        if kind == "punct" and token in "}]":
            if stack:
                stack.pop()
            line += token.count("\n")
            continue
        if kind == "punct" and token in ",:":
            continue
        if stack and stack[-1][0] == "obj" and pending_key is None and kind == "str":
            pending_key = _unquote(token)
            continue
        path = _child_path(stack, pending_key)
        pending_key = None
        lines.setdefault(path, line)
        if token == "{":
            stack.append(["obj", path, 0])
        elif token == "[":
            stack.append(["arr", path, 0])
        line += token.count("\n")
    return lines


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
    import json

    try:
        return json.loads(token)
    except ValueError:
        return token[1:-1]


def line_of(text: str, path: tuple | list, first_line: int) -> int:
    """The note line of the value at `path` in a JSON block whose text starts at `first_line`.

    Falls back to the nearest ancestor that was found, then to the block's first line.
    """
    mapped = value_lines(text)
    path = tuple(path)
    while path not in mapped and path:
        path = path[:-1]
    return first_line + mapped.get(path, 1) - 1
