"""Parsing JSON from traffic or a trace without letting its shape hurt the replay.

Everything replay parses is hostile (docs/architecture.md, invariant 6). ``json.loads``
raises ``RecursionError``, not ``ValueError``, on an array nested a few
thousand levels deep, and a value nested just below that limit still breaks
every recursive walk done on it later (comparing, copying, re-encoding). So
replay parses through ``loads``, which refuses both with ``ValueError``.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: Deeper than any MCP message needs (schemas nest a few dozen levels at most),
#: and shallow enough that every recursive walk over the value stays far from
#: Python's recursion limit.
MAX_DEPTH = 200


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels deep."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return False


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"number {literal[:40]} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(raw: bytes | str, *, finite: bool = False) -> Any:
    """The JSON value in ``raw``; ``ValueError`` for bad JSON and for nesting beyond MAX_DEPTH.

    With ``finite`` (what a client sends us), ``NaN`` and ``Infinity`` (not
    JSON at all) and numbers beyond a float's range (``1e999``) are refused
    too: echoed back as an id they would become ``Infinity``, which is not
    JSON, and break the client's parser.
    """
    try:
        if finite:
            value = json.loads(raw, parse_float=_finite, parse_constant=_no_constant)
        else:
            value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    if depth_exceeds(value):
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value
