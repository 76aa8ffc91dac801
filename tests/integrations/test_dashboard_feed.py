"""The dashboard `vt watch` refreshes (integrations/dashboard_feed.py): after the saves
it is told of, it shows exactly what a whole `vt report` would, and it reads only the
notes saved."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.conftest import render_note, run_vt, settings_for
from vault_tools.integrations.dashboard import report
from vault_tools.integrations.dashboard_feed import Feed

DV2 = "03_claims/DV1-0002.md"  # REJECT
DV4 = "03_claims/DV1-0004.md"  # PENDING
DV1 = "03_claims/DV1-0001.md"


def _edit(vault: Path, relative: str, old: str, new: str) -> None:
    path = vault / relative
    text = path.read_text("utf-8")
    assert old in text, f"{old!r} not in {relative}"
    path.write_text(text.replace(old, new, 1), "utf-8")


def _as_a_report_writes_it(vault: Path) -> bool:
    """Whether the dashboard on disk is what a whole `vt report` would write now."""
    return not report(settings_for(vault), dry_run=True).changed


@pytest.fixture
def fed(example_vault: Path) -> tuple[Path, Feed]:
    made = run_vt("report", vault=example_vault)
    assert made.returncode == 0, made.stderr
    feed = Feed(settings_for(example_vault))
    feed.refresh()
    assert _as_a_report_writes_it(example_vault)
    return example_vault, feed


def test_only_the_saved_notes_are_read_again(fed: tuple[Path, Feed]) -> None:
    vault, feed = fed
    _edit(vault, DV2, "review_action: REJECT", "review_action: PENDING")
    _edit(vault, DV4, "review_action: PENDING", "review_action: REJECT")
    feed.changed([DV2])  # DV4's save not told: a refresh that re-read all would show it
    assert feed.refresh() is True
    assert not _as_a_report_writes_it(vault)
    feed.changed([DV4])
    feed.refresh()
    assert _as_a_report_writes_it(vault)


def test_findings_come_and_go_with_the_saves(fed: tuple[Path, Feed]) -> None:
    vault, feed = fed
    _edit(vault, DV4, "review_action: PENDING", "review_action: APPROVED")
    feed.changed([DV4])
    assert feed.refresh() is True
    assert _as_a_report_writes_it(vault)
    assert "APPROVED" in (vault / "Review Dashboard.md").read_text("utf-8")
    _edit(vault, DV4, "review_action: APPROVED", "review_action: PENDING")
    feed.changed([DV4])
    feed.refresh()
    assert _as_a_report_writes_it(vault)


def test_a_duplicate_claim_id_an_added_or_deleted_note_and_an_apply(
    fed: tuple[Path, Feed],
) -> None:
    vault, feed = fed
    _edit(vault, DV4, "claim_id: DV1-0004", "claim_id: DV1-0002")  # now a duplicate
    feed.changed([DV4])
    feed.refresh()
    assert _as_a_report_writes_it(vault)
    _edit(vault, DV4, "claim_id: DV1-0002", "claim_id: DV1-0004")  # and no more
    feed.changed([DV4])
    feed.refresh()
    assert _as_a_report_writes_it(vault)
    (vault / "03_claims" / "BAD-1.md").write_text(render_note(claim_id="BAD-1"), "utf-8")
    feed.changed(None)  # what the watcher says of a note it did not know
    feed.refresh()
    assert _as_a_report_writes_it(vault)
    _edit(vault, DV4, "review_action: PENDING", "review_action: REJECT")
    assert run_vt("apply", vault=vault).returncode in (0, 1)  # the ledger moves on
    feed.changed([DV4])
    feed.refresh()
    assert _as_a_report_writes_it(vault)


EDITS = [
    (DV2, "review_action: REJECT", "review_action: PENDING"),
    (DV4, "review_action: PENDING", "review_action: NOT-AN-ACTION"),
    (DV1, "Epistemic Mode: ASSERTED", "Epistemic Mode: CERTAIN"),  # a finding
    (DV4, "claim_id: DV1-0004", "claim_id: DV1-0001"),
    (DV1, "review_state: NEW", "review_state: PREVIEW_READY"),
]


@pytest.mark.parametrize("seed", range(4))
def test_any_order_of_saves_shows_what_a_report_shows(fed: tuple[Path, Feed], seed: int) -> None:
    vault, feed = fed
    rng = random.Random(seed)
    done: set[int] = set()
    for _ in range(6):
        which = rng.randrange(len(EDITS))
        path, old, new = EDITS[which]
        if which in done:
            old, new = new, old
        text = (vault / path).read_text("utf-8")
        if old not in text:
            continue
        done ^= {which}
        _edit(vault, path, old, new)
        feed.changed([path])
        feed.refresh()
        assert _as_a_report_writes_it(vault), (seed, which)
