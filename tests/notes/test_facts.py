"""The facts kept per note for `vt status`, `vt report` and `vt entities` (notes/facts.py):
a kept fact is served only for the bytes it was made from; notes edited, added, removed
or renamed are seen; a torn or foreign file is ignored."""

from __future__ import annotations

import json
import marshal
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_vt, settings_for
from vault_tools.notes.facts import FACTS_FILE, NoteFacts, surveyed
from vault_tools.notes.identity import content_digest, read_with_stat
from vault_tools.notes.vault import list_vault

NOTE = "03_claims/DV1-0001.md"


def _make(relative: str, raw: bytes) -> tuple:
    return relative, raw.decode("utf-8", "replace")


def _unread(relative: str, exc: OSError) -> str:
    return f"unread {relative}"


def _survey(vault: Path) -> list:
    targets = list_vault(vault).inside()
    return surveyed(settings_for(vault), targets, "test", (_make, _unread))


def _truth(vault: Path) -> list:
    """What the files hold now, read without any kept fact."""
    return [
        (relative, _make(relative, (vault / relative).read_bytes()))
        for relative in list_vault(vault).inside()
    ]


def _status(vault: Path) -> dict:
    done = run_vt("status", "--json", vault=vault)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _facts_file(vault: Path, kind: str) -> Path:
    return vault / ".vt" / FACTS_FILE.format(kind=kind)


def test_a_kept_fact_is_served_only_for_its_bytes(example_vault: Path) -> None:
    _survey(example_vault)
    path = _facts_file(example_vault, "test")
    fmt, key, saved_ns, entries = marshal.loads(path.read_bytes())
    entries[NOTE] = (*entries[NOTE][:2], "planted")
    path.write_bytes(marshal.dumps((fmt, key, saved_ns, entries)))
    assert dict(_survey(example_vault))[NOTE] == "planted"  # served without a read
    note = example_vault / NOTE
    info = note.stat()
    raw = note.read_bytes()
    edited = raw.replace(b"review_action: APPROVE\n", b"review_action: APPROVX\n")
    assert len(edited) == len(raw)
    note.write_bytes(edited)
    os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))  # the same size and mtime
    assert _survey(example_vault) == _truth(example_vault)


def test_a_torn_or_foreign_file_is_ignored(example_vault: Path) -> None:
    _survey(example_vault)
    path = _facts_file(example_vault, "test")
    for data in (b"\x80garbage", path.read_bytes()[:-100], marshal.dumps((1, "x", 0, {}))):
        path.write_bytes(data)
        assert _survey(example_vault) == _truth(example_vault)


def test_a_state_folder_that_cannot_be_written_keeps_nothing(example_vault: Path) -> None:
    (example_vault / ".vt").write_text("a file, not a folder", "utf-8")
    assert _survey(example_vault) == _truth(example_vault)
    assert NoteFacts.open(settings_for(example_vault), "test").entries == {}


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["edit", "add", "remove", "rename"]), st.integers(0, 50)),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=OPERATIONS)
def test_any_edits_adds_removes_and_renames_are_seen(
    example_vault: Path, operations: list[tuple[str, int]]
) -> None:
    claims = example_vault / "03_claims"
    for what, which in operations:
        _survey(example_vault)  # facts kept before every change
        notes = sorted(claims.iterdir())
        note = notes[which % len(notes)]
        if what == "edit":  # same size, mtime restored: only the digest tells
            info = note.stat()
            raw = bytearray(note.read_bytes())
            raw[which % len(raw)] ^= 1
            note.write_bytes(bytes(raw))
            os.utime(note, ns=(info.st_atime_ns, info.st_mtime_ns))
        elif what == "add":
            (claims / f"added-{which}-{len(notes)}.md").write_bytes(note.read_bytes() + b"x")
        elif what == "remove" and len(notes) > 1:
            note.unlink()
        elif what == "rename":
            # the name's tail: renamed again and again, a name stays under NAME_MAX
            note.rename(claims / f"renamed-{which}-{note.name[-80:]}")
        assert _survey(example_vault) == _truth(example_vault)


def test_status_sees_a_note_edited_added_and_removed(example_vault: Path) -> None:
    before = _status(example_vault)
    note = example_vault / NOTE
    note.write_text(
        note.read_text("utf-8").replace("review_action: APPROVE", "review_action: REJECT"), "utf-8"
    )
    edited = _status(example_vault)
    assert edited["by_action"] != before["by_action"]
    (example_vault / "03_claims" / "Copy.md").write_bytes(note.read_bytes())
    assert _status(example_vault)["notes"] == before["notes"] + 1
    for kind in ("status",):
        assert _facts_file(example_vault, kind).is_file()
    (example_vault / "03_claims" / "Copy.md").unlink()
    assert _status(example_vault) == edited


def test_saved_facts_held_in_memory_are_read_as_the_file_says(example_vault: Path) -> None:
    """A caller that keeps the facts it saved (the dashboard's gather) trusts exactly
    what a run opening the file trusts: the same entries, under the same saved time."""
    settings = settings_for(example_vault)
    facts = NoteFacts.open(settings, "test")
    listed = list_vault(example_vault).inside()
    made = list(facts.survey(example_vault, listed, _make, _unread))
    facts.save()
    again = NoteFacts.open(settings, "test")
    assert (again.saved_ns, again.entries) == (facts.saved_ns, facts.entries)
    assert list(facts.survey(example_vault, listed, _make, _unread)) == made


def test_facts_kept_in_this_run_are_served_without_a_stat(example_vault: Path) -> None:
    """What `keep` was given (a validate run's reads, for the dashboard) is what this
    process's survey serves; a later process trusts it only by the stat signature and
    digest it was kept under."""
    settings = settings_for(example_vault)
    listed = list_vault(example_vault).inside()
    facts = NoteFacts.open(settings, "test")
    facts.keep(NOTE, (0, 0, 0, 0, 0), "not the digest of its bytes", "planted")
    assert dict(facts.survey(example_vault, listed, _make, _unread))[NOTE] == "planted"
    facts.save()
    assert _survey(example_vault) == _truth(example_vault)


def test_a_fact_marshal_cannot_keep_is_dropped_and_made_again(example_vault: Path) -> None:
    settings = settings_for(example_vault)
    listed = list_vault(example_vault).inside()
    facts = NoteFacts.open(settings, "test")
    for relative, fact in _truth(example_vault):
        raw, signature = read_with_stat(example_vault / relative)
        facts.keep(relative, signature, content_digest(raw), fact)
    facts.keep(NOTE, (0, 0, 0, 0, 0), "", {"a generator": iter(())})  # no marshal value
    facts.save()
    _, _, _, entries = marshal.loads(_facts_file(example_vault, "test").read_bytes())
    assert NOTE not in entries and len(entries) == len(listed) - 1
    assert list(facts.survey(example_vault, listed, _make, _unread)) == _truth(example_vault)
