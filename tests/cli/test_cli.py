"""The `vt` command line: output formats, exit codes, help, its docs, the installed script."""

from __future__ import annotations

import gc
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from tests.conftest import (
    REPO,
    VT_SCRIPT,
    assist_codes,
    copy_example_vault,
    render_note,
    run_vt,
    vt_env,
)
from vault_tools.cli import app, app_for, main
from vault_tools.findings import CODES

PLAIN_LINE = re.compile(
    r"^(?P<path>[^:\n]+?)(?::(?P<line>\d+))?: (?P<code>[a-z][a-z-]*): "
    r"(?P<message>.+)$"
)


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env={"VT_VAULT": "", **(env or {})})


@pytest.fixture
def vault(example_vault: Path) -> Path:
    """The example vault with one defective note, and review-assist warnings off."""
    disabled = ", ".join(f'"{code}"' for code in sorted(assist_codes()))
    (example_vault / "vt.toml").write_text(f"[findings]\ndisable = [{disabled}]\n", "utf-8")
    bad = render_note(
        claim_id="BAD-1", mode="CERTAIN", extra_properties="review_state_note: x\n"
    ).replace("review_action: APPROVE", "review_action: APPROVED")
    (example_vault / "03_claims" / "BAD-1.md").write_text(bad, encoding="utf-8")
    return example_vault


def test_clean_vault_exits_0(example_vault: Path) -> None:
    result = invoke("validate", "--vault", str(example_vault))
    assert result.exit_code == 0, result.output
    assert re.search(r"\b6 notes checked: 0 errors", result.stderr)
    # review-assist warnings may be listed; errors may not
    assert all(
        PLAIN_LINE.match(line)["code"].startswith("assist-") for line in result.stdout.splitlines()
    )


def test_plain_mode_lines(vault: Path) -> None:
    result = invoke("validate", "--vault", str(vault))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    parsed = [PLAIN_LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert [(m["path"], int(m["line"]), m["code"]) for m in parsed] == [
        ("03_claims/BAD-1.md", 3, "properties-schema"),
        ("03_claims/BAD-1.md", 33, "claim-field"),
    ]
    assert "APPROVED" in parsed[0]["message"]
    assert re.search(r"\b7 notes checked: 2 errors", result.stderr)
    assert "\x1b[" not in result.stdout  # no colour codes when piped


def test_json_mode_has_exactly_the_documented_keys(vault: Path) -> None:
    result = invoke("validate", "--vault", str(vault), "--json")
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert set(payload) == {"notes", "errors", "warnings", "findings"}
    assert (payload["notes"], payload["errors"], payload["warnings"]) == (7, 2, 0)
    for finding in payload["findings"]:
        assert set(finding) == {"path", "line", "severity", "code", "message"}
        assert finding["path"] == "03_claims/BAD-1.md"  # vault-relative, '/'-separated
        assert isinstance(finding["line"], int) and finding["severity"] == "error"
        assert finding["code"] in CODES
    assert [f["code"] for f in payload["findings"]] == ["properties-schema", "claim-field"]


def test_json_mode_on_a_clean_vault(example_vault: Path) -> None:
    result = invoke("validate", "--vault", str(example_vault), "--json")
    payload = json.loads(result.stdout)
    assert result.exit_code == (1 if payload["errors"] else 0)
    assert payload["errors"] == 0 and payload["notes"] == 6


def test_vault_from_environment(vault: Path) -> None:
    result = invoke("validate", "--json", env={"VT_VAULT": str(vault)})
    assert result.exit_code == 1 and json.loads(result.stdout)["notes"] == 7


def test_explicit_paths(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text(render_note(claim_id="OUT-1"), encoding="utf-8")
    kb_note = vault / "04_knowledge_base" / "Prefill.md"
    result = invoke(
        "validate",
        "--vault",
        str(vault),
        "--json",
        str(vault / "03_claims" / "DV1-0001.md"),
        str(kb_note),
        str(outside),
    )
    payload = json.loads(result.stdout)
    by_code = {f["code"]: f for f in payload["findings"]}
    assert set(by_code) == {"not-review-note", "path-outside-vault"}
    assert by_code["not-review-note"]["path"] == "04_knowledge_base/Prefill.md"
    assert by_code["not-review-note"]["line"] is None
    assert by_code["path-outside-vault"]["line"] is None
    assert payload["notes"] == 1
    assert result.exit_code != 0


def test_one_clean_note_given_exits_0(vault: Path) -> None:
    result = invoke("validate", "--vault", str(vault), str(vault / "03_claims" / "IX2-0328.md"))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


def test_bad_option_exits_2() -> None:
    result = invoke("validate", "--no-such-option")
    assert result.exit_code == 2
    assert "--no-such-option" in result.output


def _run_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *args: str
) -> tuple[int, str, str]:
    """Run the real entry point (run_app maps VtError to its exit code) in-process."""
    monkeypatch.setattr(sys, "argv", ["vt", *args])
    monkeypatch.delenv("VT_VAULT", raising=False)
    try:
        with pytest.raises(SystemExit) as caught:
            main()
        # what is alive when a command ends is frozen: the exit's collections skip it
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # this test process goes on
    out, err = capsys.readouterr()
    return int(caught.value.code or 0), out, err


def test_missing_vault_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    missing = tmp_path / "no-such-vault"
    code, out, err = _run_main(monkeypatch, capsys, "validate", "--vault", str(missing))
    assert code == 2
    assert out == ""
    assert err.startswith("vt: ") and str(missing) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_no_vault_found_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    if any((p / ".obsidian").is_dir() or (p / "vt.toml").is_file() for p in tmp_path.parents):
        pytest.skip("a folder above tmp_path looks like a vault")
    monkeypatch.chdir(tmp_path)
    code, _, err = _run_main(monkeypatch, capsys, "validate")
    assert code == 2 and "no vault found" in err


def test_bad_vt_toml_exits_2(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    (example_vault / "vt.toml").write_text("[paths\n", encoding="utf-8")
    code, _, err = _run_main(monkeypatch, capsys, "validate", "--vault", str(example_vault))
    assert code == 2 and "vt.toml" in err and "Traceback" not in err


def test_main_exit_codes_0_and_1(
    vault: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    clean = str(vault / "03_claims" / "IX2-0328.md")
    assert _run_main(monkeypatch, capsys, "validate", "--vault", str(vault), clean)[0] == 0
    code, out, _ = _run_main(monkeypatch, capsys, "validate", "--vault", str(vault))
    assert code == 1 and "03_claims/BAD-1.md:3: properties-schema: " in out


# --- help and docs ----------------------------------------------------------------------


def _command_paths(command, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the click tree (groups and their subcommands), recursively."""
    paths = []
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if getattr(sub, "hidden", False):
            continue
        paths.append((*prefix, name))
        paths.extend(_command_paths(sub, (*prefix, name)))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))
COMMANDS_PAGE = REPO / "docs" / "commands.md"
FINDING_CODES_PAGE = REPO / "docs" / "finding-codes.md"


def test_the_command_tree_is_walked() -> None:
    assert ("validate",) in COMMANDS


@pytest.mark.parametrize("path", [(), *COMMANDS], ids=lambda p: " ".join(p) or "vt")
def test_every_command_help_has_an_example(path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    assert "Example" in result.stdout
    assert f"vt {' '.join(path)}".strip() in result.stdout


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_command_is_in_the_command_reference(path: tuple[str, ...]) -> None:
    assert f"## `vt {' '.join(path)}`" in COMMANDS_PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", [p for p in COMMANDS if len(p) == 1], ids=" ".join)
def test_every_command_lives_in_a_module_named_after_it(path: tuple[str, ...]) -> None:
    """`vt status` in cli/status.py, `vt import` in cli/import_.py, a group's
    subcommands in its own module: where a newcomer looks for a command, it is."""
    (name,) = path
    module = f"vault_tools.cli.{name}_" if name == "import" else f"vault_tools.cli.{name}"
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    callbacks = [command.callback, *(c.callback for c in getattr(command, "commands", {}).values())]
    assert {c.__module__ for c in callbacks if c is not None} == {module}
    assert (REPO / module.replace(".", "/")).with_suffix(".py").is_file()


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_the_app_built_for_one_command_is_that_command(path: tuple[str, ...]) -> None:
    lean = app_for([*path, "--help"])
    assert _command_paths(typer.main.get_command(lean))[0] == path[:1]  # that one alone
    assert len([p for p in _command_paths(typer.main.get_command(lean)) if len(p) == 1]) == 1
    runner = CliRunner()
    assert (
        runner.invoke(lean, [*path, "--help"]).stdout
        == runner.invoke(app, [*path, "--help"]).stdout
    )


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"], ["validat"], ["-h", "x"]])
def test_anything_but_a_command_name_gets_the_whole_app(args: list[str]) -> None:
    assert app_for(args) is app


def _documented_codes() -> set[str]:
    text = FINDING_CODES_PAGE.read_text(encoding="utf-8")
    return set(re.findall(r"^\| `([a-z][a-z-]*)` \|", text, flags=re.MULTILINE))


def test_every_finding_code_is_in_the_table() -> None:
    missing = set(CODES) - _documented_codes()
    assert not missing, f"codes missing from docs/finding-codes.md: {sorted(missing)}"


def test_the_table_has_no_unknown_codes() -> None:
    assert _documented_codes() <= set(CODES)


# --- the installed console script, as a real process ------------------------------------


def _vt_script() -> str:
    found = str(VT_SCRIPT) if VT_SCRIPT.is_file() else shutil.which("vt")
    if found is None:
        pytest.skip("the vt console script is not installed")
    return found


def test_installed_vt_script(tmp_path: Path) -> None:
    vault = copy_example_vault(tmp_path / "vault")
    env = vt_env()
    vt = _vt_script()
    clean = subprocess.run(
        [vt, "validate", "--vault", str(vault), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    payload = json.loads(clean.stdout)
    assert clean.returncode == (1 if payload["errors"] else 0), clean.stderr
    assert payload["errors"] == 0 and payload["notes"] == 6

    (vault / "03_claims" / "BAD-1.md").write_text(
        render_note(claim_id="BAD-1", mode="NOPE"), encoding="utf-8"
    )
    bad = subprocess.run(
        [vt, "validate"],
        cwd=vault / "03_claims",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 1, bad.stderr
    assert "03_claims/BAD-1.md:32: claim-field: " in bad.stdout
    assert all(PLAIN_LINE.match(line) for line in bad.stdout.splitlines())

    missing = subprocess.run(
        [vt, "validate", "--vault", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert missing.returncode == 2 and missing.stderr.startswith("vt: ")
    assert "Traceback" not in missing.stderr


def test_python_dash_m_help() -> None:
    result = run_vt("--help")
    assert result.returncode == 0, result.stderr
    assert "validate" in result.stdout and "Example" in result.stdout


# --- the terminal (rich) reporter -------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_mode_groups_by_note_and_escapes_markup() -> None:
    from vault_tools.cli.output import RICH, Reporter
    from vault_tools.findings import error, warning

    out = _Terminal()
    reporter = Reporter(out=out, err=io.StringIO())
    assert reporter.mode == RICH
    reporter.findings(
        [
            error("03_claims/A.md", 3, "claim-field", "value '[/red]' is [bold]odd[/bold]"),
            error("03_claims/A.md", None, "read-error", "gone"),
            warning("03_claims/B.md", 7, "claim-field", "second note"),
        ]
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert text.count("03_claims/A.md") == 1 and text.count("03_claims/B.md") == 1
    assert "[/red]" in text and "[bold]odd[/bold]" in text
    assert "warning" in text and "error" in text


def test_json_reporter_prints_one_object() -> None:
    from vault_tools.cli.output import Reporter

    out = io.StringIO()
    reporter = Reporter(as_json=True, out=out)
    reporter.text("not in json mode")
    reporter.json({"a": "ü"})
    assert json.loads(out.getvalue()) == {"a": "ü"}


def test_version_is_the_package_version() -> None:
    from vault_tools import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"vt {__version__}"
