"""Read a note's YAML frontmatter (Obsidian properties) strictly and safely.

PyYAML's C parser does the scanning; we add what Obsidian properties need and a
plain `safe_load` would let through: duplicate keys are errors (YAML silently
keeps the last), anchors and aliases are refused (a YAML-bomb vector Obsidian
never writes), and dates stay strings so properties round-trip as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from vault_tools.findings import Finding, error

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _PropertyLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader without the timestamp resolver: `2026-11-29` stays a string."""


_PropertyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}


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
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if close is None:
        fm.findings.append(error(path, 1, "frontmatter-unclosed",
                                 "the frontmatter opened on line 1 never closes with '---'"))
        fm.body_index = len(lines)
        return fm
    fm.body_index = close + 1
    fm.end_line = close + 1
    source = "\n".join(lines[1:close])
    _load(source, path, fm)
    return fm


def _load(source: str, path: str, fm: FrontMatter) -> None:
    if ("&" in source or "*" in source) and _reject_aliases(source, path, fm):
        return
    loader = _PropertyLoader(source)
    try:
        node = loader.get_single_node()
        if node is None:
            return
        if not isinstance(node, yaml.MappingNode):
            fm.findings.append(error(path, node.start_mark.line + 2, "yaml-not-mapping",
                                     f"the frontmatter must be a mapping of properties, "
                                     f"not a {_node_kind(node)}"))
            return
        if _duplicate_keys(node, path, fm):
            return
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 2 if mark else 2
        if source.lstrip().startswith(("- ", "[")):
            fm.findings.append(error(path, 2, "yaml-not-mapping", "the frontmatter must be a "
                                     "mapping of properties, but it starts as a list"))
            return
        fm.findings.append(error(path, line, "yaml-syntax", f"invalid YAML: {exc.problem}"))
        return
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        fm.findings.append(error(path, 2, "yaml-syntax", f"invalid YAML: {exc}"))
        return
    finally:
        loader.dispose()
    fm.properties = {str(key): value for key, value in data.items()}
    fm.lines = {str(key.value): key.start_mark.line + 2 for key, _ in node.value}


def _reject_aliases(source: str, path: str, fm: FrontMatter) -> bool:
    try:
        for event in yaml.parse(source, Loader=_PropertyLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                fm.findings.append(error(path, event.start_mark.line + 2, "yaml-alias",
                                         "YAML anchors and aliases are not allowed in "
                                         "properties"))
                return True
    except yaml.YAMLError:
        return False  # reported as a syntax error by the full load
    return False


def _duplicate_keys(node: yaml.Node, path: str, fm: FrontMatter) -> bool:
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
                    fm.findings.append(error(path, line, "yaml-duplicate-key",
                                             f"property '{name}' appears twice (first on line "
                                             f"{seen[name]})"))
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
