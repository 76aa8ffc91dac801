"""A review note left with git conflict markers by a merge: `git-conflict`, naming the
note and the marker lines, from validate, status and apply (never "invalid YAML" alone,
"not a review note", or a silent skip)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_vt
from vault_tools.notes.conflicts import conflict_blocks

REPO = Path(__file__).resolve().parents[2]
NOTE = "03_claims/DV1-0001.md"


def conflicted(vault: Path) -> tuple[int, int, int]:
    """DV1-0001 as a merge leaves it when both sides changed review_action: the markers
    inside the frontmatter, so its YAML does not parse."""
    path = vault / NOTE
    lines = path.read_text(encoding="utf-8").split("\n")
    i = next(i for i, line in enumerate(lines) if line.startswith("review_action:"))
    lines[i : i + 1] = [
        "<<<<<<< HEAD",
        "review_action: APPROVE",
        "=======",
        "review_action: REJECT",
        ">>>>>>> origin/main",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return i + 1, i + 3, i + 5


def test_blocks_are_whole_and_a_heading_underline_is_not_one() -> None:
    lines = ["Title", "=======", "text", "<<<<<<< ours", "a", "||||||| base", "b", "=======",
             "c", ">>>>>>> theirs", ">>>>>>> stray"]  # fmt: skip
    assert conflict_blocks(lines) == [[4, 6, 8, 10]]
    assert conflict_blocks(["<<<<<<< ours", "a", ">>>>>>> theirs"]) == []  # no separator


def test_validate_status_and_apply_name_the_markers(example_vault: Path) -> None:
    first, middle, last = conflicted(example_vault)
    where = f"{NOTE}:{first}: git-conflict: git conflict markers at lines {first}, {middle}, {last}"

    done = run_vt("validate", NOTE, vault=example_vault)
    assert done.returncode == 1
    assert where in done.stdout

    done = run_vt("status", "--json", vault=example_vault)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    (finding,) = report["git_conflicts"]
    assert (finding["path"], finding["line"], finding["code"]) == (NOTE, first, "git-conflict")
    assert report["unreadable"] == []
    text = run_vt("status", vault=example_vault).stdout
    assert "notes left with git conflict markers" in text and where in text

    for args in (("apply", "--dry-run", NOTE), ("apply",)):
        done = run_vt(*args, "--json", vault=example_vault)
        assert done.returncode == 1, done.stderr
        (refused,) = json.loads(done.stdout)["refused"]
        assert refused["path"] == NOTE
        assert refused["reason"].startswith(
            f"git-conflict: git conflict markers at lines {first}, {middle}, {last}"
        )
    ledger = (example_vault / "05_ledger" / "decision_ledger.jsonl").read_text()
    assert "DV1-0002" in ledger and "DV1-0001" not in ledger  # the others are applied
