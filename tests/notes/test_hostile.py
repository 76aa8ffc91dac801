"""Hostile files: one bad file is one finding, and every command's run goes on.

Each case of the table puts one hostile file (or folder) into a vault beside two valid
review notes, then runs the real `vt validate` (piped and `--json`), `vt status`,
`vt apply`, `vt preview` and `vt report` on it as subprocesses: the expected finding,
the valid notes still checked (and applied), stdout one JSON document, no command
hanging (a FIFO used to) or failing with an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import (
    DEFAULT_CLAIM,
    DEFAULT_FRAME,
    build_vault,
    line_of_text,
    render_note,
    run_vt,
    validate_vault,
)
from vault_tools.config import MAX_NOTE_BYTES

TIMEOUT = 10  # seconds per command: far above what a case takes, and still a failure
VALID = ("reviews/A-0001.md", "reviews/B-0001.md")
CLAIMS = "03_claims"


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], None]  # puts the hostile entry into the vault
    path: str  # the finding's path (a prefix of it, for `prefix=True`)
    code: str
    line: int | None = None  # None: the finding has no line (a file or folder problem)
    unreadable: bool = False  # no bytes to parse: status and preview report it too
    refused: bool = True  # `vt apply` refuses it (a decision it cannot or must not record)
    prefix: bool = False


def _note(name: str, text: str | bytes) -> Callable[[Path], None]:
    def make(vault: Path) -> None:
        path = vault / CLAIMS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))

    return make


def _hostile(**kwargs: str) -> str:
    return render_note(claim_id="H-0001", **kwargs)


def _line(text: str, needle: str) -> int:
    return line_of_text(text, needle)


HUGE = "9" * 5000
FRAME_HUGE = _hostile(frame='{"x": ' + HUGE + "}")
PROPERTY_HUGE = _hostile(extra_properties=f"count: {HUGE}\n")
NUL_PROPERTY = _hostile(reviewer="al\x00ice")
NUL_CLAIM = _hostile(claim=DEFAULT_CLAIM[:12] + "\x00" + DEFAULT_CLAIM[12:])
ESC_CLAIM = _hostile(claim="The drafter \x1b[31mwins\x1b[0m in one pass.")
# a REJECT carries no claim, but its comment goes to the ledger all the same
NUL_ESCAPED_REJECT = render_note(claim_id="H-0001", review_action="REJECT").replace(
    'review_comment: ""', 'review_comment: "no\\0pe"'
)
NUL_IN_FRAME = _hostile(frame='{"comparison_expression": "a\\u0000b"}')
NAN_FRAME = _hostile(frame='{"x": NaN}')
OVERFLOW_FRAME = _hostile(frame='{"x": 1e999}')
INF_PROPERTY = _hostile(extra_properties="weight: .inf\n")
# read by YAML without the limit on digits, failing only when written: in a comment, it
# would have gone to the ledger
HEX_COMMENT = _hostile().replace('review_comment: ""', "review_comment: 0x" + "f" * 5000)
# a YAML 1.1 base-60 integer: no long run of digits, and PyYAML adds its groups one by one
# to a growing integer (minutes for these)
SEXAGESIMAL_COMMENT = _hostile().replace(
    'review_comment: ""', "review_comment: 1" + ":59" * 300_000
)
DEEP_JSON = _hostile(frame="[" * 100_000)
DEEP_YAML = _hostile(extra_properties="deep: " + "[" * 100_000 + "]" * 100_000 + "\n")
LAUGHS = "".join(
    f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9 if i else ["lol"] * 9) + "]\n" for i in range(10)
)
BILLION_LAUGHS = _hostile(extra_properties=LAUGHS)
# an unclosed fence at the end swallows the claim's fields: linear, and one finding
FENCES = _hostile(claim="claim\n" + "```\nx\n```\n" * 100_000 + "```\n")
# a million blanks on one line: regexes whose parts could take the same blanks tried
# every split of them (seconds for twenty thousand, hours for a million)
BLANKS = " " * 1_000_000
BLANK_FIELD = _hostile(line_hint="9" + BLANKS + "x")
BLANK_PROPERTY = _hostile().replace("review_state: NEW", "review_state: NEW" + BLANKS + "x")
BLANK_FRAME = _hostile(frame="{" + BLANKS + '"x": 1}')
# old Mac OS line endings: one line to vt, many to Obsidian
CR_ONLY = _hostile().replace("\n", "\r")
LONE_CR = _hostile(claim="The drafter wins\rin one pass.")
INVALID_UTF8 = _hostile().encode().replace(b"Deep dive", b"Deep \xff dive")
ONLY_DASHES = "---\n"


def _fifo(vault: Path) -> None:
    (vault / CLAIMS).mkdir(exist_ok=True)
    os.mkfifo(vault / CLAIMS / "F-0001.md")


def _symlink_to_fifo(vault: Path) -> None:
    (vault / "pipes").mkdir()
    os.mkfifo(vault / "pipes" / "pipe")
    (vault / CLAIMS).mkdir(exist_ok=True)
    (vault / CLAIMS / "G-0001.md").symlink_to(vault / "pipes" / "pipe")


def _too_large(vault: Path) -> None:
    text = _hostile(review="x" * 1000 + "\n")
    _note("H-0001.md", text + ("padding line\n" * (6_000_000 // 13)))(vault)


def _sparse_huge(vault: Path) -> None:
    # 10 GB that take no room: read, it would take minutes and all the memory
    (vault / CLAIMS).mkdir(exist_ok=True)
    with open(vault / CLAIMS / "S-0001.md", "wb") as out:
        out.write(b"---\nclaim_id: S-0001\n---\n")
        out.truncate(10 * 1024**3)


def _folder_named_md(vault: Path) -> None:
    _note("x.md/inner.md", ONLY_DASHES)(vault)  # a folder: walked, its note checked


def _dangling(vault: Path) -> None:
    (vault / CLAIMS).mkdir(exist_ok=True)
    (vault / CLAIMS / "y.md").symlink_to(vault / "04_knowledge_base" / "Gone.md")


def _loop(vault: Path) -> None:
    (vault / CLAIMS).mkdir(exist_ok=True)
    (vault / CLAIMS / "z.md").symlink_to(vault / CLAIMS / "z.md")


def _symlinked_claims(vault: Path) -> None:
    outside = vault.parent / "elsewhere"
    outside.mkdir()
    (outside / "O-0001.md").write_text(_hostile(), encoding="utf-8")
    (vault / CLAIMS).symlink_to(outside, target_is_directory=True)


def _unreadable_folder(vault: Path) -> None:
    _note("locked/L-0001.md", _hostile())(vault)
    (vault / CLAIMS / "locked").chmod(0)


def _too_deep_folder(vault: Path) -> None:
    """A folder whose path is longer than the system takes (PATH_MAX): scandir fails
    with ENAMETOOLONG, a real failure to list it even for root."""
    (vault / CLAIMS / "deep").mkdir(parents=True)
    fd = os.open(vault / CLAIMS / "deep", os.O_RDONLY)
    try:
        for _ in range(20):  # 20 × 201 characters: past 4096
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("D-0001.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as out:
            out.write(_hostile())
    finally:
        os.close(fd)


def _undecodable_name(vault: Path) -> None:
    (vault / CLAIMS).mkdir(exist_ok=True)
    with open(os.fsencode(vault / CLAIMS) + b"/bad\xff.md", "wb") as out:
        out.write(_hostile().encode())


CASES = [
    Case(
        "huge-int-in-frame",
        _note("H-0001.md", FRAME_HUGE),
        f"{CLAIMS}/H-0001.md",
        "number-too-large",
        _line(FRAME_HUGE, HUGE),
    ),
    Case(
        "huge-int-in-frontmatter",
        _note("H-0001.md", PROPERTY_HUGE),
        f"{CLAIMS}/H-0001.md",
        "number-too-large",
        _line(PROPERTY_HUGE, HUGE),
    ),
    Case("fifo", _fifo, f"{CLAIMS}/F-0001.md", "not-a-file", unreadable=True),
    Case("symlink-to-fifo", _symlink_to_fifo, f"{CLAIMS}/G-0001.md", "not-a-file", unreadable=True),
    Case(
        "unreadable-folder", _unreadable_folder, f"{CLAIMS}/locked", "read-error", unreadable=True
    ),
    Case(
        "folder-beyond-path-max",
        _too_deep_folder,
        f"{CLAIMS}/deep/ddd",
        "read-error",
        unreadable=True,
        prefix=True,
    ),
    Case("symlinked-claims-folder", _symlinked_claims, CLAIMS, "read-error", unreadable=True),
    Case(
        "nul-in-property",
        _note("H-0001.md", NUL_PROPERTY),
        f"{CLAIMS}/H-0001.md",
        "control-character",
        _line(NUL_PROPERTY, "reviewer:"),
    ),
    Case(
        "nul-in-claim",
        _note("H-0001.md", NUL_CLAIM),
        f"{CLAIMS}/H-0001.md",
        "control-character",
        _line(NUL_CLAIM, "\x00"),
    ),
    Case(
        "escape-in-claim",
        _note("H-0001.md", ESC_CLAIM),
        f"{CLAIMS}/H-0001.md",
        "control-character",
        _line(ESC_CLAIM, "\x1b"),
    ),
    Case(
        "escaped-nul-in-rejected-note",
        _note("H-0001.md", NUL_ESCAPED_REJECT),
        f"{CLAIMS}/H-0001.md",
        "control-character",
        _line(NUL_ESCAPED_REJECT, "review_comment:"),
    ),
    Case(
        "escaped-nul-in-frame",
        _note("H-0001.md", NUL_IN_FRAME),
        f"{CLAIMS}/H-0001.md",
        "control-character",
        _line(NUL_IN_FRAME, "\\u0000"),
    ),
    Case(
        "nan-in-frame",
        _note("H-0001.md", NAN_FRAME),
        f"{CLAIMS}/H-0001.md",
        "json-syntax",
        _line(NAN_FRAME, "NaN"),
    ),
    Case(
        "overflow-in-frame",
        _note("H-0001.md", OVERFLOW_FRAME),
        f"{CLAIMS}/H-0001.md",
        "number-too-large",
        _line(OVERFLOW_FRAME, "1e999"),
    ),
    Case(
        "infinity-property",
        _note("H-0001.md", INF_PROPERTY),
        f"{CLAIMS}/H-0001.md",
        "number-too-large",
        _line(INF_PROPERTY, ".inf"),
    ),
    Case(
        "hex-int-in-comment",
        _note("H-0001.md", HEX_COMMENT),
        f"{CLAIMS}/H-0001.md",
        "number-too-large",
        _line(HEX_COMMENT, "review_comment:"),
    ),
    Case(
        "sexagesimal-int-in-comment",
        _note("H-0001.md", SEXAGESIMAL_COMMENT),
        f"{CLAIMS}/H-0001.md",
        "number-too-large",
        _line(SEXAGESIMAL_COMMENT, "review_comment:"),
    ),
    Case(
        "note-over-the-size-limit",
        _too_large,
        f"{CLAIMS}/H-0001.md",
        "note-too-large",
        unreadable=True,
    ),
    Case(
        "sparse-10-gb-note", _sparse_huge, f"{CLAIMS}/S-0001.md", "note-too-large", unreadable=True
    ),
    Case(
        "100k-code-fences",
        _note("H-0001.md", FENCES),
        f"{CLAIMS}/H-0001.md",
        "claim-field",
        _line(FENCES, "## ② Atomic Claim"),
    ),
    Case(
        "blanks-in-a-source-field",
        _note("H-0001.md", BLANK_FIELD),
        f"{CLAIMS}/H-0001.md",
        "source-field",
        _line(BLANK_FIELD, "- Line hint:"),
    ),
    Case(
        "blanks-in-a-property",
        _note("H-0001.md", BLANK_PROPERTY),
        f"{CLAIMS}/H-0001.md",
        "properties-schema",
        _line(BLANK_PROPERTY, "review_state:"),
    ),
    Case(
        "blanks-in-a-json-line",
        _note("H-0001.md", BLANK_FRAME),
        f"{CLAIMS}/H-0001.md",
        "frame-schema",
        _line(BLANK_FRAME, '"x": 1}'),
    ),
    Case(
        "folder-named-x.md",
        _folder_named_md,
        f"{CLAIMS}/x.md/inner.md",
        "frontmatter-unclosed",
        1,
        refused=False,
    ),
    Case("dangling-symlink", _dangling, f"{CLAIMS}/y.md", "read-error", unreadable=True),
    Case("symlink-loop", _loop, f"{CLAIMS}/z.md", "read-error", unreadable=True),
    Case(
        "cr-only-line-endings",
        _note("H-0001.md", CR_ONLY),
        f"{CLAIMS}/H-0001.md",
        "line-endings",
        1,
    ),  # fmt: skip
    Case(
        "a-lone-cr",
        _note("H-0001.md", LONE_CR),
        f"{CLAIMS}/H-0001.md",
        "line-endings",
        _line(LONE_CR, "The drafter wins"),
    ),  # fmt: skip
    Case(
        "invalid-utf8",
        _note("H-0001.md", INVALID_UTF8),
        f"{CLAIMS}/H-0001.md",
        "encoding",
        _line(_hostile(), "Deep dive"),
    ),
    Case(
        "undecodable-file-name",
        _undecodable_name,
        f"{CLAIMS}/bad\ufffd.md",
        "read-error",
        unreadable=True,
    ),
    Case(
        "only-dashes",
        _note("E-0001.md", ONLY_DASHES),
        f"{CLAIMS}/E-0001.md",
        "frontmatter-unclosed",
        1,
        refused=False,
    ),
    Case(
        "deeply-nested-json",
        _note("H-0001.md", DEEP_JSON),
        f"{CLAIMS}/H-0001.md",
        "json-syntax",
        _line(DEEP_JSON, "[[["),
    ),
    Case(
        "deeply-nested-yaml",
        _note("H-0001.md", DEEP_YAML),
        f"{CLAIMS}/H-0001.md",
        "yaml-syntax",
        _line(DEEP_YAML, "deep:"),
        refused=False,
    ),  # no properties: no note
    Case(
        "billion-laughs",
        _note("H-0001.md", BILLION_LAUGHS),
        f"{CLAIMS}/H-0001.md",
        "yaml-alias",
        _line(BILLION_LAUGHS, "l0:"),
        refused=False,
    ),
]


def vt(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = run_vt(*args, timeout=TIMEOUT)
    return done, time.perf_counter() - start


def hostile_vault(root: Path, case: Case) -> Path:
    vault = build_vault(
        root / "vault", {path: render_note(claim_id=Path(path).stem) for path in VALID}
    )
    case.make(vault)
    return vault


def as_json(done: subprocess.CompletedProcess[str]) -> dict:
    assert "internal error" not in done.stderr, done.stderr
    return json.loads(done.stdout)  # the whole of stdout: exactly one JSON document


def at(case: Case, path: str) -> bool:
    return path.startswith(case.path) if case.prefix else path == case.path


def matches(case: Case, finding: dict) -> bool:
    return (
        at(case, finding["path"]) and finding["code"] == case.code and finding["line"] == case.line
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_hostile_file_is_one_finding_and_the_run_goes_on(tmp_path: Path, case: Case) -> None:
    if case.name == "unreadable-folder" and os.geteuid() == 0:
        pytest.skip(
            "root reads a folder whatever its mode (folder-beyond-path-max fails for root too)"
        )
    vault = hostile_vault(tmp_path, case)

    piped, seconds = vt("validate", "--vault", str(vault))
    assert piped.returncode == 1, piped.stderr
    where = f"{case.path}:{case.line}: " if case.line else f"{case.path}: "
    assert case.prefix or f"{where}{case.code}: " in piped.stdout, piped.stdout[-2000:]
    assert seconds < TIMEOUT

    done, _ = vt("validate", "--vault", str(vault), "--json")
    report = as_json(done)
    assert done.returncode == 1
    assert [f for f in report["findings"] if matches(case, f)], report["findings"]
    assert not [f for f in report["findings"] if f["path"] in VALID and f["severity"] == "error"]
    assert report["notes"] >= len(VALID)

    done, _ = vt("status", "--vault", str(vault), "--json")
    status = as_json(done)
    assert status["notes"] >= len(VALID)
    assert done.returncode == (1 if case.unreadable else 0), done.stderr
    assert bool([f for f in status["unreadable"] if matches(case, f)]) == case.unreadable

    done, _ = vt("apply", "--vault", str(vault), "--json")
    applied = as_json(done)
    assert sorted(a["path"] for a in applied["applied"]) == list(VALID)
    refused = [r for r in applied["refused"] if at(case, r["path"])]
    assert bool(refused) == case.refused, applied["refused"]
    assert done.returncode == (1 if case.refused else 0)
    ledger = (vault / "05_ledger" / "decision_ledger.jsonl").read_text(encoding="utf-8")
    assert len(ledger.splitlines()) == len(VALID)  # nothing of the hostile note recorded
    assert "\\u0000" not in ledger and "\x00" not in ledger

    done, _ = vt("preview", "--vault", str(vault), "--json")
    previews = as_json(done)["previews"]
    assert done.returncode == (1 if case.unreadable else 0)
    assert bool([p for p in previews for f in p["findings"] if matches(case, f)]) == case.unreadable

    done, _ = vt("report", "--vault", str(vault), "--json")
    dashboard = as_json(done)
    assert done.returncode == (1 if case.unreadable else 0), done.stderr
    assert dashboard["findings"].get(case.code, 0) >= 1
    assert bool(dashboard["unreadable"]) == case.unreadable


def test_the_size_limit_answers_without_reading_the_note(tmp_path: Path) -> None:
    from tests.conftest import settings_for
    from vault_tools.checks.file_checks import check_file

    vault = build_vault(tmp_path / "vault")
    _sparse_huge(vault)
    settings = settings_for(vault)
    start = time.perf_counter()
    result = check_file(settings, None, f"{CLAIMS}/S-0001.md")  # type: ignore[arg-type]
    # reading 10 GB and decoding it would take far longer, even on a loaded machine
    assert time.perf_counter() - start < 5
    assert [f.code for f in result.findings] == ["note-too-large"]
    assert f"{MAX_NOTE_BYTES:,} bytes" in result.findings[0].message


def test_the_size_limit_is_set_in_vt_toml(tmp_path: Path) -> None:
    vault = build_vault(tmp_path / "vault", {p: render_note(claim_id=Path(p).stem) for p in VALID})
    _too_large(vault)
    done, _ = vt("validate", "--vault", str(vault))
    assert "note-too-large" in done.stdout
    (vault / "vt.toml").write_text("[limits]\nmax_note_bytes = 10_000_000\n", encoding="utf-8")
    done, _ = vt("validate", "--vault", str(vault))
    assert done.returncode == 0 and "note-too-large" not in done.stdout, done.stdout
    (vault / "vt.toml").write_text("[limits]\nmax_note_bytes = 1_000\n", encoding="utf-8")
    done, _ = vt("validate", "--vault", str(vault), "--json")
    too_large = {f["path"] for f in as_json(done)["findings"] if f["code"] == "note-too-large"}
    assert too_large == {f"{CLAIMS}/H-0001.md", *VALID}  # the cache does not hide them


def test_the_cache_never_hides_a_hostile_file_nor_its_repair(tmp_path: Path) -> None:
    vault = hostile_vault(tmp_path, CASES[0])
    note = vault / CLAIMS / "H-0001.md"

    def codes() -> set[tuple[str, str]]:
        done, _ = vt("validate", "--vault", str(vault), "--json")
        return {
            (f["path"], f["code"]) for f in as_json(done)["findings"] if f["severity"] == "error"
        }

    assert codes() == {(f"{CLAIMS}/H-0001.md", "number-too-large")}
    note.write_text(_hostile(), encoding="utf-8")  # repaired
    assert codes() == set()
    note.unlink()
    os.mkfifo(note)  # the same path, now a FIFO
    assert codes() == {(f"{CLAIMS}/H-0001.md", "not-a-file")}
    note.unlink()
    note.write_text(NUL_CLAIM, encoding="utf-8")
    assert codes() == {(f"{CLAIMS}/H-0001.md", "control-character")}
    assert codes() == {(f"{CLAIMS}/H-0001.md", "control-character")}  # warm: the same


def test_the_worker_pool_brings_back_hostile_findings(tmp_path: Path) -> None:
    notes = {f"reviews/P-{i:04d}.md": render_note(claim_id=f"P-{i:04d}") for i in range(420)}
    vault = build_vault(tmp_path / "vault", notes)
    (vault / "vt.toml").write_text("[performance]\nworkers = 2\n", encoding="utf-8")
    for name, text in (
        ("huge-int-in-frame", FRAME_HUGE),
        ("huge-int-in-frontmatter", PROPERTY_HUGE),
        ("N-0001", NUL_CLAIM),
    ):
        _note(f"{name}.md", text.replace("H-0001", name))(vault)
    _fifo(vault)
    done, _ = vt("validate", "--vault", str(vault), "--json")
    report = as_json(done)
    assert report["notes"] == 420 + 3
    assert sorted(
        (f["path"], f["code"]) for f in report["findings"] if f["severity"] == "error"
    ) == [
        (f"{CLAIMS}/F-0001.md", "not-a-file"),
        (f"{CLAIMS}/N-0001.md", "control-character"),
        (f"{CLAIMS}/huge-int-in-frame.md", "number-too-large"),
        (f"{CLAIMS}/huge-int-in-frontmatter.md", "number-too-large"),
    ]


def test_a_validate_run_failing_midway_still_prints_one_json_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unexpected error after the first finding was written (here, fault injected
    into the parser of one note) ends the JSON object with its "error"."""
    from typer.testing import CliRunner

    import vault_tools.notes.note
    from vault_tools.checks import file_checks
    from vault_tools.cli import app

    # more notes than a chunk (pool.CHUNK): the first chunk's findings are out first
    notes = {f"A-{i:03d}.md": render_note(claim_id=f"A-{i:03d}", mode="CERTAIN") for i in range(80)}
    vault = build_vault(tmp_path / "vault", {**notes, "Z.md": _hostile()})
    parse = vault_tools.notes.note.parse_note

    def failing(raw: bytes, path: str) -> vault_tools.notes.note.Note:
        if path.endswith("Z.md"):
            raise ValueError("injected")
        return parse(raw, path)

    monkeypatch.setattr(file_checks, "parse_note", failing)  # where validate calls it
    result = CliRunner().invoke(
        app, ["validate", "--vault", str(vault), "--json"], env={"VT_VAULT": ""}
    )
    assert isinstance(result.exception, ValueError)
    document = json.loads(result.stdout)
    assert document["error"] == "ValueError: injected"
    assert {f["code"] for f in document["findings"]} >= {"claim-field"}
    assert "notes" not in document


def test_a_folder_named_like_a_note_given_by_name_is_not_a_file(tmp_path: Path) -> None:
    vault = build_vault(tmp_path / "vault")
    (vault / CLAIMS / "x.md").mkdir(parents=True)
    done, _ = vt("validate", "--vault", str(vault), str(vault / CLAIMS / "x.md"))
    assert done.returncode == 1
    assert f"{CLAIMS}/x.md: not-a-file: a folder named like a note" in done.stdout


MILLION = "9" * 1_000_001  # one digit past what decimal's default context's exponent takes
LONG_RUNS = {
    "claim": _hostile(claim=f"The drafter wins {MILLION} times in one pass."),
    "claim-decimal": _hostile(claim=f"The drafter wins 1.{MILLION} times in one pass."),
    "evidence": _hostile(evidence=f"It wins {MILLION} times.", claim="It wins 3 times."),
    "claim-grouped": _hostile(claim="The drafter wins 1" + ",999" * 250_000 + " times."),
    "frame-mention": _hostile(frame={**DEFAULT_FRAME, "numeric_mentions": [MILLION]}),
}


@pytest.mark.parametrize("text", LONG_RUNS.values(), ids=list(LONG_RUNS))
def test_a_run_of_a_million_digits_is_checked_in_linear_time(tmp_path: Path, text: str) -> None:
    """No number the review assist compares (a clean skip, not an internal error), and
    the note is checked within a second: the assist used to take time quadratic in the
    run's length (27 s for a million digits) and then crash on decimal.Overflow."""
    # imports warmed on another vault: the time is the note's alone (the assist's caches
    # keep what it read of a text, so the same vault checked twice would be quick anyway)
    validate_vault(build_vault(tmp_path / "warm", {"H-0001.md": _hostile()}), assist=True)
    vault = build_vault(tmp_path / "vault", {"H-0001.md": text})
    start = time.perf_counter()
    report = validate_vault(vault, assist=True)
    assert time.perf_counter() - start < 1.0
    assert report.notes == 1
    assert not any(MILLION[:1000] in f.message for f in report.findings)
    for command in ("validate", "report", "status"):
        done, _ = vt(command, "--vault", str(vault))
        assert done.returncode in (0, 1), done.stderr
        assert "internal error" not in done.stderr
