"""jsonschema's verdict on a plain tool schema, without importing jsonschema, when it is certain.

A ``tools/call`` whose arguments break the schema is explained by
jsonschema's ``best_match`` (``schemas.CompiledSchema``). Importing jsonschema
costs more than all of ``mcpsniff check``'s own start-up (about 230 million
instructions), and it is paid by each process that meets the first invalid
call: each ``check --jobs`` worker, each ``mcpsniff stdio``. Most invalid
calls break a plain schema (``schemas.simple_oracle``'s kind) in one place: a
string where an integer belongs, a required property missing, an unexpected
property. ``verdict`` evaluates such a schema as jsonschema does and answers
only when the outcome is certain: no error at all, or exactly one, whose
message and path it writes as jsonschema writes them (a single error is
``best_match``'s choice: it has no alternatives and no context). Two errors
or more, a keyword outside the subset, a violation whose message is not
reproduced here, or a value whose meaning differs between dialects (``1.0``
as an "integer": draft 4 says no, later drafts yes) make it answer
``UNSURE``, and jsonschema decides as before.

The messages are those of jsonschema's ``_keywords`` (4.x), checked against
jsonschema itself by ``tests/core/test_schema_explain.py``:
``type``: "{instance!r} is not of type {', '.join(repr(t) for t in types)}";
``required``: "{property!r} is a required property";
``minimum``/``maximum``: "{instance!r} is less than the minimum of
{minimum!r}" / "... greater than the maximum of ..."; ``enum``: "{instance!r}
is not one of {enums!r}"; ``additionalProperties: false``: "Additional
properties are not allowed ({extras} {was|were} unexpected)", the extras
sorted.
"""

from __future__ import annotations

from typing import Any

from mcpsniff.core.schema_valid import DIALECTS

#: A schema's verdict: (path to the error, jsonschema's message), or None for valid.
Verdict = tuple[tuple[str | int, ...], str] | None


class _Unsure(Exception):
    """The outcome is not certain here: jsonschema decides."""


#: What ``verdict`` returns when it cannot answer.
UNSURE: Any = object()

#: Keywords no validator looks at (``format`` too: no format checker is given).
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
    }
)
#: The keywords of a value's subschema that ``schemas.simple_oracle`` judges.
VALUE_KEYWORDS = ANNOTATIONS | {
    "type",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "items",
    "enum",
}
#: The keywords of an object's subschema it judges besides.
OBJECT_KEYWORDS = frozenset({"properties", "required", "additionalProperties"})
_KEYWORDS = VALUE_KEYWORDS | OBJECT_KEYWORDS
_TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})
#: Nesting followed (schemas and instances); deeper is left to jsonschema.
_MAX_DEPTH = 8
#: Instance values looked at; a larger instance is left to jsonschema.
_MAX_VALUES = 4096


def verdict(schema: Any, instance: Any) -> Verdict:
    """None when ``instance`` is valid, (path, message) of its one error, or ``UNSURE``."""
    if type(schema) is not dict:
        return UNSURE  # type: ignore[no-any-return]
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in DIALECTS:
        return UNSURE  # type: ignore[no-any-return]
    errors: list[tuple[tuple[str | int, ...], str]] = []
    budget = [_MAX_VALUES]
    top = {key: value for key, value in schema.items() if key != "$schema"}
    try:
        _node(top, instance, (), errors, budget, 0)
    except _Unsure:
        return UNSURE  # type: ignore[no-any-return]
    if not errors:
        return None
    return errors[0]


def _node(
    schema: Any,
    value: Any,
    path: tuple[str | int, ...],
    errors: list[tuple[tuple[str | int, ...], str]],
    budget: list[int],
    depth: int,
) -> None:
    """Add the errors of ``value`` against ``schema`` to ``errors``; raise ``_Unsure``."""
    if type(schema) is not dict or depth > _MAX_DEPTH or not schema.keys() <= _KEYWORDS:
        raise _Unsure
    budget[0] -= 1
    if budget[0] < 0:
        raise _Unsure
    kind = type(value)
    if "type" in schema:
        names = schema["type"]
        listed = [names] if type(names) is str else names
        if type(listed) is not list or not listed or not all(n in _TYPES for n in listed):
            raise _Unsure
        if not any(_is_type(value, name) for name in listed):
            reprs = ", ".join(repr(name) for name in listed)
            _add(errors, path, f"{value!r} is not of type {reprs}")
    if "enum" in schema:
        members = schema["enum"]
        if type(members) is not list or kind is not str:
            raise _Unsure  # equality of other values is jsonschema's (1 == 1.0, True != 1)
        if not any(type(m) is str and m == value for m in members):
            _add(errors, path, f"{value!r} is not one of {members!r}")
    if kind is str:
        low, high = _count(schema, "minLength"), _count(schema, "maxLength")
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            raise _Unsure  # a length message is not reproduced here
    elif kind is int or kind is float:
        _bounds(schema, value, path, errors)
    elif kind is list:
        _array(schema, value, path, errors, budget, depth)
    elif kind is dict:
        _object(schema, value, path, errors, budget, depth)
    elif kind is not bool and value is not None:
        raise _Unsure  # not a JSON value


def _is_type(value: Any, name: str) -> bool:
    """jsonschema's type check, for the values all dialects agree on (else ``_Unsure``)."""
    kind = type(value)
    if name == "integer":
        if kind is float and value.is_integer():
            raise _Unsure  # an integer from draft 6 on, not in draft 4
        return kind is int
    if name == "number":
        return kind is int or kind is float
    if name == "string":
        return kind is str
    if name == "boolean":
        return kind is bool
    if name == "null":
        return value is None
    if name == "array":
        return kind is list
    return kind is dict  # "object"


def _count(schema: dict[str, Any], key: str) -> int | None:
    """A length or size limit (a non-negative integer), None when absent."""
    limit = schema.get(key)
    if limit is not None and (type(limit) is not int or limit < 0):
        raise _Unsure
    return limit


def _bounds(
    schema: dict[str, Any],
    value: int | float,
    path: tuple[str | int, ...],
    errors: list[tuple[tuple[str | int, ...], str]],
) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    for limit in (low, high):
        if limit is not None and type(limit) is not int and type(limit) is not float:
            raise _Unsure
    if low is not None and value < low:
        _add(errors, path, f"{value!r} is less than the minimum of {low!r}")
    if high is not None and value > high:
        _add(errors, path, f"{value!r} is greater than the maximum of {high!r}")


def _array(
    schema: dict[str, Any],
    value: list[Any],
    path: tuple[str | int, ...],
    errors: list[tuple[tuple[str | int, ...], str]],
    budget: list[int],
    depth: int,
) -> None:
    low, high = _count(schema, "minItems"), _count(schema, "maxItems")
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        raise _Unsure  # a size message is not reproduced here
    if "items" in schema:
        items = schema["items"]
        for index, item in enumerate(value):
            _node(items, item, (*path, index), errors, budget, depth + 1)


def _object(
    schema: dict[str, Any],
    value: dict[str, Any],
    path: tuple[str | int, ...],
    errors: list[tuple[tuple[str | int, ...], str]],
    budget: list[int],
    depth: int,
) -> None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if type(properties) is not dict or type(required) is not list:
        raise _Unsure
    for name in required:
        if type(name) is not str:
            raise _Unsure
        if name not in value:
            _add(errors, path, f"{name!r} is a required property")
    for name, sub in properties.items():
        if name in value:
            _node(sub, value[name], (*path, name), errors, budget, depth + 1)
    extras = [name for name in value if name not in properties]
    if not extras or extra is True:
        return
    if extra is False:
        verb = "was" if len(extras) == 1 else "were"
        joined = ", ".join(repr(name) for name in sorted(extras, key=str))
        _add(errors, path, f"Additional properties are not allowed ({joined} {verb} unexpected)")
    elif type(extra) is dict:
        for name in extras:
            _node(extra, value[name], (*path, name), errors, budget, depth + 1)
    else:
        raise _Unsure


def _add(
    errors: list[tuple[tuple[str | int, ...], str]], path: tuple[str | int, ...], message: str
) -> None:
    """Keep one error; a second makes ``best_match``'s choice jsonschema's to make."""
    if errors:
        raise _Unsure
    errors.append((path, message))
