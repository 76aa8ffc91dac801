"""The dashboard's state kept between runs and brought up to date note by note: whatever
`update` and the kept state give must be what gathering everything again gives."""

from __future__ import annotations

import marshal
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import settings_for
from tests.integrations.test_dashboard import decided_vault, edit
from tests.store.test_store import decision, ledger_for, v1_claim
from vault_tools.checks.context import make_context
from vault_tools.config import Settings
from vault_tools.integrations.dashboard import Dashboard
from vault_tools.integrations.dashboard_state import (
    STATE_FILE,
    DashboardState,
    LiveDashboard,
    current_state,
    gather,
    load,
    look,
    quality_lines,
    report,
)
from vault_tools.review.candidates import examine
from vault_tools.store.claims import ClaimStore
from vault_tools.vocabulary import REVIEW_ACTIONS

CLAIMS = "03_claims"


def gathered(settings: Settings) -> tuple[DashboardState, Dashboard]:
    with ClaimStore.open(settings) as store:
        store.catch_up()
        state = gather(settings, store)
        return state, state.dashboard(settings, store)


def updated(settings: Settings, state: DashboardState, changed: list[str]) -> Dashboard | None:
    """`state` brought up to date with `changed`, as a dashboard; None when it says no."""
    with ClaimStore.open(settings) as store:
        store.catch_up()
        if not state.update(settings, store, changed):
            return None
        return state.dashboard(settings, store)


def set_property(path: Path, key: str, value: str) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    index = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    lines[index] = f"{key}: {value}"
    path.write_text("\n".join(lines), encoding="utf-8")


def note_paths(vault: Path) -> list[str]:
    return sorted(f"{CLAIMS}/{p.name}" for p in (vault / CLAIMS).glob("*.md"))


# --- update: the notes that changed, made again ------------------------------------


def test_an_edited_review_note_is_made_again_alone(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault, assist=True)
    state, before = gathered(settings)
    note = vault / CLAIMS / "DV1-0004.md"
    set_property(note, "review_action", "APPROVE")
    for box in (
        "check_source_claim",
        "check_claim_frame",
        "check_entity_mapping",
        "check_epistemic_mode",
    ):
        set_property(note, box, "true")
    after = updated(settings, state, [f"{CLAIMS}/DV1-0004.md"])
    assert after is not None and after != before
    assert after == gathered(settings)[1]
    ready = next(g for g in after.needs if g.title == "Ready for vt apply")
    assert [i.path for i in ready.items] == [f"{CLAIMS}/DV1-0004.md"]


def test_an_applied_note_edited_shows_as_edited_since_apply(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    state, _ = gathered(settings)
    note = vault / CLAIMS / "DV1-0002.md"
    set_property(note, "review_action", "APPROVE")
    after = updated(settings, state, [f"{CLAIMS}/DV1-0002.md"])
    assert after is not None and after == gathered(settings)[1]
    edited = next(g for g in after.needs if g.title == "Edited since apply")
    assert [i.path for i in edited.items] == [f"{CLAIMS}/DV1-0002.md"]


def test_what_update_cannot_vouch_for_is_gathered_again(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    note = vault / CLAIMS / "DV1-0004.md"
    original = note.read_bytes()
    cases = {
        "claim_id changed": lambda: edit(note, "claim_id: DV1-0004", "claim_id: DV1-9004"),
        "claim_id shared": lambda: edit(note, "claim_id: DV1-0004", "claim_id: DV1-0001"),
        "no longer a review note": lambda: note.write_bytes(b"just text\n"),
        "gone": note.unlink,
    }
    for name, change in cases.items():
        state, _ = gathered(settings)
        change()
        assert updated(settings, state, [f"{CLAIMS}/DV1-0004.md"]) is None, name
        note.write_bytes(original)
    kb_note = next(p for p in sorted((vault / "04_knowledge_base").glob("*.md")))
    state, _ = gathered(settings)
    kb_note.write_text(kb_note.read_text(encoding="utf-8") + "\nmore\n", encoding="utf-8")
    assert updated(settings, state, [f"04_knowledge_base/{kb_note.name}"]) is None
    state, _ = gathered(settings)
    ledger_for(settings).append([decision("DV1-0004", claim=v1_claim("DV1-0004"))])
    assert updated(settings, state, [f"{CLAIMS}/DV1-0004.md"]) is None  # another ledger head


def test_a_note_sharing_its_claim_id_is_never_made_alone(example_vault: Path) -> None:
    vault = example_vault
    copy = vault / CLAIMS / "DV1-0004-copy.md"
    copy.write_bytes((vault / CLAIMS / "DV1-0004.md").read_bytes())
    settings = settings_for(vault)
    state, _ = gathered(settings)
    set_property(copy, "review_action", "REJECT")  # its duplicate finding stays as it was
    assert updated(settings, state, [f"{CLAIMS}/DV1-0004-copy.md"]) is None


EDITS = st.sampled_from(
    [
        *(("review_action", a) for a in (*REVIEW_ACTIONS, '""', "MAYBE")),
        *(
            (box, v)
            for box in ("check_source_claim", "check_claim_frame")
            for v in ("true", "false")
        ),
        ("reviewer", "someone-else"),
        ("text", "An added sentence the note did not say."),
        ("touch", ""),
    ]
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.integers(0, 5), EDITS), min_size=1, max_size=4))
def test_update_gives_what_gathering_gives(example_vault: Path, edits: list) -> None:
    """The plain rule: after any edits of review notes, an updated state shows what a
    state gathered from scratch shows."""
    vault = example_vault
    if not (vault / "05_ledger").exists():
        decided_vault(vault)
    settings = settings_for(vault, assist=True)
    paths = note_paths(vault)
    originals = {p: (vault / p).read_bytes() for p in paths}
    state, _ = gathered(settings)
    try:
        changed = []
        for index, (key, value) in edits:
            relative = paths[index % len(paths)]
            note = vault / relative
            if key == "touch":
                os.utime(note)
            elif key == "text":
                note.write_text(note.read_text(encoding="utf-8") + f"\n{value}\n", "utf-8")
            else:
                set_property(note, key, value)
            changed.append(relative)
        after = updated(settings, state, changed)
        assert after is not None
        assert after == gathered(settings)[1]
    finally:
        for relative, raw in originals.items():
            (vault / relative).write_bytes(raw)


# --- one read of each note: what validate's run makes for the dashboard -------------

SHAPES = st.sampled_from(
    [
        *((b"review_action: ", a.encode()) for a in (*REVIEW_ACTIONS, "APPROVED")),
        *(
            (b"review_state: ", s)
            for s in (b"NEW", b"APPLIED", b"PREVIEW_READY", b"PREVIEW_FAILED")
        ),
        (b"check_claim_frame: ", b"false"),
        (b"check_source_claim: ", b"true"),
        (b"body", b"\xff\xfe not UTF-8"),
        (b"body", b"<<<<<<< ours\nA\n=======\nB\n>>>>>>> theirs"),
        (b"body", b"a line\rended by a lone CR"),
    ]
)


def reshaped(raw: bytes, key: bytes, value: bytes) -> bytes:
    if key == b"body":
        return raw + b"\n" + value + b"\n"
    lines = raw.split(b"\n")
    index = next((i for i, line in enumerate(lines) if line.startswith(key)), None)
    if index is None:
        return raw
    lines[index] = key + value
    return b"\n".join(lines)


def examined(settings: Settings, paths: list[str]) -> dict[str, tuple[str, str, str]]:
    """The plain rule: what `vt apply`'s own first phase says of each note, read alone."""
    ctx = make_context(settings, assist=False)
    found = {}
    for path in paths:
        cand = examine(settings, ctx, path, explicit=False, assist=False)
        if cand is not None and not cand.skip:
            reason = cand.refuse or "; ".join(cand.problems)
            found[path] = (cand.claim_id or "", cand.review_action or "", reason)
    return found


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.integers(0, 5), SHAPES), min_size=1, max_size=5), st.booleans())
def test_the_answers_made_in_validate_s_run_are_apply_s_own(
    example_vault: Path, monkeypatch: pytest.MonkeyPatch, edits: list, pooled: bool
) -> None:
    """A cold gather asks apply's question of a note where validate parsed it (in a
    worker, on a large run): its answers and its quality numbers are what apply, and
    `vt stats`, say reading each note alone."""
    vault = example_vault
    if not (vault / "05_ledger").exists():
        decided_vault(vault)
    paths = note_paths(vault)
    originals = {p: (vault / p).read_bytes() for p in paths}
    if pooled:  # the worker processes of a large run, on the six notes
        monkeypatch.setattr("vault_tools.checks.file_checks.PARALLEL_THRESHOLD", 1)
    settings = settings_for(vault, workers=2 if pooled else 1, assist=True)
    try:
        for index, (key, value) in edits:
            note = vault / paths[index % len(paths)]
            note.write_bytes(reshaped(note.read_bytes(), key, value))
        shutil.rmtree(vault / ".vt", ignore_errors=True)
        state, _ = gathered(settings)
        to_record = sorted(p for p, entries in state.entries.items() if entries.to_record)
        assert state.verdicts == examined(settings, to_record)
        (vault / ".vt" / "stats-cache.marshal").unlink()
        assert state.quality == quality_lines(settings)  # every note read again
    finally:
        for relative, raw in originals.items():
            (vault / relative).write_bytes(raw)


# --- kept in .vt/ between runs -----------------------------------------------------


def test_a_kept_state_stands_for_the_vault_only_while_nothing_changed(
    example_vault: Path,
) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    first = report(settings)
    assert first.written and (vault / ".vt" / STATE_FILE).is_file()
    kept = load(settings)
    assert kept is not None
    with ClaimStore.open(settings) as store:
        store.catch_up()
        assert kept[0].dashboard(settings, store) == gathered(settings)[1]
    note = vault / CLAIMS / "DV1-0004.md"
    set_property(note, "review_action", "REJECT")
    with ClaimStore.open(settings) as store:
        store.catch_up()
        now = current_state(settings, store).dashboard(settings, store)
    assert now == gathered(settings)[1]
    assert report(settings).written  # the new decision is on the dashboard


def test_a_same_size_edit_with_its_mtime_put_back_is_seen(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    report(settings)
    note = vault / CLAIMS / "DV1-0004.md"
    info = note.stat()
    set_property(note, "review_action", "REJECT")
    before = note.read_bytes()
    report(settings)
    note.write_bytes(before.replace(b"REJECT", b"ACCEPT", 1))  # same size
    os.utime(note, ns=(info.st_atime_ns, note.stat().st_mtime_ns - 10**10))  # mtime back
    kept = load(settings)
    assert kept is not None
    assert f"{CLAIMS}/DV1-0004.md" in (look_changed(settings, kept[1]) or [])
    with ClaimStore.open(settings) as store:
        store.catch_up()
        assert current_state(settings, store).dashboard(settings, store) == gathered(settings)[1]


def look_changed(settings: Settings, snapshot: object) -> list[str] | None:
    from vault_tools.integrations.dashboard_state import changed_since

    assert hasattr(snapshot, "files")
    return changed_since(snapshot, look(settings))  # type: ignore[arg-type]


def test_a_torn_or_foreign_state_file_is_ignored(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    report(settings)
    path = vault / ".vt" / STATE_FILE
    whole = path.read_bytes()
    foreign = [
        marshal.dumps((1, ("k", 0, {}, []), ([], {}, {}, {}, [], (0, ""), "", [], [], []))),
        marshal.dumps((1, ("k", 0, {}, []), ({"a.md": "abc"},))),
        marshal.dumps([1, 2, 3]),
    ]
    for damaged in (whole[: len(whole) // 2], b"", b"\x00not marshal", whole[:7], *foreign):
        path.write_bytes(damaged)
        assert load(settings) is None
        with ClaimStore.open(settings) as store:
            store.catch_up()
            assert (
                current_state(settings, store).dashboard(settings, store) == gathered(settings)[1]
            )


def test_another_setting_is_another_state(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    report(settings_for(vault))
    report(settings_for(vault))  # the first one's snapshot had no dashboard note yet
    kept = load(settings_for(vault))
    assert kept is not None
    assert look_changed(settings_for(vault), kept[1]) is not None
    assert look_changed(settings_for(vault, assist=True), kept[1]) is None


# --- vt watch's: in memory ---------------------------------------------------------


def test_the_live_dashboard_follows_a_note_as_a_fresh_report_would(example_vault: Path) -> None:
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    live = LiveDashboard()
    live.refresh(settings)
    assert live.state is not None
    kept = live.state
    note = vault / CLAIMS / "DV1-0004.md"
    set_property(note, "review_action", "REJECT")
    assert live.refresh(settings, [f"{CLAIMS}/DV1-0004.md"])
    assert live.state is kept  # made again note by note, not gathered
    shown = (vault / "Review Dashboard.md").read_bytes()
    (vault / ".vt" / STATE_FILE).unlink()
    report(settings)
    assert (vault / "Review Dashboard.md").read_bytes() == shown


def test_a_note_that_only_mentions_claim_id_adds_nothing(example_vault: Path) -> None:
    """The dashboard's own notes quote finding messages ("claim_id is now …"): rewriting
    them must not make every refresh gather everything again."""
    vault = decided_vault(example_vault)
    settings = settings_for(vault)
    aside = vault / "Some note.md"
    aside.write_text("# Notes\n\nThe claim_id of a review note names it.\n", encoding="utf-8")
    state, _ = gathered(settings)
    aside.write_text("# Notes\n\nA claim_id is written in the frontmatter.\n", encoding="utf-8")
    assert updated(settings, state, ["Some note.md"]) == gathered(settings)[1]
    aside.write_text("---\nclaim_id: DV1-0004\n---\n# now a review note\n", encoding="utf-8")
    assert updated(settings, state, ["Some note.md"]) is None
