"""`vt init`: make a vault ready for vt, idempotently, saying what it changes.

Every change is planned first and written only when the whole plan holds (an invalid
`.obsidian/types.json` stops everything before a byte is written). A file is written
only when its bytes change, so a second run touches nothing, not even an mtime.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from vault_tools.config import CONFIG_FILE, STATE_DIR, Settings
from vault_tools.errors import UsageError
from vault_tools.infra.boundary import writable_path
from vault_tools.infra.durable import TMP_SUFFIX
from vault_tools.infra.textfiles import append_lines, read_text, write_atomic
from vault_tools.integrations.git import hook
from vault_tools.integrations.git.repo import GitRepo
from vault_tools.ledger.signing import NAMESPACE
from vault_tools.review.actor import runner
from vault_tools.vocabulary import CHECK_KEYS, IMPORTED_AT, PROVENANCE_PROPERTIES

TYPES_FILE = ".obsidian/types.json"
# Obsidian property types of vt's properties (docs/note-format.md); the user's own choice wins
PROPERTY_TYPES: dict[str, str] = {
    **dict.fromkeys(CHECK_KEYS, "checkbox"),
    "review_action": "text",
    "review_state": "text",
    "reviewer": "text",
    "review_comment": "text",
    "claim_id": "text",
    "vt_preview_hash": "text",
    "vt_event_id": "text",
    "vt_applied_at": "text",
    **dict.fromkeys(PROVENANCE_PROPERTIES.values(), "text"),
    IMPORTED_AT: "text",
}

_CHECK_LIST = ", ".join(f'"{key}"' for key in CHECK_KEYS)
VT_TOML = f"""\
# vt configuration: every key is optional and the values shown are the defaults (where
# a key has no default, an example). Uncomment a line to change it; each key is described in
# vault_tools' docs/configuration.md.

[paths]
# claims_dir = "03_claims"
# kb_dir = "04_knowledge_base"
# ledger = "05_ledger/decision_ledger.jsonl"
# schemas_dir = "schemas"          # vault extensions: enums.json, or replacement schema files

[policy]
# required_checks = [{_CHECK_LIST}]

[review]
# actor = "alice"                  # the actor of your events (else git user.name, OS user)

[findings]
# disable = []                     # finding codes to silence

[performance]
# workers = 0                      # 0: one per core for cold runs

[signing]
# key = "~/.ssh/id_ed25519"        # signs every ledger event (else git's user.signingkey)
# required = false                 # true: every event from `required_from` must be signed
# required_from = 1
# allowed_signers = "05_ledger/allowed_signers"
"""


@dataclass(slots=True)
class _Write:
    path: Path
    data: bytes
    message: str


@dataclass(slots=True)
class InitResult:
    vault: Path
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # things worth saying that are not changes
    git: bool = False  # whether the vault lies in a git repository
    dry_run: bool = False

    def to_json(self) -> dict:
        return {
            "vault": str(self.vault),
            "changes": self.changes,
            "notes": self.notes,
            "git": self.git,
            "dry_run": self.dry_run,
        }


def init_vault(
    settings: Settings, dry_run: bool = False, signer_key: Path | None = None
) -> InitResult:
    """Plan every change, then make them (none on a dry run). `signer_key`: a public key
    (or a private key with its `.pub` beside it) to add to the allowed signers for the
    current reviewer."""
    vault = settings.vault
    planned_writes = [_plan_config(vault), _plan_gitignore(settings), _plan_types(vault)]
    if signer_key is not None:
        planned_writes.append(_plan_signer(settings, signer_key))
    writes = [w for w in planned_writes if w is not None]
    for w in writes:  # a file leading out of the vault stops the plan, dry run or not
        writable_path(vault, w.path)
    repo = GitRepo.find(vault)
    result = InitResult(vault, [w.message for w in writes], git=repo is not None, dry_run=dry_run)
    if repo is not None:
        # a dry run of the install first: a hook it must refuse stops init before any write
        planned = hook.install(settings, dry_run=True)
    if not dry_run:
        for w in writes:
            write_atomic(w.path, w.data, root=vault)
    if repo is not None:
        result.changes += planned if dry_run else hook.install(settings)
    if not (vault / ".obsidian").is_dir():
        result.notes.append(
            "no .obsidian/ folder: property types not registered (open the "
            "vault in Obsidian once, then run `vt init` again)"
        )
    return result


def _plan_config(vault: Path) -> _Write | None:
    path = vault / CONFIG_FILE
    if path.exists():
        return None
    return _Write(path, VT_TOML.encode(), f"wrote {CONFIG_FILE} (the defaults, commented out)")


def _plan_signer(settings: Settings, key: Path) -> _Write | None:
    """The reviewer's line in the allowed signers file: `"NAME" namespaces="…" KEY`."""
    public = key if key.name.endswith(".pub") else key.with_name(key.name + ".pub")
    try:
        fields = public.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the public key: {exc}", str(public)) from exc
    if len(fields) < 2 or not fields[0].startswith(("ssh-", "ecdsa-", "sk-")):
        raise UsageError("not an OpenSSH public key (`ssh-ed25519 AAAA… comment`)", str(public))
    actor = runner(settings).name  # the plain name: the key is not allowed yet
    principal = '"' + actor.replace('"', "") + '"' if any(c in actor for c in ' ",') else actor
    line = f'{principal} namespaces="{NAMESPACE}" {fields[0]} {fields[1]}'
    path = settings.allowed_signers_path
    text = read_text(path)
    if line in text.splitlines():
        return None
    return _Write(path, append_lines(text, [line]).encode(),
                  f"allowed {actor} to sign with {public.name} in {path.name}")  # fmt: skip


def gitignore_lines(settings: Settings) -> list[str]:
    return [f"{STATE_DIR}/", f"{settings.ledger}.lock", f"{settings.ledger}.torn", f"*{TMP_SUFFIX}"]


def _ignored(pattern: str, existing: set[str]) -> bool:
    bare = pattern.rstrip("/")
    return bool({bare, bare + "/", "/" + bare, "/" + bare + "/"} & existing)


def _plan_gitignore(settings: Settings) -> _Write | None:
    path = settings.vault / ".gitignore"
    text = read_text(path)
    existing = {line.strip() for line in text.splitlines()}
    missing = [p for p in gitignore_lines(settings) if not _ignored(p, existing)]
    if not missing:
        return None
    return _Write(
        path, append_lines(text, missing).encode(), f"added {', '.join(missing)} to .gitignore"
    )


def _plan_types(vault: Path) -> _Write | None:
    path = vault / TYPES_FILE
    if not path.parent.is_dir():
        return None
    text = read_text(path)
    data = _parse_types(text, path) if text.strip() else {}
    types = data.setdefault("types", {})
    added = [key for key in PROPERTY_TYPES if key not in types]
    if not added:
        return None
    for key in added:
        types[key] = PROPERTY_TYPES[key]
    # Obsidian writes this file as JSON.stringify(data, null, 2)
    new = json.dumps(data, indent=2, ensure_ascii=False)
    return _Write(path, new.encode(), f"registered {len(added)} property types in {TYPES_FILE}")


def _parse_types(text: str, path: Path) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"invalid JSON ({exc.msg}); fix or remove it, then run `vt init` "
            "again — nothing was written",
            str(path),
            exc.lineno,
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("types", {}), dict):
        raise UsageError('expected {"types": {PROPERTY: TYPE, …}}; nothing was written', str(path))
    return data
