"""vt import: records render into notes that parse back to the same record."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import EXAMPLE_VAULT, REPO, build_vault, example_context, run_vt, validate_vault
from vault_tools.checks.rules import check_note
from vault_tools.checks.schemas import Schemas
from vault_tools.config import load_settings
from vault_tools.errors import IOFailure
from vault_tools.integrations import importer
from vault_tools.integrations.importer import full_record, import_records, record_of, render
from vault_tools.notes.note import parse_note
from vault_tools.notes.value_limits import CONTROL

SCHEMAS = Schemas()
KB_NAMES = sorted(p.stem for p in (EXAMPLE_VAULT / "04_knowledge_base").glob("*.md"))


def record(claim_id: str = "IMP-0001", **changes: object) -> dict:
    base = {
        "claim_id": claim_id,
        "source": {
            "link": "https://example.org/sa/260324",
            "link_text": "開啟完整 SA 文章",
            "section": "Speculative Decoding",
            "line_hint": 137,
            "context_before": "Speculative Decoding",
            "evidence": "To verify the draft tokens, the main model only needs one warm "
            "prefill of k new tokens.",
            "context_after": "Source: SemiAnalysis",
        },
        "atomic_claim": "main model 只需要對 k 個新 token 做一次 warm prefill。",
        "epistemic_mode": "ASSERTED",
        "mapping_status": "COMPLETE",
        "semantic_frame": {
            "comparison_expression": "一次 warm prefill 約等於一次 decode step。",
            "entities": [{"id": "04_knowledge_base/Prefill", "label": "prefill"}],
            "frame_type": "COMPARISON",
            "metric": "LATENCY_COST",
            "operator": "APPROX_EQUAL",
            "qualifiers": {
                "condition_text": None,
                "numeric_mentions": ["1", "k"],
                "temporal_mentions": [],
            },
        },
        "mapping": [
            {
                "role": "comparison_entity_0",
                "label": "prefill",
                "target": "[[04_knowledge_base/Prefill]]",
            }
        ],
    }
    base.update(changes)
    return base


def write_jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines)
        + "\n",
        encoding="utf-8",
    )
    return path


# --- the property: render, parse, and the record comes back ------------------------------

_CHARS = list("abcxyzABC019 ,.;:()!?'\"|*-_/%<>=+中文可能未必驗證é") + ["\u00a0"]
_LINE = st.text(st.sampled_from(_CHARS), min_size=1, max_size=30).map(str.strip).filter(bool)
_TEXT = (
    st.lists(st.one_of(_LINE, st.just("")), min_size=1, max_size=4)
    .map(lambda lines: "\n".join(lines).strip())
    .filter(bool)
)
_LABEL = _LINE.filter(lambda s: any(c not in ":- " for c in s))


def _free_text(max_size: int) -> st.SearchStrategy[str]:
    """Any text but the control characters a note may not carry (each is a finding)."""
    return st.text(max_size=max_size).map(lambda s: CONTROL.sub("", s))


@st.composite
def records(draw: st.DrawFn) -> dict:
    names = draw(st.lists(st.sampled_from(KB_NAMES), min_size=0, max_size=4, unique=True))
    labels = [draw(_LABEL) for _ in names]
    wiki = draw(st.booleans())
    entities = [
        {"id": f"04_knowledge_base/{n}", "label": lab} for n, lab in zip(names, labels, strict=True)
    ]
    mapping = [
        {
            "role": f"comparison_entity_{i}",
            "label": e["label"],
            "target": f"[[{e['id']}]]" if wiki else e["id"],
        }
        for i, e in enumerate(entities)
    ]
    source = {
        "link": draw(
            st.sampled_from(["https://example.org/a?b=c", "https://devoured.fyi/", "note-link"])
        ),
        "evidence": draw(_TEXT),
    }
    for key, strategy in (
        (
            "link_text",
            st.one_of(st.just(""), _LINE.filter(lambda s: "[" not in s and "]" not in s)),
        ),
        ("section", st.one_of(st.just(""), _LINE)),
        ("line_hint", st.one_of(st.none(), st.integers(0, 10**6))),
        ("context_before", st.one_of(st.just(""), _TEXT)),
        ("context_after", st.one_of(st.just(""), _TEXT)),
    ):
        if draw(st.booleans()):
            source[key] = draw(strategy)
    provenance = {}
    for key, strategy in (
        ("run", _LINE),
        ("model", _LINE),
        ("prompt_version", _LINE),
        ("extracted_at", st.sampled_from(["2026-03-24T09:15:00Z", "2026-03-24T09:15:00.25+08:00"])),
    ):
        if draw(st.booleans()):
            provenance[key] = draw(strategy)
    extra = {"provenance": provenance} if provenance or draw(st.booleans()) else {}
    return {
        **extra,
        "claim_id": draw(st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,12}\Z")),
        "source": source,
        "atomic_claim": draw(_TEXT),
        "epistemic_mode": draw(st.sampled_from(["ASSERTED", "HYPOTHETICAL"])),
        "mapping_status": draw(st.sampled_from(["COMPLETE", "PARTIAL"])),
        "semantic_frame": {
            "comparison_expression": draw(_TEXT),
            "entities": entities,
            "frame_type": "COMPARISON",
            "metric": draw(st.sampled_from(SCHEMAS.enum("frame", "metric"))),
            "operator": draw(st.sampled_from(SCHEMAS.enum("frame", "operator"))),
            "qualifiers": {
                "condition_text": draw(st.one_of(st.none(), _free_text(20))),
                "numeric_mentions": draw(st.lists(_free_text(5), max_size=3)),
                "temporal_mentions": draw(st.lists(_free_text(5), max_size=2)),
            },
        },
        "mapping": mapping,
    }


CTX = example_context()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_parsing_the_rendered_note_gives_the_record_back(rec: dict) -> None:
    assert SCHEMAS.check("record", rec) == []
    note = parse_note(render(rec).encode("utf-8"), f"03_claims/{rec['claim_id']}.md")
    assert record_of(note) == full_record(rec)
    errors = [f for f in check_note(note, CTX) if f.severity == "error"]
    assert errors == []


def test_rendered_note_matches_the_example_format() -> None:
    text = render(record())
    assert text.startswith(
        "---\nclaim_id: IMP-0001\nreview_action: PENDING\nreview_state: NEW\n"
        "check_source_claim: false\ncheck_claim_frame: false\n"
        "check_entity_mapping: false\ncheck_epistemic_mode: false\n"
        'reviewer: ""\nreview_comment: ""\ntags: [claim-review]\n---\n'
        "# IMP-0001\n\n## ① SA Source\n- Source: [開啟完整 SA 文章]"
        "(https://example.org/sa/260324)\n"
    )
    assert "| comparison_entity_0 | prefill | [[04_knowledge_base/Prefill]] |\n" in text


def test_numeric_claim_id_stays_a_string() -> None:
    note = parse_note(render(record("0001")).encode(), "03_claims/0001.md")
    assert note.properties["claim_id"] == "0001"
    assert record_of(note)["claim_id"] == "0001"


def test_pipe_in_a_label_is_escaped_and_comes_back() -> None:
    rec = record(mapping=[{"role": "r", "label": "a|b", "target": "04_knowledge_base/Prefill"}])
    note = parse_note(render(rec).encode(), "03_claims/x.md")
    assert note.mapping[0].label == "a|b"


@pytest.mark.parametrize(
    "change,where",
    [
        ({"atomic_claim": "## a heading"}, "/atomic_claim"),
        ({"atomic_claim": "text\n- Epistemic Mode: ASSERTED"}, "/atomic_claim"),
        ({"atomic_claim": " padded"}, "/atomic_claim"),
        ({"epistemic_mode": "SURE"}, "/epistemic_mode"),
        ({"claim_id": "../x"}, "/claim_id"),
        ({"source": {"link": "has space", "evidence": "e"}}, "/source/link"),
        ({"source": {"link": "x", "evidence": "```\ncode"}}, "/source/evidence"),
        ({"provenance": {"run": ""}}, "/provenance/run"),
        ({"provenance": {"model": "two\nlines"}}, "/provenance/model"),
        ({"provenance": {"run": "r", "batch": "b"}}, "/provenance"),
        ({"provenance": {"extracted_at": "2026-03-24"}}, "/provenance/extracted_at"),
        ({"provenance": {"extracted_at": "2026-03-24T09:15:00Z\n"}}, "/provenance/extracted_at"),
    ],
)
def test_records_a_note_cannot_hold_are_rejected_by_the_schema(change: dict, where: str) -> None:
    problems = SCHEMAS.check("record", record(**change))
    assert where in {p.pointer for p in problems}


# --- importing into a vault --------------------------------------------------------------


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return build_vault(tmp_path / "vault")


def test_import_creates_valid_notes_and_reports_bad_lines(vault: Path, tmp_path: Path) -> None:
    file = write_jsonl(
        tmp_path / "in.jsonl",
        [
            record("IMP-1"),
            '{"claim_id": "x"',
            "",
            record("IMP-2", epistemic_mode="SURE"),
            [1, 2],
            record("IMP-1"),
        ],
    )
    report = import_records(load_settings(vault), file)
    assert [i.path for i in report.created] == ["03_claims/IMP-1.md"]
    assert [line.split(": ", 1)[0] for line in report.error_lines()] == [
        f"{file}:2",
        f"{file}:4",
        f"{file}:5",
        f"{file}:6",
    ]
    assert "already used on line 1" in report.errors[-1].message
    assert "/epistemic_mode" in report.errors[1].message
    assert validate_vault(vault).errors == 0


def test_existing_note_is_skipped_never_overwritten(vault: Path, tmp_path: Path) -> None:
    existing = vault / "03_claims" / "IMP-1.md"
    existing.parent.mkdir(exist_ok=True)
    existing.write_text("mine\n", encoding="utf-8")
    lower = vault / "03_claims" / "imp-2.md"
    lower.write_text("mine too\n", encoding="utf-8")
    file = write_jsonl(tmp_path / "in.jsonl", [record("IMP-1"), record("IMP-2")])
    report = import_records(load_settings(vault), file)
    assert report.created == [] and len(report.skipped) == 2
    assert existing.read_text(encoding="utf-8") == "mine\n"
    assert lower.read_text(encoding="utf-8") == "mine too\n"


@pytest.mark.parametrize("kind", ["dangling", "loop", "outside"])
def test_a_symlink_where_the_note_would_go_is_an_error_never_followed(
    vault: Path, tmp_path: Path, kind: str
) -> None:
    claims = vault / "03_claims"
    claims.mkdir(exist_ok=True)
    target = {
        "dangling": tmp_path / "gone" / "IMP-1.md",
        "loop": claims / "IMP-1.md",
        "outside": tmp_path / "elsewhere.md",
    }[kind]
    if kind == "outside":
        target.write_text("not the vault's\n", encoding="utf-8")
    (claims / "IMP-1.md").symlink_to(target)
    file = write_jsonl(tmp_path / "in.jsonl", [record("IMP-1")])
    for dry_run in ([], ["--dry-run"]):
        run = run_vt("import", str(file), *dry_run, vault=vault)
        assert run.returncode == 1, run.stderr
        assert f"{file}:1: 03_claims/IMP-1.md is a symlink" in run.stderr, run.stderr
        assert "internal error" not in run.stderr
    assert os.readlink(claims / "IMP-1.md") == str(target)
    assert not (tmp_path / "gone").exists()
    if kind == "outside":
        assert target.read_text(encoding="utf-8") == "not the vault's\n"


@pytest.mark.parametrize("kind", ["dangling", "loop"])
def test_a_symlinked_claims_folder_is_refused_dry_run_or_not(
    vault: Path, tmp_path: Path, kind: str
) -> None:
    claims = vault / "03_claims"
    shutil.rmtree(claims, ignore_errors=True)
    claims.symlink_to(tmp_path / "nowhere" if kind == "dangling" else claims)
    file = write_jsonl(tmp_path / "in.jsonl", [record("IMP-1")])
    for dry_run in ([], ["--dry-run"]):
        run = run_vt("import", str(file), *dry_run, vault=vault)
        assert run.returncode == 2, run.stderr
        assert run.stderr.startswith("vt: 03_claims: refusing to write: "), run.stderr
    assert not (tmp_path / "nowhere").exists()


def test_dry_run_writes_nothing(vault: Path, tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "in.jsonl", [record("IMP-1")])
    report = import_records(load_settings(vault), file, dry_run=True)
    assert [i.claim_id for i in report.created] == ["IMP-1"]
    assert not (vault / "03_claims" / "IMP-1.md").exists()


def test_create_file_never_overwrites_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "n.md"
    assert importer.create_file(target, b"one") is True
    assert importer.create_file(target, b"two") is False
    assert target.read_bytes() == b"one"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.md"]


def test_failed_fsync_is_an_error_and_writes_no_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(IOFailure, match=r"n\.md: cannot write: Input/output error \(EIO\)"):
        importer.create_file(tmp_path / "n.md", b"x")
    assert list(tmp_path.iterdir()) == []


def test_cli_import_exit_codes_and_json(vault: Path, tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "in.jsonl", [record("IMP-1"), "{"])
    run = run_vt("import", str(file), "--json", vault=vault)
    assert run.returncode == 1
    payload = json.loads(run.stdout)
    assert [i["claim_id"] for i in payload["created"]] == ["IMP-1"]
    assert payload["errors"][0]["line"] == 2
    again = run_vt("import", str(file), vault=vault)
    assert again.returncode == 1
    assert f"{file}:2: invalid JSON" in again.stderr
    assert "skipped 03_claims/IMP-1.md" in again.stdout


# --- the sample pipeline file shipped beside the example vault ------------------------------


def test_the_readmes_import_command_imports_the_sample_file_into_valid_notes(
    tmp_path: Path,
) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = [
        line
        for line in readme.splitlines()
        if line.startswith("vt import ") and "--dry-run" not in line
    ]
    assert commands == ["vt import examples/claims.jsonl --vault ~/my-vault"]
    copy = tmp_path / "repo"
    shutil.copytree(REPO / "examples", copy / "examples", ignore=shutil.ignore_patterns(".vt"))
    # the README's copy of the example vault, in the home folder
    vault = tmp_path / "home" / "my-vault"
    shutil.copytree(copy / "examples/vault", vault)
    before = {p.name for p in (vault / "03_claims").iterdir()}
    home = str(tmp_path / "home")
    words = [home + w[1:] if w.startswith("~/") else w for w in shlex.split(commands[0])]
    done = run_vt(*words[1:], cwd=copy)
    assert done.returncode == 0, done.stderr
    created = {p.name for p in (vault / "03_claims").iterdir()} - before
    records = (REPO / "examples/claims.jsonl").read_text(encoding="utf-8").splitlines()
    assert created == {f"{json.loads(line)['claim_id']}.md" for line in records}
    assert len(created) >= 2
    report = validate_vault(vault, assist=True)
    assert report.errors == 0 and report.notes == len(before) + len(created)
    # the new notes are as clean as the rest: not even a review-assist warning
    assert [f for f in report.findings if f.path.rsplit("/", 1)[-1] in created] == []
