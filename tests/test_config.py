"""Finding the vault (--vault, VT_VAULT, ancestors) and reading vt.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import copy_example_vault, run_vt
from vault_tools.config import CHECKS, SPEC, find_vault, load_settings
from vault_tools.errors import ExitCode, UsageError


@pytest.fixture(autouse=True)
def _no_env_vault(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VT_VAULT", raising=False)


def _vault(root: Path, marker: str = ".obsidian") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if marker == ".obsidian":
        (root / ".obsidian").mkdir()
    else:
        (root / "vt.toml").write_text("", encoding="utf-8")
    return root


def test_explicit_vault_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _vault(tmp_path / "a"), _vault(tmp_path / "b")
    monkeypatch.setenv("VT_VAULT", str(b))
    assert find_vault(a, cwd=b) == a.resolve()


def test_explicit_vault_need_not_have_markers(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_vault(plain) == plain.resolve()


def test_env_var_beats_ancestors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, other = _vault(tmp_path / "env"), _vault(tmp_path / "other")
    monkeypatch.setenv("VT_VAULT", str(env))
    assert find_vault(cwd=other / ".obsidian") == env.resolve()


def test_empty_env_var_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = _vault(tmp_path / "v")
    monkeypatch.setenv("VT_VAULT", "")
    assert find_vault(cwd=vault) == vault.resolve()


@pytest.mark.parametrize("marker", [".obsidian", "vt.toml"])
def test_nearest_ancestor_with_a_marker(tmp_path: Path, marker: str) -> None:
    outer = _vault(tmp_path / "outer")
    inner = _vault(outer / "notes" / "inner", marker)
    deep = inner / "03_claims" / "sub"
    deep.mkdir(parents=True)
    assert find_vault(cwd=deep) == inner.resolve()
    assert find_vault(cwd=outer / "notes") == outer.resolve()


def test_working_directory_is_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = _vault(tmp_path / "v")
    (vault / "03_claims").mkdir()
    monkeypatch.chdir(vault / "03_claims")
    assert load_settings().vault == vault.resolve()


def test_no_vault_is_a_usage_error(tmp_path: Path) -> None:
    lonely = tmp_path / "nothing" / "here"
    lonely.mkdir(parents=True)
    if any((p / ".obsidian").is_dir() or (p / "vt.toml").is_file() for p in tmp_path.parents):
        pytest.skip("a folder above tmp_path looks like a vault")
    with pytest.raises(UsageError) as caught:
        find_vault(cwd=lonely)
    assert caught.value.exit_code == ExitCode.USAGE
    assert "--vault" in caught.value.message and "VT_VAULT" in caught.value.message


@pytest.mark.parametrize("how", ["explicit", "env"])
def test_missing_vault_folder_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    missing = tmp_path / "missing"
    if how == "env":
        monkeypatch.setenv("VT_VAULT", str(missing))
    with pytest.raises(UsageError) as caught:
        find_vault(missing if how == "explicit" else None, cwd=tmp_path)
    assert caught.value.path == str(missing)


def test_a_file_is_not_a_vault(tmp_path: Path) -> None:
    file = tmp_path / "note.md"
    file.write_text("x", encoding="utf-8")
    with pytest.raises(UsageError):
        find_vault(file)


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings(_vault(tmp_path / "v"))
    assert (settings.claims_dir, settings.kb_dir) == ("03_claims", "04_knowledge_base")
    assert settings.ledger_path == settings.vault / "05_ledger" / "decision_ledger.jsonl"
    assert settings.state_dir == settings.vault / ".vt"
    assert settings.schemas_dir is None and settings.required_checks == CHECKS
    assert settings.disabled_findings == frozenset() and settings.workers == 0
    assert settings.max_note_bytes == 5_000_000


def test_the_note_size_limit(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    (vault / "vt.toml").write_text("[limits]\nmax_note_bytes = 50_000_000\n", encoding="utf-8")
    assert load_settings(vault).max_note_bytes == 50_000_000


def test_full_config(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    (vault / "vt.toml").write_text(
        '[paths]\nclaims_dir = "claims"\nkb_dir = "kb"\nledger = "l/ledger.jsonl"\n'
        'schemas_dir = "my_schemas"\n'
        '[policy]\nrequired_checks = ["check_claim_frame"]\n'
        '[review]\nactor = "alice"\n'
        '[findings]\ndisable = ["mapping-mismatch"]\n'
        "[performance]\nworkers = 2\n",
        encoding="utf-8",
    )
    settings = load_settings(vault)
    assert (settings.claims_dir, settings.kb_dir, settings.ledger) == (
        "claims",
        "kb",
        "l/ledger.jsonl",
    )
    assert settings.schemas_dir == vault.resolve() / "my_schemas"
    assert settings.required_checks == ("check_claim_frame",)
    assert settings.actor == "alice" and settings.workers == 2
    assert settings.disabled_findings == frozenset({"mapping-mismatch"})


def _bad_config(tmp_path: Path, text: str) -> UsageError:
    vault = _vault(tmp_path / "v")
    (vault / "vt.toml").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        load_settings(vault)
    assert caught.value.path is not None and caught.value.path.endswith("vt.toml")
    return caught.value


def test_bad_toml_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    error = _bad_config(tmp_path, '[paths]\nkb_dir = "kb"\nclaims_dir = \n')
    assert "line 3" in error.message or error.line == 3


def test_bad_toml_usage_error_carries_the_line(tmp_path: Path) -> None:
    error = _bad_config(tmp_path, '[paths]\nkb_dir = "kb"\nclaims_dir = \n')
    assert error.line == 3
    assert str(error).startswith("vt.toml:3: ") or ":3: " in str(error)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[validate]\n\nworkers = " + "9" * 5000 + "\n", 3),  # past int()'s digit limit
        ("[validate]\nworkers = 1_" + "0" * 4400 + "\n", 2),
        ("deep = " + "[" * 100_000 + "]" * 100_000 + "\n", None),  # past the parser's depth
    ],
)
def test_a_hostile_vt_toml_is_a_usage_error_in_a_real_run(
    tmp_path: Path, text: str, line: int | None
) -> None:
    vault = _vault(tmp_path / "v")
    (vault / "vt.toml").write_text(text, encoding="utf-8")
    done = run_vt("validate", vault=vault)
    assert done.returncode == 2, done.stderr
    where = f"vt.toml:{line}: " if line else "vt.toml: "
    assert done.stderr.startswith(f"vt: {where}invalid TOML: "), done.stderr
    assert "internal error" not in done.stderr


@pytest.mark.parametrize(
    "text",
    [
        "[paths]\nkb_dir = 3\n",
        '[paths]\nclaims_dir = ""\n',
        '[policy]\nrequired_checks = ["check_everything"]\n',
        '[policy]\nrequired_checks = "check_claim_frame"\n',
    ],
)
def test_bad_values_are_usage_errors(tmp_path: Path, text: str) -> None:
    _bad_config(tmp_path, text)


@pytest.mark.parametrize(
    "text",
    [
        '[performance]\nworkers = "many"\n',
        "paths = 1\n",
        '[findings]\ndisable = "mapping-mismatch"\n',
        '[limits]\nmax_note_bytes = "5 MB"\n',
        "[limits]\nmax_note_bytes = 0\n",
        "[limits]\nmax_note_bytes = true\n",
        "limits = 5\n",
    ],
)
def test_wrongly_typed_values_are_usage_errors(tmp_path: Path, text: str) -> None:
    _bad_config(tmp_path, text)


def test_relative_path_inside_settings(tmp_path: Path) -> None:
    settings = load_settings(_vault(tmp_path / "v"))
    note = settings.vault / "03_claims" / "x.md"
    assert settings.relative(note) == "03_claims/x.md"


def test_the_toml_parser_is_loaded_only_for_a_vt_toml(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys\nfrom pathlib import Path\nfrom vault_tools.config import "
        "load_settings\nload_settings(Path(sys.argv[1]))\n"
        "print(sys.modules.get('tomllib') is not None or 'tomli' in sys.modules)\n"
    )
    plain = _vault(tmp_path / "plain")
    configured = _vault(tmp_path / "configured", marker="vt.toml")
    loaded = [
        subprocess.run(
            [sys.executable, "-c", script, str(vault)], capture_output=True, text=True, check=True
        ).stdout.strip()
        for vault in (plain, configured)
    ]
    assert loaded == ["False", "True"]


# ---------------------------------------------------------------- what vt.toml may hold


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[paths]\nkb_dir = "kb"\nclaim_dir = "claims"\n',
            "vt.toml:3: unknown key 'claim_dir' in [paths] (did you mean 'claims_dir'?)",
        ),
        (
            '# the reviewer\n[review]\nactor = "alice"\n\n[polcy]\nrequired_checks = []\n',
            "vt.toml:5: unknown table 'polcy' (did you mean 'policy'?)",
        ),
        (
            '[performance]\nworkers = "many"\n',
            "vt.toml:2: performance.workers must be a whole number, 0 or more, not 'many'",
        ),
    ],
)
def test_the_cli_refuses_an_unknown_or_mistyped_setting_at_its_line(
    tmp_path: Path, text: str, message: str
) -> None:
    vault = _vault(tmp_path / "v")
    (vault / "vt.toml").write_text(text, encoding="utf-8")
    result = run_vt("validate", vault=vault)
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        # a key of the same name in another table is not the one meant
        (
            '[paths]\nledger = "l.jsonl"\n[limits]\nledger = 3\n',
            4,
            "unknown key 'ledger' in [limits]",
        ),
        (
            '[findings]\n  disable = []\n  disabled = ["claim-field"]\n',
            3,
            "unknown key 'disabled' in [findings] (did you mean 'disable'?)",
        ),
        ('actor = "alice"\n', 1, "unknown key 'actor'"),
        ('[paths]\n"claim_dir" = "x"\n', 2, "unknown key 'claim_dir' in [paths]"),
        ('paths.claim_dir = "x"\n', 1, "unknown key 'claim_dir' in [paths]"),
        (
            '[review]\nactor = "a"\n[paths.claims]\ndir = "x"\n',
            3,
            "unknown key 'claims' in [paths]",
        ),
        ("# [polcy] below\n\n[ polcy ]\n", 3, "unknown table 'polcy'"),
        ('[[paths]]\nclaims_dir = "x"\n', 1, "[paths] must be a table"),
        (
            "[limits]\nmax_note_bytes = 0\n",
            2,
            "limits.max_note_bytes must be a whole number of bytes, at least 1, not 0",
        ),
        ('[review]\nactor = ""\n', 2, "review.actor must be a non-empty string"),
        (
            '[policy]\nrequired_checks = [\n  "check_claim_frame",\n  1,\n]\n',
            2,
            "policy.required_checks must be a list of strings",
        ),
        ('[policy]\nrequired_checks = ["check_everything"]\n', 2, "unknown checks"),
        ('[findings]\ndisable = ["no-such-code"]\n', 2, "unknown finding codes"),
    ],
)
def test_an_unknown_or_mistyped_setting_is_reported_at_its_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    error = _bad_config(tmp_path, text)
    assert error.line == line, str(error)
    assert message in error.message


def test_a_key_in_an_inline_table_is_reported_at_the_tables_line(tmp_path: Path) -> None:
    # the scan of the lines does not read inside an inline table (a documented limit)
    error = _bad_config(tmp_path, '# vt\n\npaths = { kb_dir = "kb", claim_dir = "x" }\n')
    assert "unknown key 'claim_dir' in [paths]" in error.message
    assert error.line == 3


def test_a_name_the_scan_cannot_see_gives_its_tables_line_or_none(tmp_path: Path) -> None:
    # TOML reads the escapes as "claims_dir" and "actor"; the scan of the lines sees neither
    error = _bad_config(tmp_path / "a", '# vt\n[paths]\n"claims\\u005fdir" = 1\n')
    assert str(error) == "vt.toml:2: paths.claims_dir must be a non-empty string, not 1"
    error = _bad_config(tmp_path / "b", '"act\\u006fr" = "alice"\n')
    assert error.line is None and str(error).startswith("vt.toml: unknown key 'actor'")


def test_every_key_of_the_spec_changes_its_setting(tmp_path: Path) -> None:
    samples = {
        ("paths", "claims_dir"): '"claims"',
        ("paths", "kb_dir"): '"kb"',
        ("paths", "ledger"): '"l.jsonl"',
        ("paths", "schemas_dir"): '"s"',
        ("policy", "required_checks"): "[]",
        ("review", "actor"): '"alice"',
        ("review", "record_for_reviewers"): "true",
        ("findings", "disable"): '["claim-field"]',
        ("performance", "workers"): "3",
        ("limits", "max_note_bytes"): "7",
        ("draft", "heading"): '"V2 Draft"',
        ("draft", "callout"): '"> [!note] Repair here"',
        ("signing", "key"): '"~/.ssh/id_ed25519"',
        ("signing", "required"): "true",
        ("signing", "required_from"): "40",
        ("signing", "allowed_signers"): '"/etc/vt/allowed_signers"',
    }
    assert set(samples) == {(table, key) for table, keys in SPEC.items() for key in keys}
    vault = _vault(tmp_path / "v")
    defaults = load_settings(vault)
    for (table, key), value in samples.items():
        (vault / "vt.toml").write_text(f"[{table}]\n{key} = {value}\n", encoding="utf-8")
        assert load_settings(vault) != defaults, f"{table}.{key} changed nothing"


# --- a folder that is not a vault --------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["validate"],
        ["status"],
        ["preview"],
        ["apply", "--dry-run"],
        ["ledger", "verify"],
        ["report"],
    ],
)
def test_an_empty_folder_is_not_a_vault_for_any_command(tmp_path: Path, command: list[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_vt(*command, vault=empty, cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"{empty}: not a vault: no 03_claims/ folder" in done.stderr
    assert list(empty.iterdir()) == []  # nothing written, not even .vt/


def test_a_file_given_as_the_vault_is_called_a_file(tmp_path: Path) -> None:
    file = tmp_path / "note.md"
    file.write_text("x", encoding="utf-8")
    done = run_vt("validate", vault=file, cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert (
        done.stderr == f"vt: {file}: not a vault: this is a file; --vault names the vault folder\n"
    )


def test_the_missing_folder_is_named_after_vt_toml_moved_it(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v", "vt.toml")
    (vault / "vt.toml").write_text('[paths]\nclaims_dir = "claims"\n', encoding="utf-8")
    assert load_settings(vault).warnings == []  # vt.toml marks it: a vault not yet filled
    (vault / "vt.toml").unlink()
    (vault / "claims").mkdir()
    with pytest.raises(UsageError, match="no 03_claims/ folder"):
        load_settings(vault)


def test_a_marked_vault_without_notes_yet_is_a_vault(tmp_path: Path) -> None:
    for marker in (".obsidian", "vt.toml"):
        vault = _vault(tmp_path / marker, marker)
        assert load_settings(vault).warnings == []
    kb_only = tmp_path / "kb-only"
    (kb_only / "04_knowledge_base").mkdir(parents=True)
    assert load_settings(kb_only).warnings == []


def test_vt_init_makes_an_empty_folder_a_vault(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_vt("init", str(empty), cwd=tmp_path).returncode == ExitCode.OK
    assert run_vt("validate", vault=empty, cwd=tmp_path).returncode == ExitCode.OK


def test_a_repository_root_given_as_the_vault_is_warned_of_naming_the_vault(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    vault = repo / "examples" / "vault"
    (vault / "03_claims").mkdir(parents=True)
    (repo / "build" / "lib" / "03_claims").mkdir(parents=True)  # build output: not searched
    (repo / ".hidden" / "03_claims").mkdir(parents=True)
    (repo / "tests").mkdir()
    done = run_vt("validate", vault=".", cwd=repo)
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stderr.startswith(
        f"vt: warning: {repo.resolve()}: no 03_claims/ folder here, but examples/vault/ has one"
    )
    assert "--vault examples/vault" in done.stderr
    assert run_vt("validate", "--json", vault=".", cwd=repo).stdout.startswith("{")
    assert "vt: warning" not in run_vt("validate", vault="examples/vault", cwd=repo).stderr


@pytest.mark.parametrize(
    "command",
    [
        ["apply"],
        ["apply", "--dry-run"],
        ["revert", "x"],
        ["preview"],
        ["draft", "vault_dir/03_claims"],
        ["rebuild"],
        ["report"],
        ["hook", "refresh"],
        ["init"],
        ["import", "records.jsonl"],
        ["entities", "new", "X"],
    ],
)
def test_a_command_that_writes_refuses_the_folder_above_the_vault(
    tmp_path: Path, command: list[str]
) -> None:
    parent = tmp_path / "parent"
    vault = copy_example_vault(parent / "vault_dir")
    before = sorted(p.relative_to(parent) for p in parent.rglob("*"))
    done = run_vt(*command, vault=".", cwd=parent)
    assert done.returncode == ExitCode.USAGE, (done.stdout, done.stderr)
    assert "did you mean --vault vault_dir?" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    # nothing made in the parent, nothing changed in the vault below it
    assert sorted(p.relative_to(parent) for p in parent.rglob("*")) == before
    assert not (vault / "05_ledger").exists() or (vault / "05_ledger").is_dir()


def test_a_read_only_command_on_the_folder_above_the_vault_warns_and_creates_nothing(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "parent"
    copy_example_vault(parent / "vault_dir")
    before = sorted(p.relative_to(parent) for p in parent.rglob("*"))
    for command in (["status"], ["history", "X"], ["export"], ["ledger", "log"]):
        done = run_vt(*command, vault=".", cwd=parent)
        assert "--vault vault_dir" in done.stderr, (command, done.stderr)
        created = [
            p
            for p in sorted(p.relative_to(parent) for p in parent.rglob("*"))
            if p not in before and p.parts[0] != ".vt"
        ]
        assert created == [], (command, created)
