"""The ledger event rules have one source, schemas/ledger-event.schema.json: the code's
checks (the exact `event_problems`, its decision part `decision_problems`, and the fast
path `quick_ok` verify takes on every line) must agree with it on every event, valid or
not. Events are generated valid, then broken one way at a time."""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from vault_tools.ledger.events import (
    ALLOWED_FIELDS,
    CLAIM_KEYS,
    GENESIS,
    decision_problems,
    event_problems,
    quick_ok,
)
from vault_tools.vocabulary import (
    ACCEPT,
    CHECK_KEYS,
    LEDGER_ACTIONS,
    POLICY,
    POLICY_CLAIM_ID,
    REPAIR,
    REVERT,
)

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "schemas" / "ledger-event.schema.json").read_text(
        encoding="utf-8"
    )
)
VALIDATOR = Draft202012Validator(SCHEMA)


def schema_valid(ev: Any) -> bool:
    """The schema's verdict, and the two rules its description says it cannot express."""
    if not VALIDATOR.is_valid(ev):
        return False
    supersedes = ev["supersedes"]
    if isinstance(supersedes, list) and supersedes != sorted(supersedes):
        return False  # the heads are listed sorted ascending
    if "assist" in ev and ev["assist"] != sorted(ev["assist"]):
        return False  # the codes too
    # a JSON number with a zero fraction is an integer to JSON Schema; the line is written
    # (and hashed) with the integer's own spelling
    return type(ev["seq"]) is int and type(ev["v"]) is int


# ---------------------------------------------------------------- valid events

# every sha256 spelling, drawn as 32 bytes: a 64-character text costs Hypothesis a check of
# each character against the alphabet on every draw and replay
shas = st.binary(min_size=32, max_size=32).map(lambda b: "sha256:" + b.hex())
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
timestamps = st.tuples(
    st.integers(0, 9999),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
).map(lambda t: "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z".format(*t))
claims = st.fixed_dictionaries(
    {
        "atomic_claim": st.text(),
        "epistemic_mode": st.text(),
        "mapping_status": st.text(),
        "semantic_frame": st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    }
)


# built once: a strategy made inside a composite is made and validated again on every draw
actions = st.sampled_from(LEDGER_ACTIONS)
head_lists = st.lists(shas, min_size=2, max_size=4, unique=True)
names = st.text(min_size=1)
claim_ids = names.filter(lambda n: n != POLICY_CLAIM_ID)
principals = st.text(string.ascii_letters + "._-@", min_size=1, max_size=8)
signer_keys = st.sampled_from(["ssh-ed25519", "ssh-rsa"]).flatmap(
    lambda kind: st.binary(min_size=1, max_size=40).map(
        lambda b: f"{kind} {base64.b64encode(b).decode()}"
    )
)
policies = st.fixed_dictionaries(
    {
        "required": st.booleans(),
        "signers": st.lists(
            st.tuples(principals, signer_keys).map(list),
            min_size=1,
            max_size=3,
            unique_by=lambda s: (s[0], s[1]),
        ),
    }
)
checks_maps = st.dictionaries(st.sampled_from(CHECK_KEYS), st.booleans())
prevs = st.just(GENESIS) | shas
previews = st.none() | shas
seqs = st.integers(min_value=1)
comments = st.text()
signatures = st.binary(min_size=1, max_size=96).map(lambda b: base64.b64encode(b).decode())
date_times = st.sampled_from(
    ["2026-03-24T09:15:00Z", "2026-03-24T09:15:00.123+08:00", "1999-12-31T23:59:59-05:30"]
)
provenances = st.fixed_dictionaries(
    {},
    optional={
        "run": names,
        "model": names,
        "prompt_version": names,
        "extracted_at": date_times,
    },
).filter(bool)
assist_codes = st.lists(
    st.text("abz09", min_size=1, max_size=4).map(lambda w: f"assist-{w}"), unique=True
).map(sorted)
HEADS = "heads"  # stands for the drawn list of heads (no sha is spelt so)
supersedes_choices = st.none() | shas | st.just(HEADS)


@st.composite
def valid_events(draw: st.DrawFn) -> dict[str, Any]:
    action = draw(actions)
    heads = draw(head_lists)
    ev: dict[str, Any] = {
        "action": action,
        "actor": draw(names),
        "base": draw(shas),
        "checks": draw(checks_maps),
        "claim": draw(claims) if action in (ACCEPT, REPAIR) else None,
        "claim_id": draw(claim_ids),
        "comment": draw(comments),
        "hash": draw(shas),
        "id": draw(shas),
        "note": draw(names),
        "prev": draw(prevs),
        "preview": draw(previews),
        "seq": draw(seqs),
        "supersedes": draw(supersedes_choices),
        "ts": draw(timestamps),
        "v": 1,
    }
    if ev["supersedes"] == HEADS:
        ev["supersedes"] = sorted(heads)
    if action == REVERT:
        ev["reverts"] = draw(shas)
    if draw(st.booleans()):  # a signed event: an SSHSIG blob in base64
        ev["sig"] = draw(signatures)
    if action != REVERT and draw(st.booleans()):  # what a decision copies from its note
        for key, values in (
            ("provenance", provenances),
            ("imported_at", timestamps),
            ("assist", assist_codes),
        ):
            if draw(st.booleans()):
                ev[key] = draw(values)
    return ev


@st.composite
def valid_policy_events(draw: st.DrawFn) -> dict[str, Any]:
    """A POLICY event: the signing policy in the ledger (docs/signing.md)."""
    ev = draw(valid_events())
    for key in ("reverts", "provenance", "imported_at", "assist"):
        ev.pop(key, None)
    ev.update(action=POLICY, claim=None, claim_id=POLICY_CLAIM_ID, checks={}, preview=None)
    ev["policy"] = draw(policies)
    ev["sig"] = draw(signatures)
    return ev


# ---------------------------------------------------------------- broken events

bad_shas = st.sampled_from(
    [
        "sha256:" + "A" * 64,
        "sha256:" + "a" * 63,
        "sha256:" + "a" * 65,
        "a" * 64,
        "sha256:" + "a" * 64 + "\n",
        "sha1:" + "a" * 64,
        "sha256:" + "g" * 64,
        "",
        "sha256:" + "\u0661" * 64,
    ]
) | json_values.filter(lambda v: not isinstance(v, str))
bad_timestamps = st.sampled_from(
    [
        "2026-11-01T10:00:00Z\n",
        "2026-11-01 10:00:00Z",
        "2026-11-01T10:00:00",
        "2026-11-01T10:00:00+00:00",
        "\u0662\u0660\u0662\u0666-11-01T10:00:00Z",
        "26-11-01T10:00:00Z",
        "",
    ]
) | json_values.filter(lambda v: not isinstance(v, str))
bad_signatures = st.sampled_from(
    ["", "U1NIU0lH\n", "U1NI U0lH", "-----BEGIN SSH SIGNATURE-----", "U1NIU0lH===", "ü"]
) | json_values.filter(lambda v: not isinstance(v, str))
SHA_FIELDS = ("base", "hash", "id", "prev", "preview", "reverts", "supersedes")
STR_FIELDS = ("actor", "claim_id", "note", "comment")
breaks = st.sampled_from(
    [
        "drop",
        "wrong-type",
        "bad-sha",
        "extra",
        "bad-ts",
        "supersedes",
        "reverts",
        "claim",
        "checks",
        "numbers",
        "empty",
        "action",
        "sig",
        "policy",
        "record",
    ]
)
extra_keys = st.text(string.ascii_lowercase + "_", min_size=1, max_size=9).filter(
    lambda k: k not in ALLOWED_FIELDS
) | st.just("reverts")
valid_event = valid_events()


@st.composite
def broken_events(draw: st.DrawFn) -> dict[str, Any]:
    ev = draw(valid_event | valid_policy_events())
    kind = draw(breaks)
    if kind == "drop":
        del ev[draw(st.sampled_from(sorted(ev)))]
    elif kind == "wrong-type":
        ev[draw(st.sampled_from(sorted(ev)))] = draw(json_values)
    elif kind == "bad-sha":
        ev[draw(st.sampled_from(SHA_FIELDS))] = draw(bad_shas)
    elif kind == "extra":
        key = draw(extra_keys)
        ev[key] = draw(shas | json_values)
    elif kind == "bad-ts":
        ev["ts"] = draw(bad_timestamps)
    elif kind == "supersedes":
        heads = draw(st.lists(shas, min_size=1, max_size=4))
        ev["supersedes"] = draw(
            st.sampled_from([heads[:1], sorted(heads, reverse=True), heads + heads[:1], [], heads])
        )
    elif kind == "reverts":
        if ev["action"] == REVERT:
            del ev["reverts"]
        else:
            ev["reverts"] = draw(shas)
    elif kind == "claim":
        claim = dict(draw(claims)) if ev["claim"] is None else dict(ev["claim"])
        change = draw(st.sampled_from(["drop", "extra", "type", "swap"]))
        if change == "drop":
            del claim[draw(st.sampled_from(CLAIM_KEYS))]
        elif change == "extra":
            claim["entities"] = draw(json_values)
        elif change == "type":
            claim[draw(st.sampled_from(CLAIM_KEYS))] = draw(json_values)
        ev["claim"] = claim
    elif kind == "checks":
        ev["checks"] = {
            **ev["checks"],
            draw(st.sampled_from([*CHECK_KEYS, "check_other"])): draw(json_values),
        }
    elif kind == "numbers":
        field = draw(st.sampled_from(["seq", "v"]))
        ev[field] = draw(st.sampled_from([0, -1, 2, 1.0, 2.0, True, "1", None]))
    elif kind == "empty":
        ev[draw(st.sampled_from(STR_FIELDS))] = ""
    elif kind == "sig":
        ev["sig"] = draw(bad_signatures)
    elif kind == "policy":
        _break_policy(draw, ev)
    elif kind == "record":
        _break_record(draw, ev)
    else:
        ev["action"] = draw(st.sampled_from(["accept", "APPROVE", "", None, ["ACCEPT"]]))
    return ev


def _break_record(draw: st.DrawFn, ev: dict[str, Any]) -> None:
    """A field a decision copies from its note, malformed or on an event that is no
    decision."""
    change = draw(st.sampled_from(["provenance", "imported_at", "assist", "on-revert"]))
    if change == "provenance":
        ev["provenance"] = draw(
            st.sampled_from(
                [{}, {"run": ""}, {"run": 1}, {"other": "x"}, {"extracted_at": "2026-03-24"},
                 {"extracted_at": "2026-03-24T09:15:00Z\n"}, {"extracted_at": "yesterday"},
                 ["run"], "run-1"]
            )
        )  # fmt: skip
    elif change == "imported_at":
        ev["imported_at"] = draw(bad_timestamps)
    elif change == "assist":
        ev["assist"] = draw(
            st.sampled_from(
                [["assist-b", "assist-a"], ["assist-a", "assist-a"], ["mapping-mismatch"],
                 ["assist-a\n"], ["assist-A"], "assist-a", [1]]
            )
        )  # fmt: skip
    else:
        ev.pop("claim", None)
        ev.update(action=REVERT, claim=None, reverts=draw(shas))
        ev[draw(st.sampled_from(["provenance", "imported_at", "assist"]))] = draw(
            st.sampled_from([{"run": "r1"}, "2026-03-24T09:15:00Z", []])
        )


def _break_policy(draw: st.DrawFn, ev: dict[str, Any]) -> None:
    """A POLICY rule broken, or a policy given to an event of a claim."""
    change = draw(st.sampled_from(
        ["claim_id", "unsigned", "checks", "preview", "drop", "give", "field", "signer"]
    ))  # fmt: skip
    if change == "claim_id":
        ev["claim_id"] = draw(st.sampled_from([POLICY_CLAIM_ID, "c1", "(Policy)"]))
    elif change == "unsigned":
        ev.pop("sig", None)
    elif change == "checks":
        ev["checks"] = {CHECK_KEYS[0]: True}
    elif change == "preview":
        ev["preview"] = draw(shas)
    elif change == "drop":
        ev.pop("policy", None)
    elif change == "give":
        ev["policy"] = draw(policies)
    elif change == "field":
        policy = dict(draw(policies))
        policy[draw(st.sampled_from(["required", "signers", "extra"]))] = draw(json_values)
        ev["policy"] = policy
    else:
        bad = draw(st.sampled_from(
            [["al ice", "ssh-ed25519 AAAA"], ["a*", "ssh-ed25519 AAAA"], ["", "ssh-rsa AAAA"],
             ["alice", "ssh-dss AAAA"], ["alice", "ssh-ed25519 AAAA\n"], ["alice\n", "ssh-rsa AA"],
             ["alice"], "alice"]
        ))  # fmt: skip
        ev["policy"] = {"required": True, "signers": [bad]}


events = valid_events() | valid_policy_events() | broken_events()
SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def with_valid_envelope(ev: dict[str, Any]) -> dict[str, Any]:
    """The event with the fields `decision_problems` leaves to its caller made valid."""
    kept = {k: v for k, v in ev.items() if k in ALLOWED_FIELDS}
    return {
        **kept,
        "hash": "sha256:" + "1" * 64,
        "id": "sha256:" + "2" * 64,
        "prev": GENESIS,
        "seq": 1,
    }


# ---------------------------------------------------------------- the properties


@SETTINGS
@given(valid_policy_events())
def test_generated_policy_events_are_schema_valid(ev: dict[str, Any]) -> None:
    assert schema_valid(ev), list(VALIDATOR.iter_errors(ev))
    assert event_problems(ev) == []
    assert not quick_ok(ev)  # rare lines: the exact check is cheap enough


@SETTINGS
@given(valid_events())
def test_generated_valid_events_are_schema_valid_and_take_the_fast_path(ev: dict[str, Any]) -> None:
    assert schema_valid(ev), list(VALIDATOR.iter_errors(ev))
    assert quick_ok(ev)
    assert event_problems(ev) == []


@SETTINGS
@given(events)
@example({"action": "ACCEPT"})
def test_event_problems_agree_with_the_schema(ev: dict[str, Any]) -> None:
    assert (event_problems(ev) == []) == schema_valid(ev), (
        event_problems(ev),
        list(VALIDATOR.iter_errors(ev)),
    )


SHA0 = "sha256:" + "0" * 64
# an action of another JSON type, unhashable: the fast path once raised TypeError on it
LIST_ACTION = {
    "action": [], "actor": "0", "base": SHA0, "checks": {}, "claim": None, "claim_id": "0",
    "comment": "", "hash": SHA0, "id": SHA0, "note": "0", "prev": "0" * 64, "preview": None,
    "seq": 1, "supersedes": None, "ts": "0000-00-00T00:00:00Z", "v": 1, "reverts": SHA0,
}  # fmt: skip


@SETTINGS
@given(events)
@example(LIST_ACTION)
def test_the_fast_path_accepts_only_schema_valid_events(ev: dict[str, Any]) -> None:
    if quick_ok(ev):
        assert schema_valid(ev), list(VALIDATOR.iter_errors(ev))


@SETTINGS
@given(events)
def test_decision_problems_agree_with_the_schema(ev: dict[str, Any]) -> None:
    full = with_valid_envelope(ev)
    assert (decision_problems(ev) == []) == schema_valid(full), (
        decision_problems(ev),
        list(VALIDATOR.iter_errors(full)),
    )


def test_the_schema_says_what_it_cannot_express() -> None:
    """The sorted heads and integer spelling live in code; the schema says so."""
    assert "sorted ascending" in SCHEMA["properties"]["supersedes"]["description"]
    assert "1.0" in SCHEMA["description"]
