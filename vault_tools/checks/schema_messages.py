"""A schema error's message, worded from jsonschema-rs's account of it.

vt's schema findings say what python-jsonschema would say ("'label' is a required
property", "3 is not of type 'string'"): Python's repr of the value and of the schema's
own keyword value, in the order the schema writes it. jsonschema-rs reports the same
errors with the keyword's kind, the value's place and the keyword's place in the schema,
but words them its own way and hands back the keyword's value re-serialized (its keys and
types sorted): so the value is taken from the instance at the error's place, and the
keyword's value from the schema document at the keyword's place. A kind this module does
not word keeps jsonschema-rs's message (none of the shipped schemas' keywords: it is
`items: false` after `prefixItems`, which jsonschema-rs reports item by item, and
`dependentRequired`, `propertyNames` and the like in a vault's own schemas).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

_NOT_FOUND = object()


def message_of(error: Any, document: dict, instance: Any) -> str:
    """The message of jsonschema-rs's `error` in `instance` against schema `document`."""
    kind = error.kind
    worded = _WORDINGS.get(type(kind).__name__)
    value = _at(instance, error.instance_path)
    path = list(error.schema_path)
    schema = _at(document, path[:-1])  # the schema the keyword belongs to
    keyword = _NOT_FOUND if schema is _NOT_FOUND else _at(schema, path[-1:])
    if worded is None or _NOT_FOUND in (value, keyword, schema) or _elsewhere(error, document):
        return str(error.message)
    try:
        return worded(value, keyword, _Error(kind, schema))
    except (AttributeError, TypeError):  # a kind whose details another release renamed
        return str(error.message)


class _Error(NamedTuple):
    kind: Any  # jsonschema-rs's kind of error, with its own details
    schema: dict  # the schema object holding the keyword


def _elsewhere(error: Any, document: dict) -> bool:
    """Whether the keyword is in another schema document (reached by a `$ref` to its
    `$id`): its place is then a place in that one."""
    location = error.absolute_keyword_location
    own = document.get("$id") if isinstance(document, dict) else None
    return bool(location) and not (isinstance(own, str) and location.startswith(own + "#"))


def _at(root: Any, path: Sequence[str | int]) -> Any:
    """What `root` holds at `path` (object keys and array indexes), or _NOT_FOUND."""
    node = root
    for step in path:
        in_object = isinstance(node, dict) and isinstance(step, str) and step in node
        in_array = isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node)
        if not (in_object or in_array):
            return _NOT_FOUND
        node = node[step]
    return node


def _required(_: Any, __: Any, error: _Error) -> str:
    return f"{error.kind.property!r} is a required property"


def _type(value: Any, types: Any, _: Any) -> str:
    listed = [types] if isinstance(types, str) else types
    return f"{value!r} is not of type {', '.join(repr(t) for t in listed)}"


def _enum(value: Any, options: Any, _: Any) -> str:
    allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in options)
    return f"{json.dumps(value, ensure_ascii=False)} is not one of {allowed}"


def _const(_: Any, const: Any, __: Any) -> str:
    return f"{const!r} was expected"


def _pattern(value: Any, pattern: Any, _: Any) -> str:
    return f"{value!r} does not match {pattern!r}"


def _sized(at_one: str, at_zero: str, otherwise: str) -> Callable[[Any, Any, Any], str]:
    """The wording of a min/max length, items or properties: a limit of 1 (at least) or
    0 (at most) says what the value should be, any other limit how it misses it."""

    def word(value: Any, limit: Any, _: Any) -> str:
        special = at_one if limit == 1 else at_zero if limit == 0 else ""
        return f"{value!r} {special or otherwise}"

    return word


def _minimum(value: Any, limit: Any, _: Any) -> str:
    return f"{value!r} is less than the minimum of {limit!r}"


def _maximum(value: Any, limit: Any, _: Any) -> str:
    return f"{value!r} is greater than the maximum of {limit!r}"


def _unique(value: Any, _: Any, __: Any) -> str:
    return f"{value!r} has non-unique elements"


def _additional(value: Any, _: Any, error: _Error) -> str:
    extras = sorted(error.kind.unexpected, key=str)
    listed = ", ".join(repr(e) for e in extras)
    patterns = error.schema.get("patternProperties")
    if patterns is not None:  # then what is not allowed is a name no pattern matches
        verb = "does" if len(extras) == 1 else "do"
        regexes = ", ".join(repr(p) for p in sorted(patterns))
        return f"{listed} {verb} not match any of the regexes: {regexes}"
    verb = "was" if len(extras) == 1 else "were"
    return f"Additional properties are not allowed ({listed} {verb} unexpected)"


def _none_valid(value: Any, _: Any, __: Any) -> str:
    return f"{value!r} is not valid under any of the given schemas"


def _several_valid(value: Any, subschemas: Any, error: _Error) -> str:
    # the wording lists the valid subschemas after the first, then the first
    valid = [s for s, errors in zip(subschemas, error.kind.context, strict=False) if not errors]
    listed = ", ".join(repr(s) for s in [*valid[1:], *valid[:1]])
    return f"{value!r} is valid under each of {listed}"


def _not(value: Any, schema: Any, _: Any) -> str:
    return f"{value!r} should not be valid under {schema!r}"


def _contains(value: Any, _: Any, __: Any) -> str:
    return f"{value!r} does not contain items matching the given schema"


_WORDINGS: dict[str, Callable[[Any, Any, Any], str]] = {
    "Required": _required,
    "Type": _type,
    "Enum": _enum,
    "Constant": _const,
    "Pattern": _pattern,
    "MinLength": _sized("should be non-empty", "", "is too short"),
    "MaxLength": _sized("", "is expected to be empty", "is too long"),
    "MinItems": _sized("should be non-empty", "", "is too short"),
    "MaxItems": _sized("", "is expected to be empty", "is too long"),
    "MinProperties": _sized("should be non-empty", "", "does not have enough properties"),
    "MaxProperties": _sized("", "is expected to be empty", "has too many properties"),
    "Minimum": _minimum,
    "Maximum": _maximum,
    "UniqueItems": _unique,
    "AdditionalProperties": _additional,
    "AnyOf": _none_valid,
    "OneOfNotValid": _none_valid,
    "OneOfMultipleValid": _several_valid,
    "Not": _not,
    "Contains": _contains,
}
