"""Parse a review note into typed data, in one pass, keeping the line of every value.

`parse_note` never raises for bad input: whatever is wrong with a note becomes a
`Finding` on the returned `Note`, so one broken note never stops a vault run.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vault_tools.findings import Finding, error
from vault_tools.notes import frontmatter, value_limits
from vault_tools.notes.conflicts import conflict_findings
from vault_tools.notes.lines import MEMO_LINE
from vault_tools.notes.sections import (
    Body,
    Part,
    Section,
    level2_sections,
    marked_lines,
    parts_of,
    subsections,
)

# `- Name: value`; the value less trailing blanks is group(2).rstrip(). No two parts can
# take the same characters: a name ends with a letter, so a long run of spaces costs one
# pass, not one per space (a lazy name before `\s*` backtracked quadratically)
_FIELD = re.compile(r"^\s*[-*]\s*([A-Za-z]+(?: +[A-Za-z]+)*)\s*[:：]\s*(.*)$")
_LINK = re.compile(r"^\[([^\]]*)\]\(([^)\s]*)\)$")


@dataclass(slots=True)
class Text:
    """A piece of note text and the 1-based line it starts on."""

    value: str
    line: int


@dataclass(slots=True)
class JsonBlock:
    text: str  # the block's content, without the fences
    line: int  # note line of the block's first content line
    data: Any = None
    ok: bool = False  # parsed without error


@dataclass(slots=True)
class Source:
    link: Text | None = None  # the URL (or the raw value when not a Markdown link)
    link_text: str = ""
    section: Text | None = None
    line_hint: Text | None = None
    context_before: Text | None = None
    evidence: Text | None = None
    context_after: Text | None = None


@dataclass(slots=True)
class Claim:
    text: Text
    epistemic_mode: Text | None = None
    mapping_status: Text | None = None


@dataclass(slots=True)
class MappingRow:
    role: str
    label: str
    target: str
    line: int


@dataclass(slots=True)
class Drafts:
    line: int  # the V2 Draft heading
    claim: Text | None = None
    frame: JsonBlock | None = None
    metadata: JsonBlock | None = None


@dataclass(slots=True)
class Note:
    path: str
    properties: dict[str, Any] = field(default_factory=dict)
    property_lines: dict[str, int] = field(default_factory=dict)
    has_frontmatter: bool = False
    body_line: int = 1  # first line after the frontmatter
    sections: list[Section] = field(default_factory=list)
    source: Source | None = None
    claim: Claim | None = None
    frame: JsonBlock | None = None
    mapping: list[MappingRow] = field(default_factory=list)
    mapping_line: int | None = None
    drafts: Drafts | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def claim_id(self) -> str | None:
        value = self.properties.get("claim_id")
        return str(value) if value is not None else None

    @property
    def is_review_note(self) -> bool:
        return "claim_id" in self.properties

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)

    def line_of_property(self, key: str) -> int | None:
        return self.property_lines.get(key)


REQUIRED_SECTIONS = {
    "source": "SA Source",
    "claim": "Atomic Claim",
    "frame": "Semantic Frame",
    "mapping": "Canonical Entity Mapping",
}


def decode(raw: bytes, path: str) -> tuple[str | None, Finding | None]:
    """UTF-8 (with or without BOM) to NFC text; a finding instead when the bytes are not UTF-8."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return None, error(
            path, line, "encoding", f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}"
        )
    # is_normalized's quick check is one table look-up per character (a regex search
    # for the characters that may need NFC took four times as long on a Chinese note)
    if not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text, None


def parse_note(raw: bytes, path: str) -> Note:
    """Parse the bytes of one note. Never raises on bad content."""
    note = Note(path=path)
    text, problem = decode(raw, path)
    if problem:
        note.findings.append(problem)
        return note
    assert text is not None  # decode gives the text or the finding
    return parse_text(text, path, note)


def parse_text(text: str, path: str, note: Note | None = None) -> Note:
    note = note or Note(path=path)
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        if text.count("\r") != text.count("\r\n"):
            note.findings.append(_lone_cr_finding(lines, path))
    note.findings.extend(conflict_findings(text, lines, path))
    fm = frontmatter.read(lines, path)
    note.findings.extend(fm.findings)
    note.properties, note.property_lines = fm.properties, fm.lines
    note.has_frontmatter, note.body_line = fm.present, fm.body_index + 1
    if not note.is_review_note:
        return note
    _parse_body(note, Body(lines, marked_lines(text, fm.body_index)))
    return note


LINE_ENDINGS = "line-endings"


def _lone_cr_finding(lines: list[str], path: str) -> Finding:
    """The error for a CR that ends no CRLF (old Mac OS endings): Obsidian breaks the line
    there, vt does not. A note made of such lines is one line to vt; without this error a
    whole-vault run would find no frontmatter and pass it over in silence."""
    # none left in the lines: the CR ended the last line, and was taken for a CRLF's
    line = next((n for n, text in enumerate(lines, 1) if "\r" in text), len(lines))
    return error(path, line, LINE_ENDINGS, "a line ends in CR alone (old Mac OS line "
                 "endings), which vt does not read as a line break; convert the note to LF "
                 "or CRLF")  # fmt: skip


def _parse_body(note: Note, body: Body) -> None:
    lines = body.lines
    note.sections = level2_sections(body)
    seen: dict[str, Section] = {}
    for section in note.sections:
        if section.key in seen and section.key in _PARSERS:
            note.findings.append(
                error(
                    note.path,
                    section.line,
                    "section-duplicate",
                    f"second '{section.title}' section (first at line "
                    f"{seen[section.key].line}); the first one is used",
                )
            )
            continue
        seen.setdefault(section.key, section)
    for key, title in REQUIRED_SECTIONS.items():
        if key not in seen:
            note.findings.append(
                error(
                    note.path,
                    min(note.body_line, len(lines)),
                    "section-missing",
                    f"no '## {title}' section",
                )
            )
    for key, section in seen.items():
        parser = _PARSERS.get(key)
        if parser:
            parser(note, body, section)


def _text_of(parts: list[Part]) -> Text | None:
    """Join text parts, trimming blank lines at both ends; None when there is no text.
    Each part is joined whole and stripped, not looked at line by line: the text starts
    on the line of its first character that is not blank (what `str.strip` takes away
    within a line and as a line is the same)."""
    kept: list[str] = []
    first = 0
    for part in parts:
        if part.kind != "text" or not part.lines:
            continue
        joined = "\n".join(part.lines)
        if kept:
            kept.append(joined)
            continue
        stripped = joined.lstrip()
        if stripped:
            first = part.line + joined.count("\n", 0, len(joined) - len(stripped))
            kept.append(stripped)
    if not kept:
        return None
    return Text(("\n".join(kept) if len(kept) > 1 else kept[0]).rstrip(), first)


def _parse_source(note: Note, body: Body, section: Section) -> None:
    groups = subsections(parts_of(body, section))
    source = Source()
    for part in groups[""][1]:
        if part.kind != "text":
            continue
        for offset, line in enumerate(part.lines):
            _source_field(note, source, line, part.line + offset)
    source.context_before = _text_of(groups.get("context before", (0, []))[1])
    source.evidence = _text_of(groups.get("evidence", (0, []))[1])
    source.context_after = _text_of(groups.get("context after", (0, []))[1])
    if source.evidence is None:
        where = groups["evidence"][0] if "evidence" in groups else section.line
        note.findings.append(
            error(note.path, where, "source-field", "the source has no '### Evidence' text")
        )
    note.source = source


def _field(line: str) -> tuple[str, str] | None:
    """A `- Name: value` line's name (lowered) and value, else None."""
    match = _FIELD.match(line)
    return (match.group(1).lower(), match.group(2).rstrip()) if match else None


# the field lines and the mapping rows repeat from note to note (`- Epistemic Mode:
# ASSERTED`, `- Section: …`, the rows of the entities a vault keeps naming)
_field_memo = functools.lru_cache(maxsize=4096)(_field)


def _field_of(line: str) -> tuple[str, str] | None:
    head = line[:1]
    # a line of text (the claim's, a blank one) cannot be a field: it is passed over
    # before the memo, which it would fill with lines that never come back
    if head != "-" and head != "*" and not head.isspace():
        return None
    return _field_memo(line) if len(line) <= MEMO_LINE else _field(line)


def _source_field(note: Note, source: Source, line: str, number: int) -> None:
    found = _field_of(line)
    if found is None:
        return
    name, value = found
    if name == "source":
        link = _LINK.match(value)
        source.link_text = link.group(1) if link else ""
        source.link = Text(link.group(2) if link else value, number)
    elif name == "section":
        source.section = Text(value, number)
    elif name == "line hint":
        source.line_hint = Text(value, number)
        if value and not value.isdigit():
            note.findings.append(
                error(
                    note.path,
                    number,
                    "source-field",
                    f"Line hint must be a line number, not {value!r}",
                )
            )


def _parse_claim(note: Note, body: Body, section: Section) -> None:
    parts = parts_of(body, section)
    text_parts: list[Part] = []
    mode = status = None
    for part in parts:
        if part.kind != "text":
            continue
        kept = []
        for offset, line in enumerate(part.lines):
            found = _field_of(line)
            name = found[0] if found else ""
            if found and name == "epistemic mode":
                mode = Text(found[1], part.line + offset)
            elif found and name == "mapping status":
                status = Text(found[1], part.line + offset)
            elif mode is None and status is None:
                kept.append(line)
        text_parts.append(Part("text", part.line, kept))
    text = _text_of(text_parts)
    if text is None:
        note.findings.append(
            error(
                note.path, section.line, "claim-empty", "the Atomic Claim section has no claim text"
            )
        )
        text = Text("", section.line)
    _check_control(note, body, text, "the claim text")
    for label, value in (("Epistemic Mode", mode), ("Mapping Status", status)):
        if value is None or not value.value:
            where = value.line if value else section.line
            note.findings.append(
                error(note.path, where, "claim-field", f"the claim has no '- {label}:' value")
            )
    note.claim = Claim(text, mode, status)


def _check_control(note: Note, body: Body, text: Text, what: str) -> None:
    """A finding when a claim text holds a control character (see value_limits.CONTROL),
    on the first line from the text's start that holds it."""
    if text.value.isprintable():  # the usual one-line claim: one C pass, no regex
        return
    found = value_limits.CONTROL.search(text.value)
    if found is None:
        return
    line = text.line
    for index in range(text.line - 1, len(body.lines)):
        if found.group() in body.lines[index]:
            line = index + 1
            break
    note.findings.append(value_limits.control_finding(note.path, line, what, found.group()))


def _parse_frame(note: Note, body: Body, section: Section) -> None:
    note.frame = _one_json_block(note, parts_of(body, section), section.line, "Semantic Frame")


def _one_json_block(
    note: Note, parts: list[Part], heading_line: int, what: str
) -> JsonBlock | None:
    blocks = [p for p in parts if p.kind == "code" and p.info in ("json", "", "jsonc")]
    if not blocks:
        note.findings.append(
            error(note.path, heading_line, "json-missing", f"{what} has no ```json block")
        )
        return None
    if len(blocks) > 1:
        note.findings.append(
            error(
                note.path,
                blocks[1].line,
                "json-multiple",
                f"{what} has {len(blocks)} JSON blocks where one belongs "
                f"(first at line {blocks[0].line})",
            )
        )
    block = JsonBlock("\n".join(blocks[0].lines), blocks[0].line + 1)
    try:
        block.data = _decoded(block.text)
        block.ok = True
        # an escaped control character in a string: rare, and only then is the value walked
        # (a backslash first: the search for one character is ten times quicker)
        if (
            "\\" in block.text
            and "\\u00" in block.text
            and (found := _ESCAPED_CONTROL.search(block.text))
        ):
            _control_in_json(note, block, what, found)
    except json.JSONDecodeError as exc:
        # an empty block (e.g. a fence on the file's last line) points at its fence
        last = blocks[0].line + len(blocks[0].lines)
        line = min(block.line + exc.lineno - 1, last)
        note.findings.append(
            error(note.path, line, "json-syntax", f"{what}: {exc.msg} (column {exc.colno})")
        )
    except RecursionError:
        note.findings.append(
            error(note.path, block.line, "json-syntax", f"{what}: nested too deeply")
        )
    except _NotJson as exc:
        found = _NON_JSON_CONSTANT.search(block.text)
        line = block.line + (block.text.count("\n", 0, found.start()) if found else 0)
        note.findings.append(
            error(
                note.path,
                line,
                "json-syntax",
                f"{what}: {exc} is not JSON (write a number or a string)",
            )
        )
    except _Overflow as exc:
        at = block.text.find(str(exc))
        line = block.line + (block.text.count("\n", 0, at) if at >= 0 else 0)
        note.findings.append(
            error(
                note.path,
                line,
                "number-too-large",
                f"{what}: {_shown(str(exc))} is beyond the range of a double",
            )
        )
    except ValueError as exc:  # an integer longer than Python converts (int() of a string)
        line, digits = value_limits.longest_number(block.text)
        limit = value_limits.digits_limit()
        if limit and digits > limit:
            note.findings.append(
                error(
                    note.path,
                    block.line + line - 1,
                    "number-too-large",
                    f"{what}: a number of {digits:,} digits (vt reads at most {limit:,})",
                )
            )
        else:  # nothing else is known to raise it; a finding all the same, never a crash
            note.findings.append(error(note.path, block.line, "json-syntax", f"{what}: {exc}"))
    return block


class _NotJson(ValueError):
    """NaN or Infinity in a JSON block: Python reads them, JSON has no such numbers."""


class _Overflow(ValueError):
    """A number in a JSON block that is infinite as a double (1e999): no JSON number."""


def _not_json_constant(name: str) -> Any:
    raise _NotJson(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Overflow(text)
    return value


# json.loads as the standard decoder does it, but NaN, Infinity and numbers beyond a
# double are refused (the C scanner calls these only for such constants and for floats)
_JSON = json.JSONDecoder(parse_constant=_not_json_constant, parse_float=_finite_float)
_BLANKS = re.compile(r"[ \t\n\r]*")  # what JSON allows around a value (json.decoder's)


def _decoded(text: str) -> Any:
    """`_JSON.decode(text)`, its errors the same, without its two Python calls around
    the C scanner (one JSON block or two a note)."""
    start = _BLANKS.match(text).end()  # type: ignore[union-attr]  # matches the empty text
    try:
        value, end = _SCAN(text, start)
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    end = _BLANKS.match(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


# what _JSON.decode calls, the C scanner (set on each decoder, not in its type stubs)
_SCAN: Callable[[str, int], tuple[Any, int]] = _JSON.scan_once  # type: ignore[attr-defined]
_NON_JSON_CONSTANT = re.compile(r"-?Infinity|NaN")
_ESCAPED_CONTROL = re.compile(r"\\u00[01][0-9a-fA-F]|\\u007[fF]")


def _shown(number: str) -> str:
    return number if len(number) <= 24 else f"{number[:10]}…{number[-10:]}"


def _control_in_json(note: Note, block: JsonBlock, what: str, found: re.Match[str]) -> None:
    """A finding for a control character escaped in a string (or key) of a parsed block,
    when the value holds one (the escape may be `\\u0000` spelled out after a `\\`)."""
    control = _first(block.data, lambda v: isinstance(v, str) and value_limits.CONTROL.search(v))
    if control is None:
        return
    character = value_limits.CONTROL.search(control)
    assert character is not None
    line = block.line + block.text.count("\n", 0, found.start())
    note.findings.append(value_limits.control_finding(note.path, line, what, character.group()))


def _first(value: Any, wanted: Callable[[Any], Any]) -> Any:
    """A value (or object key) inside `value` for which `wanted` is true, else None; a
    walk with a stack, not recursion (a block may nest deeply)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if wanted(current):
            return current
        if isinstance(current, dict):
            stack.extend(current)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return None


def _parse_mapping(note: Note, body: Body, section: Section) -> None:
    lines = body.lines
    note.mapping_line = section.line
    rows: list[MappingRow] = []
    header_seen = False
    for index in range(section.start, section.end):
        line = lines[index].strip()
        if not line.startswith("|"):
            continue
        if not header_seen:
            header_seen = True  # the header row, whatever its cells
            continue
        cells, separator = _row_memo(line) if len(line) <= MEMO_LINE else _row(line)
        if separator:
            continue
        if len(cells) != 3 or not cells[2]:
            note.findings.append(
                error(
                    note.path,
                    index + 1,
                    "mapping-table",
                    f"a mapping row needs 3 cells (Role | Surface Label | "
                    f"Canonical Target), found {len(cells)}",
                )
            )
            continue
        rows.append(MappingRow(cells[0], cells[1], cells[2], index + 1))
    note.mapping = rows


_SEPARATOR_ROW = re.compile(r"[\s|:-]*")
_SEPARATOR_CHARS = frozenset(":- ")  # what a separator row's cells hold


def _row(line: str) -> tuple[tuple[str, ...], bool]:
    """A table row's cells, and whether it is the separator row (the regex turns the
    other rows away cheaply)."""
    cells = split_table_row(line)
    separator = _SEPARATOR_ROW.fullmatch(line) is not None and all(
        set(cell) <= _SEPARATOR_CHARS for cell in cells
    )
    return tuple(cells), separator


_row_memo = functools.lru_cache(maxsize=4096)(_row)


def split_table_row(line: str) -> list[str]:
    """Split a Markdown table row on `|`, except inside `[[…]]` or when escaped as `\\|`."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    if "\\" not in body and (
        "[[" not in body or ("\x00" not in body and not _pipe_in_wikilink(body))
    ):
        return [cell.strip() for cell in body.split("|")]
    # protect the pipes that are not cell separators, split, then restore them
    body = _protect_wikilinks(body.replace("\\|", "\x00"))
    return [cell.replace("\x00", "|").strip() for cell in body.split("|")]


# Wikilinks are found by hand, not by `\[\[[^\]]*\]\]`: from every `[[` that regex runs
# to the next `]`, so a row of many `[[` cost their count squared.


def _pipe_in_wikilink(body: str) -> bool:
    """Whether a `|` follows a `[[` with no `]` between them."""
    start = body.find("[[")
    while start >= 0:  # the first `[[` after each `]`: the later ones see less of the row
        close = body.find("]", start + 2)
        if body.find("|", start + 2, len(body) if close < 0 else close) >= 0:
            return True
        if close < 0:
            return False
        start = body.find("[[", close + 1)
    return False


def _protect_wikilinks(body: str) -> str:
    """`body` with the `|` inside each `[[…]]` (no `]` inside) made NUL, leftmost first."""
    out: list[str] = []
    copied = search = 0
    while (start := body.find("[[", search)) >= 0:
        close = body.find("]", start + 2)
        if close < 0:
            break
        if body.startswith("]]", close):
            out += body[copied:start], body[start : close + 2].replace("|", "\x00")
            copied = search = close + 2
        else:  # every `[[` before this `]` ends at it: none of them is a wikilink
            search = close + 1
    out.append(body[copied:])
    return "".join(out)


def _parse_drafts(note: Note, body: Body, section: Section) -> None:
    groups = subsections(parts_of(body, section))
    drafts = Drafts(section.line)
    for key, (line, parts) in groups.items():
        if not key:
            continue
        if "atomic claim" in key:
            drafts.claim = _text_of(parts) or Text("", line)
            _check_control(note, body, drafts.claim, "the V2 Atomic Claim Draft")
            if not drafts.claim.value:
                note.findings.append(
                    error(note.path, line, "claim-empty", "the V2 Atomic Claim Draft has no text")
                )
        elif "semantic frame" in key:
            drafts.frame = _one_json_block(note, parts, line, "V2 Semantic Frame Draft")
        elif "revision metadata" in key or "metadata" in key:
            drafts.metadata = _one_json_block(note, parts, line, "V2 Revision Metadata Draft")
    for value, title in (
        (drafts.claim, "V2 Atomic Claim Draft"),
        (drafts.frame, "V2 Semantic Frame Draft"),
        (drafts.metadata, "V2 Revision Metadata Draft"),
    ):
        if value is None and not _reported_missing_json(note, title):
            note.findings.append(
                error(
                    note.path,
                    section.line,
                    "draft-incomplete",
                    f"the V2 Draft section has no '### {title}'",
                )
            )
    note.drafts = drafts


def _reported_missing_json(note: Note, title: str) -> bool:
    return any(f.code == "json-missing" and title in f.message for f in note.findings)


_PARSERS = {
    "source": _parse_source,
    "claim": _parse_claim,
    "frame": _parse_frame,
    "mapping": _parse_mapping,
    "drafts": _parse_drafts,
}
