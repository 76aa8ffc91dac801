"""`vt init`: idempotent, merging .obsidian/types.json, appending to .gitignore."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_vt
from vault_tools.config import Settings, load_settings
from vault_tools.errors import UsageError
from vault_tools.integrations.init import PROPERTY_TYPES, VT_TOML, init_vault

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_VAULT = REPO / "examples" / "vault"


pytestmark = pytest.mark.usefixtures("isolated_git")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, dest, ignore=shutil.ignore_patterns(".vt"))
    return dest


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git/objects" not in str(p)
    }


def test_init_outside_git_then_again_changes_nothing(vault: Path) -> None:
    (vault / ".obsidian" / "types.json").unlink(missing_ok=True)
    result = init_vault(load_settings(vault))
    assert not result.git
    assert len(result.changes) == 3
    assert (vault / "vt.toml").read_text() == VT_TOML
    assert (vault / ".gitignore").read_text() == (
        ".vt/\n05_ledger/decision_ledger.jsonl.lock\n05_ledger/decision_ledger.jsonl.torn\n"
        "*.vt-tmp\n"
    )
    assert json.loads((vault / ".obsidian" / "types.json").read_text()) == {"types": PROPERTY_TYPES}
    before = snapshot(vault)
    again = init_vault(load_settings(vault))
    assert again.changes == []
    assert snapshot(vault) == before


def test_init_in_git_installs_hook_and_driver_and_is_idempotent(vault: Path) -> None:
    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    result = init_vault(load_settings(vault))
    assert result.git
    assert any("pre-commit hook" in c for c in result.changes)
    assert (vault / ".git" / "hooks" / "pre-commit").is_file()
    assert (vault / ".gitattributes").read_text() == (
        "05_ledger/decision_ledger.jsonl merge=vt-ledger -text\n*.md merge=vt-note\n"
        "05_ledger/allowed_signers merge=vt-signers\n"
    )
    assert (vault / ".git" / "hooks" / "post-merge").is_file()
    before = snapshot(vault)
    assert init_vault(load_settings(vault)).changes == []
    assert snapshot(vault) == before
    ignored = subprocess.run(
        ["git", "check-ignore", ".vt/claims.sqlite", "05_ledger/decision_ledger.jsonl.lock"],
        cwd=vault,
        capture_output=True,
        text=True,
    )
    assert ignored.stdout.split() == [".vt/claims.sqlite", "05_ledger/decision_ledger.jsonl.lock"]


def test_types_json_merge_keeps_user_types_and_order(vault: Path) -> None:
    types = vault / ".obsidian" / "types.json"
    types.write_text(
        json.dumps(
            {
                "types": {"aliases": "aliases", "reviewer": "multitext", "tags": "tags"},
                "other": [1],
            },
            indent=2,
        )
    )
    init_vault(load_settings(vault))
    data = json.loads(types.read_text())
    assert data["other"] == [1]
    assert list(data["types"])[:3] == ["aliases", "reviewer", "tags"]
    assert data["types"]["reviewer"] == "multitext"  # the user's choice stays
    assert {k: v for k, v in data["types"].items() if k in PROPERTY_TYPES and k != "reviewer"} == {
        k: v for k, v in PROPERTY_TYPES.items() if k != "reviewer"
    }
    assert data["types"]["check_claim_frame"] == "checkbox"


def test_invalid_types_json_is_a_clear_error_and_nothing_is_written(vault: Path) -> None:
    types = vault / ".obsidian" / "types.json"
    types.write_text('{"types": {\n  "a": "text",\n}\n')
    before = snapshot(vault)
    with pytest.raises(UsageError) as caught:
        init_vault(load_settings(vault))
    assert caught.value.path == str(types) and caught.value.line == 3
    assert "nothing was written" in str(caught.value)
    assert snapshot(vault) == before
    types.write_text('["not", "an", "object"]')
    with pytest.raises(UsageError):
        init_vault(load_settings(vault))


def test_gitignore_lines_are_appended_never_rewritten(vault: Path) -> None:
    gitignore = vault / ".gitignore"
    gitignore.write_bytes(b"*.tmp\r\n/.vt\r\nnotes/private")  # CRLF, no final newline
    result = init_vault(load_settings(vault))
    assert any(".gitignore" in c and ".vt/" not in c for c in result.changes)
    assert gitignore.read_bytes() == (
        b"*.tmp\r\n/.vt\r\nnotes/private\r\n"
        b"05_ledger/decision_ledger.jsonl.lock\r\n"
        b"05_ledger/decision_ledger.jsonl.torn\r\n"
        b"*.vt-tmp\r\n"
    )


def test_existing_vt_toml_is_left_alone_and_its_ledger_path_used(vault: Path) -> None:
    (vault / "vt.toml").write_text('[paths]\nledger = "ledger/events.jsonl"\n')
    init_vault(load_settings(vault))
    assert (vault / "vt.toml").read_text() == '[paths]\nledger = "ledger/events.jsonl"\n'
    assert "ledger/events.jsonl.lock" in (vault / ".gitignore").read_text()


def test_vt_toml_template_uncommented_gives_the_defaults(tmp_path: Path) -> None:
    lines = [
        line[2:] if line.startswith("# ") and "=" in line else line for line in VT_TOML.splitlines()
    ]
    (tmp_path / "vt.toml").write_text("\n".join(lines))
    settings = load_settings(tmp_path)
    defaults = Settings(vault=settings.vault)
    for key in (
        "claims_dir",
        "kb_dir",
        "ledger",
        "required_checks",
        "workers",
        "disabled_findings",
    ):
        assert getattr(settings, key) == getattr(defaults, key), key


def test_dry_run_writes_nothing(vault: Path) -> None:
    subprocess.run(["git", "init", "-q", str(vault)], check=True)
    before = snapshot(vault)
    result = init_vault(load_settings(vault), dry_run=True)
    assert len(result.changes) >= 6
    assert snapshot(vault) == before


def test_cli_prints_changes_then_already_set_up(vault: Path) -> None:
    # the vault as init's argument, not --vault
    first = run_vt("init", str(vault))
    assert first.returncode == 0, first.stderr
    assert "wrote vt.toml" in first.stdout
    second = run_vt("init", str(vault))
    assert second.returncode == 0
    assert second.stdout.strip().endswith("already set up")
    as_json = run_vt("init", str(vault), "--json")
    assert json.loads(as_json.stdout)["changes"] == []
    (vault / ".obsidian" / "types.json").write_text("{")
    bad = run_vt("init", str(vault))
    assert bad.returncode == 2 and "types.json:1: invalid JSON" in bad.stderr


def test_cli_takes_the_vault_as_an_option_too(vault: Path, tmp_path: Path) -> None:
    first = run_vt("init", vault=vault)
    assert first.returncode == 0, first.stderr
    assert "wrote vt.toml" in first.stdout and (vault / "vt.toml").is_file()
    same = run_vt("init", str(vault), vault=vault)
    assert same.returncode == 0 and same.stdout.strip().endswith("already set up")
    other = tmp_path / "other"
    other.mkdir()
    two = run_vt("init", str(other), vault=vault)
    assert two.returncode == 2 and "two vaults given" in two.stderr
