"""Claim Store: projection of the ledger, incremental catch-up vs rebuild, statuses, edges."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_vt
from vault_tools.config import Settings
from vault_tools.errors import IntegrityError
from vault_tools.ledger.append import Ledger
from vault_tools.ledger.merge import merge_ledgers
from vault_tools.store.claims import ClaimStore
from vault_tools.store.refresh import refresh
from vault_tools.vocabulary import CHECK_KEYS

BASE = "sha256:" + "ab" * 32


def v1_claim(
    claim_id: str, targets: tuple[str, ...] = ("Prefill", "Decode"), text: str | None = None
) -> dict:
    """A claim dict as a review note's V1 gives it (SA260324R-0125's shape)."""
    return {
        "atomic_claim": text or f"main model 只需要一次 warm prefill（{claim_id}）。",
        "epistemic_mode": "ASSERTED",
        "mapping_status": "PARTIAL",
        "semantic_frame": {
            "comparison_expression": "一次 warm prefill 的 latency cost 約等於一次 decode step。",
            "entities": [{"id": f"04_knowledge_base/{t}", "label": t.lower()} for t in targets],
            "frame_type": "COMPARISON",
            "metric": "LATENCY_COST",
            "operator": "APPROX_EQUAL",
            "qualifiers": {
                "condition_text": "用於驗證 draft token",
                "numeric_mentions": ["1"],
                "temporal_mentions": [],
            },
        },
    }


def decision(
    claim_id: str, action: str = "ACCEPT", claim: dict | None = None, **extra: object
) -> dict:
    """A decision as `vt apply` makes it (supersedes filled in by the ledger)."""
    if action in ("ACCEPT", "REPAIR") and claim is None:
        claim = v1_claim(claim_id)
    d = {
        "action": action,
        "actor": "ann",
        "base": BASE,
        "checks": dict.fromkeys(CHECK_KEYS, True),
        "claim": claim if action in ("ACCEPT", "REPAIR") else None,
        "claim_id": claim_id,
        "comment": "",
        "note": f"03_claims/{claim_id}.md",
        "preview": "sha256:" + "cd" * 32 if action == "REPAIR" else None,
    }
    d.update(extra)
    return d


def vault_settings(vault: Path) -> Settings:
    vault.mkdir(parents=True, exist_ok=True)
    return Settings(vault=vault)


def ledger_for(s: Settings) -> Ledger:
    return Ledger(s.ledger_path, s.state_dir)


def dump(s: Settings) -> dict:
    with ClaimStore.open(s) as store:
        return store.dump()


@pytest.fixture()
def cfg(tmp_path: Path) -> Settings:
    return vault_settings(tmp_path / "vault")


def test_empty_vault_has_an_empty_store(cfg: Settings) -> None:
    with ClaimStore.open(cfg) as store:
        caught = store.catch_up()
        assert caught.new_events == 0
        assert store.status_counts() == {}
        assert store.claim("X") is None
        assert store.history("X") == []
        assert store.head() == (0, "0" * 64)
        assert store.catch_up().rebuilt is False


def test_projection_of_claims_events_and_edges(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A"), decision("B", "REJECT")])
    with ClaimStore.open(cfg) as store:
        caught = store.catch_up()
        assert (caught.new_events, caught.rebuilt) == (2, True)
    with ClaimStore.open(cfg) as store:
        a = store.claim("A")
        assert a is not None and a.status == "ACCEPTED"
        assert a.claim == v1_claim("A") and a.note == "03_claims/A.md"
        b = store.claim("B")
        assert b is not None and (b.status, b.claim) == ("REJECTED", None)
        assert store.status_counts() == {"ACCEPTED": 1, "REJECTED": 1}
        assert [e["action"] for e in store.history("A")] == ["ACCEPT"]
        assert store.edges() == [
            (
                "A",
                "04_knowledge_base/decode",
                "04_knowledge_base/Decode",
                "comparison_entity_1",
                "decode",
            ),
            (
                "A",
                "04_knowledge_base/prefill",
                "04_knowledge_base/Prefill",
                "comparison_entity_0",
                "prefill",
            ),
        ]
        assert store.accepted_by_entity() == {
            "04_knowledge_base/Decode.md": ["A"],
            "04_knowledge_base/Prefill.md": ["A"],
        }
        assert store.accepted_counts() == {
            "04_knowledge_base/Decode.md": 1,
            "04_knowledge_base/Prefill.md": 1,
        }


def test_catch_up_is_incremental_after_appends(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A")])
    with ClaimStore.open(cfg) as store:
        assert store.catch_up().rebuilt is True
        ledger.append([decision("A", "REJECT"), decision("C")])
        caught = store.catch_up()
        assert (caught.new_events, caught.rebuilt) == (2, False)
        assert store.catch_up() == type(caught)(0, False)
        assert store.claim("A").status == "REJECTED"  # type: ignore[union-attr]
        assert [e["seq"] for e in store.history("A")] == [1, 2]
        assert store.accepted_by_entity() == {
            "04_knowledge_base/Decode.md": ["C"],
            "04_knowledge_base/Prefill.md": ["C"],
        }
        incremental = store.dump()
        assert store.rebuild() == 3
        assert store.dump() == incremental


def _two_branches(cfg: Settings) -> tuple[bytes, bytes, bytes]:
    """(base, ours, theirs): both branches decided on claim A after the common base."""
    ledger = ledger_for(cfg)
    ledger.append([decision("A")])
    base = ledger.path.read_bytes()
    ledger.append([decision("B"), decision("A", "REJECT")])
    other = vault_settings(cfg.vault.parent / "other")
    other_ledger = ledger_for(other)
    other_ledger.path.parent.mkdir(parents=True)
    other_ledger.path.write_bytes(base)
    other_ledger.append([decision("C"), decision("A", "REPAIR", comment="theirs")])
    return base, ledger.path.read_bytes(), other_ledger.path.read_bytes()


@pytest.mark.parametrize("ours_first", [True, False])
def test_catch_up_after_a_merge(cfg: Settings, ours_first: bool) -> None:
    base, ours, theirs = _two_branches(cfg)
    with ClaimStore.open(cfg) as store:
        store.catch_up()
    # ours first: our lines stay where they were and theirs are appended (incremental);
    # theirs first: our lines were re-chained (new seq/prev/hash), so the store rebuilds
    merged = merge_ledgers(base, ours, theirs) if ours_first else merge_ledgers(base, theirs, ours)
    ledger_for(cfg).path.write_bytes(merged)
    with ClaimStore.open(cfg) as store:
        caught = store.catch_up()
        assert caught.rebuilt is not ours_first
        assert caught.new_events == (2 if ours_first else 5)
        # both branches superseded A's ACCEPT: a conflict until a decision after the merge
        assert store.conflicts() == ["A"]
        assert store.claim("A").status == "CONFLICT"  # type: ignore[union-attr]
        assert "A" not in {cid for cids in store.accepted_by_entity().values() for cid in cids}
        assert store.status_counts() == {"ACCEPTED": 2, "CONFLICT": 1}
        after = store.dump()
        store.rebuild()
        assert store.dump() == after


def test_conflict_is_cleared_by_a_later_decision(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    first = ledger.append([decision("A")])[0]
    # two decisions superseding the same event: what a merge of two branches leaves
    ledger.append(
        [
            decision("A", "REJECT", supersedes=first["id"]),
            decision("A", "REPAIR", supersedes=first["id"]),
        ]
    )
    with ClaimStore.open(cfg) as store:
        store.catch_up()
        assert store.conflicts() == ["A"]
        assert store.status_counts() == {"CONFLICT": 1}
        heads = sorted(ev["id"] for ev in store.heads("A"))
        assert len(heads) == 2 and {k: sorted(v) for k, v in store.forked().items()} == {"A": heads}
        ledger.append([decision("A", comment="settled after the merge", supersedes=heads)])
        assert store.catch_up().rebuilt is False
        assert store.conflicts() == []
        assert store.claim("A").status == "ACCEPTED"  # type: ignore[union-attr]


def test_revert_of_the_accepted_event(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    accepted = ledger.append([decision("A")])[0]
    with ClaimStore.open(cfg) as store:
        store.catch_up()
        assert store.accepted_by_entity()
        ledger.append([decision("A", "REVERT", reverts=accepted["id"])])
        store.catch_up()
        record = store.claim("A")
        assert record is not None and (record.status, record.claim) == ("REVERTED", None)
        assert store.accepted_by_entity() == {}
        assert [e["action"] for e in store.history("A")] == ["ACCEPT", "REVERT"]
        assert store.history("A")[1]["reverts"] == accepted["id"]


def test_repair_replaces_the_accepted_version_and_edges(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A")])
    v2 = v1_claim("A", targets=("Prefill", "KV Cache"), text="修正後的 claim")
    ledger.append([decision("A", "REPAIR", claim=v2)])
    with ClaimStore.open(cfg) as store:
        store.catch_up()
        record = store.claim("A")
        assert record is not None and (record.status, record.claim) == ("REPAIRED", v2)
        assert sorted(store.accepted_by_entity()) == [
            "04_knowledge_base/KV Cache.md",
            "04_knowledge_base/Prefill.md",
        ]


def test_targets_naming_one_note_are_grouped(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append(
        [
            decision("A", claim=v1_claim("A", targets=("Prefill",))),
            decision("B", claim=v1_claim("B", targets=("prefill",))),
        ]
    )
    with ClaimStore.open(cfg) as store:
        store.catch_up()
        assert store.accepted_by_entity() == {"04_knowledge_base/Prefill.md": ["A", "B"]}


def test_a_shrunken_ledger_is_refused_and_the_store_kept(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A"), decision("B")])
    with ClaimStore.open(cfg) as store:
        store.catch_up()
    first_line = ledger.path.read_bytes().splitlines(keepends=True)[0]
    ledger.path.write_bytes(first_line)
    for project in (ClaimStore.catch_up, ClaimStore.rebuild):
        with ClaimStore.open(cfg) as store:
            with pytest.raises(IntegrityError, match="holds 1 event, but 2 were") as exc:
                project(store)
            assert exc.value.line == 2  # the first line that is gone
            assert store.claim("B") is not None


def test_torn_tail_is_not_projected(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A")])
    with open(ledger.path, "ab") as f:
        f.write(b'{"action":"ACC')
    with ClaimStore.open(cfg) as store:
        assert store.catch_up().new_events == 1
        assert store.catch_up().new_events == 0


def test_broken_chain_is_an_integrity_error(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A"), decision("B")])
    lines = ledger.path.read_bytes().splitlines(keepends=True)
    ledger.path.write_bytes(lines[1] + lines[0])
    with ClaimStore.open(cfg) as store, pytest.raises(IntegrityError, match="changed since") as exc:
        store.catch_up()
    assert exc.value.line == 1


def test_a_store_from_an_older_schema_is_rebuilt(cfg: Settings) -> None:
    ledger_for(cfg).append([decision("A")])
    with ClaimStore.open(cfg) as store:
        store.catch_up()
    conn = sqlite3.connect(cfg.state_dir / "claims.sqlite")
    conn.execute("UPDATE meta SET value='0' WHERE key='schema'")
    conn.commit()
    conn.close()
    with ClaimStore.open(cfg) as store:
        assert store.claim("A") is None  # cleared
        assert store.catch_up().rebuilt is True
        assert store.claim("A") is not None


def test_refresh_catches_up_and_reports(cfg: Settings) -> None:
    ledger_for(cfg).append([decision("A")])
    result = refresh(cfg)
    assert (result.catch_up.new_events, result.catch_up.rebuilt) == (1, True)
    assert result.kb_notes_written == []  # no knowledge-base notes in this vault


# --- incremental catch-up equals one rebuild, for generated histories -----------------

CLAIMS = ("A", "B")
step = st.tuples(
    st.sampled_from(CLAIMS),
    st.sampled_from(("ACCEPT", "REJECT", "REPAIR", "REVERT", "REVERT_FIRST", "FORK")),
    st.sampled_from((("Prefill",), ("Decode", "Prefill"), ("KV Cache",))),
)


def _append_steps(txn, steps: list, tag: str, first: dict[str, str]) -> list[dict]:
    """Append generated steps; FORK appends two decisions superseding one event, as two
    branches merged together leave them; REVERT_FIRST reverts the claim's first event."""
    out = []
    for n, (cid, action, targets) in enumerate(steps):
        claim = v1_claim(cid, targets, text=f"claim {cid} {tag} {n}")
        latest = txn.latest(cid)
        comment = f"{tag}/{n}"
        if action == "REVERT_FIRST":
            if cid in first:
                out.append(txn.append(decision(cid, "REVERT", reverts=first[cid], comment=comment)))
        elif action == "REVERT":
            if latest is not None:
                out.append(
                    txn.append(decision(cid, "REVERT", reverts=latest["id"], comment=comment))
                )
        elif action == "FORK" and latest is not None:
            for kind in ("REJECT", "ACCEPT"):
                out.append(
                    txn.append(
                        decision(
                            cid,
                            kind,
                            claim=claim,
                            supersedes=latest["id"],
                            comment=f"{comment}/{kind}",
                        )
                    )
                )
        else:
            kind = "ACCEPT" if action == "FORK" else action
            out.append(txn.append(decision(cid, kind, claim=claim, comment=comment)))
        if out:
            first.setdefault(out[-1]["claim_id"], out[-1]["id"])
    return out


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(step, min_size=1, max_size=6), min_size=1, max_size=5))
def test_incremental_catch_up_equals_rebuild(tmp_path_factory, batches: list) -> None:
    root = tmp_path_factory.mktemp("gen")
    incremental, rebuilt = vault_settings(root / "inc"), vault_settings(root / "reb")
    ledger = ledger_for(incremental)
    first: dict[str, str] = {}
    for n, batch in enumerate(batches):
        with ledger.transaction() as txn:
            events = _append_steps(txn, batch, f"b{n}", first)
        with ClaimStore.open(incremental) as store:
            caught = store.catch_up()
            assert caught.rebuilt is (n == 0)
            assert caught.new_events == len(events)
    ledger_for(rebuilt).path.parent.mkdir(parents=True)
    ledger_for(rebuilt).path.write_bytes(ledger.path.read_bytes())
    with ClaimStore.open(rebuilt) as store:
        store.rebuild()
        expected = store.dump()
        store.rebuild()
        assert store.dump() == expected  # two rebuilds: identical
    got = dump(incremental)
    # the meta rows name the ledger file, which differs between the two vaults
    got["meta"] = [r for r in got["meta"] if r[0] != "ledger"]
    expected["meta"] = [r for r in expected["meta"] if r[0] != "ledger"]
    assert got == expected


def test_history_rows_hold_the_canonical_event_line(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A")])
    line = ledger.path.read_bytes().decode().rstrip("\n")
    with ClaimStore.open(cfg) as store:
        store.catch_up()
        assert store.history("A") == [json.loads(line)]
        (row,) = store.dump()["events"]
        assert row[-1] == line


def test_a_store_of_the_previous_schema_is_rebuilt(cfg: Settings) -> None:
    ledger = ledger_for(cfg)
    ledger.append([decision("A"), decision("B", "REJECT")])
    cfg.state_dir.mkdir(parents=True, exist_ok=True)
    old = sqlite3.connect(cfg.state_dir / "claims.sqlite")
    # schema 1: no claims.heads
    old.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE claims (claim_id TEXT PRIMARY KEY, status TEXT NOT NULL, "
        "event_id TEXT NOT NULL, claim TEXT, note TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
    )
    old.close()
    with ClaimStore.open(cfg) as store:
        assert store.catch_up().rebuilt
        assert store.status_counts() == {"ACCEPTED": 1, "REJECTED": 1}
        assert store.forked() == {}


# ---------------------------------------------------------------- the seal

# edits made to the store with sqlite3, as a user or a script could
STORE_EDITS = {
    "status": ["UPDATE claims SET status='ACCEPTED'"],
    "claim": ["UPDATE claims SET claim=NULL"],
    "edges": ["DELETE FROM edges"],
    "event": ["UPDATE events SET actor='mallory'"],
    "mark": ["UPDATE meta SET value='1' WHERE key='seq'"],
    "trigger-dropped": [
        "DROP TRIGGER vt_seal_claims_update",
        "UPDATE claims SET status='ACCEPTED'",
    ],
}
READERS = {
    "status": ("status", "--json"),
    "export": ("export",),
    "history": ("history", "DV1-0002", "--json"),
    "report": ("report", "--json"),
    "entities": ("entities", "--json"),
}


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example vault with its two decisions applied: DV1-0001 ACCEPTED, DV1-0002
    REJECTED, each command's output recorded before any edit."""
    from tests.conftest import copy_example_vault

    vault = copy_example_vault(tmp_path_factory.mktemp("sealed") / "vault")
    assert run_vt("apply", vault=vault).returncode == 0
    return vault


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("edit", sorted(STORE_EDITS))
def test_a_store_edited_by_hand_is_rebuilt_before_it_is_shown(
    decided: Path, tmp_path: Path, edit: str, reader: str
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(decided, vault)
    run_vt(*READERS[reader], vault=vault)  # the dashboard written once: the second run writes none
    truth = run_vt(*READERS[reader], vault=vault)
    assert truth.returncode == 0, truth.stderr
    conn = sqlite3.connect(vault / ".vt" / "claims.sqlite")
    for statement in STORE_EDITS[edit]:
        conn.execute(statement)
    conn.commit()
    conn.close()
    shown = run_vt(*READERS[reader], vault=vault)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == truth.stdout
    assert "mallory" not in shown.stdout
    # and the store holds the ledger's projection again, sealed
    with ClaimStore.open(vault_settings(vault)) as store:
        assert store.claim("DV1-0002").status == "REJECTED"  # type: ignore[union-attr]
        assert store._sealed()


def test_the_seal_costs_no_rebuild_when_nothing_else_wrote(cfg: Settings) -> None:
    ledger_for(cfg).append([decision("C1")])
    with ClaimStore.open(cfg) as store:
        assert store.catch_up().rebuilt
        assert not store.catch_up().rebuilt
        ledger_for(cfg).append([decision("C2")])
        caught = store.catch_up()
        assert (caught.rebuilt, caught.new_events) == (False, 1)
        store.conn.execute("UPDATE claims SET status='REJECTED' WHERE claim_id='C1'")
        assert store.catch_up().rebuilt
        assert store.claim("C1").status == "ACCEPTED"  # type: ignore[union-attr]
