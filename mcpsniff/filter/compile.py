"""Turning a parsed filter into a predicate over ``MessageView`` objects.

Every check a value allows is done here, once, at compile time: an unknown
kind, a bad duration or regex, ``<`` on a text field are errors with a
position, never a silent mismatch at run time.

Semantics for fields with several values (a message with two findings has
two ``rule`` values): ``==``, ``~``, ``<`` and ``>`` hold when *any* value
satisfies them; ``!=`` and ``!~`` hold when *none* does (so they also hold when
the field is absent), which is ``not (field == value)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from mcpsniff.filter.errors import FilterError
from mcpsniff.filter.fields import (
    CHOICE,
    CHOICE_ALIASES,
    DURATION,
    FIELDS,
    ID,
    NUMBER,
    SEVERITY,
    SEVERITY_ORDER,
)
from mcpsniff.filter.regex import compile_search
from mcpsniff.filter.syntax import And, Compare, Node, Not, Or, Present, Text
from mcpsniff.filter.view import MessageView

Predicate = Callable[[MessageView], bool]

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m|h)?", re.IGNORECASE)
_UNIT_MS = {
    None: 1.0,
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "ms": 1.0,
    "s": 1000.0,
    "m": 60_000.0,
    "h": 3_600_000.0,
}
_ORDERED = (NUMBER, DURATION, SEVERITY)


def compile_node(node: Node, source: str) -> Predicate:
    """The predicate for ``node``; raises ``FilterError`` for values a field cannot take."""
    if isinstance(node, Or):
        parts = [compile_node(item, source) for item in node.items]
        return lambda view: any(p(view) for p in parts)
    if isinstance(node, And):
        parts = [compile_node(item, source) for item in node.items]
        return lambda view: all(p(view) for p in parts)
    if isinstance(node, Not):
        inner = compile_node(node.item, source)
        return lambda view: not inner(view)
    if isinstance(node, Present):
        get = FIELDS[node.field].get
        return lambda view: bool(get(view))
    if isinstance(node, Text):
        needle = node.text.lower()
        return lambda view: needle in searchable_text(view)
    return _compare(node, source)


def _compare(node: Compare, source: str) -> Predicate:
    field = FIELDS[node.field]
    op = node.op
    get = field.get
    if op in ("~", "!~"):
        search = compile_search(node.value, source, node.value_pos + (1 if node.quoted else 0))

        def matches(view: MessageView) -> bool:
            return any(search(_as_text(value)) for value in get(view))

        return matches if op == "~" else lambda view: not matches(view)
    if op in ("<", ">", "<=", ">=") and field.type not in _ORDERED:
        raise FilterError(
            f"{op!r} compares numbers, durations or severities; {field.name} is "
            f"{'text' if field.type != ID else 'an id'} (use == or ~)",
            source,
            node.op_pos,
        )
    wanted = _value(node, field.type, field.choices, source)
    if field.type == SEVERITY:
        rank = SEVERITY_ORDER[wanted]
        test = _ordered(op, rank)
        return _any_or_none(
            op, lambda view: any(test(SEVERITY_ORDER.get(s, -1)) for s in get(view))
        )
    if field.type in (NUMBER, DURATION):
        test = _ordered(op, wanted)
        return _any_or_none(
            op,
            lambda view: any(
                isinstance(v, int | float) and not isinstance(v, bool) and test(v)
                for v in get(view)
            ),
        )
    if field.type == ID:
        return _any_or_none(op, lambda view: any(_same_id(v, wanted) for v in get(view)))
    return _any_or_none(op, lambda view: wanted in get(view))


def _any_or_none(op: str, any_match: Predicate) -> Predicate:
    """``any_match`` for positive operators; its negation for ``!=``."""
    if op == "!=":
        return lambda view: not any_match(view)
    return any_match


def _ordered(op: str, wanted: float) -> Callable[[float], bool]:
    if op == "<":
        return lambda v: v < wanted
    if op == ">":
        return lambda v: v > wanted
    if op == "<=":
        return lambda v: v <= wanted
    if op == ">=":
        return lambda v: v >= wanted
    # "==" and "!=" both test equality; "!=" is negated by _any_or_none.
    return lambda v: v == wanted


def _value(node: Compare, kind: str, choices: tuple[str, ...], source: str) -> Any:
    """The comparison's value converted for a field of type ``kind``."""
    text = node.value
    where = node.value_pos
    if kind == NUMBER:
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                raise FilterError(
                    f"{node.field} takes a number, not {text!r}", source, where
                ) from None
    if kind == DURATION:
        return parse_duration(text, source, where)
    if kind == SEVERITY:
        if text.lower() not in SEVERITY_ORDER:
            raise FilterError(
                f"unknown severity {text!r} (one of info, warning, error)", source, where
            )
        return text.lower()
    if kind == CHOICE:
        value = CHOICE_ALIASES.get(text.lower(), text.lower())
        if value not in choices:
            raise FilterError(
                f"unknown {node.field} {text!r} (one of {', '.join(choices)})", source, where
            )
        return value
    if kind == ID:
        if node.quoted:
            return ("s", text)
        try:
            return ("n", int(text))
        except ValueError:
            try:
                return ("n", float(text))
            except ValueError:
                # A bare word that is no number: the user means the string id.
                return ("s", text)
    return text


def parse_duration(text: str, source: str = "", where: int = 0) -> float:
    """A duration such as ``100ms``, ``1.5s`` or ``250`` (milliseconds), in milliseconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise FilterError(
            f"bad duration {text!r} (a number with ns, us, ms, s, m or h; plain means ms)",
            source or text,
            where,
        )
    unit = match.group(2)
    return float(match.group(1)) * _UNIT_MS[unit.lower() if unit else None]


def _same_id(value: Any, wanted: tuple[str, Any]) -> bool:
    kind, target = wanted
    if kind == "s":
        return isinstance(value, str) and value == target
    return isinstance(value, int | float) and not isinstance(value, bool) and value == target


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def searchable_text(view: MessageView) -> str:
    """What free text searches, lower-cased: the frame's bytes, names, rules and messages."""
    parts: list[str] = []
    if view.frame is not None:
        parts.append(view.frame.raw.decode("utf-8", errors="replace"))
    for value in (view.method, view.tool, view.target):
        if value:
            parts.append(value)
    for finding in view.findings:
        parts.append(finding.rule)
        parts.append(finding.message)
    if view.event is not None:
        parts.append(view.event.event)
        parts.append(_as_text(view.event.data))
    return "\n".join(parts).lower()
