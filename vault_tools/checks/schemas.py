"""The JSON Schemas vt validates against, and the vault's extensions to them.

The package ships the schemas (`vault_tools/schemas/*.schema.json`). A vault can
extend them without touching the package through the `schemas_dir` of its
`vt.toml`: a file there with a package schema's name replaces it, and an
`enums.json` (`{"metric": ["POWER"], …}`) adds values to the enum of that name in
every schema's `$defs`.

jsonschema-rs (compiled) decides what is valid and reports each error of an invalid
instance, its place and its kind; schema_messages.py words it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vault_tools.bundled import schema_dir
from vault_tools.checks.schema_messages import message_of
from vault_tools.errors import UsageError

SCHEMA_FILES = {
    "properties": "note-properties.schema.json",
    "frame": "semantic-frame.schema.json",
    "metadata": "revision-metadata.schema.json",
    "claim": "atomic-claim.schema.json",
    "event": "ledger-event.schema.json",
    "record": "pipeline-record.schema.json",
}
ENUMS_FILE = "enums.json"


@dataclass(frozen=True, slots=True)
class SchemaError:
    path: tuple  # JSON path of the offending value
    message: str

    @property
    def pointer(self) -> str:
        return (
            "/" + "/".join(str(part).replace("~", "~0").replace("/", "~1") for part in self.path)
            if self.path
            else "/"
        )


class Schemas:
    """Loaded, extended and compiled schemas; `check(name, value)` is the one entry point."""

    def __init__(self, extra_dir: Path | None = None):
        self.documents: dict[str, dict] = {}
        for name, filename in SCHEMA_FILES.items():
            document = _load_schema(extra_dir, filename)
            if document is not None:
                self.documents[name] = document
        if extra_dir is not None:
            _extend_enums(self.documents, extra_dir / ENUMS_FILE)
        canonical = json.dumps(self.documents, sort_keys=True, ensure_ascii=False)
        self.digest = hashlib.sha256(canonical.encode()).hexdigest()
        self._fast: dict[str, Any] = {}

    def check(self, name: str, instance: Any) -> list[SchemaError]:
        """Every way `instance` breaks schema `name`, sorted by path; [] when valid."""
        validator = self._fast_validator(name)
        if validator.is_valid(instance):
            return []
        document = self.documents[name]
        found = [
            SchemaError(tuple(e.instance_path), message_of(e, document, instance))
            for e in validator.iter_errors(instance)
        ]
        return sorted(found, key=lambda e: (tuple(map(str, e.path)), e.message))

    def compile(self, names: tuple[str, ...]) -> None:
        """Compile the fast validators of `names` now: before a pool forks, so that its
        workers inherit them instead of each importing jsonschema-rs and compiling its own."""
        for name in names:
            if name in self.documents:
                self._fast_validator(name)

    def enum(self, name: str, definition: str) -> list[str]:
        return list(self.documents[name]["$defs"][definition]["enum"])

    def _fast_validator(self, name: str) -> Any:
        if name not in self._fast:
            # lazy: at start-up it adds 9% to the CPU time of a warm 10k-note run
            import jsonschema_rs

            self._fast[name] = jsonschema_rs.validator_for(self.documents[name])
        return self._fast[name]


def _load_schema(extra_dir: Path | None, filename: str) -> dict | None:
    candidates = [extra_dir / filename] if extra_dir else []
    candidates.append(schema_dir() / filename)
    for path in candidates:
        if path.is_file():
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UsageError(f"cannot load schema: {exc}", str(path)) from exc
    return None


def _extend_enums(documents: dict[str, dict], enums_path: Path) -> None:
    if not enums_path.is_file():
        return
    try:
        extensions = json.loads(enums_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load enum extensions: {exc}", str(enums_path)) from exc
    if not isinstance(extensions, dict):
        raise UsageError("must be an object of enum name -> list of values", str(enums_path))
    for document in documents.values():
        for name, definition in document.get("$defs", {}).items():
            extra = extensions.get(name)
            if isinstance(extra, list) and "enum" in definition:
                definition["enum"] = definition["enum"] + [
                    v for v in extra if v not in definition["enum"]
                ]
