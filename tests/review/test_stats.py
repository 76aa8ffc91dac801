"""vt stats' core on generated ledgers with planted rates, waits, agreement and assist
outcomes, so every number comes out exactly; and a ledger from before provenance."""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from vault_tools.ledger.append import Ledger
from vault_tools.ledger.reader import iter_events
from vault_tools.review.claim_record import claim_base
from vault_tools.review.stats import MIN_CLAIMS, TOO_FEW, _ClaimTally, blind_ratings, compute
from vault_tools.review.stats_report import stats_section, text_lines
from vault_tools.vocabulary import CHECK_KEYS

OK = dict.fromkeys(CHECK_KEYS, True)


def claim(text: str, operator: str = "LESS_THAN") -> dict:
    return {
        "atomic_claim": text,
        "epistemic_mode": "ASSERTED",
        "mapping_status": "COMPLETE",
        "semantic_frame": {"entities": [], "metric": "LATENCY_COST", "operator": operator},
    }


class Events:
    """Events as the ledger holds them, made by hand: ids and hashes are unique labels
    (compute() reads a ledger the gate already verified)."""

    def __init__(self) -> None:
        self.events: list[dict] = []

    def add(self, action: str, claim_id: str, actor: str = "alice", **extra: Any) -> dict:
        n = len(self.events) + 1
        ev = {
            "action": action,
            "actor": actor,
            "base": extra.pop("base", f"sha256:{'b' * 63}{n % 10}"),
            "checks": extra.pop("checks", OK),
            "claim": extra.pop("claim", None),
            "claim_id": claim_id,
            "comment": "",
            "hash": f"sha256:{n:064x}",
            "id": f"sha256:{n:063x}f",
            "note": f"03_claims/{claim_id}.md",
            "preview": None,
            "seq": n,
            "supersedes": extra.pop("supersedes", None),
            "ts": extra.pop("ts", "2026-12-01T10:00:00Z"),
            "v": 1,
            **extra,
        }
        self.events.append(ev)
        return ev


def provenance(run: str, model: str) -> dict:
    return {"run": run, "model": model, "prompt_version": "p1"}


def planted_pipeline(ev: Events | None = None) -> Events:
    """r1 (model m1): 10 claims, 5 accepted, 3 repaired, 2 rejected; r2 (m2): 4 claims,
    1 / 1 / 2; two claims from before provenance, accepted; one reverted."""
    ev = ev or Events()
    plan = {"r1": ("m1", "SA1", [("ACCEPT", 5), ("REPAIR", 3), ("REJECT", 2)]),
            "r2": ("m2", "SA2", [("ACCEPT", 1), ("REPAIR", 1), ("REJECT", 2)])}  # fmt: skip
    for run, (model, article, outcomes) in plan.items():
        n = 0
        for action, count in outcomes:
            for _ in range(count):
                n += 1
                cid = f"{article}-{n:04d}"
                extra: dict[str, Any] = {"provenance": provenance(run, model)}
                if action == "REJECT":
                    extra["checks"] = {**OK, "check_source_claim": False}
                if action == "REPAIR":
                    extra["claim"] = claim(f"V2 of {cid}")
                    extra["checks"] = {**OK, "check_claim_frame": False}
                if action == "ACCEPT":
                    extra["claim"] = claim(f"V1 of {cid}")
                ev.add(action, cid, **extra)
    ev.add("ACCEPT", "OLD-0001", claim=claim("old"))
    ev.add("ACCEPT", "OLD-0002", claim=claim("old too"))
    accepted = ev.add("ACCEPT", "SA2-0099", claim=claim("then reverted"),
                      provenance=provenance("r2", "m2"))  # fmt: skip
    ev.add("REVERT", "SA2-0099", supersedes=accepted["id"], reverts=accepted["id"])
    return ev


def by(stats: Any, group: str) -> dict[str, dict]:
    return {row["value"]: row for row in stats.pipeline["by"][group]}


def test_planted_rates_per_run_model_and_article() -> None:
    stats = compute(planted_pipeline().events)
    runs = by(stats, "run")
    assert set(runs) == {"r1", "r2", "unknown"}
    r1, r2, unknown = runs["r1"], runs["r2"], runs["unknown"]
    assert (r1["decided"], r1["accepted"], r1["repaired"], r1["rejected"]) == (10, 5, 3, 2)
    assert (r1["accepted_rate"], r1["repaired_rate"], r1["rejected_rate"]) == (0.5, 0.3, 0.2)
    assert (r2["claims"], r2["decided"], r2["open"]) == (5, 4, 1)  # the reverted claim
    assert (r2["accepted_rate"], r2["repaired_rate"], r2["rejected_rate"]) == (0.25, 0.25, 0.5)
    assert (unknown["decided"], unknown["accepted_rate"]) == (2, 1.0)
    assert by(stats, "model")["m1"]["decided"] == 10
    assert by(stats, "prompt_version")["p1"]["decided"] == 14
    assert by(stats, "prompt_version")["unknown"]["decided"] == 2
    articles = by(stats, "article")
    assert (articles["SA1"]["decided"], articles["SA2"]["rejected"]) == (10, 4 - 2)
    assert articles["OLD"]["accepted"] == 2
    assert by(stats, "section") == {"unknown": by(stats, "section")["unknown"]}  # no notes read
    assert stats.pipeline["outcomes"] == {"accepted": 8, "rejected": 4, "repaired": 4,
                                          "reverted": 1}  # fmt: skip
    assert (stats.events, stats.claims) == (18, 17)


def test_checklist_items_failed_on_rejected_and_repaired_claims() -> None:
    failed = compute(planted_pipeline().events).pipeline["failed_checks"]
    assert failed["rejected"] == {
        "claims": 4,
        "checks": {**dict.fromkeys(CHECK_KEYS, 0), "check_source_claim": 4},
    }
    assert failed["repaired"]["checks"]["check_claim_frame"] == 4
    assert failed["repaired"]["checks"]["check_source_claim"] == 0


def test_changed_parts_from_the_v1_an_earlier_accept_recorded() -> None:
    ev = Events()
    v1 = claim("A 比 B 快", "LESS_THAN")
    accepted = ev.add("ACCEPT", "SA1-0001", claim=v1, base=claim_base(v1))
    ev.add("REPAIR", "SA1-0001", claim=claim("A 比 B 慢", "GREATER_THAN"),
           base=claim_base(v1), supersedes=accepted["id"])  # fmt: skip
    ev.add("REPAIR", "SA1-0002", claim=claim("no V1 in the ledger"))
    changed = compute(ev.events).pipeline["changed_parts"]
    assert (changed["repairs"], changed["without_v1"]) == (2, 1)
    assert {k: n for k, n in changed["parts"].items() if n} == {"claim_text": 1, "operator": 1}


def test_a_v1_from_the_note_counts_only_when_its_hash_is_the_events_base() -> None:
    from vault_tools.review.stats import NoteContext

    ev = Events()
    v1 = claim("the note's V1")
    ev.add("REPAIR", "SA1-0001", claim=claim("V2", "EQUAL"), base=claim_base(v1))
    ev.add("REPAIR", "SA1-0002", claim=claim("V2", "EQUAL"), base=claim_base(claim("other")))
    asked: list[tuple[str, bool]] = []

    def facts(path: str, want_v1: bool) -> NoteContext:
        asked.append((path, want_v1))
        return NoteContext("Speculative Decoding", v1)

    stats = compute(ev.events, facts)
    changed = stats.pipeline["changed_parts"]
    assert (changed["repairs"], changed["without_v1"]) == (2, 1)
    assert {k: n for k, n in changed["parts"].items() if n} == {"claim_text": 1, "operator": 1}
    assert asked == [("03_claims/SA1-0001.md", True), ("03_claims/SA1-0002.md", True)]
    assert by(stats, "section")["Speculative Decoding"]["repaired"] == 2


def test_decisions_per_reviewer_per_day_and_import_to_decision() -> None:
    ev = Events()
    for hour in range(1, 11):  # waits of 1 h to 10 h: median 5.5 h, p90 (nearest rank) 9 h
        ev.add("ACCEPT", f"SA1-{hour:04d}", actor="bob" if hour % 2 else "alice",
               claim=claim("x"), imported_at="2026-12-01T00:00:00Z",
               ts=f"2026-12-01T{hour:02d}:00:00Z")  # fmt: skip
    ev.add("REJECT", "SA1-0011", actor="recorder", decided_by="carol", ts="2026-12-02T09:00:00Z",
           imported_at="2026-12-02T09:00:00+00:00")  # fmt: skip
    first = ev.events[0]
    ev.add("REVERT", "SA1-0001", supersedes=first["id"], reverts=first["id"])
    ev.add("ACCEPT", "SA1-0012", claim=claim("no import time"), ts="2026-12-02T10:00:00Z")
    review = compute(ev.events).review
    assert review["decisions_per_day"] == [
        {"day": "2026-12-01", "reviewer": "alice", "decisions": 5},
        {"day": "2026-12-01", "reviewer": "bob", "decisions": 5},
        {"day": "2026-12-02", "reviewer": "alice", "decisions": 1},
        {"day": "2026-12-02", "reviewer": "carol", "decisions": 1},
    ]
    waits = review["import_to_decision"]
    assert waits == {"claims": 11, "median_seconds": 5 * 3600.0, "p90_seconds": 9 * 3600.0}


def blind_pair(ev: Events, cid: str, alice: str, bob: str) -> None:
    a = ev.add(alice, cid, actor="alice", claim=claim("x") if alice != "REJECT" else None)
    b = ev.add(bob, cid, actor="bob", claim=claim("x") if bob != "REJECT" else None)
    # carol settles the claim having seen both: hers is no blind verdict
    ev.add("REJECT", cid, actor="carol", supersedes=sorted([a["id"], b["id"]]))


def planted_agreement(ev: Events | None = None) -> Events:
    """20 claims alice and bob decided without seeing each other: both ACCEPT 8, alice
    ACCEPT / bob REJECT 2, alice REJECT / bob ACCEPT 4, both REJECT 6 (the textbook
    table 20 / 5 / 10 / 15 times 0.4): p_o 0.7, p_e 0.5, kappa 0.4."""
    ev = ev or Events()
    cells = [("ACCEPT", "ACCEPT", 8), ("ACCEPT", "REJECT", 2), ("REJECT", "ACCEPT", 4),
             ("REJECT", "REJECT", 6)]  # fmt: skip
    n = 0
    for alice, bob, count in cells:
        for _ in range(count):
            n += 1
            blind_pair(ev, f"AG-{n:04d}", alice, bob)
    # dave decides after erin, having seen her decision: no agreement figure for them
    erin = ev.add("ACCEPT", "AG-0100", actor="erin", claim=claim("x"))
    ev.add("REJECT", "AG-0100", actor="dave", supersedes=erin["id"])
    return ev


def test_planted_agreement_kappa_and_alpha() -> None:
    agreement = compute(planted_agreement().events).review["agreement"]
    assert agreement["claims"] == 20
    (pair,) = agreement["pairs"]
    assert pair["reviewers"] == ["alice", "bob"] and pair["agreed"] == 14
    assert pair["kappa"] == {"claims": 20, "value": 0.4, "verdict": None}
    # pooled ACCEPT 22 of 40: Scott's pi 13/33, alpha = 1 - 39/40 * 20/33 = 9/22
    assert agreement["alpha"] == {"reviewers": 2, "claims": 20, "value": round(9 / 22, 4),
                                  "verdict": None}  # fmt: skip
    assert float(Fraction(9, 22)) == 9 / 22


def test_agreement_below_the_threshold_is_too_few_to_say() -> None:
    events = planted_agreement().events
    cut = compute(events[: 3 * (MIN_CLAIMS - 1)]).review["agreement"]
    assert cut["claims"] == MIN_CLAIMS - 1
    assert cut["pairs"][0]["kappa"] == {"claims": MIN_CLAIMS - 1, "value": None, "verdict": TOO_FEW}
    assert cut["alpha"]["verdict"] == TOO_FEW
    lowered = compute(events[: 3 * (MIN_CLAIMS - 1)], min_claims=5).review["agreement"]
    assert lowered["pairs"][0]["kappa"]["value"] is not None


def test_blind_ratings_follow_what_each_decision_saw() -> None:
    ev = Events()
    first = ev.add("ACCEPT", "C-1", actor="alice", claim=claim("x"))
    ev.add("REJECT", "C-1", actor="bob", supersedes=first["id"])
    ev.add("ACCEPT", "C-1", actor="carol", claim=claim("x"), supersedes=first["id"])
    # bob and carol both saw alice's decision, not each other's
    claims = compute_claims(ev.events)
    assert blind_ratings(claims["C-1"]) == {"bob": "REJECT", "carol": "ACCEPT"}
    # a reviewer's second decision is not a rating: her first one is
    ev2 = Events()
    a = ev2.add("ACCEPT", "C-2", actor="alice", claim=claim("x"))
    b = ev2.add("REJECT", "C-2", actor="bob")
    ev2.add("REJECT", "C-2", actor="alice", supersedes=sorted([a["id"], b["id"]]))
    assert blind_ratings(compute_claims(ev2.events)["C-2"]) == {"alice": "ACCEPT", "bob": "REJECT"}


def compute_claims(events: list[dict]) -> dict[str, _ClaimTally]:
    from vault_tools.review.stats import _Pass

    run = _Pass()
    for _ in run.feed(events):
        pass
    return run.claims


def test_assist_precision_and_what_it_missed() -> None:
    ev = Events()
    number, unit = "assist-claim-number", "assist-claim-unit"
    for i, (action, codes) in enumerate(
        [
            ("REPAIR", [number]),
            ("REJECT", [number, unit]),
            ("REPAIR", [number]),
            ("ACCEPT", [number]),
            ("ACCEPT", [unit]),
            ("REPAIR", []),  # missed
            ("REJECT", []),  # missed
            ("ACCEPT", []),
        ]
    ):
        ev.add(action, f"AS-{i:04d}", claim=None if action == "REJECT" else claim("x"),
               assist=codes)  # fmt: skip
    ev.add("REJECT", "AS-0100")  # decided before the ledger recorded codes
    assist = compute(ev.events).assist
    rows = {r["code"]: r for r in assist["codes"]}
    assert rows[number] == {"code": number, "notes": 4, "accepted": 1, "repaired": 2,
                            "rejected": 1, "precision": 0.75}  # fmt: skip
    assert rows[unit]["precision"] == 0.5
    assert (assist["warned"], assist["missed"], assist["not_recorded"]) == (5, 2, 1)


def test_a_ledger_from_before_provenance(tmp_path: Path) -> None:
    """A ledger vt wrote without provenance, import times or assist codes: every claim
    is "unknown run", no wait, no codes recorded; nothing fails."""
    ledger = Ledger(tmp_path / "decision_ledger.jsonl", tmp_path / ".vt")
    decisions = []
    for i, action in enumerate(["ACCEPT", "ACCEPT", "REPAIR", "REJECT"]):
        decisions.append({
            "action": action, "actor": "alice",
            "base": "sha256:" + hashlib.sha256(str(i).encode()).hexdigest(),
            "checks": OK, "claim": None if action == "REJECT" else claim(f"c{i}"),
            "claim_id": f"SA9-{i:04d}", "comment": "", "note": f"03_claims/SA9-{i:04d}.md",
            "preview": None,
        })  # fmt: skip
    ledger.append(decisions)
    stats = compute(iter_events(ledger.path))
    assert [r["value"] for r in stats.pipeline["by"]["run"]] == ["unknown"]
    unknown = stats.pipeline["by"]["run"][0]
    assert (unknown["accepted_rate"], unknown["repaired_rate"]) == (0.5, 0.25)
    assert stats.review["import_to_decision"]["claims"] == 0
    assert stats.assist["not_recorded"] == 4 and stats.assist["codes"] == []
    assert text_lines(stats) and stats_section(stats)[0] == "## Quality numbers"


def test_the_dashboard_section_draws_charts_and_tables() -> None:
    stats = compute(planted_agreement(planted_pipeline()).events)
    section = stats_section(stats)
    text = "\n".join(section)
    assert text.count("```mermaid") == 3  # claims by status, decisions per day, parts
    assert "pie title Claims by status" in section
    # carol's settling REJECTs and dave's make the agreement claims rejected
    assert '    "accepted" : 8' in section and '    "rejected" : 25' in section
    assert "xychart-beta" in section
    assert "| alice / bob | Cohen's kappa | 0.400 | 20 |" in section
    assert "| r1 | 10 | 50.0% | 30.0% | 20.0% | 0 |" in section
    assert all("\n" not in line for line in section)


def test_a_grouping_of_many_values_lists_those_with_the_most_claims() -> None:
    ev = Events()
    for article in range(12):  # article A00 has 12 claims, A01 11, ..., A11 1
        for n in range(12 - article):
            ev.add("ACCEPT", f"A{article:02d}-{n:04d}", claim=claim("x"))
    stats = compute(ev.events)
    assert len(stats.pipeline["by"]["article"]) == 12  # --json: every one
    lines = text_lines(stats)
    start = lines.index("  by source article:")
    assert lines[start + 1].startswith("    A00: 12 decided")
    assert lines[start + 10].startswith("    A09: 3 decided")
    assert lines[start + 11] == "    and 2 more (vt stats --json lists every one)"
    section = stats_section(stats)
    assert "By source article (the 10 with the most claims):" in section
    assert not any(line.startswith("| A10 ") for line in section)


def test_a_claim_decided_thousands_of_times_is_counted_without_deep_recursion() -> None:
    """What a decision saw is searched in a loop, not by recursion: a claim decided 5,000
    times in a row (a hostile or a very long-lived ledger) is counted like any other."""
    ev = Events()
    seen = None
    for i in range(5000):
        who = ("alice", "bob")[i % 2]
        seen = ev.add("ACCEPT", "LONG-0001", actor=who, claim=claim("x"), supersedes=seen)["id"]
    # carol and dave each decide over the 5,000th decision, without seeing each other
    carol = ev.add("REJECT", "LONG-0001", actor="carol", supersedes=seen)
    ev.add("ACCEPT", "LONG-0001", actor="dave", claim=claim("x"), supersedes=seen)
    agreement = compute(ev.events, min_claims=1).review["agreement"]
    (pair,) = agreement["pairs"]  # alice and bob saw each other; both were seen
    assert pair["reviewers"] == ["carol", "dave"] and pair["agreed"] == 0
    assert agreement["claims"] == 1 and carol["supersedes"] == seen


@pytest.mark.parametrize("fails", [False, True])
def test_counting_with_the_gc_paused_counts_as_with_it_on(fails: bool) -> None:
    """`tally` pauses the cyclic GC: the figures are those counted with the GC on or
    off, and the GC is left as it was found, also when reading the events fails."""
    events = planted_pipeline().events

    def feed() -> Iterator[dict]:
        for n, ev in enumerate(events):
            if fails and n == len(events) // 2:
                raise OSError("the ledger went away")
            yield ev

    was = gc.isenabled()
    figures = []
    try:
        for enabled in (True, False):
            gc.enable() if enabled else gc.disable()
            if fails:
                with pytest.raises(OSError):
                    compute(feed())
            else:
                figures.append(compute(feed()).to_json())
            assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()
    assert fails or figures[0] == figures[1]
