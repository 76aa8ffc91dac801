"""The review vocabulary: the words a note, the ledger and git share with vt.

Every module that reads or writes one of these words imports it from here, so a word
cannot be spelt two ways or a list of them drift between two copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

# `review_action`: what the reviewer asks for
PENDING = "PENDING"
REQUEST_REPAIR = "REQUEST_REPAIR"
APPROVE_REPAIR = "APPROVE_REPAIR"
APPROVE = "APPROVE"
REJECT = "REJECT"
REVIEW_ACTIONS = (PENDING, REQUEST_REPAIR, APPROVE_REPAIR, APPROVE, REJECT)

# how a note whose review_action is absent, null or "" is counted and shown: it asks for
# nothing valid (vt validate reports it, vt apply refuses it, vt status lists it)
UNSET = "(unset)"


def review_action(properties: Mapping[str, object]) -> str:
    """The note's `review_action` as every command reads it: its text, "" when the
    property is absent, null or empty. "" is none of REVIEW_ACTIONS: it is never read as
    PENDING, which a reviewer writes out."""
    value = properties.get("review_action")
    return "" if value is None else str(value)


def review_state(properties: Mapping[str, object]) -> str:
    """The note's `review_state` as every command reads it: NEW when vt wrote none."""
    value = properties.get("review_state")
    return NEW if value is None or value == "" else str(value)


# `review_state`: what vt last did to the note
NEW = "NEW"  # a note that names none
PREVIEW_READY = "PREVIEW_READY"
PREVIEW_FAILED = "PREVIEW_FAILED"
APPLIED = "APPLIED"
REVIEW_STATES = (NEW, PREVIEW_READY, PREVIEW_FAILED, APPLIED)

# ledger `action`s
ACCEPT = "ACCEPT"
REPAIR = "REPAIR"
REVERT = "REVERT"
LEDGER_ACTIONS = (ACCEPT, REJECT, REPAIR, REVERT)
# the one ledger action that is no decision about a claim: the vault's signing policy
# (docs/signing.md), under a claim_id no note can have
POLICY = "POLICY"
POLICY_CLAIM_ID = "(policy)"
# review_action -> the ledger action it becomes
LEDGER_ACTION_OF = MappingProxyType({APPROVE: ACCEPT, REJECT: REJECT, APPROVE_REPAIR: REPAIR})

# a claim's status in the Claim Store, from the action of the event that decided it
ACCEPTED = "ACCEPTED"
REPAIRED = "REPAIRED"
REJECTED = "REJECTED"
REVERTED = "REVERTED"
CONFLICT = "CONFLICT"  # two heads of a merged ledger decided the claim differently
STATUS_BY_ACTION = MappingProxyType(
    {ACCEPT: ACCEPTED, REPAIR: REPAIRED, REJECT: REJECTED, REVERT: REVERTED}
)
STATUSES = (ACCEPTED, REPAIRED, REJECTED, REVERTED, CONFLICT)

# the reviewer's checkboxes, in the order the ledger's `checks` and the notes list them
CHECK_KEYS = (
    "check_source_claim",
    "check_claim_frame",
    "check_entity_mapping",
    "check_epistemic_mode",
)

# the reviewer's list of review-assist codes to silence for one note. Like every
# property outside `review_state` and `vt_*` (notes/owned_properties.py, is_owned_key)
# it is the reviewer's: vt reads it and never writes it
ASSIST_IGNORE = "assist_ignore"

# Where `vt import` keeps a pipeline record's `provenance` in the note, one vt-owned
# property a field (a flat text property is what Obsidian shows and edits best), and when
# it imported the note: apply copies them into each decision event (docs/note-format.md)
PROVENANCE_PROPERTIES = MappingProxyType(
    {
        "run": "vt_pipeline_run",
        "model": "vt_pipeline_model",
        "prompt_version": "vt_pipeline_prompt_version",
        "extracted_at": "vt_pipeline_extracted_at",
    }
)
IMPORTED_AT = "vt_imported_at"

# git's conflict markers (`|||||||` opens the base section of a diff3 conflict)
BASE_MARKER = b"|||||||"
CONFLICT_MARKERS = (b"<<<<<<<", BASE_MARKER, b"=======", b">>>>>>>")


def conflict_marker(line: bytes) -> bytes | None:
    """The git conflict marker `line` (without its `\\n`) starts with, else None.

    Git writes a marker as seven characters, then a space and a label or nothing; a line
    merely starting with seven `=` (a JSON string cannot) is not one."""
    marker = line[:7]
    if marker in CONFLICT_MARKERS and line[7:8] in (b"", b" ", b"\r", b"\n"):
        return marker
    return None
