"""Every `vt` example of the README, of docs/ and of every command's --help, run as a user
types it; and the README's shell blocks, run in order from a copy of the checkout.

Each example is one line of a ```bash block of the README or a page of docs/, or of the
"Example:" section of a command's help, that starts with `vt `. It runs through bash
(globs, redirections and `&&` as written) as a real process of the installed `vt`, beside
a copy of the repository's examples laid out as in a clone (`examples/vault`,
`examples/claims.jsonl`, committed to a git repository) and the vault the README's five
commands make, `~/my-vault` (a copy of the example vault in its own git repository, in
the run's own home folder):

- an example naming `examples/` runs from the clone's root, as the README's
  `vt import examples/claims.jsonl --vault ~/my-vault` is typed there;
- any other runs inside `~/my-vault`, the vault `vt` finds around the working directory
  (`vt status`, `vt validate 03_claims/X.md --json`).

In `~/my-vault` the example vault's decisions were applied once (`vt apply`), as a reader
reaching `vt history` or `vt revert` has done: the ledger has events to show. No example
may change the clone: `git status --porcelain --ignored` there is the same after it.

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

from tests.conftest import REPO, VT_SCRIPT, git, make_repo, vt_env
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
# examples of `vt signers` run in ~/my-vault set up to sign as docs/signing.md's "Setting it
# up" says: the reader's key (made by ssh-keygen) in vt.toml and in the allowed signers
# under their git name, and bob's public key beside the vault; `vt signers remove bob`
# runs after bob was added, as the example before it in the help does
SIGNERS = "vt signers"

VT_BIN = VT_SCRIPT.parent
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
EXAMPLE_HEADING = re.compile(r"^\s*Examples?:\s*$")


PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def page_examples(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
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


README_EXAMPLES = page_examples(REPO / "README.md")
DOC_EXAMPLES = sorted({e for page in PAGES for e in page_examples(page)})
HELP_EXAMPLES = help_examples()


def test_the_examples_are_found() -> None:
    assert "vt apply" in README_EXAMPLES and set(README_EXAMPLES) <= set(DOC_EXAMPLES)
    assert len(DOC_EXAMPLES) >= 10
    commands = {command for command, _ in HELP_EXAMPLES}
    assert {"vt", "vt validate", "vt ledger", "vt ledger log", "vt hook run"} <= commands
    # the lists of exceptions hold only examples that exist
    every = set(DOC_EXAMPLES) | {example for _, example in HELP_EXAMPLES}
    assert set(EXPECTED_EXIT) <= every and set(SETUP) <= every
    assert all(any(e.startswith(prefix) for e in every) for prefix in UNTIL_STOPPED)
    assert all(any(text in e for e in every) for text in PLACEHOLDERS)


# --- the copy every example runs in ---------------------------------------------------

# --- the copy every example runs in ---------------------------------------------------


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in vt_env().items() if not k.startswith("GIT_")}
    # alice: the reviewer the example vault's decided notes name, so her `vt apply`
    # records them (an event names whoever runs the command)
    (root / "gitconfig").write_text("[user]\n\tname = alice\n\temail = alice@example.org\n")
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


def _state(checkout: Path) -> str:
    """What git sees in `checkout`, ignored files included: an example that writes a
    `.vt/` or a build folder into it changes this too."""
    return git(checkout, "status", "--porcelain", "--ignored", "--untracked-files=all").stdout


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A clone-like copy of the examples and `~/my-vault` with its decisions applied, in
    one folder; and DV1-0001's event id."""
    assert VT_SCRIPT.is_file(), f"vt is not installed beside {sys.executable}"
    base = tmp_path_factory.mktemp("examples")
    repo = make_repo(base / "repo")
    shutil.copytree(REPO / "examples", repo / "examples", ignore=shutil.ignore_patterns(".vt"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the examples")
    vault = make_repo(base / "home" / "my-vault")
    shutil.copytree(REPO / "examples/vault", vault, dirs_exist_ok=True)
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "-m", "the vault")
    # a team's vault has a remote: `vt ledger audit --since origin/main` names it
    git(base, "init", "-q", "--bare", "origin.git")
    git(vault, "remote", "add", "origin", str(base / "origin.git"))
    git(vault, "push", "-q", "origin", "main")
    done = subprocess.run(
        ["vt", "apply"], cwd=vault, env=_env(base), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ledger = vault / "05_ledger/decision_ledger.jsonl"
    events = [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines()]
    [accept] = [e for e in events if e["claim_id"] == "DV1-0001" and e["action"] == "ACCEPT"]
    return base, accept["id"]


def run_example(example: str, prepared: tuple[Path, str], tmp_path: Path) -> None:
    base, event_id = prepared
    shutil.copytree(base / "repo", tmp_path / "repo", symlinks=True)
    shutil.copytree(base / "home", tmp_path / "home", symlinks=True)
    repo, vault = tmp_path / "repo", tmp_path / "home" / "my-vault"
    before = _state(repo)
    cwd = repo if "examples/" in example else vault
    for name in SETUP.get(example, ()):
        shutil.copyfile(vault / "05_ledger/decision_ledger.jsonl", cwd / name)
    env = _env(tmp_path)
    if SSH_KEY in example:
        (tmp_path / "home" / ".ssh").mkdir()
        key = tmp_path / "home" / ".ssh" / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    if example.startswith(SIGNERS):
        _set_up_signing(vault, env, add_bob="remove bob" in example)
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
        f"`{example}` in {cwd.relative_to(tmp_path)}/ exited {done.returncode}, "
        f"not {expected}\n{done.stdout}\n{done.stderr}"
    )
    assert "Traceback" not in done.stderr
    if (
        " --json" in line
        and not example.startswith(UNTIL_STOPPED)
        and not re.search("[|>]", line.split("#")[0])
    ):
        json.loads(done.stdout)  # stdout is one JSON document, as docs/json-output.md says
    assert _state(repo) == before, f"`{example}` changed the clone"


def _set_up_signing(vault: Path, env: dict[str, str], add_bob: bool) -> None:
    keys = vault.parent / ".ssh"
    keys.mkdir(exist_ok=True)
    for key in (keys / "id_ed25519", vault / "bob_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                       check=True, capture_output=True)  # fmt: skip
    (vault / "vt.toml").write_text(f'[signing]\nkey = "{keys / "id_ed25519"}"\n')
    reader = " ".join((keys / "id_ed25519.pub").read_text().split()[:2])
    (vault / "05_ledger" / "allowed_signers").write_text(f"Test {reader}\n")
    if add_bob:
        subprocess.run(["vt", "signers", "add", "bob", "bob_ed25519.pub"], cwd=vault, env=env,
                       check=True, capture_output=True)  # fmt: skip


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


@pytest.mark.parametrize("example", DOC_EXAMPLES)
def test_every_documented_example_runs_as_written(
    example: str, prepared: tuple[Path, str], tmp_path: Path
) -> None:
    run_example(example, prepared, tmp_path)


@pytest.mark.parametrize("example", sorted({e for _, e in HELP_EXAMPLES} - set(DOC_EXAMPLES)))
def test_every_help_example_runs_as_written(
    example: str, prepared: tuple[Path, str], tmp_path: Path
) -> None:
    run_example(example, prepared, tmp_path)


# --- the README's shell blocks, in order, from a copy of the checkout -----------------

# lines of the README's blocks this test does not run -> why
README_NOT_RUN = {
    "python3 -m venv": "the set-up lines install vt and run the suite: .ci/run runs the "
    "second as written, and this test runs with that installation",
    "git push": "the vault of the five commands has no remote to push to",
}


def _checkout_copy(root: Path) -> Path:
    """The files of this checkout (tracked, and new ones not ignored), as a fresh clone
    holds them, committed to a git repository of their own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    copy = make_repo(root)
    for name in filter(None, listed.stdout.split("\0")):
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "the checkout")
    return copy


def test_the_readmes_blocks_run_in_order_and_change_nothing_in_the_checkout(
    tmp_path: Path,
) -> None:
    """A newcomer's session: each ```bash block of the README, in order, in one shell that
    starts at the clone's root. Every line runs and exits 0; the clone is unchanged; the
    vault of the five commands was committed without `.vt/`, its ledger's merge driver
    set before that commit, and holds the decisions `vt apply` recorded."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [
        line
        for block in FENCE.findall(readme)
        for line in block.splitlines()
        if line.strip() and not line.startswith(tuple(README_NOT_RUN))
    ]
    assert sum(line.startswith("vt ") for line in lines) >= 7
    clone = _checkout_copy(tmp_path / "clone")
    before = _state(clone)
    env = _env(tmp_path)
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", "\n".join(lines)],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert _state(clone) == before, "the README's examples changed the checkout"
    vault = tmp_path / "home" / "my-vault"
    committed = git(vault, "ls-files").stdout.splitlines()
    assert "03_claims/DV1-0001.md" in committed and ".gitignore" in committed
    assert "03_claims/DV1-0005.md" in committed  # imported from examples/claims.jsonl
    assert not [path for path in committed if path.startswith(".vt")]
    first = git(vault, "rev-list", "--max-parents=0", "HEAD").stdout.strip()
    assert ".vt" not in git(vault, "show", "--name-only", "--format=", first).stdout
    assert "ledger merge %O %A %B" in git(vault, "config", "merge.vt-ledger.driver").stdout
    assert git(vault, "log", "--format=%s").stdout.splitlines() == [
        "review decisions",
        "the vault, ready for vt",
    ]
    assert "05_ledger/decision_ledger.jsonl" in committed
    recorded = (vault / "05_ledger/decision_ledger.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line)["actor"] for line in recorded.splitlines()] == ["alice", "alice"]
