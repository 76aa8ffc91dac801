"""Shell completion (Typer's): `vt --show-completion`, `vt --install-completion`, and the
completions the shell gets from `vt` run with `_VT_COMPLETE` set. Real processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import VT_SCRIPT, vt_env
from vault_tools.cli import COMMANDS

VT = str(VT_SCRIPT)  # completion is keyed on the program name: the console script


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return _run_command([VT, *args], env)


def _complete(words: str) -> list[str]:
    """What bash is offered for the last of `words` (as its completion function asks)."""
    cword = str(len(words.split(" ")) - 1)
    done = _run(_VT_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _in_bash(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`vt ARGS` as a child of a running bash: Typer finds the shell among the process's
    ancestors, which a test run started from no shell (a detached job) does not have."""
    return _run_command(["bash", "-c", '"$@"; exit $?', "bash", VT, *args], env)


def _run_command(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in vt_env().items() if not k.startswith(("_VT_", "COMP_"))}
    return subprocess.run(command, capture_output=True, text=True, env={**base, **env}, timeout=60)


def test_show_completion_prints_the_bash_function() -> None:
    done = _in_bash("--show-completion", "bash", SHELL="/bin/bash")
    assert done.returncode == 0, done.stderr
    assert "_vt_completion()" in done.stdout
    assert "_VT_COMPLETE=complete_bash" in done.stdout
    assert "complete -o default -F _vt_completion vt" in done.stdout


def test_the_commands_are_completed() -> None:
    assert _complete("vt ") == list(COMMANDS)
    assert _complete("vt pre") == ["preview"]


def test_a_groups_subcommands_and_a_commands_options_are_completed() -> None:
    assert set(_complete("vt ledger ")) == {"verify", "audit", "log", "merge", "resolve", "forget"}
    assert {"--vault", "--json"} <= set(_complete("vt validate --"))


def test_install_completion_writes_the_script_and_sources_it(tmp_path: Path) -> None:
    done = _in_bash("--install-completion", "bash", HOME=str(tmp_path), SHELL="/bin/bash")
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "vt.sh"
    assert "_vt_completion()" in script.read_text(encoding="utf-8")
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text(encoding="utf-8")


def test_help_lists_the_completion_options() -> None:
    done = _run("--help", COLUMNS="100")
    assert "--install-completion" in done.stdout and "--show-completion" in done.stdout
