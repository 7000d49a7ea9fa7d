"""Parsing JSON from traffic or a trace without letting its shape hurt the replay.

Everything replay parses is hostile (DESIGN.md, invariant 6). ``json.loads``
raises ``RecursionError``, not ``ValueError``, on an array nested a few
thousand levels deep, and a value nested just below that limit still breaks
every recursive walk done on it later (comparing, copying, re-encoding). So
replay parses through ``loads``, which refuses both with ``ValueError``.
"""

from __future__ import annotations

import json
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


def loads(raw: bytes | str) -> Any:
    """The JSON value in ``raw``; ``ValueError`` for bad JSON and for nesting beyond MAX_DEPTH."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    if depth_exceeds(value):
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value
