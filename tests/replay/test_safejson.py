"""Parsing hostile JSON: bad input and deep nesting are ValueErrors, never RecursionErrors."""

from __future__ import annotations

import pytest

from mcpsniff.replay.safejson import MAX_DEPTH, depth_exceeds, loads


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_parses() -> None:
    value = loads(nested(MAX_DEPTH))
    assert not depth_exceeds(value)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_deeper_nesting_is_a_value_error(depth: int) -> None:
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads(nested(depth))


def test_objects_count_as_levels_too() -> None:
    text = '{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(ValueError):
        loads(text)
    assert loads('{"a":[1,{"b":null}]}') == {"a": [1, {"b": None}]}


@pytest.mark.parametrize("raw", [b"{bad", b"\xff\xfe", b""])
def test_bad_json_is_a_value_error(raw: bytes) -> None:
    with pytest.raises(ValueError):
        loads(raw)
