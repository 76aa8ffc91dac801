"""The ledger's events: canonical JSON, decision ids, line hashes, and the rules a line
must follow (docs/ledger.md; the rules mirror schemas/ledger-event.schema.json).

Every line is one canonical JSON event. `id` names the decision (stable across merges),
`hash`/`prev`/`seq` chain the lines.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable
from typing import Any, TypeGuard

from vault_tools.vocabulary import (
    ACCEPT,
    CHECK_KEYS,
    LEDGER_ACTIONS,
    POLICY,
    POLICY_CLAIM_ID,
    REJECT,
    REPAIR,
    REVERT,
)

CLAIM_KEYS = ("atomic_claim", "epistemic_mode", "mapping_status", "semantic_frame")
GENESIS = "0" * 64  # `prev` of the first line
VERSION = 1
# `sig` signs the decision (signatures.py); it is no part of what it signs
NOT_IN_ID = ("id", "seq", "prev", "hash", "ts", "sig")
DECISION_FIELDS = (
    "action", "actor", "base", "checks", "claim", "claim_id", "comment", "note",
    "preview", "supersedes", "ts", "v",
)  # fmt: skip
EVENT_FIELDS = frozenset(DECISION_FIELDS) | {"id", "seq", "prev", "hash"}
# `reverts`: REVERT only; `sig`: an event signed by its recorder (signatures.py);
# `decided_by`: the reviewer, when a vault records for its reviewers and that is not the actor
# `policy`: POLICY only, the whole signing policy it puts in force (policy_problems)
# `provenance`, `imported_at`, `assist`: decisions only (ACCEPT, REJECT, REPAIR), copied
# from the note when it was decided; absent on events written before they existed
RECORD_FIELDS = ("assist", "imported_at", "provenance")
ALLOWED_FIELDS = EVENT_FIELDS | {"reverts", "sig", "decided_by", "policy", *RECORD_FIELDS}
ACTIONS = (*LEDGER_ACTIONS, POLICY)
# where the claim came from (schemas/pipeline-record.schema.json, `provenance`)
PROVENANCE_KEYS = ("run", "model", "prompt_version", "extracted_at")

_SHA = re.compile(r"sha256:[0-9a-f]{64}")
# ASCII digits, as the schema says (`\d` would take the digits of any script)
_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
# the SSHSIG blob of `ssh-keygen -Y sign`, in base64 without its armour lines
_SIG = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# a policy's signer: a principal named in full (no pattern, comma or space) and its key
_PRINCIPAL = re.compile(r"[^\s,*?!\"]+")
_SIGNER_KEY = re.compile(r"(ssh-ed25519|ssh-rsa) [A-Za-z0-9+/]+={0,2}")
# RFC 3339 date-time, as the pipeline writes it: a `T`, seconds, an optional fraction, Z
# or an offset
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})"
)
_ASSIST_CODE = re.compile(r"assist-[a-z0-9]+(?:-[a-z0-9]+)*")


# ---------------------------------------------------------------- ids and hashes


# one encoder, built once: json.dumps with non-default options builds a new one per call
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(obj: object) -> str:
    """The one serialisation of ledger JSON: sorted keys, no spaces, raw UTF-8.

    Identical to json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
    """
    return _ENCODER.encode(obj)


def load_json(data: str | bytes) -> Any:
    """`json.loads` of one ledger line. JSON nested deeper than the parser's recursion
    limit is bad JSON like any other (a ValueError), not a RecursionError: a line of
    100,000 `[` must be a finding of verify, not a crash of every ledger command."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None


def sha256_id(data: bytes) -> str:
    """`sha256:` and the hex digest of `data`: how an event's id and hash are written."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def decision_id(event: dict) -> str:
    """sha256 of the decision: every field but id, seq, prev, hash and ts."""
    return sha256_id(canonical({k: v for k, v in event.items() if k not in NOT_IN_ID}).encode())


def line_hash(event: dict) -> str:
    """sha256 of the canonical line without its `hash` field."""
    return sha256_id(canonical({k: v for k, v in event.items() if k != "hash"}).encode())


_clock: list = [None, ""]  # (the second, its text): a run stamps thousands of events


def utc_now() -> str:
    second = int(time.time())
    if _clock[0] != second:
        _clock[:] = [second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))]
    return _clock[1]


def with_hash(ev: dict) -> bytes:
    """Set `ev["hash"]` and return the event's line, serialising it only once: the hash
    field is spliced into the canonical text of the event without it, just before the
    top-level `id` (the last `,"id":"` in the text: nested objects all come earlier)."""
    text = canonical(ev)
    ev["hash"] = sha256_id(text.encode())
    i = text.rfind(',"id":"')
    return (text[:i] + f',"hash":"{ev["hash"]}"' + text[i:] + "\n").encode()


_encode_str = json.encoder.encode_basestring  # what the ensure_ascii=False encoder uses
_sha256 = hashlib.sha256


def _scalar(value: str | list[str] | None) -> str:
    if type(value) is list:  # a `supersedes` of several ids
        return canonical(value)
    return "null" if value is None else f'"{value}"'


def line_digests(body: bytes, ev: dict) -> tuple[str, str]:
    """(hash, id) of a canonical line without re-serialising the nested claim.

    In a canonical line the last `,"hash":"` is the top-level field (a quote inside a
    string value is always escaped, and the keys after `hash` hold scalars or objects
    whose keys the rules fix: `policy`, `provenance`). Everything
    before it is the same in the hash input, the id input and the line, so it is hashed
    once (the two digests fork from a copy) and only the short scalar tail is rebuilt for
    the id input. A wrong value here can only produce a mismatch, which is reported.
    """
    i = body.rfind(b',"hash":"')
    line_digest = _sha256(memoryview(body)[:i])
    id_digest = line_digest.copy()
    line_digest.update(memoryview(body)[i + 10 + len(ev["hash"]) :])
    # the tail values are checked scalars (sha or null, int), so only `note` needs encoding
    reverts = f',"reverts":"{ev["reverts"]}"' if "reverts" in ev else ""
    policy = f',"policy":{canonical(ev["policy"])}' if "policy" in ev else ""
    imported = f',"imported_at":"{ev["imported_at"]}"' if "imported_at" in ev else ""
    provenance = f',"provenance":{canonical(ev["provenance"])}' if "provenance" in ev else ""
    tail = (
        f'{imported},"note":{_encode_str(ev["note"])}{policy},"preview":{_scalar(ev["preview"])}'
        f'{provenance}{reverts},"supersedes":{_scalar(ev["supersedes"])},"v":{ev["v"]}}}'
    )
    id_digest.update(tail.encode())
    return "sha256:" + line_digest.hexdigest(), "sha256:" + id_digest.hexdigest()


# ---------------------------------------------------------------- the rules


def is_timestamp(value: object) -> bool:
    """An event's `ts`: `YYYY-MM-DDTHH:MM:SSZ`."""
    return isinstance(value, str) and _TS.fullmatch(value) is not None


def is_sha(value: object) -> TypeGuard[str]:
    """Whether `value` is written as `sha256_id` writes a digest."""
    return isinstance(value, str) and _SHA.fullmatch(value) is not None


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _supersedes_ok(value: object) -> bool:
    """null, one event id, or a strictly sorted list of two or more (the heads an event
    settles: one id stays a string, so ledgers written before lists existed keep their ids)."""
    if value is None:
        return True
    if type(value) is str:
        return _SHA.fullmatch(value) is not None
    return (
        type(value) is list
        and len(value) >= 2
        and all(type(v) is str and _SHA.fullmatch(v) is not None for v in value)
        and all(a < b for a, b in zip(value, value[1:], strict=False))
    )


def superseded_ids(value: str | list[str] | None) -> tuple[str, ...]:
    """The event ids a `supersedes` value names."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def supersedes_value(ids: Iterable[str]) -> str | list[str] | None:
    """The `supersedes` of an event decided over these heads: null, one id, or the sorted
    list of several."""
    unique = sorted(set(ids))
    if not unique:
        return None
    return unique[0] if len(unique) == 1 else unique


def policy_problems(value: object) -> list[str]:
    """What is wrong with a POLICY event's `policy`: {"required": bool, "signers":
    [[principal, "ssh-ed25519 AAAA…"], …]}, at least one signer, none twice."""
    if not isinstance(value, dict) or value.keys() != {"required", "signers"}:
        return ["policy must be an object of exactly 'required' and 'signers'"]
    problems = [] if type(value["required"]) is bool else ["policy.required must be true/false"]
    signers = value["signers"]
    if not (
        type(signers) is list
        and signers
        and all(
            type(s) is list
            and len(s) == 2
            and type(s[0]) is str
            and _PRINCIPAL.fullmatch(s[0]) is not None
            and type(s[1]) is str
            and _SIGNER_KEY.fullmatch(s[1]) is not None
            for s in signers
        )
        and len({(s[0], s[1]) for s in signers}) == len(signers)
    ):
        problems.append(
            "policy.signers must list one or more distinct [principal, 'ssh-ed25519 <base64>']"
        )
    return problems


def is_date_time(value: object) -> bool:
    """An RFC 3339 date-time (`extracted_at`): `2026-03-24T09:15:00Z`, with an optional
    fraction of a second and Z or an offset."""
    return type(value) is str and _DATE_TIME.fullmatch(value) is not None


def provenance_problems(value: object) -> list[str]:
    """What is wrong with a `provenance` object: one or more of PROVENANCE_KEYS, each a
    non-empty string, `extracted_at` an RFC 3339 date-time."""
    if not isinstance(value, dict) or not value:
        return ["provenance must be an object of one or more of " + ", ".join(PROVENANCE_KEYS)]
    problems = [f"provenance.{k} is not allowed" for k in value if k not in PROVENANCE_KEYS]
    problems += [
        f"provenance.{k} must be a non-empty string"
        for k in PROVENANCE_KEYS
        if k in value and not (type(value[k]) is str and value[k])
    ]
    stamp = value.get("extracted_at")
    if type(stamp) is str and stamp and not is_date_time(stamp):
        problems.append("provenance.extracted_at must be an RFC 3339 date-time")
    return problems


def assist_ok(value: object) -> bool:
    """An event's `assist`: review-assist codes (`assist-…`), sorted ascending, each once;
    empty when the assist found nothing."""
    return (
        type(value) is list
        and all(type(v) is str and _ASSIST_CODE.fullmatch(v) is not None for v in value)
        and all(a < b for a, b in zip(value, value[1:], strict=False))
    )


def _record_problems(ev: dict) -> list[str]:
    """The rules of the fields a decision copies from its note (RECORD_FIELDS)."""
    present = [k for k in RECORD_FIELDS if k in ev]
    if not present:
        return []
    if ev["action"] not in (ACCEPT, REJECT, REPAIR):
        return [f"'{k}' is only allowed on ACCEPT, REJECT and REPAIR" for k in present]
    problems = provenance_problems(ev["provenance"]) if "provenance" in ev else []
    if "imported_at" in ev and not is_timestamp(ev["imported_at"]):
        problems.append("imported_at must be 'YYYY-MM-DDTHH:MM:SSZ'")
    if "assist" in ev and not assist_ok(ev["assist"]):
        problems.append("assist must list review-assist codes (assist-…), sorted, each once")
    return problems


def _policy_event_problems(ev: dict, will_sign: bool) -> list[str]:
    """The rules of a POLICY event beyond every event's, and the reserved claim_id."""
    if ev["action"] != POLICY:
        problems = ["'policy' is only allowed on POLICY"] if "policy" in ev else []
        if ev["claim_id"] == POLICY_CLAIM_ID:
            problems.append(f"claim_id {POLICY_CLAIM_ID!r} is only for POLICY events")
        return problems
    problems = [] if ev["claim_id"] == POLICY_CLAIM_ID else [
        f"claim_id must be {POLICY_CLAIM_ID!r} for POLICY"]  # fmt: skip
    if "sig" not in ev and not will_sign:
        problems.append("POLICY must be signed ('sig')")
    if ev["checks"] != {}:
        problems.append("checks must be {} for POLICY")
    if ev["preview"] is not None:
        problems.append("preview must be null for POLICY")
    if "policy" not in ev:
        return [*problems, "POLICY needs 'policy': the signing policy it puts in force"]
    return problems + policy_problems(ev["policy"])


def _claim_problems(action: str, claim: object) -> list[str]:
    if action in (REJECT, REVERT, POLICY):
        return [] if claim is None else [f"claim must be null for {action}"]
    if not isinstance(claim, dict):
        return [f"claim must be an object for {action}"]
    problems = [f"claim.{k} missing" for k in CLAIM_KEYS if k not in claim]
    problems += [f"claim.{k} is not allowed" for k in claim if k not in CLAIM_KEYS]
    for key in ("atomic_claim", "epistemic_mode", "mapping_status"):
        if key in claim and not _is_str(claim[key]):
            problems.append(f"claim.{key} must be a string")
    if "semantic_frame" in claim and not isinstance(claim["semantic_frame"], dict):
        problems.append("claim.semantic_frame must be an object")
    return problems


def decision_problems(ev: dict, will_sign: bool = False) -> list[str]:
    """Structural checks of the decision fields (mirrors schemas/ledger-event.schema.json);
    `will_sign`: its `sig` comes when it is appended (a POLICY event may lack it until then)."""
    problems = [f"field '{k}' missing" for k in DECISION_FIELDS if k not in ev]
    if problems:
        return problems
    action = ev["action"]
    if action not in ACTIONS:
        return [f"action {action!r} is not one of {', '.join(ACTIONS)}"]
    if not (_is_str(ev["actor"]) and ev["actor"]):
        problems.append("actor must be a non-empty string")
    if not (_is_str(ev["claim_id"]) and ev["claim_id"]):
        problems.append("claim_id must be a non-empty string")
    if not is_sha(ev["base"]):
        problems.append("base must be 'sha256:<64 hex>'")
    if ev["preview"] is not None and not is_sha(ev["preview"]):
        problems.append("preview must be 'sha256:<64 hex>' or null")
    if not _supersedes_ok(ev["supersedes"]):
        problems.append(
            "supersedes must be an event id, a sorted list of two or more event ids, or null"
        )
    if not (_is_str(ev["note"]) and ev["note"]):
        problems.append("note must be a non-empty vault-relative path")
    if not _is_str(ev["comment"]):
        problems.append("comment must be a string")
    checks = ev["checks"]
    if not isinstance(checks, dict) or any(
        k not in CHECK_KEYS or type(v) is not bool for k, v in checks.items()
    ):
        problems.append(f"checks must map {', '.join(CHECK_KEYS)} to true/false")
    if not (_is_str(ev["ts"]) and _TS.fullmatch(ev["ts"])):
        problems.append("ts must be 'YYYY-MM-DDTHH:MM:SSZ'")
    if ev["v"] != VERSION or type(ev["v"]) is not int:
        problems.append(f"v must be {VERSION}")
    if action == REVERT:
        if not is_sha(ev.get("reverts")):
            problems.append("REVERT needs 'reverts': the id of the reverted event")
    elif "reverts" in ev:
        problems.append("'reverts' is only allowed on REVERT")
    if "sig" in ev and not _sig_ok(ev["sig"]):
        problems.append("sig must be a base64 SSH signature")
    if "decided_by" in ev and not (_is_str(ev["decided_by"]) and ev["decided_by"]):
        problems.append("decided_by must be a non-empty string")
    problems += _claim_problems(action, ev["claim"])
    problems += _record_problems(ev)
    if type(ev["claim_id"]) is str and type(ev["checks"]) is dict:
        problems += _policy_event_problems(ev, will_sign)
    return problems


def event_problems(ev: object) -> list[str]:
    """Every structural problem of one complete ledger event (empty list: well formed)."""
    if not isinstance(ev, dict):
        return ["not a JSON object"]
    problems = decision_problems(ev)
    problems += [f"field '{k}' is not allowed" for k in ev if k not in ALLOWED_FIELDS]
    for key in ("id", "hash"):
        if key not in ev:
            problems.append(f"field '{key}' missing")
        elif not is_sha(ev[key]):
            problems.append(f"{key} must be 'sha256:<64 hex>'")
    if "prev" not in ev:
        problems.append("field 'prev' missing")
    elif not (ev["prev"] == GENESIS or is_sha(ev["prev"])):
        problems.append("prev must be 'sha256:<64 hex>' or 64 zeros")
    seq = ev.get("seq")
    if type(seq) is not int or seq < 1:
        problems.append("seq must be an integer ≥ 1")
    return problems


def _sig_ok(value: object) -> bool:
    return type(value) is str and _SIG.fullmatch(value) is not None


_KEYS = EVENT_FIELDS
_REVERT_KEYS = EVENT_FIELDS | {"reverts"}
_SIGNED_KEYS = _KEYS | {"sig"}
_SIGNED_REVERT_KEYS = _REVERT_KEYS | {"sig"}
_CLAIM_KEYS = frozenset(CLAIM_KEYS)

_CHECK_SET = frozenset(CHECK_KEYS)
_RECORD_SET = frozenset(RECORD_FIELDS)
_DECISIONS = frozenset({ACCEPT, REJECT, REPAIR})


def _sha_or_none(value: object) -> bool:
    return value is None or (type(value) is str and _SHA.fullmatch(value) is not None)


_BOOL_TYPE = frozenset({bool})
_sha_match = _SHA.fullmatch
_ts_match = _TS.fullmatch


# buys ~6% of a cold verify's and gate's CPU time over event_problems alone (paired runs)
def quick_ok(ev: object) -> bool:
    """True only for an event `event_problems` finds nothing wrong with (the schema's rules),
    checked as cheaply as possible: it runs once per line of every verify. False only
    means: run `event_problems` for the exact messages."""
    if type(ev) is not dict:
        return False
    action = ev.get("action")
    if type(action) is not str:  # a list is unhashable: never looked up in a set
        return False
    keys = ev.keys()
    if "sig" in ev:
        expected = _SIGNED_REVERT_KEYS if action == REVERT else _SIGNED_KEYS
        if not _sig_ok(ev["sig"]):
            return False
    else:
        expected = _REVERT_KEYS if action == REVERT else _KEYS
    # beside the usual keys, a decision may carry what it copied from its note
    if keys != expected and not (
        action in _DECISIONS
        and keys > expected
        and keys - expected <= _RECORD_SET
        and not _record_problems(ev)
    ):
        return False
    checks, claim, actor, claim_id = ev["checks"], ev["claim"], ev["actor"], ev["claim_id"]
    if action in (ACCEPT, REPAIR):
        # written out (no generator): this runs once per line
        if (
            type(claim) is not dict
            or claim.keys() != _CLAIM_KEYS
            or type(claim["semantic_frame"]) is not dict
            or type(claim["atomic_claim"]) is not str
            or type(claim["epistemic_mode"]) is not str
            or type(claim["mapping_status"]) is not str
        ):
            return False
    elif action not in LEDGER_ACTIONS or claim is not None:
        return False
    preview, supersedes, ts, base = ev["preview"], ev["supersedes"], ev["ts"], ev["base"]
    return (
        type(actor) is str
        and actor != ""
        and type(claim_id) is str
        and claim_id != ""
        and claim_id != POLICY_CLAIM_ID
        and type(ev["comment"]) is str
        and type(ev["note"]) is str
        and ev["note"] != ""
        and type(ev["seq"]) is int
        and ev["seq"] > 0
        and type(ev["v"]) is int
        and ev["v"] == VERSION
        and type(ev["hash"]) is str
        and _sha_match(ev["hash"]) is not None
        and type(ev["id"]) is str
        and _sha_match(ev["id"]) is not None
        and type(ev["prev"]) is str
        and (ev["prev"] == GENESIS or _sha_match(ev["prev"]) is not None)
        and type(ts) is str
        and _ts_match(ts) is not None
        and type(base) is str
        and _sha_match(base) is not None
        and (preview is None or (type(preview) is str and _sha_match(preview) is not None))
        and (supersedes is None
             or (type(supersedes) is str and _sha_match(supersedes) is not None)
             or _supersedes_ok(supersedes))
        and (action != REVERT or _sha_or_none(ev["reverts"]) and ev["reverts"] is not None)
        and type(checks) is dict
        and checks.keys() <= _CHECK_SET
        and _BOOL_TYPE.issuperset(map(type, checks.values()))
    )  # fmt: skip
