"""The JSON Schemas: the seeds validate, and a vault extends or replaces them via schemas_dir.

python-jsonschema is the oracle: what jsonschema-rs calls valid it calls valid, and for
an invalid value vt's errors are its errors, path and message alike (its `pattern` given
ECMA-262's `$`, the end of the text, as JSON Schema and jsonschema-rs read it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import IX2_NOTE, REPO, SEED_NOTE, TEMPLATE_NOTE, render_note, validate_vault
from vault_tools.bundled import schema_dir
from vault_tools.checks.schemas import SCHEMA_FILES, SchemaError, Schemas
from vault_tools.errors import UsageError
from vault_tools.notes.note import parse_note

SCHEMAS = Schemas()


def _ecma(pattern: str) -> str:
    """`pattern` for Python's `re` with ECMA-262's `$`: the end of the text only (`\\Z`),
    wherever it is an anchor (not escaped, not inside a character class)."""
    out: list[str] = []
    in_class = False
    at = 0
    while at < len(pattern):
        ch = pattern[at]
        if ch == "\\":
            out.append(pattern[at : at + 2])
            at += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            # a `]` first in a class (after its `^`) is a literal to Python, not the end
            first = at + 2 if pattern.startswith("^", at + 1) else at + 1
            if pattern.startswith("]", first):
                out.append(pattern[at : first + 1])
                at = first + 1
                continue
        elif ch == "$":
            ch = "\\Z"
        out.append(ch)
        at += 1
    return "".join(out)


def _ecma_pattern(validator: Any, pattern: str, instance: Any, schema: dict) -> Any:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not re.search(_ecma(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def oracle(name: str, schemas: Schemas = SCHEMAS) -> Any:
    """python-jsonschema's validator of schema `name`, reading patterns as ECMA-262."""
    import jsonschema

    ecma = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern})
    return ecma(schemas.documents[name])


def oracle_errors(name: str, value: Any, schemas: Schemas = SCHEMAS) -> list[SchemaError]:
    """The oracle's errors as `Schemas.check` gives them (its enum message is vt's own)."""
    found = []
    for error in oracle(name, schemas).iter_errors(value):
        message = error.message
        if error.validator == "enum":
            allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in error.validator_value)
            message = f"{json.dumps(error.instance, ensure_ascii=False)} is not one of {allowed}"
        found.append(SchemaError(tuple(error.absolute_path), message))
    return sorted(found, key=lambda e: (tuple(map(str, e.path)), e.message))


def _note(path: Path):
    return parse_note(path.read_bytes(), path.name)


@pytest.mark.parametrize("path", [SEED_NOTE, IX2_NOTE, TEMPLATE_NOTE], ids=lambda p: p.stem)
def test_seed_notes_validate(path: Path) -> None:
    note = _note(path)
    assert SCHEMAS.check("properties", note.properties) == []
    assert SCHEMAS.check("frame", note.frame.data) == []
    claim = {
        "atomic_claim": note.claim.text.value,
        "epistemic_mode": note.claim.epistemic_mode.value,
        "mapping_status": note.claim.mapping_status.value,
        "semantic_frame": note.frame.data,
    }
    assert SCHEMAS.check("claim", claim) == []
    if note.drafts is not None:
        assert SCHEMAS.check("frame", note.drafts.frame.data) == []
        assert SCHEMAS.check("metadata", note.drafts.metadata.data) == []


def test_seed_enum_values_are_in_the_schemas() -> None:
    assert {"COMPARISON"} <= set(SCHEMAS.enum("frame", "frame_type"))
    assert {"LATENCY_COST", "COMPUTE_PERFORMANCE"} <= set(SCHEMAS.enum("frame", "metric"))
    assert {"APPROX_EQUAL", "UNSPECIFIED_COMPARISON"} <= set(SCHEMAS.enum("frame", "operator"))
    assert {"ASSERTED", "HYPOTHETICAL"} <= set(SCHEMAS.enum("claim", "epistemic_mode"))
    assert {"COMPLETE", "PARTIAL"} <= set(SCHEMAS.enum("claim", "mapping_status"))
    assert {"PENDING", "REQUEST_REPAIR", "APPROVE_REPAIR", "APPROVE", "REJECT"} == set(
        SCHEMAS.enum("properties", "review_action")
    )


@pytest.mark.parametrize("name", ["properties", "frame", "metadata", "claim"])
def test_shipped_schemas_are_2020_12(name: str) -> None:
    document = SCHEMAS.documents[name]
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(document)


def test_ledger_event_schema_is_shipped() -> None:
    assert (schema_dir() / SCHEMA_FILES["event"]).is_file()
    assert "event" in SCHEMAS.documents


def test_invalid_values_are_reported_with_their_path() -> None:
    frame = dict(_note(SEED_NOTE).frame.data, metric="SPEED")
    [problem] = SCHEMAS.check("frame", frame)
    assert problem.path == ("metric",) and problem.pointer == "/metric"
    assert '"SPEED" is not one of' in problem.message and '"LATENCY_COST"' in problem.message


def test_pointer_escapes() -> None:
    problems = SCHEMAS.check("frame", {"a/b~c": 1})
    assert all(p.pointer == "/" for p in problems if not p.path)
    from vault_tools.checks.schemas import SchemaError

    assert SchemaError(("a/b~c", 0), "m").pointer == "/a~1b~0c/0"


def _vault_with_schemas(make_vault, files: dict[str, object], note: str):
    vault = make_vault({"N-1.md": note})
    (vault / "vt.toml").write_text('[paths]\nschemas_dir = "schemas"\n', encoding="utf-8")
    folder = vault / "schemas"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content), encoding="utf-8")
    return vault


def test_vault_enums_extend_the_metric_enum(make_vault, tmp_path: Path) -> None:
    frame = json.loads(json.dumps(_note(TEMPLATE_NOTE).frame.data))
    frame["metric"] = "POWER"
    note = render_note(claim_id="N-1", frame=frame)
    plain = make_vault({"N-1.md": note}, name="plain")
    assert [f.code for f in validate_vault(plain).findings] == ["frame-schema"]

    vault = _vault_with_schemas(make_vault, {"enums.json": {"metric": ["POWER"]}}, note)
    assert validate_vault(vault).findings == []
    extended = Schemas(vault / "schemas")
    assert "POWER" in extended.enum("frame", "metric")
    assert "LATENCY_COST" in extended.enum("frame", "metric")  # extended, not replaced
    assert extended.digest != SCHEMAS.digest
    assert "POWER" not in Schemas().enum("frame", "metric")  # the package is untouched


def test_vault_enums_extend_claim_fields(make_vault) -> None:
    note = render_note(claim_id="N-1", mode="SPECULATIVE")
    vault = _vault_with_schemas(
        make_vault, {"enums.json": {"epistemic_mode": ["SPECULATIVE"]}}, note
    )
    assert validate_vault(vault).findings == []


def test_replacement_schema_file(make_vault) -> None:
    strict = json.loads((schema_dir() / "note-properties.schema.json").read_text("utf-8"))
    strict["properties"]["reviewer"] = {"type": "string", "minLength": 1}
    strict["required"] = [*strict["required"], "reviewer"]
    note = render_note(claim_id="N-1", reviewer="")
    vault = _vault_with_schemas(make_vault, {"note-properties.schema.json": strict}, note)
    findings = validate_vault(vault).findings
    assert [(f.code, f.line) for f in findings] == [("properties-schema", 9)]
    assert "reviewer" in findings[0].message


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_broken_enums_file_is_a_usage_error(tmp_path: Path, content: str) -> None:
    (tmp_path / "enums.json").write_text(content, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        Schemas(tmp_path)
    assert caught.value.path == str(tmp_path / "enums.json")


def test_broken_replacement_schema_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "semantic-frame.schema.json").write_text("{", encoding="utf-8")
    with pytest.raises(UsageError):
        Schemas(tmp_path)


def test_valid_and_invalid_instances_agree_between_fast_and_slow_paths() -> None:
    frame = _note(SEED_NOTE).frame.data
    for bad in (
        {**frame, "operator": "NOPE"},
        {**frame, "entities": "x"},
        {},
        {**frame, "qualifiers": None},
    ):
        assert SCHEMAS.check("frame", bad), bad
        assert not oracle("frame").is_valid(bad)


def test_every_shipped_schema_has_its_id_on_one_host() -> None:
    """The `$id`s name one host and the file's own name, so one schema's `$ref` to another
    resolves against the same base whichever file a tool loads first."""
    ids = {}
    for path in sorted(schema_dir().glob("*.schema.json")):
        ids[path.name] = json.loads(path.read_text(encoding="utf-8"))["$id"]
    assert len(ids) >= 6
    bases = {schema_id.rsplit("/", 1)[0] for schema_id in ids.values()}
    assert len(bases) == 1, ids
    assert all(schema_id.endswith("/" + name) for name, schema_id in ids.items()), ids


# --- the fast validator against the plain rule ----------------------------------------
#
# `Schemas.check` asks jsonschema-rs first and python-jsonschema only for what it calls
# invalid: a value the fast one passes and the slow one would not is an error never
# reported. The plain rule is python-jsonschema alone; generated values near valid ones
# (a leaf replaced by any JSON value, a key dropped or added, strings with the characters
# the schemas' patterns care about, numbers as floats) get the same verdict from both.


def _valid_instances() -> dict[str, list[Any]]:
    seed = _note(SEED_NOTE)
    records = [json.loads(line) for line in (REPO / "examples" / "claims.jsonl").open()]
    claim = {
        "atomic_claim": seed.claim.text.value,
        "epistemic_mode": seed.claim.epistemic_mode.value,
        "mapping_status": seed.claim.mapping_status.value,
        "semantic_frame": seed.frame.data,
    }
    drafts = _note(SEED_NOTE).drafts
    assert drafts is not None
    return {
        "properties": [_note(p).properties for p in (SEED_NOTE, IX2_NOTE, TEMPLATE_NOTE)],
        "frame": [_note(p).frame.data for p in (SEED_NOTE, IX2_NOTE, TEMPLATE_NOTE)],
        "metadata": [drafts.metadata.data],
        "claim": [claim],
        "record": records[:3],
        "event": [_event()],
    }


def _event() -> dict[str, Any]:
    """An event as vt appends it, from a ledger written in a temporary folder."""
    import tempfile

    from tests.ledger.test_ledger_gate import extra
    from vault_tools.ledger.append import Ledger

    with tempfile.TemporaryDirectory() as folder:
        ledger = Path(folder) / "decision_ledger.jsonl"
        Ledger(ledger, Path(folder) / "state").append([extra("DV1-0001")])
        return json.loads(ledger.read_text("utf-8"))


VALID = _valid_instances()
leaves = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
leaves |= st.text(st.sampled_from(list("aZ09_-:.#/ 標\u00e9\u200b\n\t\\")), max_size=12)
leaves |= st.sampled_from(
    ["", "ASSERTED", "LESS_THAN", "2026-03-24T09:15:00Z", "sha256:" + "a" * 64]
)
json_values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


def _paths(value: Any, at: tuple = ()) -> list[tuple]:
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


def _changed(value: Any, path: tuple, how: str, new: Any) -> Any:
    if not path:
        return new if how == "replace" else value
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if not rest and how == "drop":
            copy.pop(head, None)
        elif not rest and how == "add":
            copy[f"{head}_x"] = new
        else:
            copy[head] = _changed(value[head], rest, how, new)
        return copy
    copy_list = list(value)
    copy_list[head] = _changed(value[head], rest, how, new)
    return copy_list


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_validator_agrees_with_python_jsonschema(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(VALID)))
    value = data.draw(st.sampled_from(VALID[name]))
    assert SCHEMAS.check(name, value) == []  # each starts valid
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(value)))
        how = data.draw(st.sampled_from(["replace", "drop", "add"]))
        value = _changed(value, path, how, data.draw(json_values))
    fast = SCHEMAS._fast_validator(name).is_valid(value)
    assert fast == oracle(name).is_valid(value), (name, value)
    assert SCHEMAS.check(name, value) == oracle_errors(name, value), (name, value)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\n\n"])
def test_a_pattern_s_end_is_the_end_of_the_text_on_both_paths(ending: str) -> None:
    """JSON Schema patterns are ECMA-262's: `$` ends the text. Python's `$` also matches
    before a last newline, so python-jsonschema alone let a claim_id ending in one pass."""
    valid = next(v for v in VALID["properties"] if v.get("claim_id"))
    value = dict(valid, claim_id="A1" + ending)
    assert not SCHEMAS._fast_validator("properties").is_valid(value)
    assert not oracle("properties").is_valid(value)
    (error,) = SCHEMAS.check("properties", value)
    assert error.path == ("claim_id",) and "does not match" in error.message
    # an escaped `$` and one in a character class stay literal dollars
    assert oracle("properties").is_valid(dict(valid, claim_id="A1"))
    literal = {"type": "string", "pattern": "^[$]\\$x$"}
    checker = Schemas()
    checker.documents["literal"] = literal
    for text, ok in (("$$x", True), ("$$x\n", False), ("ab", False)):
        fast = checker._fast_validator("literal").is_valid(text)
        assert fast == oracle("literal", checker).is_valid(text) == ok, text


@pytest.mark.parametrize(
    "pattern,text,matches",
    [
        ("^a$", "a\n", False),
        ("^\\$x$", "$x", True),
        ("^[$]$", "$", True),
        ("^[]$]$", "$", True),  # `]` first in a class is a literal to Python: `$` inside
        ("^[^]$]$", "a", True),
        ("^[^]$]$", "a\n", False),
    ],
)
def test_only_a_dollar_that_anchors_becomes_the_end_of_the_text(
    pattern: str, text: str, matches: bool
) -> None:
    assert bool(re.search(_ecma(pattern), text)) is matches
