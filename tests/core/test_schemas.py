"""The schema compiler's fast paths never accept what the reference validator rejects."""

from __future__ import annotations

import random
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


#: A map of typed values: the oracle checks the values' types in one pass.
MAP = {"type": "object", "additionalProperties": {"type": ["string", "integer"]}}


@pytest.mark.parametrize("schema", [ECHO, CLOSED, DRAFT4, LIMITS, MAP])
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
        {"type": "object", "additionalProperties": "no"},
        {"type": "object", "properties": {"a": {"type": "string"}}, "if": {}},
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
    # A string enum is the oracle's; a value not in it goes to the validators.
    assert oracle({"query": "a", "mode": "append"})
    assert not oracle({"query": "a", "mode": "other"})
    compiled = compile_schema(LIMITS)
    assert compiled.first_error({"query": "a", "mode": "append"}) is None
    error = compiled.first_error({"query": "a", "mode": "other"})
    assert error is not None and "'other'" in error


@pytest.mark.parametrize(
    "sub",
    [
        {"type": "string", "minLength": True},
        {"type": "string", "pattern": "^a"},
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "array", "items": {"pattern": "x"}},
        {"type": "object", "properties": {"x": {"anyOf": []}}, "required": ["x"]},
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


#: What the oracle judges beyond plain types: string enums, formats (annotations
#: for both validators, as _compile builds them) and nested objects.
NESTED = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "format": "uri"},
        "method": {"enum": ["GET", "HEAD", 1, None]},
        "kind": {"type": "string", "enum": ["a", "b"], "maxLength": 1},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "options": {
            "type": "object",
            "properties": {"depth": {"type": "integer", "minimum": 0}},
            "required": ["depth"],
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"enum": ["x", "y"]}},
    },
    "required": ["url"],
    "additionalProperties": {"type": ["string", "integer"]},
}
NESTED_INSTANCES: list[Any] = [
    {"url": "not a uri at all"},
    {"url": "u", "method": "GET"},
    {"url": "u", "method": "POST"},
    {"url": "u", "method": 1},
    {"url": "u", "method": 1.0},
    {"url": "u", "method": True},
    {"url": "u", "method": None},
    {"url": "u", "kind": "a"},
    {"url": "u", "kind": "c"},
    {"url": "u", "kind": 1},
    {"url": "u", "headers": {}},
    {"url": "u", "headers": {"A": "1", "B": "2"}},
    {"url": "u", "headers": {"A": 1}},
    {"url": "u", "headers": []},
    {"url": "u", "options": {"depth": 0}},
    {"url": "u", "options": {"depth": -1}},
    {"url": "u", "options": {}},
    {"url": "u", "options": {"depth": 1, "more": 1}},
    {"url": "u", "tags": ["x", "y", "x"]},
    {"url": "u", "tags": ["z"]},
    {"url": "u", "tags": "x"},
    {"url": "u", "extra": "s"},
    {"url": "u", "extra": 3},
    {"url": "u", "extra": 3.5},
    {"url": "u", "extra": True},
    {"url": 1},
    {},
]


@pytest.mark.parametrize(
    "dialect",
    [None, "http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-07/schema#"],
)
def test_enum_format_and_nested_objects_agree_with_jsonschema(dialect: str | None) -> None:
    schema = NESTED if dialect is None else {**NESTED, "$schema": dialect}
    oracle = simple_oracle(schema)
    assert oracle is not None
    reference = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )(schema)
    verdicts = [oracle(instance) for instance in NESTED_INSTANCES]
    for instance, accepted in zip(NESTED_INSTANCES, verdicts, strict=True):
        if accepted:
            assert reference.is_valid(instance), instance
    # What the oracle itself decides: each of these is accepted without the validators.
    assert verdicts[:2] == [True, True]
    assert oracle({"url": "u", "kind": "a", "headers": {"A": "1"}, "options": {"depth": 2}})
    assert oracle({"url": "u", "tags": ["x"], "extra": "s", "more": 3})
    # And what it defers: each of these is invalid, or outside what it judges.
    for deferred in (
        {"url": "u", "method": 1},
        {"url": "u", "kind": "c"},
        {"url": "u", "extra": 3.5},
    ):
        assert not oracle(deferred)
    compiled = compile_schema(schema)
    assert compiled.first_error({"url": "u", "method": 1}) is None  # the validators accept it
    error = compiled.first_error({"url": "u", "headers": {"A": 1}})
    assert error is not None and "headers" in error


def _random_schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    """A subschema made of the keywords the oracle judges, and now and then one it does not."""
    choice = rng.randrange(9 if depth < 2 else 7)
    if choice == 0:
        return {"type": rng.choice(["string", "integer", "number", "boolean", "null"])}
    if choice == 1:
        return {"type": "string", "minLength": rng.randrange(3), "maxLength": rng.randrange(1, 4)}
    if choice == 2:
        return {"type": rng.choice(["integer", "number"]), "minimum": rng.choice([0, 0.5, -2])}
    if choice == 3:
        return {"enum": rng.sample(["a", "b", "", 1, 1.0, True, None, [1], {"a": 1}], 3)}
    if choice == 4:
        return {"type": "string", "format": rng.choice(["uri", "email", "date-time"])}
    if choice == 5:
        return {"pattern": "^a"}  # not the oracle's: it defers
    if choice == 6:
        return {"type": "array", "items": _random_schema(rng, depth + 1), "maxItems": 3}
    extra = rng.choice([True, False, _random_schema(rng, depth + 1)])
    properties = {
        name: _random_schema(rng, depth + 1) for name in rng.sample("abc", rng.randrange(3))
    }
    return {
        "type": "object",
        "properties": properties,
        "required": rng.sample(sorted(properties), rng.randrange(len(properties) + 1)),
        "additionalProperties": extra,
    }


_VALUES: list[Any] = ["a", "b", "", "abcd", 0, 1, -3, 1.0, 0.25, True, False, None, [], ["a"], {}]


def _random_instance(rng: random.Random, depth: int = 0) -> Any:
    if depth < 2 and rng.random() < 0.3:
        return {name: _random_instance(rng, depth + 1) for name in rng.sample("abcd", 2)}
    if depth < 2 and rng.random() < 0.2:
        return [_random_instance(rng, depth + 1) for _ in range(rng.randrange(4))]
    return rng.choice(_VALUES)


@pytest.mark.parametrize("seed", range(40))
def test_random_schemas_the_oracle_never_accepts_what_jsonschema_rejects(seed: int) -> None:
    rng = random.Random(seed)
    schema = _random_schema(rng)
    while schema.get("type") != "object":
        schema = _random_schema(rng)
    oracle = simple_oracle(schema)
    assert oracle is not None
    reference = jsonschema.Draft202012Validator(schema)
    for _ in range(300):
        instance = _random_instance(rng)
        if oracle(instance):
            assert reference.is_valid(instance), (schema, instance)


def _random_limited(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    """A subschema of one type with its limits: what the oracle's specialised checks judge."""
    choice = rng.randrange(7 if depth < 2 else 5)
    if choice == 0:
        limits = {"minLength": rng.randrange(3), "maxLength": rng.randrange(1, 5)}
        return {"type": "string", **dict(rng.sample(sorted(limits.items()), rng.randrange(3)))}
    if choice == 1:
        bounds = {"minimum": rng.choice([0, 1, 0.5, -2, 2**70]), "maximum": rng.choice([1, 1.5])}
        picked = dict(rng.sample(sorted(bounds.items()), rng.randrange(3)))
        return {"type": rng.choice(["integer", "number", ["integer", "number"]]), **picked}
    if choice == 2:
        members = rng.sample(["a", "b", "", "abcd", 1, None], 3)
        enum: dict[str, Any] = {"enum": members}
        if rng.random() < 0.5:
            enum["type"] = rng.choice(["string", ["string", "null"], "integer"])
        if rng.random() < 0.5:
            enum["maxLength"] = rng.randrange(3)
        return enum
    if choice == 3:
        return {"type": rng.choice(["string", "integer", "number", "boolean", "null", "array"])}
    if choice == 4:
        return {"type": "string", "pattern": "a"}  # deferred
    array: dict[str, Any] = {"type": "array", "minItems": rng.randrange(2)}
    if rng.random() < 0.7:
        array["maxItems"] = rng.randrange(1, 4)
    if rng.random() < 0.8:
        array["items"] = _random_limited(rng, depth + 1)
    if choice == 6:
        array = {"type": "object", "properties": {"a": _random_limited(rng, depth + 1)}}
        array["additionalProperties"] = rng.choice([True, False])
    return array


_LIMIT_VALUES: list[Any] = [
    *("", "a", "b", "ab", "abcd", "é"),
    *(0, 1, -2, -3, 2, 2**70, 1.0, 0.5, 1.5, 0.25, -2.0),
    *(True, False, None, [], {}),
]


def _limit_instance(rng: random.Random, depth: int = 0) -> Any:
    if depth < 2 and rng.random() < 0.25:
        return [_limit_instance(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 2 and rng.random() < 0.1:
        return {name: _limit_instance(rng, depth + 1) for name in rng.sample("ab", 1)}
    return rng.choice(_LIMIT_VALUES)


def test_the_specialised_checks_give_the_general_verdicts() -> None:
    """Closed objects and one-type values judged in C loops: the same verdicts, both ways.

    The general checks (built with the specialisations turned off) are the
    oracle's definition; the specialised ones must say True and False exactly
    where they do, and True only for what jsonschema accepts.
    """
    from mcpsniff.core import schemas

    accepted = 0
    for seed in range(80):
        rng = random.Random(seed)
        names = rng.sample("abcd", rng.randrange(1, 5))
        properties = {name: _random_limited(rng) for name in names}
        schema = {
            "type": "object",
            "properties": properties,
            "required": rng.sample(sorted(properties), rng.randrange(2)),
            "additionalProperties": rng.random() < 0.2,
        }
        special = simple_oracle(schema)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(schemas, "_single_type_check", lambda *args: None)
            patch.setattr(schemas, "_generated_check", lambda *args: None)
            general = simple_oracle(schema)
        assert special is not None and general is not None
        reference = jsonschema.Draft202012Validator(schema)
        for _ in range(300):
            picked = rng.sample([*names, "z"], rng.randrange(len(names) + 2))
            instance = {name: _limit_instance(rng) for name in picked}
            verdict = special(instance)
            assert verdict is general(instance), (schema, instance)
            if verdict:
                accepted += 1
                assert reference.is_valid(instance), (schema, instance)
        for other in ([], "a", None, 1):
            assert special(other) is False
    assert accepted > 2000  # the oracle's own verdicts, not only deferrals


def test_the_specialised_checks_at_their_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 3},
            "mode": {"enum": ["ab", "abcd", 1], "maxLength": 3},
            "count": {"type": "integer", "minimum": 1, "maximum": 2},
            "ratio": {"type": "number", "minimum": 0.5},
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
            "sizes": {"type": "array", "items": {"type": "integer", "maximum": 9}},
            "flag": {"type": "boolean"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    oracle = simple_oracle(schema)
    assert oracle is not None
    assert oracle({"query": "a"}) is True
    assert oracle({"query": "abc", "flag": False, "count": 2, "ratio": 0.5}) is True
    assert oracle({"query": "a", "mode": "ab", "paths": ["x", "y"], "sizes": [9, 0]}) is True
    assert oracle({"query": "a", "ratio": 2**70, "count": 1}) is True
    for deferred in (
        {},  # required
        {"query": ""},
        {"query": "abcd"},
        {"query": 1},
        {"query": "a", "other": 1},  # additionalProperties: false
        {"query": "a", "mode": "abcd"},  # in the enum, too long
        {"query": "a", "mode": "b"},
        {"query": "a", "mode": 1},  # a number in the enum: the validators'
        {"query": "a", "count": 0},
        {"query": "a", "count": 3},
        {"query": "a", "count": True},  # a bool is no integer
        {"query": "a", "count": 1.0},  # an integer in some drafts only
        {"query": "a", "ratio": 0.25},
        {"query": "a", "ratio": False},
        {"query": "a", "paths": []},
        {"query": "a", "paths": ["x", "y", "z"]},
        {"query": "a", "paths": ["x", 1]},
        {"query": "a", "paths": "x"},
        {"query": "a", "sizes": [10]},
        {"query": "a", "sizes": [True]},
        {"query": "a", "flag": 0},
        {"query": "a", "flag": None},
    ):
        assert oracle(deferred) is False, deferred


def test_a_map_of_typed_values_is_judged_by_its_value_types() -> None:
    oracle = simple_oracle(MAP)
    assert oracle is not None
    assert oracle({}) and oracle({"a": "x", "b": 2})
    assert not oracle({"a": "x", "b": 2.5})
    assert not oracle({"a": True})  # a bool is no integer
    assert not oracle([("a", "x")])


def test_a_plain_valid_schema_waits_for_jsonschema_until_an_instance_needs_it() -> None:
    """Valid instances never import jsonschema: the oracle, then fastjsonschema, accept them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mcpsniff.core.schemas import compile_schema\n"
        "schema = {'type': 'object', 'properties': {'n': {'type': 'integer', 'minimum': 0}},"
        " 'required': ['n'], 'additionalProperties': False}\n"
        "compiled = compile_schema(schema)\n"
        "assert compiled.error is None and compiled.reference is not None\n"
        "assert compiled.first_error({'n': 3}) is None\n"
        "print('jsonschema' in sys.modules, 'fastjsonschema' in sys.modules)\n"
        # 3.0 is an integer to both validators, not to the oracle (which defers).
        "assert compiled.first_error({'n': 3.0}) is None\n"
        "print('jsonschema' in sys.modules, 'fastjsonschema' in sys.modules)\n"
        # One error in a plain schema is worded without jsonschema (core/schema_explain.py).
        "print(compiled.first_error({'n': -1}))\n"
        "print('jsonschema' in sys.modules)\n"
        # Two: jsonschema's best_match chooses.
        "print(compiled.first_error({'n': -1, 'x': 0}))\n"
        "print('jsonschema' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == [
        "False False",
        "False True",
        "at /n: -1 is less than the minimum of 0",
        "False",
        "Additional properties are not allowed ('x' was unexpected)",
        "True",
    ]


@pytest.mark.parametrize("schema", [ECHO, CLOSED, DRAFT4, LIMITS, MAP, NESTED])
def test_waiting_or_not_the_verdicts_are_jsonschema_s(schema: dict[str, Any]) -> None:
    """A schema built late gives first_error what the eagerly built validator gives."""
    from mcpsniff.core import schemas

    compiled = schemas._compile(schema, 100)
    reference = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )(schema)
    for instance in INSTANCES + NESTED_INSTANCES:
        error = compiled.first_error(instance)
        assert (error is None) is reference.is_valid(instance), (schema, instance, error)


def test_the_written_out_check_takes_no_text_from_the_schema() -> None:
    """Names and bounds are values in the generated function's namespace, never source."""
    hostile = 'a"):\n    import os\n    return True  #'
    schema = {
        "type": "object",
        "properties": {hostile: {"type": "string", "maxLength": 2}, "{n}": {"type": "integer"}},
        "required": [hostile],
        "additionalProperties": False,
    }
    oracle = simple_oracle(schema)
    assert oracle is not None
    assert oracle({hostile: "ab", "{n}": 3}) is True
    assert oracle({hostile: "abc"}) is False
    assert oracle({"{n}": 3}) is False
    assert oracle({hostile: "a", "{n}": "3"}) is False


def test_many_properties_are_checked_by_the_loop() -> None:
    properties = {f"p{index}": {"type": "integer", "minimum": index} for index in range(70)}
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    oracle = simple_oracle(schema)
    assert oracle is not None
    assert oracle({"p0": 0, "p69": 69}) is True
    assert oracle({"p69": 68}) is False
    assert oracle({"p70": 0}) is False
