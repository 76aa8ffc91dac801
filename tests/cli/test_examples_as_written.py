"""Every `vt` example of the README and of every command's --help, run as a user types it.

Each example is one line of a README ```bash block, or of the "Example:" section of a
command's help, that starts with `vt `. It runs through bash (globs, redirections and
`&&` as written) as a real process of the installed `vt`, in its own copy of the
repository's examples laid out as in a clone (`examples/vault`, `examples/claims.jsonl`),
committed to a git repository:

- an example naming `examples/` runs from the copy's root, as the README's
  `vt validate --vault examples/vault` is typed there;
- any other runs inside the example vault, the vault `vt` finds around the working
  directory (`vt status`, `vt validate 03_claims/X.md --json`).

In the copy, the example vault's decisions were applied once (`vt apply`), as a reader
reaching `vt history` or `vt revert` has done: the ledger has events to show.

Every example must exit 0 unless EXPECTED_EXIT names it with the reason; `vt watch`
runs until it is stopped, so it is stopped once it says it is watching, and must then
exit 0. Placeholders a user fills in (an event id, which names the moment of a decision)
are in PLACEHOLDERS. Lines that are not `vt` (installing, git, pytest) are left to the
tests of those steps.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import typer.main

from tests.conftest import REPO, git, make_repo
from vault_tools.cli import app

# examples that run until they are stopped (Ctrl-C): each is started, and stopped with
# SIGTERM once it has said it is watching; it must then exit 0 (tests/integrations/test_watch.py
# tests what it does meanwhile)
UNTIL_STOPPED = ("vt watch",)
# example -> (exit code, why that code is what the example shows)
# (none today: each example shows a command doing what it is asked; one meant to show
# findings, such as a validate of a broken note, goes here with its code)
EXPECTED_EXIT: dict[str, tuple[int, str]] = {}
# text of an example -> (what replaces it, why the example cannot hold the real value)
PLACEHOLDERS = {
    "sha256:3f5a…": (
        "{event_id}",
        "an event id hashes the moment of its decision: the id of DV1-0001's ACCEPT",
    ),
}
# files an example names that a user would have at hand: the merge driver's three
# versions of the ledger, which git writes before it calls the driver
SETUP = {
    "vt ledger merge base.jsonl ours.jsonl theirs.jsonl": (
        "base.jsonl",
        "ours.jsonl",
        "theirs.jsonl",
    ),
}
# examples that name the reviewer's SSH key: the key is made (ssh-keygen) in the run's
# own home folder, as a reviewer who signs commits with SSH already has it
SSH_KEY = "~/.ssh/id_ed25519"

VT_BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
EXAMPLE_HEADING = re.compile(r"^\s*Examples?:\s*$")


def readme_examples() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return [
        line.strip()
        for block in FENCE.findall(text)
        for line in block.splitlines()
        if line.strip().startswith("vt ")
    ]


def _help_texts(command, path: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    found = [(" ".join(("vt", *path)), command.help or "")]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not getattr(sub, "hidden", False):
            found += _help_texts(sub, (*path, name))
    return found


def help_examples() -> list[tuple[str, str]]:
    """(command, example) for every line of every help's "Example:" section."""
    examples = []
    for command, text in _help_texts(typer.main.get_command(app)):
        lines = text.splitlines()
        starts = [i for i, line in enumerate(lines) if EXAMPLE_HEADING.match(line)]
        assert starts, f"`{command} --help` has no Example section"
        for line in lines[starts[0] + 1 :]:
            if line.strip().startswith("vt "):
                examples.append((command, line.strip()))
    return examples


README_EXAMPLES = readme_examples()
HELP_EXAMPLES = help_examples()


def test_the_examples_are_found() -> None:
    assert len(README_EXAMPLES) >= 40 and "vt validate --vault examples/vault" in README_EXAMPLES
    commands = {command for command, _ in HELP_EXAMPLES}
    assert {"vt", "vt validate", "vt ledger", "vt ledger log", "vt hook run"} <= commands
    # the lists of exceptions hold only examples that exist
    every = set(README_EXAMPLES) | {example for _, example in HELP_EXAMPLES}
    assert set(EXPECTED_EXIT) <= every and set(SETUP) <= every
    assert all(any(e.startswith(prefix) for e in every) for prefix in UNTIL_STOPPED)
    assert all(any(text in e for e in every) for text in PLACEHOLDERS)


# --- the copy every example runs in ---------------------------------------------------


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "VT_"))}
    (root / "gitconfig").write_text("[user]\n\tname = Test\n\temail = test@example.org\n")
    env.update(
        PATH=f"{VT_BIN}{os.pathsep}{env.get('PATH', '')}",
        GIT_CONFIG_GLOBAL=str(root / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        TMPDIR=str(root / "tmp"),  # `vt demo --keep` leaves its folder here
        COLUMNS="100",
        HOME=str(root / "home"),  # nothing an example writes reaches the real home
    )
    (root / "tmp").mkdir(exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    return env


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A clone-like copy of the examples, its decisions applied; and DV1-0001's event id."""
    assert (VT_BIN / "vt").is_file(), f"vt is not installed beside {sys.executable}"
    base = tmp_path_factory.mktemp("examples")
    repo = make_repo(base / "repo")
    shutil.copytree(REPO / "examples", repo / "examples", ignore=shutil.ignore_patterns(".vt"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the examples")
    done = subprocess.run(
        ["vt", "apply", "--vault", "examples/vault"],
        cwd=repo,
        env=_env(base),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ledger = repo / "examples/vault/05_ledger/decision_ledger.jsonl"
    events = [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines()]
    [accept] = [e for e in events if e["claim_id"] == "DV1-0001" and e["action"] == "ACCEPT"]
    return repo, accept["id"]


def run_example(example: str, prepared: tuple[Path, str], tmp_path: Path) -> None:
    source, event_id = prepared
    repo = tmp_path / "repo"
    shutil.copytree(source, repo, symlinks=True)
    vault = repo / "examples" / "vault"
    cwd = repo if "examples/" in example else vault
    for name in SETUP.get(example, ()):
        shutil.copyfile(vault / "05_ledger/decision_ledger.jsonl", cwd / name)
    env = _env(tmp_path)
    if SSH_KEY in example:
        (tmp_path / "home" / ".ssh").mkdir()
        key = tmp_path / "home" / ".ssh" / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    line = example
    for text, (replacement, _) in PLACEHOLDERS.items():
        line = line.replace(text, replacement.format(event_id=event_id))
    if example.startswith(UNTIL_STOPPED):
        done = _run_until_ready_then_stop(line, cwd, env)
    else:
        done = subprocess.run(
            ["bash", "-c", line],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    expected = EXPECTED_EXIT.get(example, (0, ""))[0]
    assert done.returncode == expected, (
        f"`{example}` in {cwd.relative_to(repo)}/ exited {done.returncode}, "
        f"not {expected}\n{done.stdout}\n{done.stderr}"
    )
    assert "Traceback" not in done.stderr
    if (
        " --json" in line
        and not example.startswith(UNTIL_STOPPED)
        and not re.search("[|>]", line.split("#")[0])
    ):
        json.loads(done.stdout)  # stdout is one JSON document, as docs/json-output.md says


def _run_until_ready_then_stop(
    line: str, cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Start `line`, wait for its first line of output (the watcher is ready), then stop
    it as Ctrl-C or a service manager would (SIGTERM). The wait is for an event, not a
    duration: the queue's timeout only keeps a hung watcher from hanging the suite."""
    process = subprocess.Popen(
        ["bash", "-c", f"exec {line}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: first.put(process.stdout.readline()), daemon=True).start()
    try:
        ready = first.get(timeout=300)
    finally:
        process.send_signal(signal.SIGTERM)
    rest, errors = process.communicate(timeout=300)
    assert "watching:" in ready or '"event": "ready"' in ready, ready + errors
    return subprocess.CompletedProcess(process.args, process.returncode, ready + rest, errors)


@pytest.mark.parametrize("example", README_EXAMPLES)
def test_every_readme_example_runs_as_written(
    example: str, prepared: tuple[Path, str], tmp_path: Path
) -> None:
    run_example(example, prepared, tmp_path)


@pytest.mark.parametrize("example", sorted({e for _, e in HELP_EXAMPLES} - set(README_EXAMPLES)))
def test_every_help_example_runs_as_written(
    example: str, prepared: tuple[Path, str], tmp_path: Path
) -> None:
    run_example(example, prepared, tmp_path)


def test_the_readmes_first_commit_of_a_vault_leaves_vt_state_out(
    prepared: tuple[Path, str], tmp_path: Path
) -> None:
    """The README's block that starts a vault, run whole: the first commit holds no
    `.vt/`, and the ledger's merge driver is set before it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in FENCE.findall(readme) if "\nvt init\n" in b and "git commit" in b]
    root = tmp_path / "clone"
    shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns(".vt"))
    # a .vt/ left by an earlier run, as a newcomer's vault has one
    (root / "examples/vault/.vt").mkdir()
    (root / "examples/vault/.vt/claims.sqlite").write_bytes(b"SQLite format 3\x00")
    done = subprocess.run(
        ["bash", "-e", "-c", block], cwd=root, env=_env(tmp_path), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [vault] = [p.parent for p in root.glob("*/.git")]
    committed = git(vault, "ls-files").stdout.splitlines()
    assert "03_claims/DV1-0001.md" in committed and ".gitignore" in committed
    assert not [path for path in committed if path.startswith(".vt")]
    assert "ledger merge %O %A %B" in git(vault, "config", "merge.vt-ledger.driver").stdout
