"""Schema errors worded from jsonschema-rs's account: for each keyword, the errors, paths
and messages python-jsonschema (the oracle) gives; a kind left unworded keeps
jsonschema-rs's own message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.checks.test_schemas import oracle_errors
from vault_tools.checks.schemas import Schemas

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# (schema, an instance it refuses): every keyword the shipped schemas use, and the wordings
# that depend on the schema's own order and limits
WORDED = [
    ({"type": ["string", "null"]}, 3),  # the types as the schema lists them
    ({"type": "string"}, {"z": 1, "a": [1, None, True]}),  # Python's repr of the value
    ({"type": "string"}, 1e300),
    ({"required": ["b", "a"]}, {}),
    ({"enum": ["a", {"x": 1}]}, "b"),
    ({"const": {"b": 1, "a": 2}}, 3),  # the constant's keys as the schema writes them
    ({"pattern": "^a$"}, "a\n"),  # ECMA-262's `$`: the end of the text
    ({"minLength": 1}, ""),
    ({"minLength": 3}, "a"),
    ({"maxLength": 0}, "a"),
    ({"maxLength": 2}, "abc"),
    ({"minItems": 1}, []),
    ({"minItems": 2}, [1]),
    ({"maxItems": 0}, [1]),
    ({"maxItems": 1}, [1, 2]),
    ({"minProperties": 1}, {}),
    ({"minProperties": 2}, {"a": 1}),
    ({"maxProperties": 0}, {"a": 1}),
    ({"maxProperties": 1}, {"a": 1, "b": 2}),
    ({"minimum": 0}, -1),
    ({"maximum": 1.5}, 2),
    ({"uniqueItems": True}, [1, 1]),
    ({"additionalProperties": False, "properties": {"a": {}}}, {"b": 1, "a": 2, "C": 3}),
    ({"additionalProperties": False, "patternProperties": {"^x": {}}}, {"a": 1}),
    ({"additionalProperties": False, "patternProperties": {"^x": {}}}, {"b": 1, "a": 2}),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, None),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, None),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}, {"type": "number"}]}, 5),
    ({"not": {"type": "string", "minLength": 2}}, "abc"),  # the subschema as written
    ({"contains": {"type": "string"}}, [1]),
    ({"if": {"type": "string"}, "then": {"minLength": 3}, "else": {"type": "integer"}}, "ab"),
    ({"if": {"type": "string"}, "then": {"minLength": 3}, "else": {"type": "integer"}}, 1.5),
    ({"$defs": {"s": {"type": ["string", "null"]}}, "items": {"$ref": "#/$defs/s"}}, [1, "a"]),
    ({"allOf": [{"required": ["a"]}, {"properties": {"a": {"enum": [1]}}}]}, {"a": 2}),
]


def _checked(schema: dict, value: Any) -> tuple[list, list]:
    schemas = Schemas()
    schemas.documents["x"] = {"$schema": DRAFT, **schema}
    return schemas.check("x", value), oracle_errors("x", value, schemas)


@pytest.mark.parametrize("schema,value", WORDED, ids=[json.dumps(s)[:40] for s, _ in WORDED])
def test_each_keyword_s_error_is_the_oracle_s(schema: dict, value: Any) -> None:
    ours, oracle = _checked(schema, value)
    assert ours, "the value breaks the schema"
    assert ours == oracle


# kinds the shipped schemas do not use and jsonschema-rs reports otherwise (item by item,
# or as another keyword): its own message, at its own place
UNWORDED = [
    ({"prefixItems": [{"type": "string"}], "items": False}, ["a", 1], "False schema"),
    ({"propertyNames": {"maxLength": 1}}, {"ab": 1}, "longer than 1 character"),
]


@pytest.mark.parametrize("schema,value,said", UNWORDED)
def test_an_unworded_kind_keeps_jsonschema_rs_s_message(
    schema: dict, value: Any, said: str
) -> None:
    ours, oracle = _checked(schema, value)
    assert ours and oracle and ours != oracle
    assert all(said in error.message for error in ours)


def test_a_keyword_in_another_schema_document_keeps_jsonschema_rs_s_message() -> None:
    """A `$ref` to another schema's `$id` gives the keyword's place in that document: it
    is not looked up in this one (where the same place may hold something else)."""
    import jsonschema_rs

    other = {"$id": "https://vt.invalid/other.json", "$defs": {"s": {"minLength": 3}}}
    main = {
        "$schema": DRAFT,
        "$id": "https://vt.invalid/main.json",
        "$defs": {"s": {"minLength": 1}},
        "properties": {"a": {"$ref": "other.json#/$defs/s"}},
    }
    schemas = Schemas()
    schemas.documents["x"] = main
    registry = jsonschema_rs.Registry([(other["$id"], other)])
    schemas._fast["x"] = jsonschema_rs.validator_for(main, registry=registry)
    (error,) = schemas.check("x", {"a": "xy"})
    assert error.path == ("a",)
    assert "should be non-empty" not in error.message  # not this document's minLength 1
    assert "xy" in error.message
