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
LIMITS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 5},
        "paths": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "minItems": 1},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 1000},
        "ratio": {"type": "number", "minimum": 0.5},
        "params": {"type": "array", "items": {"type": ["string", "number", "null"]}},
        "mode": {"enum": ["overwrite", "append"]},
        "anything": {},
    },
    "required": ["query"],
}

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
    {"query": "a"},
    {"query": ""},
    {"query": "abcdef"},
    {"query": "é"},
    {"query": "ab", "paths": ["x"]},
    {"query": "ab", "paths": []},
    {"query": "ab", "paths": ["x", "y", "z"]},
    {"query": "ab", "paths": ["x", 1]},
    {"query": "ab", "max_results": 0},
    {"query": "ab", "max_results": 1000},
    {"query": "ab", "max_results": 1001},
    {"query": "ab", "max_results": 5.0},
    {"query": "ab", "max_results": True},
    {"query": "ab", "ratio": 0.25},
    {"query": "ab", "ratio": 1},
    {"query": "ab", "params": ["a", 1, 2.5, None]},
    {"query": "ab", "params": [True]},
    {"query": "ab", "params": [[]]},
    {"query": "ab", "mode": "append"},
    {"query": "ab", "mode": "other"},
    {"query": "ab", "anything": {"x": [1]}},
    {"query": 5},
]


@pytest.mark.parametrize("schema", [ECHO, CLOSED, DRAFT4, LIMITS])
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


def test_limits_are_checked_and_other_keywords_defer_when_present() -> None:
    oracle = simple_oracle(LIMITS)
    assert oracle is not None
    assert oracle({"query": "ab", "paths": ["a"], "max_results": 3, "params": [1, "x", None]})
    assert oracle({"query": "abcde", "anything": [1, {}]})
    assert not oracle({"query": ""})  # minLength
    assert not oracle({"query": "abcdef"})  # maxLength
    assert not oracle({"query": "a", "max_results": 0})  # minimum
    assert not oracle({"query": "a", "paths": ["a", "b", "c"]})  # maxItems
    assert not oracle({"query": "a", "params": [True]})  # item type
    # enum is not the oracle's: a call that uses "mode" goes to the validators.
    assert not oracle({"query": "a", "mode": "append"})
    compiled = compile_schema(LIMITS)
    assert compiled.first_error({"query": "a", "mode": "append"}) is None
    error = compiled.first_error({"query": "a", "mode": "other"})
    assert error is not None and "'other'" in error


@pytest.mark.parametrize(
    "sub",
    [
        {"type": "string", "minLength": True},
        {"type": "string", "format": "uri"},
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "array", "items": {"enum": [1]}},
        {"type": "strange"},
        {"type": []},
        True,
    ],
)
def test_a_property_the_oracle_cannot_judge_defers(sub: Any) -> None:
    oracle = simple_oracle({"type": "object", "properties": {"a": sub, "b": {"type": "string"}}})
    assert oracle is not None
    assert oracle({"b": "x"}) is True
    assert oracle({"a": "x", "b": "x"}) is False
    assert oracle({"a": [], "b": "x"}) is False


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
