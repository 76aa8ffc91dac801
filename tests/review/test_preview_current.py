""" "Is this preview current" has one answer, `fingerprint.preview_current`: vt apply
and vt status (whose report the dashboard shows) agree with it on every kind of note
(current, drafts edited since, an empty `vt_preview_hash`, a hash of nothing), and no
module compares a recorded fingerprint of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import example_context
from tests.review.test_status import SA, note_of, replace_in, run, set_props
from vault_tools.config import load_settings
from vault_tools.review.candidates import DRAFTS_CHANGED, examine
from vault_tools.review.fingerprint import preview_current, preview_hash

PACKAGE = Path(__file__).resolve().parents[2] / "vault_tools"
EDIT = ("### V2 Atomic Claim Draft\n為了驗證", "### V2 Atomic Claim Draft\n為了快速驗證")


@pytest.mark.parametrize(
    ("case", "current"),
    [("previewed", True), ("edited", False), ("empty", False), ("other", False)],
)
def test_apply_and_status_agree(example_vault: Path, case: str, current: bool) -> None:
    recorded = preview_hash(note_of(example_vault, SA))
    if case == "empty":
        recorded = ""
    elif case == "other":
        recorded = "sha256:" + "0" * 64
    set_props(example_vault, SA, review_state="PREVIEW_READY", vt_preview_hash=recorded)
    if case == "edited":
        replace_in(example_vault, SA, *EDIT)
    replace_in(example_vault, SA, "review_action: REQUEST_REPAIR", "review_action: APPROVE_REPAIR")
    assert preview_current(note_of(example_vault, SA)) is current

    settings = load_settings(example_vault)
    candidate = examine(settings, example_context(), SA)
    assert candidate is not None
    assert (DRAFTS_CHANGED in candidate.problems) is (case in ("edited", "other"))
    refused = [p for p in candidate.problems if p == DRAFTS_CHANGED or "preview" in p]
    assert bool(refused) is not current

    # a stale preview is one recorded and no longer current; none recorded is not stale
    stale = not current and case != "empty"
    assert bool(run(example_vault).stale_previews) is stale


def test_a_note_without_drafts_has_no_current_preview(example_vault: Path) -> None:
    set_props(example_vault, SA, vt_preview_hash=preview_hash(note_of(example_vault, SA)))
    text = (example_vault / SA).read_text(encoding="utf-8")
    start, end = text.index("## ⑤ V2 Draft"), text.index("## ⑥ Human Review")
    (example_vault / SA).write_text(text[:start] + text[end:], encoding="utf-8")
    assert note_of(example_vault, SA).drafts is None
    assert preview_current(note_of(example_vault, SA)) is False


# the fingerprint is made in one place (preview) and compared in one (fingerprint.py)
_MADE = {"review/fingerprint.py", "review/preview.py"}
_PROPERTY_NAMED = {"review/fingerprint.py", "integrations/init.py"}  # init: its type


def test_no_module_compares_a_preview_of_its_own() -> None:
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if re.search(r"\bpreview_hash\(", code) and relative not in _MADE:
                copies.append(f"{relative}:{number}: {line.strip()}")
            if '"vt_preview_hash"' in code and relative not in _PROPERTY_NAMED:
                copies.append(f"{relative}:{number}: {line.strip()}")
    assert copies == [], "ask review.fingerprint.preview_current"
