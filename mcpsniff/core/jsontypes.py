"""Naming JSON value types the way the JSON-RPC and MCP specs do."""

from __future__ import annotations

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
