"""Find the vault and read its optional `vt.toml` into one `Settings` object."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vault_tools.errors import UsageError
from vault_tools.findings import CODES
from vault_tools.vocabulary import CHECK_KEYS

CONFIG_FILE = "vt.toml"
STATE_DIR = ".vt"
# folders that are never notes (docs/note-format.md); other dot-folders are skipped too
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
    # `[review] record_for_reviewers`: this process records every reviewer's decision (a
    # network drive, one recorder); off, a run records only its own runner's decisions
    record_for_reviewers: bool = False
    workers: int = 0  # 0: decide from the CPU count and the vault size
    disabled_findings: frozenset[str] = field(default_factory=frozenset)
    max_note_bytes: int = MAX_NOTE_BYTES
    # what the CLI says on stderr before the command runs (see `vault_warnings`)
    warnings: list[str] = field(default_factory=list)
    signing_key: str | None = None  # `[signing] key`; None: git's own SSH signing key, if any
    signing_required: bool = False
    signatures_from: int = 1  # the first `seq` that must be signed, when required
    allowed_signers: str | None = None  # None: `allowed_signers` beside the ledger
    draft_heading: str | None = None  # `[draft] heading`; None: the seed notes' heading
    draft_callout: str | None = None  # `[draft] callout`; None: the seed notes' tip
    # the command writes to the vault (see `load_settings`); one that only reads creates
    # nothing outside `.vt/`, not even the ledger's lock file
    writes: bool = False

    @property
    def state_dir(self) -> Path:
        return self.vault / STATE_DIR

    @property
    def ledger_path(self) -> Path:
        return self.vault / self.ledger

    @property
    def allowed_signers_path(self) -> Path:
        if self.allowed_signers is None:
            return self.ledger_path.parent / "allowed_signers"
        return self.vault / Path(self.allowed_signers).expanduser()  # absolute stays absolute

    def relative(self, path: Path) -> str:
        """The vault-relative, '/'-separated form of `path` (which must be inside the vault)."""
        return path.resolve().relative_to(self.vault).as_posix()


def find_vault(explicit: Path | None = None, cwd: Path | None = None) -> Path:
    """--vault, else $VT_VAULT, else the nearest ancestor holding .obsidian/ or vt.toml."""
    chosen = explicit or (Path(os.environ["VT_VAULT"]) if os.environ.get("VT_VAULT") else None)
    if chosen is not None:
        if chosen.is_dir():
            return chosen.resolve()
        if chosen.exists():
            raise UsageError(
                "not a vault: this is a file; --vault names the vault folder", str(chosen)
            )
        raise UsageError("vault folder does not exist", str(chosen))
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".obsidian").is_dir() or (folder / CONFIG_FILE).is_file():
            return folder
    raise UsageError(
        "no vault found: pass --vault PATH, set VT_VAULT, or run inside a folder "
        "holding .obsidian/ or vt.toml"
    )


# Every table vt.toml may hold, its keys, and what each value must be (see _KINDS): the
# one list a file is checked against, and the one docs/configuration.md is tested against.
# Anything else in the file is an error: a misspelt key silently ignored would leave its
# setting at the default while the user believes it changed.
SPEC: dict[str, dict[str, str]] = {
    "paths": {
        "claims_dir": "string",
        "kb_dir": "string",
        "ledger": "string",
        "schemas_dir": "string",
    },
    "policy": {"required_checks": "strings"},
    "review": {"actor": "string", "record_for_reviewers": "bool"},
    "findings": {"disable": "strings"},
    "performance": {"workers": "count"},
    "limits": {"max_note_bytes": "size"},
    "draft": {"heading": "string", "callout": "string"},
    "signing": {
        "key": "string",
        "required": "bool",
        "required_from": "seq",
        "allowed_signers": "string",
    },
}


def _is_string(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


# each kind of value: its test, and what the error says the value must be
_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "string": (_is_string, "a non-empty string"),
    "strings": (_is_strings, "a list of strings"),
    "count": (_is_count, "a whole number, 0 or more"),
    "size": (_is_size, "a whole number of bytes, at least 1"),
    "bool": (_is_bool, "true or false"),
    "seq": (_is_size, "a ledger seq, 1 or more"),
}


def load_settings(
    explicit: Path | None = None,
    cwd: Path | None = None,
    *,
    new_vault: bool = False,
    writes: bool = False,
) -> Settings:
    """The settings of the vault found (see `find_vault`).

    Unless `new_vault` (`vt init`, which makes a folder a vault), a folder that holds no
    claims folder, no knowledge base, no ledger, no `.obsidian/` and no `vt.toml` is not
    a vault: a usage error naming what is missing, rather than "0 notes checked".
    `writes`: the command writes to the vault, so a folder that is probably not the vault
    (see `vault_warnings`) is refused rather than warned about.
    """
    vault = find_vault(explicit, cwd)
    settings = Settings(vault=vault, writes=writes)
    config_path = vault / CONFIG_FILE
    if config_path.is_file():
        text = _read_text(config_path)
        _apply_config(settings, _parse_toml(text), text.splitlines())
    if new_vault:
        if writes:
            _refuse_above_vault(settings)
    else:
        settings.warnings = vault_warnings(settings, writes=writes)
    return settings


# folders never searched for the vault a mistaken --vault meant: tools' and builds' own
_NOT_SEARCHED = frozenset({"node_modules", "__pycache__", "build", "dist", "site-packages"})
_SEARCH_DEPTH = 3
_SEARCH_FOLDERS = 2000  # a home folder given by mistake is not walked whole


def vault_warnings(settings: Settings, *, writes: bool = False) -> list[str]:
    """Nothing for a folder holding the claims folder. For one that does not: a warning
    naming the likely vault (a subfolder holding it: the folder given is probably the
    repository around the vault, whose tests and build files would be scanned as notes),
    else a usage error when nothing else marks the folder as a vault either.

    This is the one definition of "a vault": with `writes` (a command that writes), the
    folder a warning is about is refused too, a usage error naming the likely vault:
    a ledger, `.vt/` and note marks made there would land beside the real vault's."""
    vault, claims = settings.vault, settings.claims_dir.rstrip("/")
    if (vault / claims).is_dir():
        return []
    likely = _likely_vault(vault, claims)
    if likely is not None:
        if writes:
            raise _above_vault(vault, claims, likely)
        where = likely.relative_to(vault).as_posix()
        return [
            f"{vault}: no {claims}/ folder here, but {where}/ has one: it is likely "
            f"the vault (pass --vault {where} from here); every note below {vault} is read"
        ]
    marks = (
        vault / ".obsidian",
        vault / CONFIG_FILE,
        vault / settings.kb_dir,
        settings.ledger_path,
    )
    if not any(mark.exists() for mark in marks):
        raise UsageError(
            f"not a vault: no {claims}/ folder (nor .obsidian/, vt.toml, "
            f"{settings.kb_dir.rstrip('/')}/ or the ledger); `vt init` makes a folder a vault",
            str(vault),
        )
    return []


def _refuse_above_vault(settings: Settings) -> None:
    """A usage error when the folder holds no claims folder but a subfolder does: the
    folder given is then the one around the vault (`--vault .` from its parent)."""
    vault, claims = settings.vault, settings.claims_dir.rstrip("/")
    if (vault / claims).is_dir():
        return
    likely = _likely_vault(vault, claims)
    if likely is not None:
        raise _above_vault(vault, claims, likely)


def _above_vault(vault: Path, claims: str, likely: Path) -> UsageError:
    where = likely.relative_to(vault).as_posix()
    return UsageError(
        f"not a vault: no {claims}/ folder here, but {where}/ has one: did you mean "
        f"--vault {where}? (a command that writes refuses a folder that is not the vault)",
        str(vault),
    )


def _likely_vault(folder: Path, claims: str) -> Path | None:
    """The shallowest subfolder (up to a few levels and a few thousand folders down,
    dot-folders and build output skipped) holding the claims folder; the first by name
    among equals."""
    level, seen = [folder], 0
    for _ in range(_SEARCH_DEPTH):
        below: list[Path] = []
        for parent in level:
            seen += 1
            if seen > _SEARCH_FOLDERS:
                return None
            try:
                children = sorted(
                    entry.path
                    for entry in os.scandir(parent)
                    if entry.is_dir(follow_symlinks=False)
                    and not entry.name.startswith(".")
                    and entry.name not in _NOT_SEARCHED
                )
            except OSError:
                continue
            for child in map(Path, children):
                if (child / claims).is_dir():
                    return child
                below.append(child)
        level = below
    return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read: {exc}", CONFIG_FILE) from exc


def _parse_toml(text: str) -> dict[str, Any]:
    # imported here: most vaults have no vt.toml, and every run would pay for the parser
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)  # (tomli, on 3.10, is typed as Any)
        return data
    except tomllib.TOMLDecodeError as exc:
        # TOMLDecodeError has .lineno only from Python 3.14; the message always says it
        found = re.search(r"line (\d+)", str(exc))
        line = getattr(exc, "lineno", None) or (int(found.group(1)) if found else None)
        raise UsageError(f"invalid TOML: {exc}", CONFIG_FILE, line) from exc
    except ValueError:  # an integer past Python's limit on digits
        found = _LONG_NUMBER.search(text)
        line = text.count("\n", 0, found.start()) + 1 if found else None
        raise UsageError(
            "invalid TOML: a number of more than 4300 digits", CONFIG_FILE, line
        ) from None
    except RecursionError:
        raise UsageError("invalid TOML: nested too deeply to read", CONFIG_FILE) from None


# a run of digits longer than int() takes (sys.get_int_max_str_digits, 4300 by default)
_LONG_NUMBER = re.compile(r"[0-9_]{4301,}")


def _apply_config(settings: Settings, data: dict[str, Any], lines: list[str]) -> None:
    _check_against_spec(data, lines)  # from here on every value has its kind
    paths = data.get("paths", {})
    for key in ("claims_dir", "kb_dir", "ledger"):
        if key in paths:
            setattr(settings, key, paths[key])
    if "schemas_dir" in paths:
        settings.schemas_dir = settings.vault / paths["schemas_dir"]
    policy = data.get("policy", {})
    if "required_checks" in policy:
        checks = policy["required_checks"]
        unknown = [c for c in checks if c not in CHECKS]
        if unknown:
            raise UsageError(
                f"policy.required_checks: unknown checks {unknown}; known: {', '.join(CHECKS)}",
                CONFIG_FILE,
                _line_of(lines, "policy", "required_checks"),
            )
        settings.required_checks = tuple(checks)
    review = data.get("review", {})
    if "actor" in review:
        settings.actor = review["actor"]
    if "record_for_reviewers" in review:
        settings.record_for_reviewers = review["record_for_reviewers"]
    findings = data.get("findings", {})
    if "disable" in findings:
        disabled = findings["disable"]
        unknown = sorted(set(disabled) - set(CODES))
        if unknown:
            raise UsageError(
                f"findings.disable: unknown finding codes {unknown} (see the "
                "table of docs/finding-codes.md)",
                CONFIG_FILE,
                _line_of(lines, "findings", "disable"),
            )
        settings.disabled_findings = frozenset(disabled)
    performance = data.get("performance", {})
    if "workers" in performance:
        settings.workers = performance["workers"]
    limits = data.get("limits", {})
    if "max_note_bytes" in limits:
        settings.max_note_bytes = limits["max_note_bytes"]
    draft = data.get("draft", {})
    settings.draft_heading = draft.get("heading")
    settings.draft_callout = draft.get("callout")
    signing = data.get("signing", {})
    settings.signing_key = signing.get("key")
    settings.signing_required = signing.get("required", False)
    settings.signatures_from = signing.get("required_from", 1)
    settings.allowed_signers = signing.get("allowed_signers")


def _check_against_spec(data: dict[str, Any], lines: list[str]) -> None:
    """A usage error, at the line it comes from, for the first table or key of the file
    that SPEC does not have, or value not of its key's kind."""
    for table, content in data.items():
        if table not in SPEC:
            kind = "table" if isinstance(content, dict) else "key"
            raise UsageError(
                f"unknown {kind} '{table}'{_did_you_mean(table, SPEC)}; "
                f"vt.toml holds the tables {', '.join(f'[{t}]' for t in SPEC)}",
                CONFIG_FILE,
                _line_of(lines, table),
            )
        if not isinstance(content, dict):
            raise UsageError(f"[{table}] must be a table", CONFIG_FILE, _line_of(lines, table))
        keys = SPEC[table]
        for key, value in content.items():
            if key not in keys:
                raise UsageError(
                    f"unknown key '{key}' in [{table}]{_did_you_mean(key, keys)}",
                    CONFIG_FILE,
                    _line_of(lines, table, key),
                )
            accepts, expected = _KINDS[keys[key]]
            if not accepts(value):
                raise UsageError(
                    f"{table}.{key} must be {expected}, not {value!r}",
                    CONFIG_FILE,
                    _line_of(lines, table, key),
                )


def _did_you_mean(name: str, known: Iterable[str]) -> str:
    import difflib  # only a mistaken vt.toml needs it; every command reads this module

    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


_HEADER = re.compile(r"\[\[?\s*([\w.\"' -]+?)\s*\]")  # [table] or [[table]]
_ASSIGNMENT = re.compile(r"([\w.\"' -]+?)\s*=")  # key = (or dotted.key =)


def _line_of(lines: list[str], table: str, key: str | None = None) -> int | None:
    """The line of the file that sets `table` (its `[table]` header, or a `table = ...` or
    `table.key = ...` line before any header), or `key` in it (a `key = ...` line under the
    header, or `table.key = ...`).

    A scan of the lines, not a TOML parse (tomllib gives no positions): it finds the usual
    layouts, dotted and simply quoted names included. Its limits: a key it does not see
    gets the line of its table (so a key inside an inline table, `paths = {claim_dir =
    "x"}`, gets the line of `paths`); a name written with escapes or holding a quoted dot,
    or a line of a multi-line string that looks like a header or an assignment, may give
    a wrong line or none (None: the message names the file alone)."""
    wanted = f"{table}.{key}" if key else table
    current = ""  # the table the lines are in; "" before the first header
    found: int | None = None
    for number, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        header = _HEADER.match(stripped)
        if header:
            name = current = _dotted(header.group(1))
        elif assignment := _ASSIGNMENT.match(stripped):
            name = ".".join(filter(None, (current, _dotted(assignment.group(1)))))
        else:
            continue
        if name == wanted or name.startswith(f"{wanted}."):
            return number
        if name == table and found is None:
            found = number  # the table's header, or its `table = {...}` line
    return found


def _dotted(name: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in name.split("."))
