"""`vt stats` as a real process on a copy of the example vault: real apply, preview and
repair; the V1 and the section read from the note; the cache in `.vt/`; its errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_vt
from vault_tools.notes.note import parse_note
from vault_tools.review.claim_record import v1_claim, v2_claim
from vault_tools.store.changes import changed_parts
from vault_tools.vocabulary import CHECK_KEYS

DV3 = "03_claims/DV1-0003.md"
LEDGER = "05_ledger/decision_ledger.jsonl"


def set_line(vault: Path, note: str, key: str, value: str) -> None:
    path = vault / note
    text = path.read_text(encoding="utf-8")
    start = text.index(f"{key}: ")
    end = text.index("\n", start)
    path.write_text(text[:start] + f"{key}: {value}" + text[end:], encoding="utf-8")


def decided(vault: Path) -> Path:
    """alice records her two decisions, then previews DV1-0003 and approves its repair."""
    (vault / "vt.toml").write_text('[review]\nactor = "alice"\n', encoding="utf-8")
    run_vt("apply", vault=vault, check=0)
    run_vt("preview", vault=vault, check=0)
    set_line(vault, DV3, "review_action", "APPROVE_REPAIR")
    set_line(vault, DV3, "reviewer", '"alice"')
    for check in CHECK_KEYS:
        set_line(vault, DV3, check, "true")
    run_vt("apply", vault=vault, check=0)
    return vault


def stats_json(vault: Path, *args: str) -> dict:
    return json.loads(run_vt("stats", "--json", *args, vault=vault, check=0).stdout)


def test_stats_of_real_decisions(example_vault: Path) -> None:
    vault = decided(example_vault)
    stats = stats_json(vault)
    assert (stats["events"], stats["claims"]) == (3, 3)
    assert stats["pipeline"]["outcomes"] == {"accepted": 1, "rejected": 1, "repaired": 1}
    (unknown,) = stats["pipeline"]["by"]["run"]  # a ledger from before provenance
    assert unknown["value"] == "unknown" and unknown["decided"] == 3
    note = parse_note((vault / DV3).read_bytes(), DV3)
    expected = changed_parts(v1_claim(note), v2_claim(note))
    assert {"claim_text", "operator", "entities", "mapping_status"} <= set(expected)
    changed = stats["pipeline"]["changed_parts"]
    assert (changed["repairs"], changed["without_v1"]) == (1, 0)  # V1 from the note
    assert [p for p, n in changed["parts"].items() if n] == expected
    articles = {r["value"]: r["decided"] for r in stats["pipeline"]["by"]["article"]}
    assert articles == {"DV1": 3}
    sections = {r["value"]: r["decided"] for r in stats["pipeline"]["by"]["section"]}
    assert sum(sections.values()) == 3 and "unknown" not in sections
    (day,) = stats["review"]["decisions_per_day"]
    assert (day["reviewer"], day["decisions"]) == ("alice", 3)
    # every event apply writes records the assist codes its note carried ([] for none)
    assist = stats["assist"]
    assert assist["not_recorded"] == 0


def test_the_cache_answers_until_the_ledger_or_a_note_changes(example_vault: Path) -> None:
    vault = decided(example_vault)
    first = stats_json(vault)
    assert (vault / ".vt" / "stats-cache.marshal").is_file()
    assert stats_json(vault) == first
    # the section of a decided note edited: its figures follow, the ledger unchanged
    set_line(vault, "03_claims/DV1-0001.md", "- Section", "Another section")
    again = stats_json(vault)
    sections = {r["value"] for r in again["pipeline"]["by"]["section"]}
    assert "Another section" in sections
    assert again["ledger_head"] == first["ledger_head"]
    # deleting .vt/ only costs the next run its speed
    for path in (vault / ".vt").iterdir():
        path.unlink()
    assert stats_json(vault) == again


def test_text_and_markdown(example_vault: Path) -> None:
    vault = decided(example_vault)
    text = run_vt("stats", vault=vault, check=0).stdout
    assert text.startswith("3 events, 3 claims: accepted 1, rejected 1, repaired 1\n")
    assert "  by source article:\n    DV1: 3 decided, 33.3% / 33.3% / 33.3%\n" in text
    markdown = run_vt("stats", "--markdown", vault=vault, check=0).stdout
    assert markdown.startswith("## Quality numbers\n")
    assert "```mermaid\npie title Claims by status\n" in markdown


def test_usage_errors_and_a_ledger_that_does_not_verify(example_vault: Path) -> None:
    done = run_vt("stats", "--min-claims", "1", vault=example_vault, check=2)
    assert done.stderr.count("\n") == 1 and "--min-claims" in done.stderr
    run_vt("stats", "--markdown", "--json", vault=example_vault, check=2)
    vault = decided(example_vault)
    ledger = vault / LEDGER
    ledger.write_bytes(ledger.read_bytes().replace(b'"alice"', b'"mallory"', 1))
    done = run_vt("stats", vault=vault, check=3)
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_the_dashboard_carries_the_quality_numbers(example_vault: Path) -> None:
    """`vt report` writes `vt stats`'s section after Progress, its figures the same."""
    vault = decided(example_vault)
    run_vt("report", vault=vault)
    text = (vault / "Review Dashboard.md").read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings.index("## Quality numbers") == headings.index("## Progress") + 1
    markdown = run_vt("stats", "--markdown", vault=vault).stdout
    assert markdown.splitlines()[2] in text  # "From the Decision Ledger: 3 events, …"
