"""``schema_explain.verdict`` answers only what jsonschema answers, word for word."""

from __future__ import annotations

import random
from typing import Any

import jsonschema
import pytest
from jsonschema.exceptions import best_match

from mcpsniff.core.schema_explain import UNSURE, verdict
from tests.core.test_schema_valid import PLAIN
from tests.core.test_schemas import (
    CLOSED,
    DRAFT4,
    ECHO,
    INSTANCES,
    LIMITS,
    MAP,
    NESTED,
    NESTED_INSTANCES,
    _random_instance,
    _random_schema,
)

#: The bench trace's search tool (benchmarks/gen_trace.py) with an enum and an array of types.
SEARCH = {
    **PLAIN[0],
    "properties": {
        **PLAIN[0]["properties"],
        "mode": {"enum": ["overwrite", "append"]},
        "params": {"type": "array", "items": {"type": ["string", "number", "null"]}},
    },
}


def _reference(schema: dict[str, Any]) -> Any:
    """jsonschema's validator as ``schemas._reference_class`` builds it."""
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(
        schema
    )


def _agrees(schema: dict[str, Any], instance: Any) -> bool:
    """Whether ``verdict`` answered (True) or not (False); asserts an answer is jsonschema's."""
    answer = verdict(schema, instance)
    if answer is UNSURE:
        return False
    errors = list(_reference(schema).iter_errors(instance))
    if answer is None:
        assert errors == [], (schema, instance, errors)
    else:
        assert len(errors) == 1, (schema, instance, errors)
        best = best_match(iter(errors))
        assert best is not None
        assert answer == (tuple(best.absolute_path), best.message), (schema, instance)
    return True


@pytest.mark.parametrize("schema", [ECHO, CLOSED, DRAFT4, LIMITS, MAP, NESTED, SEARCH])
def test_every_answer_is_jsonschema_s(schema: dict[str, Any]) -> None:
    answered = sum(_agrees(schema, instance) for instance in INSTANCES + NESTED_INSTANCES)
    assert answered >= 5


@pytest.mark.parametrize("seed", range(40))
def test_random_schemas_and_instances_get_jsonschema_s_answer_or_none(seed: int) -> None:
    rng = random.Random(seed)
    schema = _random_schema(rng)
    while schema.get("type") != "object":
        schema = _random_schema(rng)
    answered = 0
    for dialect in (None, "http://json-schema.org/draft-04/schema#"):
        judged = schema if dialect is None else {**schema, "$schema": dialect}
        for _ in range(200):
            answered += _agrees(judged, _random_instance(rng))
    assert answered >= 100  # most are answered here, without jsonschema


@pytest.mark.parametrize(
    ("instance", "path", "message"),
    [
        ({"query": "a", "max_results": "138"}, ("max_results",), "'138' is not of type 'integer'"),
        ({"max_results": 3}, (), "'query' is a required property"),
        ({"query": "a", "max_results": 0}, ("max_results",), "0 is less than the minimum of 1"),
        (
            {"query": "a", "max_results": 1001},
            ("max_results",),
            "1001 is greater than the maximum of 1000",
        ),
        (
            {"query": "a", "mode": "other"},
            ("mode",),
            "'other' is not one of ['overwrite', 'append']",
        ),
        (
            {"query": "a", "b": 1, "a": 2},
            (),
            "Additional properties are not allowed ('a', 'b' were unexpected)",
        ),
        ({"query": "a", "paths": ["x", 2]}, ("paths", 1), "2 is not of type 'string'"),
        (
            {"query": "a", "params": [True]},
            ("params", 0),
            "True is not of type 'string', 'number', 'null'",
        ),
        ([], (), "[] is not of type 'object'"),
    ],
)
def test_one_error_is_worded_as_jsonschema_words_it(
    instance: Any, path: tuple[str | int, ...], message: str
) -> None:
    assert verdict(SEARCH, instance) == (path, message)
    assert _agrees(SEARCH, instance)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        (SEARCH, {"query": 1, "max_results": "2"}),  # two errors: best_match chooses
        (SEARCH, {"query": ""}),  # minLength: its message is not reproduced
        (SEARCH, {"query": "a", "mode": 1}),  # enum of a non-string: jsonschema's equality
        (SEARCH, {"query": "a", "max_results": 5.0}),  # an integer in some drafts only
        ({"type": "object", "properties": {"a": {"pattern": "^a"}}}, {"a": "b"}),
        ({"type": "object", "properties": {"a": True}}, {"a": 1}),
        ({"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"}, {}),
        ({"type": "object", "properties": {"a": {"type": "strange"}}}, {"a": 1}),
        ([], {}),
    ],
)
def test_what_is_not_certain_is_left_to_jsonschema(schema: Any, instance: Any) -> None:
    assert verdict(schema, instance) is UNSURE


def test_a_deep_or_large_instance_is_left_to_jsonschema() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"a": deep}}
    nested: Any = {}
    for _ in range(20):
        nested = {"a": nested}
    assert verdict(deep, nested) is UNSURE
    wide = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert verdict(wide, {str(n): n for n in range(100)}) is None
    assert verdict(wide, {str(n): n for n in range(10_000)}) is UNSURE
