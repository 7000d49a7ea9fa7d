"""The schema compiler's fast paths never accept what the reference validator rejects."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from mcpsniff.core.schemas import compile_schema, simple_oracle

ECHO = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
}
CLOSED = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "title": "args",
    "properties": {
        "count": {"type": "integer", "description": "how many"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "items": {"type": "array"},
        "extra": {"type": "object"},
        "nothing": {"type": "null"},
    },
    "required": ["count"],
    "additionalProperties": False,
}
DRAFT4 = {**CLOSED, "$schema": "http://json-schema.org/draft-04/schema#"}

INSTANCES: list[Any] = [
    {"message": "hi"},
    {"message": "hi", "other": 1},
    {"message": 1},
    {"message": None},
    {},
    [],
    "text",
    None,
    {"count": 1},
    {"count": True},
    {"count": 1.0},
    {"count": 2**70},
    {"count": 1, "ratio": 0.5},
    {"count": 1, "ratio": True},
    {"count": 1, "ratio": 3},
    {"count": 1, "flag": False, "items": [], "extra": {}, "nothing": None},
    {"count": 1, "flag": 0},
    {"count": 1, "items": {}},
    {"count": 1, "unknown": "x"},
    {"count": "1"},
]


@pytest.mark.parametrize("schema", [ECHO, CLOSED, DRAFT4])
def test_the_oracle_accepts_only_what_jsonschema_accepts(schema: dict[str, Any]) -> None:
    oracle = simple_oracle(schema)
    assert oracle is not None
    reference = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )(schema)
    accepted = 0
    for instance in INSTANCES:
        if oracle(instance):
            accepted += 1
            assert reference.is_valid(instance), instance
    assert accepted >= 1


def test_the_oracle_accepts_the_usual_arguments_and_defers_the_rest() -> None:
    oracle = simple_oracle(CLOSED)
    assert oracle is not None
    assert oracle({"count": 3, "ratio": 1, "flag": True}) is True
    # Not "invalid": these go on to the validators, which decide and explain.
    assert oracle({"count": True}) is False  # a bool is no integer
    assert oracle({"count": 1.0}) is False  # an integer in some drafts only
    assert oracle({"ratio": 1.5}) is False  # "count" is required
    assert oracle({"count": 1, "unknown": 0}) is False  # additionalProperties: false
    assert oracle([1]) is False


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
        {"type": "object", "properties": {"a": {"type": ["string", "null"]}}},
        {"type": "object", "properties": {"a": True}},
        {"type": "object", "properties": {"a": {}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "required": "a"},
        {"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"},
        {"type": "object", "$ref": "#/$defs/x"},
        {"type": "array"},
        {"properties": {"a": {"type": "string"}}},
        [],
    ],
)
def test_other_schemas_get_no_oracle(schema: Any) -> None:
    assert simple_oracle(schema) is None


def test_first_error_still_explains_what_the_oracle_defers() -> None:
    compiled = compile_schema(CLOSED)
    assert compiled.simple is not None
    assert compiled.first_error({"count": 4}) is None
    assert compiled.first_error({"count": 1.0}) is None  # draft-07: 1.0 is an integer
    error = compiled.first_error({"count": True})
    assert error is not None and "'integer'" in error
    error = compiled.first_error({"count": 1, "unknown": 0})
    assert error is not None and "unknown" in error
    draft4 = compile_schema(DRAFT4)
    error = draft4.first_error({"count": 1.0})
    assert error is not None and "'integer'" in error  # draft-04: 1.0 is not


def test_an_invalid_schema_gets_no_oracle() -> None:
    compiled = compile_schema({"type": "object", "required": "message"})
    assert compiled.error is not None
    assert compiled.simple is None
    assert compiled.first_error({"anything": 1}) is None
