"""Naming JSON value types the way the JSON-RPC and MCP specs do, and telling a base64 string."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any


def json_type(value: Any) -> str:
    """The JSON type of a parsed value: null, boolean, number, string, array or object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def is_base64(value: Any) -> bool:
    """Whether ``value`` is a base64 string (MCP's ``blob`` and ``data``: "base64-encoded")."""
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def any_leaf(value: Any, test: Callable[[Any], bool]) -> bool:
    """Whether ``test`` holds for a leaf of a parsed JSON value (all but objects and arrays).

    Iterative, with a stack of its own: a value from traffic or a trace may
    nest deeper than Python's recursion limit.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif test(item):
            return True
    return False
