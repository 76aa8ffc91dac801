"""Find the vault and read its optional `vt.toml` into one `Settings` object."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vault_tools.errors import UsageError
from vault_tools.findings import CODES
from vault_tools.vocabulary import CHECK_KEYS

CONFIG_FILE = "vt.toml"
STATE_DIR = ".vt"
# folders that are never notes (DESIGN §2); other dot-folders are skipped too, as Obsidian does
IGNORED_DIRS = frozenset({".obsidian", ".git", ".trash", ".vt"})
# The largest note vt reads (`[limits] max_note_bytes`): a note is a page of text; a file
# of many megabytes named `*.md` is a mistake or an attack, and reading it would cost
# the run seconds and its memory a multiple of the file.
MAX_NOTE_BYTES = 5_000_000
CHECKS = CHECK_KEYS


@dataclass(slots=True)
class Settings:
    vault: Path
    claims_dir: str = "03_claims"
    kb_dir: str = "04_knowledge_base"
    ledger: str = "05_ledger/decision_ledger.jsonl"
    schemas_dir: Path | None = None
    required_checks: tuple[str, ...] = CHECKS
    actor: str | None = None
    workers: int = 0  # 0: decide from the CPU count and the vault size
    disabled_findings: frozenset[str] = field(default_factory=frozenset)
    max_note_bytes: int = MAX_NOTE_BYTES

    @property
    def state_dir(self) -> Path:
        return self.vault / STATE_DIR

    @property
    def ledger_path(self) -> Path:
        return self.vault / self.ledger

    def relative(self, path: Path) -> str:
        """The vault-relative, '/'-separated form of `path` (which must be inside the vault)."""
        return path.resolve().relative_to(self.vault).as_posix()


def find_vault(explicit: Path | None = None, cwd: Path | None = None) -> Path:
    """--vault, else $VT_VAULT, else the nearest ancestor holding .obsidian/ or vt.toml."""
    chosen = explicit or (Path(os.environ["VT_VAULT"]) if os.environ.get("VT_VAULT") else None)
    if chosen is not None:
        if not chosen.is_dir():
            raise UsageError("vault folder does not exist", str(chosen))
        return chosen.resolve()
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".obsidian").is_dir() or (folder / CONFIG_FILE).is_file():
            return folder
    raise UsageError("no vault found: pass --vault PATH, set VT_VAULT, or run inside a folder "
                     "holding .obsidian/ or vt.toml")


def load_settings(explicit: Path | None = None, cwd: Path | None = None) -> Settings:
    vault = find_vault(explicit, cwd)
    settings = Settings(vault=vault)
    config_path = vault / CONFIG_FILE
    if config_path.is_file():
        _apply_config(settings, _read_toml(config_path))
    return settings


def _read_toml(path: Path) -> dict:
    # imported here: most vaults have no vt.toml, and every run would pay for the parser
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        # TOMLDecodeError has .lineno only from Python 3.14; the message always says it
        found = re.search(r"line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(found.group(1)) if found else None)
        raise UsageError(f"invalid TOML: {exc}", CONFIG_FILE, line) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read: {exc}", CONFIG_FILE) from exc


def _apply_config(settings: Settings, data: dict) -> None:
    paths = _table(data, "paths")
    for key in ("claims_dir", "kb_dir", "ledger"):
        if key in paths:
            setattr(settings, key, _string(paths[key], f"paths.{key}"))
    if "schemas_dir" in paths:
        settings.schemas_dir = settings.vault / _string(paths["schemas_dir"], "paths.schemas_dir")
    policy = _table(data, "policy")
    if "required_checks" in policy:
        checks = _strings(policy["required_checks"], "policy.required_checks")
        unknown = [c for c in checks if c not in CHECKS]
        if unknown:
            raise UsageError(f"policy.required_checks: unknown checks {unknown}; known: "
                             f"{', '.join(CHECKS)}", CONFIG_FILE)
        settings.required_checks = tuple(checks)
    review = _table(data, "review")
    if "actor" in review:
        settings.actor = _string(review["actor"], "review.actor")
    findings = _table(data, "findings")
    if "disable" in findings:
        disabled = _strings(findings["disable"], "findings.disable")
        unknown = sorted(set(disabled) - set(CODES))
        if unknown:
            raise UsageError(f"findings.disable: unknown finding codes {unknown} (see the "
                             "README's table of codes)", CONFIG_FILE)
        settings.disabled_findings = frozenset(disabled)
    performance = _table(data, "performance")
    if "workers" in performance:
        workers = performance["workers"]
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
            raise UsageError("performance.workers must be a whole number (0: automatic)",
                             CONFIG_FILE)
        settings.workers = workers
    limits = _table(data, "limits")
    if "max_note_bytes" in limits:
        limit = limits["max_note_bytes"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise UsageError("limits.max_note_bytes must be a whole number of bytes, at "
                             "least 1", CONFIG_FILE)
        settings.max_note_bytes = limit


def _table(data: dict, key: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"[{key}] must be a table", CONFIG_FILE)
    return value


def _string(value: object, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError(f"{key} must be a non-empty string", CONFIG_FILE)
    return value


def _strings(value: object, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{key} must be a list of strings", CONFIG_FILE)
    return value
