"""`vt import`: render pipeline records (JSONL) into new review notes.

A record is one JSON object per line (schema `pipeline-record.schema.json`). Each valid
record becomes `03_claims/<claim_id>.md` in the note format of docs/note-format.md, with the
properties a fresh note has (PENDING, NEW, the four checks false). An existing note
is never overwritten: the record is reported as skipped.

`render(record)` and `record_of(note)` are inverses (the record's `provenance` is kept in
vt-owned properties, beside the import time: docs/note-format.md); every rendered note is parsed
back and compared with its record before it is written, so a record the note format
cannot hold is refused instead of being imported altered.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tools.checks.schemas import Schemas
from vault_tools.config import Settings
from vault_tools.errors import UsageError, io_failure
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.durable import fsync_folder, write_all, write_temp
from vault_tools.infra.osfiles import open_fd
from vault_tools.ledger.events import utc_now
from vault_tools.notes.note import Note, parse_note
from vault_tools.notes.owned_properties import render_value
from vault_tools.vocabulary import CHECK_KEYS, IMPORTED_AT, NEW, PENDING, PROVENANCE_PROPERTIES

HUMAN_REVIEW = """請在 Properties 逐項確認：
- 原文 → Atomic Claim 是否忠實
- Atomic Claim → Semantic Frame 是否忠實
- Canonical Entity mapping 是否正確
- Epistemic mode 是否保留原文語氣
- 最後選擇 `review_action`

> [!info] Review state
> Markdown 內文不是正式 approval。只有 Apply bridge 寫入的 Decision Ledger event 才是正式決策。
"""

_PLAIN_ID = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")
_YAML_WORDS = frozenset("y n yes no true false on off null".split())


@dataclass(slots=True)
class ImportItem:
    line: int  # line of the record in the JSONL file
    claim_id: str | None
    path: str | None = None  # vault-relative note path
    message: str = ""

    def to_json(self) -> dict:
        return {
            "line": self.line,
            "claim_id": self.claim_id,
            "path": self.path,
            "message": self.message,
        }


@dataclass(slots=True)
class ImportReport:
    file: str
    created: list[ImportItem] = field(default_factory=list)
    skipped: list[ImportItem] = field(default_factory=list)  # the note exists already
    errors: list[ImportItem] = field(default_factory=list)  # invalid records
    dry_run: bool = False

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "dry_run": self.dry_run,
            "created": [i.to_json() for i in self.created],
            "skipped": [i.to_json() for i in self.skipped],
            "errors": [i.to_json() for i in self.errors],
        }

    def error_lines(self) -> list[str]:
        """`FILE:LINE: message`, one per invalid record."""
        return [f"{self.file}:{item.line}: {item.message}" for item in self.errors]


# --- rendering ---------------------------------------------------------------------------


def _nfc(value: Any) -> Any:
    """The record with every string in NFC (what a parsed note holds)."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, list):
        return [_nfc(v) for v in value]
    if isinstance(value, dict):
        return {_nfc(k): _nfc(v) for k, v in value.items()}
    return value


def _yaml_id(claim_id: str) -> str:
    """A claim_id as a YAML scalar that stays a string (0001, yes, 1e5 are quoted)."""
    if _PLAIN_ID.match(claim_id) and claim_id.lower() not in _YAML_WORDS:
        return claim_id
    return json.dumps(claim_id)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _owned_lines(record: dict, imported_at: str | None) -> str:
    """The record's provenance and the import time as vt-owned properties, one a line."""
    provenance = record.get("provenance") or {}
    values = [(PROVENANCE_PROPERTIES[key], provenance.get(key)) for key in PROVENANCE_PROPERTIES]
    values.append((IMPORTED_AT, imported_at))
    return "".join(f"{key}: {render_value(value)}\n" for key, value in values if value is not None)


def render(record: dict, imported_at: str | None = None) -> str:
    """The review note for a (schema-valid) record, in the format of docs/note-format.md;
    `imported_at` (UTC, `YYYY-MM-DDTHH:MM:SSZ`): when vt imported it."""
    record = _nfc(record)
    source = record["source"]
    claim_id = record["claim_id"]
    link, link_text = source["link"], source.get("link_text", "")
    hint = source.get("line_hint")
    rows = "".join(
        f"| {_cell(row['role'])} | {_cell(row['label'])} | {row['target']} |\n"
        for row in record["mapping"]
    )
    frame = json.dumps(record["semantic_frame"], ensure_ascii=False, indent=2)
    return (
        "---\n"
        f"claim_id: {_yaml_id(claim_id)}\n"
        f"review_action: {PENDING}\n"
        f"review_state: {NEW}\n"
        + "".join(f"{key}: false\n" for key in CHECK_KEYS)
        + 'reviewer: ""\n'
        'review_comment: ""\n'
        "tags: [claim-review]\n"
        f"{_owned_lines(record, imported_at)}"
        "---\n"
        f"# {claim_id}\n\n"
        "## ① SA Source\n"
        f"- Source: {f'[{link_text}]({link})' if link_text else link}\n"
        f"- Section: {source.get('section', '')}\n"
        f"- Line hint: {'' if hint is None else hint}\n\n"
        f"### Context Before\n{source.get('context_before', '')}\n\n"
        f"### Evidence\n{source['evidence']}\n\n"
        f"### Context After\n{source.get('context_after', '')}\n\n"
        f"## ② Atomic Claim\n{record['atomic_claim']}\n\n"
        f"- Epistemic Mode: {record['epistemic_mode']}\n"
        f"- Mapping Status: {record['mapping_status']}\n\n"
        f"## ③ Semantic Frame\n```json\n{frame}\n```\n\n"
        "## ④ Canonical Entity Mapping\n"
        "| Role | Surface Label | Canonical Target |\n"
        "|---|---|---|\n"
        f"{rows}\n"
        f"## ⑤ Human Review\n{HUMAN_REVIEW}"
    )


def record_of(note: Note) -> dict:
    """The pipeline record a parsed review note holds (the inverse of `render`)."""
    source = note.source
    claim = note.claim

    def text(value: Any) -> str:
        return value.value if value is not None else ""

    hint = text(source.line_hint) if source else ""
    record_source = {
        "link": text(source.link) if source else "",
        "link_text": source.link_text if source else "",
        "section": text(source.section) if source else "",
        "line_hint": int(hint) if hint.isdigit() else None,
        "context_before": text(source.context_before) if source else "",
        "evidence": text(source.evidence) if source else "",
        "context_after": text(source.context_after) if source else "",
    }
    provenance = {
        key: value
        for key, name in PROVENANCE_PROPERTIES.items()
        if isinstance(value := note.properties.get(name), str)
    }
    return {
        "claim_id": note.claim_id,
        **({"provenance": provenance} if provenance else {}),
        "source": record_source,
        "atomic_claim": text(claim.text) if claim else "",
        "epistemic_mode": text(claim.epistemic_mode) if claim else "",
        "mapping_status": text(claim.mapping_status) if claim else "",
        "semantic_frame": note.frame.data if note.frame is not None else None,
        "mapping": [{"role": r.role, "label": r.label, "target": r.target} for r in note.mapping],
    }


def full_record(record: dict) -> dict:
    """A record with its optional source fields filled in as `record_of` returns them
    (an empty `provenance` is none)."""
    record = {k: v for k, v in _nfc(record).items() if k != "provenance" or v}
    source = {
        "link_text": "",
        "section": "",
        "line_hint": None,
        "context_before": "",
        "context_after": "",
        **record["source"],
    }
    return {**record, "source": source}


# --- reading records -----------------------------------------------------------------------

_PATTERN_HINTS = {
    "should not be valid": "holds Markdown a note cannot keep as plain text (a heading or "
    "code fence at a line start, a '- Epistemic Mode:' line, a CR)",
    "does not match": "is not allowed here: no leading/trailing whitespace, one line for "
    "one-line fields, no [[ ]] in labels, no spaces or brackets in links",
}


def _schema_message(pointer: str, message: str) -> str:
    for marker, hint in _PATTERN_HINTS.items():
        if marker in message:
            return f"{pointer}: {hint}"
    return f"{pointer}: {message}"


def read_records(path: Path, schemas: Schemas) -> tuple[list[tuple[int, dict]], list[ImportItem]]:
    """Valid records with their line numbers, and one error per invalid line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", str(path)) from exc
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    records: list[tuple[int, dict]] = []
    errors: list[ImportItem] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        record, problem = _parse_line(line, schemas)
        claim_id = record.get("claim_id") if isinstance(record, dict) else None
        claim_id = claim_id if isinstance(claim_id, str) else None
        if problem is None and claim_id in seen:
            problem = f"claim_id {claim_id!r} already used on line {seen[claim_id]}"
        if problem is not None:
            errors.append(ImportItem(number, claim_id, message=problem))
            continue
        assert isinstance(record, dict) and claim_id is not None
        seen[claim_id] = number
        records.append((number, record))
    return records, errors


def _parse_line(line: bytes, schemas: Schemas) -> tuple[Any, str | None]:
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    if not isinstance(record, dict):
        return record, "a record must be a JSON object"
    problems = schemas.check("record", record)
    if problems:
        shown = "; ".join(_schema_message(p.pointer, p.message) for p in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return record, shown + more
    return record, None


# --- writing ----------------------------------------------------------------------------------


def create_file(path: Path, data: bytes, *, root: Path | None = None) -> bool:
    """Create `path` holding `data`, atomically and never over an existing file.

    The bytes go to a temp file in the same folder (fsynced), which is then hard-linked
    to `path`: the link fails if `path` exists, so nothing is ever overwritten and no
    reader sees a half-written note. Returns False when `path` exists. `root`: the vault;
    a path leading outside it is refused with BoundaryError before anything is written.
    """
    if root is not None:
        writable_path(root, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = ""
    try:
        tmp = write_temp(path, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:
            # no hard links here (some network or FUSE file systems): an exclusive create
            # still never overwrites, though a crash may leave a partial note behind
            return _create_exclusive(path, data)
    except OSError as exc:
        raise io_failure(exc, path) from exc
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    try:
        fsync_folder(path.parent)
    except OSError as exc:
        raise io_failure(exc, path, "written, but syncing its folder failed") from exc
    return True


def _create_exclusive(path: Path, data: bytes) -> bool:
    try:
        fd = open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def _exists_any_case(folder: Path, name: str) -> Path | None:
    """An existing file named `name` in `folder`, compared case-insensitively (Obsidian
    resolves links that way, and macOS and Windows file systems fold case). A symlink
    counts as the file it is, dangling or looping: `exists()` would follow it."""
    if os.path.lexists(folder / name):
        return folder / name
    if not folder.is_dir():
        return None
    key = unicodedata.normalize("NFC", name).casefold()
    return next(
        (
            child
            for child in folder.iterdir()
            if unicodedata.normalize("NFC", child.name).casefold() == key
        ),
        None,
    )


def import_records(settings: Settings, file: Path, dry_run: bool = False) -> ImportReport:
    """Import every valid record of `file` as a new note; invalid ones are errors."""
    schemas = Schemas(settings.schemas_dir)
    report = ImportReport(str(file), dry_run=dry_run)
    records, report.errors = read_records(file, schemas)
    folder = settings.vault / settings.claims_dir
    # refused before the first note, not after; a dry run says so too (it only checks)
    writable_path(settings.vault, folder)
    imported_at = utc_now()  # one time for the whole file: one import
    for line, record in records:
        claim_id = record["claim_id"]
        relative = f"{settings.claims_dir.rstrip('/')}/{claim_id}.md"
        text = render(record, imported_at)
        problem = _roundtrip_problem(text, record, relative)
        if problem:
            report.errors.append(ImportItem(line, claim_id, relative, problem))
            continue
        existing = _exists_any_case(folder, f"{claim_id}.md")
        if existing is not None:
            # named as it stands in the folder: where a symlink leads is no name of the vault's
            shown = f"{settings.claims_dir.rstrip('/')}/{existing.name}"
            if existing.is_symlink():
                problem = f"{shown} is a symlink (where it leads is not read); not overwritten"
                report.errors.append(ImportItem(line, claim_id, relative, problem))
            else:
                report.skipped.append(
                    ImportItem(line, claim_id, relative, f"{shown} exists; not overwritten")
                )
            continue
        if not dry_run and not create_file(
            folder / f"{claim_id}.md", text.encode("utf-8"), root=settings.vault
        ):
            report.skipped.append(
                ImportItem(line, claim_id, relative, "the note appeared meanwhile; not overwritten")
            )
            continue
        report.created.append(ImportItem(line, claim_id, relative))
    report.errors.sort(key=lambda item: item.line)
    return report


def _roundtrip_problem(text: str, record: dict, relative: str) -> str | None:
    """Why the rendered note would not give the record back (None when it does)."""
    note = parse_note(text.encode("utf-8"), relative)
    errors = [f for f in note.findings if f.severity == "error"]
    if errors:
        return f"the rendered note does not parse: {errors[0].message}"
    back = record_of(note)
    if back != full_record(record):
        fields = [key for key in back if back[key] != full_record(record).get(key)]
        return f"the note format cannot hold this record unchanged ({', '.join(fields)})"
    return None
