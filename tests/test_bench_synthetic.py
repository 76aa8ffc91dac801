"""bench/synthetic.py, the vault generator every benchmark runs on: its vaults are what
`vt validate --json` (a real run) says they are, and the same seed gives the same bytes."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from tests.conftest import run_vt, synthetic_vault

# every planted mistake reports these codes, and only these
PLANTED_CODES = {
    "properties-schema",
    "yaml-duplicate-key",
    "frame-schema",
    "json-syntax",
    "kb-target-missing",
    "kb-target-escape",
    "mapping-complete-unresolved",
    "claim-empty",
    "claim-field",
    "mapping-mismatch",
    "assist-mode-hedged",
    "assist-mode-unhedged",
}


def _validate(vault: Path) -> tuple[int, dict]:
    done = run_vt("validate", "--json", vault=vault)
    return done.returncode, json.loads(done.stdout)


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def test_planted_defects_are_exactly_what_vt_validate_reports(tmp_path: Path) -> None:
    vault, planted = synthetic_vault(tmp_path / "v", 250, seed=4, defects=0.4)
    code, report = _validate(vault)
    assert code == 1
    assert report["notes"] == 250
    assert {(f["path"], f["line"], f["code"]) for f in report["findings"]} == planted
    assert {code for _, _, code in planted} == PLANTED_CODES  # every kind was planted


def test_a_vault_without_defects_has_no_findings(tmp_path: Path) -> None:
    vault, planted = synthetic_vault(tmp_path / "v", 250, seed=5)
    code, report = _validate(vault)
    assert (code, report["errors"], report["warnings"], planted) == (0, 0, 0, set())
    assert not (tmp_path / "v.defects.tsv").exists()


def test_the_vault_has_the_folders_vt_expects_and_realistic_notes(tmp_path: Path) -> None:
    vault, _ = synthetic_vault(tmp_path / "v", 400, seed=6)
    assert (vault / ".obsidian").is_dir()
    assert (vault / "05_ledger" / "decision_ledger.jsonl").read_bytes() == b""
    assert len(list((vault / "04_knowledge_base").glob("*.md"))) == 40 + 400 // 25
    notes = [p.read_text(encoding="utf-8") for p in (vault / "03_claims").glob("*.md")]
    assert len(notes) == 400
    actions = Counter(line for n in notes for line in n.splitlines() if "review_action:" in line)
    assert len(actions) == 5 and min(actions.values()) >= 4  # every action, PENDING most
    assert actions.most_common(1)[0][0] == "review_action: PENDING"
    with_drafts = sum("### V2 Semantic Frame Draft" in n for n in notes)
    assert 0.15 * 400 < with_drafts < 0.4 * 400
    assert sum("可能" in n for n in notes) > 20  # Chinese claims, some of them hedged
    assert sum("- Epistemic Mode: HYPOTHETICAL" in n for n in notes) > 20


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    one, _ = synthetic_vault(tmp_path / "one", 60, seed=9, defects=0.2)
    two, _ = synthetic_vault(tmp_path / "two", 60, seed=9, defects=0.2)
    other, _ = synthetic_vault(tmp_path / "other", 60, seed=10, defects=0.2)
    assert _digest(one) == _digest(two) != _digest(other)
    tsv = "{}.defects.tsv"
    assert (tmp_path / tsv.format("one")).read_bytes() == (
        tmp_path / tsv.format("two")
    ).read_bytes()
