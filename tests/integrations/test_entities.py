"""vt entities: the knowledge base's use, missing targets, label conflicts, new notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import DEFAULT_FRAME, build_vault, copy_example_vault, render_note, run_vt
from vault_tools.config import load_settings
from vault_tools.errors import RefusedError, UsageError
from vault_tools.integrations.entities import FORBIDDEN, new_entity, render_entity, survey
from vault_tools.notes import frontmatter


def frame_for(*pairs: tuple[str, str]) -> dict:
    return {
        **DEFAULT_FRAME,
        "entities": [{"id": f"04_knowledge_base/{t}", "label": label} for label, t in pairs],
    }


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return build_vault(
        tmp_path / "vault",
        {
            "A.md": render_note(
                claim_id="A", frame=frame_for(("prefill", "Prefill"), ("decode", "Decode"))
            ),
            "B.md": render_note(
                claim_id="B", frame=frame_for(("prefill", "Decode"), ("ghost", "Ghost Entity"))
            ),
            "C.md": render_note(
                claim_id="C", frame=frame_for(("Prefill", "Prefill"), ("ghost", "Ghost Entity"))
            ),
        },
    )


def test_counts_notes_per_entity_missing_targets_and_label_conflicts(vault: Path) -> None:
    report = survey(load_settings(vault))
    assert report.notes == 3
    uses = {e.title: e.notes for e in report.entities}
    assert uses["Prefill"] == ["03_claims/A.md", "03_claims/C.md"]
    assert uses["Decode"] == ["03_claims/A.md", "03_claims/B.md"]
    assert uses["LPU"] == []
    [missing] = report.missing
    assert (missing.target, missing.status) == ("04_knowledge_base/Ghost Entity", "missing")
    assert missing.notes == ["03_claims/B.md", "03_claims/C.md"]
    [conflict] = report.conflicts
    assert conflict.label == "prefill"
    assert conflict.targets == {
        "04_knowledge_base/Decode.md": ["03_claims/B.md"],
        "04_knowledge_base/Prefill.md": ["03_claims/A.md", "03_claims/C.md"],
    }


def test_accepted_counts_come_from_the_caller_in_any_target_form(vault: Path) -> None:
    report = survey(
        load_settings(vault),
        accepted={
            "[[04_knowledge_base/Prefill]]": 2,
            "04_knowledge_base/decode": 1,
            "04_knowledge_base/Nope": 5,
        },
    )
    accepted = {e.title: e.accepted for e in report.entities}
    assert accepted["Prefill"] == 2 and accepted["Decode"] == 1 and accepted["LPU"] == 0


def test_example_vault(tmp_path: Path) -> None:
    report = survey(load_settings(copy_example_vault(tmp_path / "v")))
    used = {e.title: len(e.notes) for e in report.entities}
    assert used["IC design verification"] == 1 and used["Speculative Decoding"] == 1
    assert report.missing == [] and report.conflicts == []
    drafter = next(e for e in report.entities if e.title == "Draft Model")
    assert "drafter" in drafter.aliases


# --- vt entities new ------------------------------------------------------------------------


def test_new_entity_writes_the_note_and_refuses_to_overwrite(vault: Path) -> None:
    settings_ = load_settings(vault)
    result = new_entity(settings_, "Tree Size", ["tree size", "draft tree: size"])
    assert result.written and result.path == "04_knowledge_base/Tree Size.md"
    text = (vault / result.path).read_text(encoding="utf-8")
    assert text == (
        '---\naliases: [tree size, "draft tree: size"]\ntags: [entity]\n---\n# Tree Size\n'
    )
    with pytest.raises(RefusedError):
        new_entity(settings_, "Tree Size")
    with pytest.raises(RefusedError):
        new_entity(settings_, "prefill")  # Obsidian resolves names case-insensitively
    assert (vault / result.path).read_text(encoding="utf-8") == text


def test_new_entity_dry_run_and_similar_names(vault: Path) -> None:
    result = new_entity(load_settings(vault), "Verify Step", ["verification"], dry_run=True)
    assert not result.written and not (vault / result.path).exists()
    assert result.similar == ["04_knowledge_base/Draft Verification.md"]


@pytest.mark.parametrize(
    "name",
    [
        "a/b",
        "..",
        "../x",
        "x\\y",
        ".hidden",
        " padded",
        "",
        "a\nb",
        "end.",
        *[f"x{c}y" for c in FORBIDDEN],
    ],
)
def test_new_entity_refuses_bad_names(vault: Path, name: str) -> None:
    before = sorted(p.name for p in (vault / "04_knowledge_base").iterdir())
    with pytest.raises(UsageError):
        new_entity(load_settings(vault), name)
    assert sorted(p.name for p in (vault / "04_knowledge_base").iterdir()) == before


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(min_size=1, max_size=12)
        .map(str.strip)
        .filter(
            lambda s: (
                s
                and not any(
                    ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029\x85\ufeff" for c in s
                )
            )
        ),
        max_size=4,
        unique=True,
    )
)
def test_aliases_read_back_exactly(aliases: list[str]) -> None:
    import unicodedata

    aliases = list(dict.fromkeys(unicodedata.normalize("NFC", a) for a in aliases))
    text = render_entity("X", aliases)
    fm = frontmatter.read(text.split("\n"), "x.md")
    assert fm.findings == []
    assert fm.properties["aliases"] == aliases
    assert fm.properties["tags"] == ["entity"]


def test_cli_entities_json_and_new(vault: Path) -> None:
    run = run_vt("entities", "--json", vault=vault)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["missing"][0]["target"] == "04_knowledge_base/Ghost Entity"
    assert payload["conflicts"][0]["label"] == "prefill"
    assert (
        run_vt("entities", "new", "Tree Size", "--alias", "tree size", vault=vault).returncode == 0
    )
    refused = run_vt("entities", "new", "Tree Size", vault=vault)
    assert refused.returncode == 1 and "not overwritten" in refused.stderr
    bad = run_vt("entities", "new", "a/b", vault=vault)
    assert bad.returncode == 2 and "cannot contain /" in bad.stderr
    assert "Example:" in run_vt("entities", "--help", vault=vault).stdout
