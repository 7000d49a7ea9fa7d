"""``certainly_valid`` vouches only for schemas every validator's metaschema accepts."""

from __future__ import annotations

import copy
import random
from typing import Any

import jsonschema
import pytest

from mcpsniff.core.schema_valid import DIALECTS, certainly_valid

#: What SDKs generate from a function's signature (the bench trace's schemas among them).
PLAIN: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "paths": {"type": "array", "items": {"type": "string"}, "maxItems": 500},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 1000},
            "case_sensitive": {"type": "boolean"},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"mode": {"enum": ["overwrite", "append"]}},
        "required": [],
    },
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "title": "args",
        "description": "the arguments",
        "properties": {
            "url": {"type": "string", "format": "uri", "default": "x", "examples": ["a"]},
            "params": {"type": ["string", "number", "null"], "deprecated": False},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
            "ratio": {"type": "number", "minimum": 0.5, "readOnly": True, "$comment": "c"},
        },
    },
    {"type": "object"},
]

#: Each changes one keyword of a valid schema so that some metaschema rejects it.
BREAKS: list[tuple[str, Any]] = [
    ("type", "text"),
    ("type", []),
    ("type", ["string", "string"]),
    ("type", ["string", 1]),
    ("minLength", -1),
    ("minLength", "1"),
    ("maxItems", True),
    ("minimum", "0"),
    ("minimum", None),
    ("required", "query"),
    ("required", ["a", "a"]),
    ("required", [1]),
    ("enum", []),
    ("enum", "a"),
    ("enum", ["a", "a"]),
    ("title", 1),
    ("description", None),
    ("format", 3),
    ("examples", "a"),
    ("deprecated", "yes"),
    ("readOnly", 1),
    ("properties", []),
    ("properties", {"a": 1}),
    ("additionalProperties", "no"),
    ("additionalProperties", {"type": "text"}),
    ("items", {"minItems": -2}),
]


@pytest.mark.parametrize("dialect", [None, *sorted(DIALECTS)])
@pytest.mark.parametrize("index", range(len(PLAIN)))
def test_plain_schemas_are_vouched_for_and_valid(dialect: str | None, index: int) -> None:
    schema = dict(PLAIN[index])
    schema.pop("$schema", None)
    if dialect is not None:
        schema["$schema"] = dialect
    draft4_empty = dialect is not None and "draft-04" in dialect and schema.get("required") == []
    assert certainly_valid(schema) is not draft4_empty
    if certainly_valid(schema):
        _reference_check(schema)  # raises if jsonschema disagrees


@pytest.mark.parametrize("dialect", [None, *sorted(DIALECTS)])
@pytest.mark.parametrize(("keyword", "value"), BREAKS)
def test_a_broken_keyword_is_never_vouched_for(
    dialect: str | None, keyword: str, value: Any
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {keyword: value}}}
    if dialect is not None:
        schema["$schema"] = dialect
    assert not certainly_valid(schema)


def test_only_a_known_dialect_at_the_root_and_known_keywords() -> None:
    assert not certainly_valid({"$schema": "https://example.com/mine", "type": "object"})
    assert not certainly_valid({"$schema": 7, "type": "object"})
    nested = {"type": "object", "properties": {"a": {"$schema": sorted(DIALECTS)[0]}}}
    assert not certainly_valid(nested)
    for keyword in ("pattern", "anyOf", "$ref", "const", "if", "exclusiveMinimum"):
        assert not certainly_valid({"type": "object", keyword: "x"})
    assert not certainly_valid([{"type": "object"}])
    assert not certainly_valid(True)  # a boolean schema: jsonschema judges it


def test_draft4_wants_required_non_empty() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "required": []}
    assert not certainly_valid(schema)
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft4Validator.check_schema(schema)
    assert certainly_valid({**schema, "required": ["a"]})


def test_depth_is_bounded() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        schema = {"type": "object", "properties": {"a": schema}}
    assert not certainly_valid(schema)  # jsonschema decides; no deep recursion here


def _reference_check(schema: dict[str, Any]) -> None:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)


def _random_value(rng: random.Random) -> Any:
    return rng.choice([-1, 0, 3, 2.5, True, None, "s", "", [], ["a"], ["a", "a"], {}, {"a": 1}])


@pytest.mark.parametrize("seed", range(30))
def test_random_mutations_agree_with_jsonschema(seed: int) -> None:
    """Whatever a random edit makes of a plain schema, a vouched-for one passes check_schema."""
    rng = random.Random(seed)
    vouched = 0
    for _ in range(200):
        schema = copy.deepcopy(rng.choice(PLAIN))
        if rng.random() < 0.5:
            schema["$schema"] = rng.choice(sorted(DIALECTS))
        properties = schema.setdefault("properties", {})
        for _ in range(rng.randrange(1, 3)):
            target = properties.setdefault(rng.choice("abc"), {})
            keyword = rng.choice([k for k, _ in BREAKS] + ["default"])
            target[keyword] = _random_value(rng)
        if certainly_valid(schema):
            vouched += 1
            _reference_check(schema)
    assert vouched > 0  # the mutations leave some valid schemas to compare
