"""`validate` over whole vaults: exactness on generated vaults, workers, duplicates, cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    line_of_text,
    render_note,
    run_vt,
    settings_for,
    synthetic_vault,
    validate_vault,
)
from vault_tools.checks import duplicates as duplicates_mod
from vault_tools.checks import file_checks as file_checks_mod
from vault_tools.checks import validate as validate_mod
from vault_tools.checks.context import make_context
from vault_tools.checks.validate import validate
from vault_tools.findings import CODES, Finding


def _as_tuples(findings: list[Finding]) -> list[tuple]:
    return [(f.path, f.line, f.severity, f.code, f.message) for f in findings]


def _cold(vault: Path, workers: int = 1, paths: list[Path] | None = None):
    shutil.rmtree(vault / ".vt", ignore_errors=True)
    return validate_vault(vault, paths, workers)


def test_example_vault_is_clean(example_vault: Path) -> None:
    report = validate_vault(example_vault)
    assert report.findings == []
    assert report.notes == len(list((example_vault / "03_claims").glob("*.md")))
    assert report.to_json() == {"notes": report.notes, "errors": 0, "warnings": 0, "findings": []}


# --- generated vaults -------------------------------------------------------------------


@pytest.fixture(scope="module", params=[3, 11])
def generated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """bench/synthetic.py's vault of 300 notes, 30% with a planted mistake, and the
    findings planted: (path, line, code)."""
    out = tmp_path_factory.mktemp(f"generated{request.param}") / "vault"
    return synthetic_vault(out, 300, seed=request.param, defects=0.3)


def _without_assist(planted: set[tuple[str, int, str]]) -> set[tuple[str, int, str]]:
    return {row for row in planted if not row[2].startswith("assist-")}


def test_generated_vault_is_flagged_exactly_where_the_defects_were_planted(generated) -> None:
    vault, planted = generated
    report = _cold(vault)
    assert {(f.path, f.line, f.code) for f in report.findings} == _without_assist(planted)
    assert report.errors == len(report.findings) > 20


def test_with_review_assist_the_planted_slips_are_the_only_warnings(generated) -> None:
    vault, planted = generated
    shutil.rmtree(vault / ".vt", ignore_errors=True)
    report = validate_vault(vault, assist=True)
    assert {(f.path, f.line, f.code) for f in report.findings} == planted
    assert all(f.severity == "warning" for f in report.findings if f.code.startswith("assist-"))


def test_workers_give_identical_findings(generated, monkeypatch: pytest.MonkeyPatch) -> None:
    vault, _ = generated
    one = _cold(vault, workers=1)
    monkeypatch.setattr(file_checks_mod, "PARALLEL_THRESHOLD", 1)  # use the pool on 300 notes
    two = _cold(vault, workers=2)
    assert _as_tuples(one.findings) == _as_tuples(two.findings)
    assert one.notes == two.notes > 250


def test_checking_in_batches_gives_what_checking_one_by_one_gives(generated) -> None:
    vault, _ = generated
    (vault / "plain.md").write_text("no frontmatter, not a review note\n", encoding="utf-8")
    settings = settings_for(vault)
    ctx = make_context(settings)
    relatives = [
        *sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")),
        "03_claims/gone.md",
    ]  # unreadable: a read-error result
    assert len(relatives) > file_checks_mod.CHECK_BATCH
    batched = list(file_checks_mod.check_files(settings, ctx, relatives))
    assert batched == [file_checks_mod.check_file(settings, ctx, r) for r in relatives]
    assert {r.findings[0].code for r in batched if r.path == "03_claims/gone.md"} == {"read-error"}
    (vault / "plain.md").unlink()


def test_progress_reports_reach_the_total(generated) -> None:
    vault, _ = generated
    seen: list[tuple[int, int]] = []
    shutil.rmtree(vault / ".vt", ignore_errors=True)
    validate(settings_for(vault), None, lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1]
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


# --- duplicate claim ids ----------------------------------------------------------------


def test_duplicate_claim_id_is_an_error_for_both_notes(make_vault) -> None:
    text = render_note(claim_id="DUP-1")
    vault = make_vault({"A.md": text, "sub/B.md": text, "C.md": render_note(claim_id="C-1")})
    report = validate_vault(vault)
    line = line_of_text(text, "claim_id:")
    assert [(f.path, f.line, f.code) for f in report.findings] == [
        ("03_claims/A.md", line, "claim-id-duplicate"),
        ("sub/B.md", line, "claim-id-duplicate"),
    ]
    assert "sub/B.md" in report.findings[0].message
    assert "03_claims/A.md" in report.findings[1].message


def test_duplicate_claim_id_is_found_when_one_note_is_given(make_vault) -> None:
    text = render_note(claim_id="DUP-1")
    vault = make_vault({"A.md": text, "B.md": text})
    validate_vault(vault)  # the full run remembers every claim_id in .vt/
    report = validate_vault(vault, [vault / "03_claims" / "A.md"])
    assert [(f.path, f.code) for f in report.findings] == [("03_claims/A.md", "claim-id-duplicate")]
    assert "03_claims/B.md" in report.findings[0].message


def test_explicit_run_does_not_use_a_stale_claim_id_of_another_note(make_vault) -> None:
    text = render_note(claim_id="DUP-1")
    vault = make_vault({"A.md": text, "B.md": text})
    assert validate_vault(vault).errors == 2
    (vault / "03_claims" / "B.md").write_text(render_note(claim_id="OTHER-1"), "utf-8")
    assert validate_vault(vault, [vault / "03_claims" / "A.md"]).findings == []


# --- the cache --------------------------------------------------------------------------


def _defective(vault: Path) -> None:
    bad = render_note(claim_id="BAD-1", mode="CERTAIN")
    (vault / "03_claims" / "BAD-1.md").write_text(bad, encoding="utf-8")


def test_warm_run_gives_identical_findings(example_vault: Path) -> None:
    _defective(example_vault)
    cold = _cold(example_vault)
    assert (example_vault / ".vt").is_dir()
    warm = validate_vault(example_vault)
    assert _as_tuples(warm.findings) == _as_tuples(cold.findings) != []
    assert warm.notes == cold.notes


def test_same_size_edit_with_restored_mtime_is_noticed(example_vault: Path) -> None:
    note = example_vault / "03_claims" / "DV1-0001.md"
    assert validate_vault(example_vault).findings == []
    stat = note.stat()
    raw = note.read_bytes()
    edited = raw.replace(b"review_action: APPROVE\n", b"review_action: APPROVX\n")
    assert len(edited) == len(raw) and edited != raw
    note.write_bytes(edited)
    os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert note.stat().st_mtime_ns == stat.st_mtime_ns and note.stat().st_size == stat.st_size
    report = validate_vault(example_vault)
    assert [(f.path, f.code) for f in report.findings] == [
        ("03_claims/DV1-0001.md", "properties-schema")
    ]


def test_kb_file_list_change_invalidates_the_cache(example_vault: Path) -> None:
    assert validate_vault(example_vault).findings == []
    (example_vault / "04_knowledge_base" / "DSpark.md").unlink()
    report = validate_vault(example_vault)
    assert {(f.path, f.code) for f in report.findings} == {
        ("03_claims/DV1-0001.md", "kb-target-missing"),
        ("03_claims/DV1-0001.md", "mapping-complete-unresolved"),
    }
    (example_vault / "04_knowledge_base" / "DSpark.md").write_text("# DSpark\n", "utf-8")
    assert validate_vault(example_vault).findings == []


def test_schema_change_invalidates_the_cache(example_vault: Path) -> None:
    _defective(example_vault)
    assert [f.code for f in validate_vault(example_vault).findings] == ["claim-field"]
    (example_vault / "vt.toml").write_text('[paths]\nschemas_dir = "s"\n', encoding="utf-8")
    (example_vault / "s").mkdir()
    (example_vault / "s" / "enums.json").write_text('{"epistemic_mode": ["CERTAIN"]}', "utf-8")
    assert validate_vault(example_vault).findings == []


def test_disabled_findings_invalidate_the_cache(example_vault: Path) -> None:
    _defective(example_vault)
    assert [f.code for f in validate_vault(example_vault).findings] == ["claim-field"]
    (example_vault / "vt.toml").write_text('[findings]\ndisable = ["claim-field"]\n', "utf-8")
    assert validate_vault(example_vault).findings == []


def test_corrupt_cache_is_ignored(example_vault: Path) -> None:
    _defective(example_vault)
    cold = validate_vault(example_vault)
    for cache in (example_vault / ".vt").iterdir():
        cache.write_bytes(b"\x80\x04garbage")
    assert _as_tuples(validate_vault(example_vault).findings) == _as_tuples(cold.findings)


def test_deleted_note_disappears_from_a_warm_run(example_vault: Path) -> None:
    _defective(example_vault)
    assert validate_vault(example_vault).errors == 1
    (example_vault / "03_claims" / "BAD-1.md").unlink()
    assert validate_vault(example_vault).findings == []


def _checked_from_cache(vault: Path) -> tuple[int, int]:
    """(notes answered by the cache, notes in the run) of a warm whole-vault run."""
    seen: list[tuple[int, int]] = []
    validate(settings_for(vault), progress=lambda done, total: seen.append((done, total)))
    return seen[0]


def test_a_note_added_removed_or_renamed_keeps_every_other_entry(example_vault: Path) -> None:
    validate_vault(example_vault)
    total = _checked_from_cache(example_vault)[1]
    assert _checked_from_cache(example_vault) == (total, total)
    claims = example_vault / "03_claims"
    (claims / "BAD-1.md").write_text(render_note(claim_id="BAD-1", mode="CERTAIN"), "utf-8")
    assert _checked_from_cache(example_vault) == (total, total + 1)
    (claims / "BAD-1.md").rename(claims / "BAD-2.md")
    assert _checked_from_cache(example_vault) == (total, total + 1)
    assert [(f.path, f.code) for f in validate_vault(example_vault).findings] == [
        ("03_claims/BAD-2.md", "claim-field")
    ]
    (claims / "BAD-2.md").unlink()
    assert _checked_from_cache(example_vault) == (total, total)
    assert validate_vault(example_vault).findings == []


def _bare_targets(vault: Path) -> Path:
    """DV1-0001 with its DSpark entity named by the bare name (found anywhere, when unique)."""
    note = vault / "03_claims" / "DV1-0001.md"
    text = note.read_text("utf-8").replace('"04_knowledge_base/DSpark"', '"DSpark"')
    note.write_text(text.replace("[[04_knowledge_base/DSpark]]", "[[DSpark]]"), "utf-8")
    return note


def test_a_file_added_elsewhere_that_changes_a_bare_target_is_seen(example_vault: Path) -> None:
    _bare_targets(example_vault)
    assert validate_vault(example_vault).findings == []
    other = example_vault / "06_other"
    other.mkdir()
    (other / "DSpark.md").write_text("# DSpark, another\n", "utf-8")  # two: neither is meant
    warm = validate_vault(example_vault)
    assert "kb-target-missing" in {f.code for f in warm.findings}
    assert _as_tuples(warm.findings) == _as_tuples(_cold(example_vault).findings)
    (other / "DSpark.md").rename(other / "Elsewhere.md")
    assert validate_vault(example_vault).findings == []


def test_a_target_outside_the_knowledge_base_follows_its_file(example_vault: Path) -> None:
    note = example_vault / "03_claims" / "DV1-0001.md"
    text = note.read_text("utf-8").replace('"04_knowledge_base/DSpark"', '"06_other/DSpark"')
    note.write_text(text.replace("[[04_knowledge_base/DSpark]]", "[[06_other/DSpark]]"), "utf-8")
    (example_vault / "06_other").mkdir()
    (example_vault / "06_other" / "DSpark.md").write_text("# DSpark\n", "utf-8")
    codes = {f.code for f in validate_vault(example_vault).findings}
    (example_vault / "06_other" / "DSpark.md").rename(example_vault / "06_other" / "Gone.md")
    warm = validate_vault(example_vault)
    assert {f.code for f in warm.findings} != codes
    assert _as_tuples(warm.findings) == _as_tuples(_cold(example_vault).findings)


# --- which files are notes, and explicit paths ------------------------------------------


def test_review_notes_anywhere_non_review_notes_skipped(make_vault) -> None:
    vault = make_vault(
        {
            "elsewhere/X-1.md": render_note(claim_id="X-1", mode="CERTAIN"),
            "03_claims/readme.md": "# About this folder\n",
            "notes/plain.md": "---\ntitle: [unclosed\n---\n",
            ".trash/T-1.md": render_note(claim_id="T-1", mode="CERTAIN"),
            ".obsidian/O-1.md": render_note(claim_id="O-1", mode="CERTAIN"),
        }
    )
    report = validate_vault(vault)
    assert [(f.path, f.code) for f in report.findings] == [("elsewhere/X-1.md", "claim-field")]
    assert report.notes == 1


def test_broken_frontmatter_in_the_claims_folder_is_reported(make_vault) -> None:
    vault = make_vault({"03_claims/broken.md": "---\n- a\n- b\n---\n# x\n"})
    report = validate_vault(vault)
    assert [(f.path, f.line, f.code) for f in report.findings] == [
        ("03_claims/broken.md", 2, "yaml-not-mapping")
    ]


def test_explicit_paths(make_vault, tmp_path: Path) -> None:
    vault = make_vault(
        {
            "A-1.md": render_note(claim_id="A-1"),
            "B-1.md": render_note(claim_id="B-1", mode="CERTAIN"),
        }
    )
    outside = tmp_path / "outside.md"
    outside.write_text(render_note(claim_id="O-1"), encoding="utf-8")
    report = validate_vault(
        vault,
        [
            vault / "03_claims" / "A-1.md",
            vault / "04_knowledge_base" / "Prefill.md",
            outside,
            vault / "03_claims" / "missing.md",
        ],
    )
    assert sorted((f.path, f.code) for f in report.findings) == sorted(
        [
            ("04_knowledge_base/Prefill.md", "not-review-note"),
            (str(outside), "path-outside-vault"),
            ("03_claims/missing.md", "read-error"),
        ]
    )
    assert all(f.line is None for f in report.findings)
    assert report.notes == 1  # B-1 was not asked for


def test_relative_explicit_path_is_taken_from_the_working_directory(
    make_vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = make_vault({"B-1.md": render_note(claim_id="B-1", mode="CERTAIN")})
    monkeypatch.chdir(vault / "03_claims")
    report = validate_vault(vault, [Path("B-1.md")])
    assert [(f.path, f.code) for f in report.findings] == [("03_claims/B-1.md", "claim-field")]


def test_unreadable_note_is_a_read_error(make_vault, tmp_path: Path) -> None:
    vault = make_vault({"A-1.md": render_note(claim_id="A-1")})
    os.symlink(tmp_path / "vanished.md", vault / "03_claims" / "Gone.md")
    report = validate_vault(vault)
    assert [(f.path, f.line, f.code) for f in report.findings] == [
        ("03_claims/Gone.md", None, "read-error")
    ]


def test_every_finding_code_is_registered(generated) -> None:
    vault, _ = generated
    assert {f.code for f in _cold(vault).findings} <= set(CODES)


def test_a_changed_claims_dir_invalidates_the_cache(example_vault: Path) -> None:
    """A file without claim_id is reported only inside the claims folder: moving the
    folder in vt.toml must not reuse results computed under the old one."""
    (example_vault / "drafts").mkdir()
    (example_vault / "drafts" / "Broken.md").write_text("---\ntitle: [unclosed\n---\n")
    assert validate_vault(example_vault).findings == []
    (example_vault / "vt.toml").write_text('[paths]\nclaims_dir = "drafts"\n')
    codes = [(f.path, f.code) for f in validate_vault(example_vault).findings]
    assert ("drafts/Broken.md", "yaml-syntax") in codes


# --- streaming: the CLI writes findings as notes are checked; the cache is written as it goes


def _streamed_vault(make_vault) -> Path:
    dup = render_note(claim_id="DUP-1")
    return make_vault(
        {
            "A.md": dup,
            "M.md": render_note(claim_id="BAD-1", mode="CERTAIN"),
            "Z.md": dup,
            "C.md": render_note(claim_id="C-1"),
        }
    )


def test_piped_output_lists_findings_by_path_and_the_duplicates_last(make_vault) -> None:
    vault = _streamed_vault(make_vault)
    cold = run_vt("validate", vault=vault)
    lines = cold.stdout.splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "claim-field",
        "claim-id-duplicate",
        "claim-id-duplicate",
    ]
    assert lines[0].startswith("03_claims/M.md:")
    assert lines[1].startswith("03_claims/A.md:") and lines[2].startswith("03_claims/Z.md:")
    assert cold.returncode == 1 and "4 notes checked: 3 errors" in cold.stderr
    warm = run_vt(
        "validate", vault=vault
    )  # an unchanged vault: the memo of the cold run, copied out
    assert (warm.stdout, warm.stderr, warm.returncode) == (cold.stdout, cold.stderr, 1)
    # the library's report sorts the duplicates into place
    assert [f.path for f in validate_vault(vault).findings] == [
        "03_claims/A.md",
        "03_claims/M.md",
        "03_claims/Z.md",
    ]


def test_streamed_json_is_the_documented_object_cold_and_warm(make_vault) -> None:
    vault = _streamed_vault(make_vault)
    cold = json.loads(run_vt("validate", "--json", vault=vault).stdout)
    assert (cold["notes"], cold["errors"], cold["warnings"]) == (4, 3, 0)
    assert set(cold) == {"notes", "errors", "warnings", "findings"}
    assert [f["code"] for f in cold["findings"]] == [
        "claim-field",
        "claim-id-duplicate",
        "claim-id-duplicate",
    ]
    assert json.loads(run_vt("validate", "--json", vault=vault).stdout) == cold


def test_streamed_json_of_a_clean_vault(make_vault) -> None:
    result = run_vt("validate", "--json", vault=make_vault({"C.md": render_note(claim_id="C-1")}))
    assert json.loads(result.stdout)["findings"] == [] and result.returncode == 0


def test_warm_run_after_an_edit_keeps_the_other_notes_findings(make_vault) -> None:
    """Checked notes go to a new payload file; the others' records are carried over."""
    vault = _streamed_vault(make_vault)
    cold = _as_tuples(validate_vault(vault).findings)
    (vault / "03_claims" / "C.md").write_text(render_note(claim_id="C-2"), "utf-8")
    assert _as_tuples(validate_vault(vault).findings) == cold
    (vault / "03_claims" / "C.md").write_text(render_note(claim_id="C-3", mode="CERTAIN"), "utf-8")
    after = _as_tuples(validate_vault(vault).findings)
    assert [f[0] for f in after] == [
        "03_claims/A.md",
        "03_claims/C.md",
        "03_claims/M.md",
        "03_claims/Z.md",
    ]
    assert _as_tuples(validate_vault(vault).findings) == after
    assert run_vt("validate", vault=vault).stdout.splitlines()[0].startswith("03_claims/C.md:")


def test_a_memo_of_another_version_is_not_printed(make_vault) -> None:
    vault = _streamed_vault(make_vault)
    cold = run_vt("validate", vault=vault).stdout
    memo = vault / ".vt" / "validate-cache.memo"
    memo.write_bytes(b"0" * 16 + b"stale output\n")
    assert run_vt("validate", vault=vault).stdout == cold


def test_warm_run_does_not_import_the_checks(example_vault: Path) -> None:
    _defective(example_vault)
    script = (
        "import sys\nfrom vault_tools.config import load_settings\n"
        "from pathlib import Path\nfrom vault_tools.checks.validate import validate\n"
        f"r = validate(load_settings(Path({str(example_vault)!r})))\n"
        "print(r.errors, 'vault_tools.checks.rules' in sys.modules)\n"
    )
    run = [sys.executable, "-c", script]
    cold = subprocess.run(run, capture_output=True, text=True)
    assert cold.stdout.split()[0] == "1", cold.stderr
    warm = subprocess.run(run, capture_output=True, text=True)
    assert warm.stdout.split() == ["1", "False"], warm.stderr


def test_forked_run_imports_the_checks_before_the_workers_fork(example_vault: Path) -> None:
    # imported here, the workers inherit the checks and the review assist; imported in
    # each worker, each would compile the assist's regular expressions again
    script = (
        "import shutil, sys\nfrom pathlib import Path\n"
        "from vault_tools.checks import file_checks\nfrom vault_tools.config import load_settings\n"
        "from vault_tools.checks.validate import validate\n"
        "file_checks.PARALLEL_THRESHOLD = 1\n"
        f"settings = load_settings(Path({str(example_vault)!r}))\n"
        "settings.workers = 2\n"
        "shutil.rmtree(settings.vault / '.vt', ignore_errors=True)\n"
        "validate(settings)\n"
        "checks = ('vault_tools.checks.rules', 'vault_tools.checks.assist.run')\n"
        "print([m in sys.modules for m in checks])\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.stdout.split("\n")[-2] == "[True, True]", run.stderr


def test_index_in_many_chunks_round_trips(make_vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from vault_tools.checks import cache as cache_mod

    monkeypatch.setattr(cache_mod, "CHUNK_ENTRIES", 2)  # 4 notes + kb: several records
    vault = _streamed_vault(make_vault)
    cold = _as_tuples(validate_vault(vault).findings)
    state = vault / ".vt"
    entries = cache_mod.ResultCache.read(state).entries
    assert {"03_claims/A.md", "03_claims/C.md", "03_claims/M.md", "03_claims/Z.md"} <= set(entries)
    (vault / "03_claims" / "C.md").write_text(render_note(claim_id="C-9"), "utf-8")
    assert _as_tuples(validate_vault(vault).findings) == cold  # new + carried-over chunks
    assert set(cache_mod.ResultCache.read(state).entries) == set(entries)
    assert _as_tuples(validate_vault(vault).findings) == cold


def test_json_mode_writes_nothing_to_stdout_when_the_run_fails(example_vault: Path) -> None:
    (example_vault / "s").mkdir()
    (example_vault / "s" / "enums.json").write_text("{not json", "utf-8")
    (example_vault / "vt.toml").write_text('[paths]\nschemas_dir = "s"\n', "utf-8")
    result = run_vt("validate", "--json", vault=example_vault)
    assert result.returncode == 2 and result.stdout == "" and "enums.json" in result.stderr


# --- the claim ids a whole-vault run keeps ------------------------------------------------


def _three_way_vault(make_vault) -> Path:
    dup = render_note(claim_id="DUP-3")
    return make_vault(
        {
            "A.md": dup,
            "sub/B.md": dup,
            "Z.md": dup,
            "C.md": render_note(claim_id="C-1"),
            "D.md": render_note(claim_id="D-1"),
            "M.md": render_note(claim_id="BAD-1", mode="CERTAIN"),
        }
    )


def _duplicates(findings: list[Finding]) -> list[tuple]:
    return [(f.path, f.line, f.message) for f in findings if f.code == "claim-id-duplicate"]


def _three_way_expected(vault: Path) -> list[tuple]:
    line = line_of_text(render_note(claim_id="DUP-3"), "claim_id:")
    a, b, z = "03_claims/A.md", "sub/B.md", "03_claims/Z.md"
    used = "claim_id 'DUP-3' is also used by "
    return [
        (a, line, f"{used}{z}, {b}"),
        (z, line, f"{used}{a}, {b}"),
        (b, line, f"{used}{a}, {z}"),
    ]


def test_duplicates_among_three_notes_name_the_other_two(make_vault) -> None:
    vault = _three_way_vault(make_vault)
    report = _cold(vault)
    assert _duplicates(report.findings) == _three_way_expected(vault)
    assert (report.notes, report.errors) == (6, 4)


def test_duplicates_on_a_warm_run(make_vault) -> None:
    vault = _three_way_vault(make_vault)
    cold = run_vt("validate", vault=vault)
    assert cold.stdout.count("claim-id-duplicate") == 3
    assert "6 notes checked: 4 errors" in cold.stderr
    warm = run_vt("validate", vault=vault)  # the memo and the counts of the cached entries
    assert (warm.stdout, warm.stderr) == (cold.stdout, cold.stderr)
    (vault / "03_claims" / "C.md").write_text(render_note(claim_id="C-2"), "utf-8")
    partly = run_vt("validate", vault=vault)  # cached entries and one checked again
    assert (partly.stdout, partly.stderr) == (cold.stdout, cold.stderr)
    assert _duplicates(validate_vault(vault).findings) == _three_way_expected(vault)
    (vault / "03_claims" / "Z.md").write_text(render_note(claim_id="Z-1"), "utf-8")
    after = run_vt("validate", vault=vault)
    assert after.stdout.count("claim-id-duplicate") == 2
    assert "6 notes checked: 3 errors" in after.stderr


def test_a_hash_collision_is_never_a_duplicate(make_vault, monkeypatch: pytest.MonkeyPatch) -> None:
    vault = _three_way_vault(make_vault)
    expected = _as_tuples(_cold(vault).findings)
    monkeypatch.setattr(duplicates_mod, "_claim_hash", lambda claim_id: 7)  # all collide
    assert _as_tuples(_cold(vault).findings) == expected
    assert _as_tuples(validate_vault(vault).findings) == expected  # warm
    given = validate_vault(vault, [vault / "03_claims" / "C.md", vault / "03_claims" / "Z.md"])
    assert _duplicates(given.findings) == _three_way_expected(vault)[1:2]
    assert given.errors == 1


def test_a_hash_collision_does_not_hide_a_duplicate(
    make_vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two claim_ids of one hash, each used twice: two pairs, not one group of four."""
    one, two = render_note(claim_id="ONE-1"), render_note(claim_id="TWO-2")
    vault = make_vault({"A.md": one, "B.md": two, "C.md": one, "D.md": two})
    monkeypatch.setattr(duplicates_mod, "_claim_hash", lambda claim_id: -1)
    found = _duplicates(_cold(vault).findings)
    line = line_of_text(one, "claim_id:")
    assert found == [
        ("03_claims/A.md", line, "claim_id 'ONE-1' is also used by 03_claims/C.md"),
        ("03_claims/B.md", line, "claim_id 'TWO-2' is also used by 03_claims/D.md"),
        ("03_claims/C.md", line, "claim_id 'ONE-1' is also used by 03_claims/A.md"),
        ("03_claims/D.md", line, "claim_id 'TWO-2' is also used by 03_claims/B.md"),
    ]


def test_claim_ids_keep_unicode_and_missing_lines() -> None:
    with duplicates_mod.ClaimIds() as claims:
        entry = ("a.md", "", (), "證據-1 \udcff", None, 0, 0)
        assert claims.add(entry) and claims.add(("c\udcfe.md", *entry[1:4], 3, 0, 0))
        assert not claims.add(("b.md", "", (), None, None, 0, 0))
        assert [
            (path, [(f.line, f.message) for f in found]) for path, found in claims.duplicates(None)
        ] == [
            ("a.md", [(None, "claim_id '證據-1 \\udcff' is also used by c\udcfe.md")]),
            ("c\udcfe.md", [(3, "claim_id '證據-1 \\udcff' is also used by a.md")]),
        ]
        assert [path for path, _ in claims.duplicates({"c\udcfe.md"})] == ["c\udcfe.md"]


@pytest.mark.parametrize("targets", [[], ["03_claims/A.md"], [f"n/{i:04d}.md" for i in range(7)]])
def test_the_run_digest_is_of_the_targets_one_a_line(targets: list[str]) -> None:
    from vault_tools.notes.identity import content_digest

    expected = content_digest("\n".join(targets).encode())
    for batch in (1, 2, 3, 1024):
        assert validate_mod._run_digest(targets, batch) == expected


def test_spilled_claim_ids_give_the_same_output(
    make_vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim records in a file (forced small here) change nothing: same findings,
    same order, the duplicates and their collisions included; and no temporary file is
    left."""
    import tempfile

    notes = {f"N{i:03d}.md": render_note(claim_id=f"N-{i % 70}") for i in range(90)}
    notes["sub/Z.md"] = render_note(claim_id="N-3")
    vault = make_vault(notes)
    (tmp_path / "secret.md").write_text("# s\n", encoding="utf-8")
    os.symlink(tmp_path / "secret.md", vault / "03_claims" / "Leak.md")
    expected = _as_tuples(_cold(vault).findings)
    assert sum(1 for f in expected if f[3] == "claim-id-duplicate") == 2 * 20 + 1
    monkeypatch.setattr(duplicates_mod, "SPILL_BYTES", 64)
    monkeypatch.setattr(duplicates_mod, "FILTER_BITS", 8)  # many false candidates
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    fds = len(os.listdir("/proc/self/fd"))
    assert _as_tuples(_cold(vault).findings) == expected
    assert _as_tuples(validate_vault(vault).findings) == expected  # warm: the memo's counts
    monkeypatch.setattr(duplicates_mod, "_claim_hash", lambda claim_id: 7)  # all collide
    assert _as_tuples(_cold(vault).findings) == expected
    assert os.listdir(tmp_path / "tmp") == []
    assert len(os.listdir("/proc/self/fd")) == fds


@pytest.mark.parametrize("values", [[], [1], [1, 2, 3], [5, 5], [1, 9, 17, 9, 1, 2, -7, -7, -7]])
def test_repeated_values_through_the_bit_filter(
    values: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from array import array

    monkeypatch.setattr(duplicates_mod, "FILTER_BITS", 8)  # 1, 9 and 17 share a bit
    expected = {v for v in values if values.count(v) > 1}
    assert duplicates_mod._repeated(array("q", values)) == expected


def _tricky_vault(make_vault) -> Path:
    """Findings whose paths and messages hold what JSON must escape or keep as it is:
    quotes, backslashes, tabs, accents, CJK, an emoji; a duplicate pair; a note with no
    line (read error) is not needed: the duplicates carry lines of their own."""
    dup = render_note(claim_id='DUP-"q"')
    return make_vault(
        {
            'Q "quoted" \\ back.md': dup,
            "é-ü 東京 🙂.md": render_note(claim_id="U-1", mode="CERTAIN\t✓"),
            "Z.md": dup,
            "Y.md": render_note(claim_id="Y-1", frontmatter='---\nclaim_id: "Y-1\n---\n'),
            "W.md": render_note(claim_id="W-1", claim='He said "7 \\ 8" is 42 ✓.'),
        }
    )


def _documented_json(vault: Path) -> bytes:
    """What `vt validate --json` printed when it was one json.dumps of the documented
    object: the findings by path, the duplicates last, then the counts."""
    report = validate_vault(vault, assist=True)
    first = [f for f in report.findings if f.code != "claim-id-duplicate"]
    last = [f for f in report.findings if f.code == "claim-id-duplicate"]
    payload = {
        "findings": [f.to_json() for f in first + last],
        "notes": report.notes,
        "errors": report.errors,
        "warnings": report.warnings,
    }
    return (json.dumps(payload, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def test_streamed_json_is_byte_for_byte_one_json_dumps_cold_and_warm(make_vault) -> None:
    vault = _tricky_vault(make_vault)
    cold = run_vt("validate", "--json", vault=vault, text=False).stdout
    warm = run_vt("validate", "--json", vault=vault, text=False).stdout
    expected = _documented_json(vault)  # a library run: the cache of the CLI runs, unchanged
    assert b"\\\\" in expected and b'\\"' in expected and "🙂".encode() in expected
    assert cold == expected
    assert warm == expected
