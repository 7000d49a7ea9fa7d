"""``json_type`` names values as the specs do; ``any_leaf`` finds a leaf at any depth;
``is_base64`` tells MCP's base64 strings."""

from __future__ import annotations

import sys

import pytest

from mcpsniff.core.jsontypes import any_leaf, is_base64, json_type


def test_json_type_names_each_value() -> None:
    values = [None, True, 1, 1.5, "s", [], {}]
    names = ["null", "boolean", "number", "number", "string", "array", "object"]
    assert [json_type(v) for v in values] == names


def test_any_leaf_tests_leaves_only_at_any_depth() -> None:
    def is_seven(item: object) -> bool:
        return item == 7

    assert any_leaf({"a": [1, {"b": [7]}]}, is_seven)
    assert not any_leaf({"a": [1, {"b": [8]}], "c": "7"}, is_seven)
    assert any_leaf(7, is_seven)
    # Objects and arrays themselves are never tested, only what they hold.
    assert not any_leaf({"x": []}, lambda item: isinstance(item, list | dict))


def test_any_leaf_survives_nesting_deeper_than_the_recursion_limit() -> None:
    deep: object = "needle"
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    assert any_leaf(deep, lambda item: item == "needle")
    assert not any_leaf(deep, lambda item: item == "hay")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("aGVsbG8=", True),
        ("", True),  # no bytes, validly encoded
        ("aGVsbG8", False),  # padding missing
        ("aGV sbG8=", False),  # a space is no base64 character
        ("aGVsbG8=\n", False),
        ("é", False),  # not ASCII: b64decode raises ValueError
        (b"aGVsbG8=", False),  # JSON has no bytes: only a string is base64
        (None, False),
        (12, False),
    ],
)
def test_is_base64_takes_only_strict_base64_strings(value: object, expected: bool) -> None:
    assert is_base64(value) is expected
