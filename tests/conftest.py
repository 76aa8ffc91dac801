"""Shared fixtures: copies of the example vault, small vaults built from strings, and a
renderer of valid review notes (modelled on examples/vault/03_claims/DV1-0001.md).

Test modules import the plain helpers (`render_note`, `validate_vault`, …) from here;
the fixtures wrap them for tests that want a fresh vault in tmp_path.
"""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, settings

REPO = Path(__file__).resolve().parents[1]

# The suite's property tests draw the same examples on every run ("repeatable"): a run
# of the test command fails only for a change, never for a new draw of the dice. To
# look for new counterexamples, run them with fresh draws and more of them:
#     pytest --hypothesis-profile=explore tests/notes tests/ledger
# (a counterexample found that way goes into the test as an @example).
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile("repeatable")
EXAMPLE_VAULT = REPO / "examples" / "vault"
EXAMPLE_KB = EXAMPLE_VAULT / "04_knowledge_base"
TEMPLATE_NOTE = EXAMPLE_VAULT / "03_claims" / "DV1-0001.md"
SEED_NOTE = EXAMPLE_VAULT / "03_claims" / "SA260324R-0125.md"
IX2_NOTE = EXAMPLE_VAULT / "03_claims" / "IX2-0328.md"


# Who runs vt in the tests: the reviewer most test notes name. An event's actor is whoever
# runs the command (docs/workflow.md), read from git's user.name, so every test runs as
# alice unless it sets another git user (a clone of a teammate's, say).
TEST_USER = "alice"
GIT_USER_CONFIG = f"[user]\n\tname = {TEST_USER}\n\temail = {TEST_USER}@example.org\n"


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package's bytecode once per run. The suite starts hundreds of `vt`
    processes; where PYTHONDONTWRITEBYTECODE is set (as in some CI and sandboxes), each
    would otherwise compile every vault_tools module from source again (about 0.4 s a
    process). Python reads the cached bytecode only while it matches the source.
    Then git's global config becomes one naming the test user, for this process and every
    process it starts, whatever the machine's own user is."""
    compileall.compile_dir(REPO / "vault_tools", quiet=1)
    user_config = Path(tempfile.mkdtemp(prefix="vt-test-user-")) / "gitconfig"
    user_config.write_text(GIT_USER_CONFIG)
    os.environ["GIT_CONFIG_GLOBAL"] = str(user_config)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"


# --- running vt as a user does -----------------------------------------------------

# The console script pip installed beside this interpreter: only for the tests about the
# script itself (its shebang, PATH, shell completion); the rest run `python -m vault_tools`,
# which is the same entry point without depending on where pip put the script.
VT_SCRIPT = Path(sys.executable).parent / "vt"


def vt_env(env: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment without the runner's own VT_* settings (a VT_VAULT
    or VT_DEBUG in the shell that started pytest must not change what a test sees), then
    `env` on top; a None value removes that variable."""
    merged: dict[str, str | None] = {
        key: value for key, value in os.environ.items() if not key.startswith("VT_")
    }
    merged.update(env or {})
    return {key: value for key, value in merged.items() if value is not None}


def vt_command(*args: str, vault: Path | str | None = None) -> list[str]:
    """The command line of `vt ARGS --vault VAULT` for this interpreter."""
    command = [sys.executable, "-m", "vault_tools", *args]
    return command if vault is None else [*command, "--vault", str(vault)]


def start_vt(
    *args: str,
    vault: Path | str | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    **popen: Any,
) -> subprocess.Popen[Any]:
    """`run_vt` for a process the test talks to or kills while it runs (`vt watch`,
    concurrent applies): the same command and environment, Popen's own options."""
    return subprocess.Popen(
        vt_command(*args, vault=vault), cwd=REPO if cwd is None else cwd, env=vt_env(env), **popen
    )


def run_vt(
    *args: str,
    vault: Path | str | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    check: int | None = None,
    input: str | bytes | None = None,  # noqa: A002 - subprocess.run's own name
    text: bool = True,
    encoding: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[Any]:
    """`vt ARGS --vault VAULT` as a real process, the one way the tests start vt.

    The vault is always passed with --vault (tests about VT_VAULT set it through `env`);
    `cwd` defaults to the repository so a relative path cannot find some other vault;
    `check` is the exit code the test expects, a different one fails it with vt's stderr.
    """
    done = subprocess.run(
        vt_command(*args, vault=vault),
        cwd=REPO if cwd is None else cwd,
        env=vt_env(env),
        input=input,
        capture_output=True,
        text=text,
        encoding=encoding,
        timeout=timeout,
    )
    if check is not None and done.returncode != check:
        raise AssertionError(
            f"vt {' '.join(args)}: exit {done.returncode}, expected {check}\n"
            f"{done.stdout!s}{done.stderr!s}"
        )
    return done


# codes `vt validate` emits but a single note file cannot (each has a dedicated test)
NOT_FROM_ONE_FILE = frozenset(
    {
        "claim-id-duplicate",
        "not-review-note",
        "path-outside-vault",
        "read-error",
        "not-a-file",
        "note-too-large",
    }
)
# codes of other commands (vt draft, vt preview, …), never emitted by `vt validate`
OTHER_COMMAND_CODES = frozenset(
    {
        "drafts-missing",
        "drafts-exist",
        "write-refused",
        "repair-unchanged",
        "ledger-rewritten",
        "ledger-conflict-markers",
        "ledger-invalid",
        "decision-unrecorded",
    }
)


def assist_codes() -> frozenset[str]:
    """The review-assist warnings (heuristics with their own tests): off in these tests."""
    from vault_tools.findings import CODES

    return frozenset(code for code in CODES if code.startswith("assist-"))


def single_file_codes() -> set[str]:
    """Every code one note can make `vt validate` emit (review-assist heuristics aside)."""
    from vault_tools.findings import CODES

    return set(CODES) - NOT_FROM_ONE_FILE - OTHER_COMMAND_CODES - assist_codes()


def synthetic_vault(
    out: Path, notes: int, *, seed: int = 7, defects: float = 0.0
) -> tuple[Path, set[tuple[str, int, str]]]:
    """A vault written by bench/synthetic.py (run as a user runs it), and the findings
    it planted as (path, line, code): the rows of the TSV beside the vault."""
    command = [sys.executable, str(REPO / "bench" / "synthetic.py"), str(out)]
    command += ["--notes", str(notes), "--seed", str(seed), "--defects", str(defects)]
    subprocess.run(command, check=True, capture_output=True)
    tsv = out.with_name(f"{out.name}.defects.tsv")
    planted = set()
    if defects:
        for row in tsv.read_text(encoding="utf-8").splitlines():
            path, line, code = row.split("\t")
            planted.add((path, int(line), code))
    return out, planted


# --- the parts of DV1-0001, the template every rendered note starts from -------------

DEFAULT_FRAME: dict[str, Any] = {
    "comparison_expression": "DFlash、DSpark 等 parallel drafter 一次 pass 生成整個 block，"
    "表現優於 sequential autoregressive drafter。",
    "entities": [
        {"id": "04_knowledge_base/DFlash", "label": "DFlash"},
        {"id": "04_knowledge_base/DSpark", "label": "DSpark"},
        {
            "id": "04_knowledge_base/Autoregressive Drafter",
            "label": "sequential autoregressive drafters",
        },
    ],
    "frame_type": "COMPARISON",
    "metric": "COMPUTE_PERFORMANCE",
    "operator": "GREATER_THAN",
    "qualifiers": {
        "condition_text": "每次 pass 生成整個 block",
        "numeric_mentions": ["1"],
        "temporal_mentions": [],
    },
}
DEFAULT_CLAIM = (
    "現代 parallel drafter（DFlash、DSpark）在一次 pass 中生成整個 token block，"
    "表現優於 sequential autoregressive drafter。"
)
DEFAULT_CONTEXT_BEFORE = (
    "Draft and verify: A small drafter model suggests tokens, which the "
    "larger target model verifies in a single parallel pass."
)
DEFAULT_EVIDENCE = (
    "Modern drafters (DFlash, DSpark) generate whole blocks in one pass, "
    "outperforming sequential autoregressive drafters."
)
DEFAULT_CONTEXT_AFTER = (
    "Verification: Block verification (joint probability comparison) is "
    "statistically more efficient than token-wise greedy matching."
)
# the Human Review text of the seeds, as vt import writes it
from vault_tools.integrations.importer import HUMAN_REVIEW  # noqa: E402


def frame_json(frame: Any) -> str:
    """A frame as the pipeline writes it (indent 2, non-ASCII kept)."""
    return json.dumps(frame, ensure_ascii=False, indent=2)


def rows_for(frame: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Mapping rows that agree with `frame`: one wikilink row per entity."""
    return [
        (f"comparison_entity_{index}", entity["label"], f"[[{entity['id']}]]")
        for index, entity in enumerate(frame["entities"])
    ]


def render_frontmatter(
    claim_id: str = "DV1-0001",
    review_action: str = "APPROVE",
    review_state: str = "NEW",
    checks: bool = True,
    reviewer: str = "alice",
    extra: str = "",
) -> str:
    flag = "true" if checks else "false"
    return (
        "---\n"
        f"claim_id: {claim_id}\n"
        f"review_action: {review_action}\n"
        f"review_state: {review_state}\n"
        f"check_source_claim: {flag}\n"
        f"check_claim_frame: {flag}\n"
        f"check_entity_mapping: {flag}\n"
        f"check_epistemic_mode: {flag}\n"
        f'reviewer: "{reviewer}"\n'
        'review_comment: ""\n'
        "tags: [claim-review]\n"
        f"{extra}"
        "---\n"
    )


def render_drafts(claim: str = DEFAULT_CLAIM, frame: Any = None, metadata: Any = None) -> str:
    """A complete `## ⑤ V2 Draft` section (default: a copy of V1)."""
    frame = DEFAULT_FRAME if frame is None else frame
    metadata = (
        {"epistemic_mode": "ASSERTED", "mapping_status": "COMPLETE"}
        if metadata is None
        else metadata
    )
    frame_text = frame if isinstance(frame, str) else frame_json(frame)
    meta_text = metadata if isinstance(metadata, str) else frame_json(metadata)
    return (
        "## ⑤ V2 Draft（需要修正時直接編輯）\n"
        "### V2 Atomic Claim Draft\n"
        f"{claim}\n\n"
        "### V2 Semantic Frame Draft\n"
        f"```json\n{frame_text}\n```\n\n"
        "### V2 Revision Metadata Draft\n"
        f"```json\n{meta_text}\n```\n\n"
    )


def render_note(
    *,
    claim_id: str = "DV1-0001",
    review_action: str = "APPROVE",
    review_state: str = "NEW",
    checks: bool = True,
    reviewer: str = "alice",
    extra_properties: str = "",
    frontmatter: str | None = None,
    source_line: str = "- Source: [Devoured digest](https://devoured.fyi/)",
    section: str = "Deep dive",
    line_hint: str = "9",
    context_before: str = DEFAULT_CONTEXT_BEFORE,
    evidence: str = DEFAULT_EVIDENCE,
    context_after: str = DEFAULT_CONTEXT_AFTER,
    claim: str = DEFAULT_CLAIM,
    mode: str = "ASSERTED",
    status: str = "COMPLETE",
    frame: Any = None,
    rows: Iterable[tuple[str, str, str]] | None = None,
    drafts: str | None = None,
    extra_sections: str = "",
    review: str = HUMAN_REVIEW,
) -> str:
    """A review note in the docs/note-format.md source format; every default gives DV1-0001 exactly.

    `frame` may be a dict (rendered as the pipeline does) or raw block text; `rows`
    default to rows agreeing with the frame; `drafts` is a whole V2 Draft section
    (see `render_drafts`), placed before Human Review like `extra_sections`.
    """
    frame = DEFAULT_FRAME if frame is None else frame
    frame_text = frame if isinstance(frame, str) else frame_json(frame)
    if rows is None:
        rows = rows_for(frame) if isinstance(frame, dict) else []
    table = "".join(f"| {role} | {label} | {target} |\n" for role, label, target in rows)
    head = (
        frontmatter
        if frontmatter is not None
        else render_frontmatter(
            claim_id, review_action, review_state, checks, reviewer, extra_properties
        )
    )
    human_number = "⑥" if drafts else "⑤"
    return (
        f"{head}# {claim_id}\n\n"
        "## ① SA Source\n"
        f"{source_line}\n"
        f"- Section: {section}\n"
        f"- Line hint: {line_hint}\n\n"
        f"### Context Before\n{context_before}\n\n"
        f"### Evidence\n{evidence}\n\n"
        f"### Context After\n{context_after}\n\n"
        f"## ② Atomic Claim\n{claim}\n\n"
        f"- Epistemic Mode: {mode}\n"
        f"- Mapping Status: {status}\n\n"
        f"## ③ Semantic Frame\n```json\n{frame_text}\n```\n\n"
        "## ④ Canonical Entity Mapping\n"
        "| Role | Surface Label | Canonical Target |\n"
        "|---|---|---|\n"
        f"{table}\n"
        f"{drafts or ''}"
        f"{extra_sections}"
        f"## {human_number} Human Review\n{review}"
    )


def line_of_text(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the `occurrence`-th line of `text` containing `needle`."""
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            seen += 1
            if seen == occurrence:
                return number
    raise AssertionError(f"{needle!r} not found {occurrence} time(s)")


# --- vaults ------------------------------------------------------------------------


def build_vault(
    root: Path,
    notes: Mapping[str, str | bytes] | None = None,
    kb: Iterable[str] | Mapping[str, str] | None = None,
    example_kb: bool = True,
) -> Path:
    """Write a vault under `root`: `.obsidian/`, the example knowledge base, and `notes`.

    `notes` maps a vault-relative path (a bare file name goes to 03_claims/) to its text
    or bytes; `kb` adds knowledge-base notes (names, or name -> text).
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / ".obsidian").mkdir(exist_ok=True)
    kb_dir = root / "04_knowledge_base"
    if example_kb:
        shutil.copytree(EXAMPLE_KB, kb_dir, dirs_exist_ok=True)
    kb_dir.mkdir(exist_ok=True)
    entries = kb.items() if isinstance(kb, Mapping) else ((n, f"# {n}\n") for n in kb or ())
    for name, text in entries:
        path = kb_dir / (name if name.endswith(".md") else f"{name}.md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for relative, content in (notes or {}).items():
        path = root / (relative if "/" in relative else f"03_claims/{relative}")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


def copy_example_vault(dest: Path) -> Path:
    shutil.copytree(EXAMPLE_VAULT, dest, ignore=shutil.ignore_patterns(".vt"))
    return dest


def settings_for(vault: Path, workers: int = 1, assist: bool = False):  # -> Settings
    """The vault's settings, with the review-assist warnings off unless `assist`."""
    from vault_tools.config import load_settings

    settings = load_settings(vault)
    settings.workers = workers
    if not assist:
        settings.disabled_findings = settings.disabled_findings | assist_codes()
    return settings


def validate_vault(
    vault: Path, paths: list[Path] | None = None, workers: int = 1, assist: bool = False
):
    """Run the core `validate` on a vault; returns the ValidateReport."""
    from vault_tools.checks.validate import validate

    return validate(settings_for(vault, workers, assist), paths)


def codes_and_lines(findings: Iterable[Any]) -> set[tuple[str, int | None]]:
    return {(f.code, f.line) for f in findings}


def example_context():  # -> CheckContext over the example knowledge base
    from vault_tools.checks.context import CheckContext
    from vault_tools.checks.schemas import Schemas
    from vault_tools.notes.kb import KnowledgeBase
    from vault_tools.notes.vault import markdown_files

    return CheckContext(
        Schemas(), KnowledgeBase(markdown_files(EXAMPLE_VAULT), "04_knowledge_base"), assist_codes()
    )


@pytest.fixture
def example_vault(tmp_path: Path) -> Path:
    """A private copy of examples/vault (without any cached .vt state)."""
    return copy_example_vault(tmp_path / "vault")


@pytest.fixture
def make_vault(tmp_path: Path) -> Callable[..., Path]:
    """Factory: make_vault({"X.md": text}, kb=[...], example_kb=True, name="vault")."""

    def make(
        notes: Mapping[str, str | bytes] | None = None,
        kb: Iterable[str] | Mapping[str, str] | None = None,
        example_kb: bool = True,
        name: str = "vault",
    ) -> Path:
        return build_vault(tmp_path / name, notes, kb, example_kb)

    return make


@pytest.fixture
def note_text() -> Callable[..., str]:
    """The `render_note` helper as a fixture."""
    return render_note


def isolate_git(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Real git, but none of the user's config or environment (GIT_*, VT_VAULT); the
    global config, written in `folder`, names only the test user."""
    for key in list(os.environ):
        if key.startswith("GIT_"):
            monkeypatch.delenv(key)
    empty = folder / "empty-gitconfig"
    empty.write_text(GIT_USER_CONFIG)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("VT_VAULT", raising=False)


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Real git, but none of the user's config or environment (GIT_*, VT_VAULT)."""
    isolate_git(monkeypatch, tmp_path)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run real git; with `check`, a failure shows git's own output."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stdout}{done.stderr}")
    return done


def make_repo(root: Path) -> Path:
    """A new git repository at `root` (branch main, a committer set)."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", TEST_USER)
    git(root, "config", "user.email", f"{TEST_USER}@example.org")
    return root


def each_alone(argument: str, edits: Iterable[str], n: int = 0) -> Callable[..., Any]:
    """A decorator for a hypothesis test given a list of (edit, n) as `argument`: every
    edit alone is one of its examples too, whatever the random ones are."""

    def decorate(test: Callable[..., Any]) -> Callable[..., Any]:
        for edit in edits:
            test = example(**{argument: [(edit, n)]})(test)
        return test

    return decorate
