"""The 2026-07-28 request metadata headers: their value encoding and ``x-mcp-header``.

Streamable HTTP (2026-07-28) mirrors body fields into headers
(``basic/transports/streamable-http.mdx`` § Request Metadata): ``Mcp-Method``,
``Mcp-Name`` and, for tool parameters whose schema carries ``x-mcp-header``,
``Mcp-Param-{Name}``. This module holds what the rules need to compare a header
with its body value, and nothing else; it is pure (no I/O, no state).

§ Value Encoding: "When a value cannot be safely represented as a plain ASCII
header value (e.g., it contains non-ASCII characters, control characters, or
has leading/trailing whitespace), clients **MUST** use Base64 encoding of the
UTF-8 representation" as ``=?base64?{Base64EncodedValue}?=``; "These markers
are case-sensitive"; "clients **MUST** also Base64-encode any plain-ASCII value
that matches the sentinel pattern"; and "servers **MUST** decode an encoded
``Mcp-Name`` or ``Mcp-Param-{Name}`` value before comparing it to the
corresponding request body value".
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any, Final

from mcpsniff.core.lazy_pattern import lazy

PREFIX: Final = "=?base64?"
SUFFIX: Final = "?="
PARAM_HEADER: Final = "mcp-param-"
ANNOTATION: Final = "x-mcp-header"
#: RFC 9110 § 5.6.2: token = 1*tchar.
_TOKEN = lazy(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: What a plain header value may hold: visible ASCII, space and tab (RFC 9110 § 5.5).
_FIELD_VALUE = lazy(r"[\x20-\x7e\t]*")
#: A value that survives as a plain header: visible ASCII and inner spaces only.
_SAFE = lazy(r"(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?")
#: "Integer values MUST be within the safe range" (tools.mdx § x-mcp-header).
SAFE_INTEGER: Final = 2**53 - 1
#: The types x-mcp-header may annotate: "integer, string, boolean".
PRIMITIVES: Final = frozenset({"string", "integer", "boolean"})
#: Schema keywords whose subschemas are no longer "statically reachable".
_BRANCHES: Final = frozenset(
    {
        "items",
        "prefixItems",
        "contains",
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "propertyNames",
        "dependentSchemas",
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "$defs",
        "definitions",
    }
)
#: How many schema nodes an annotation walk visits at most (hostile schemas).
WALK_LIMIT: Final = 20000


@dataclass(frozen=True, slots=True)
class HeaderValue:
    """A header value as a receiver reads it: ``text`` after decoding, or why it has none."""

    raw: str
    text: str | None
    encoded: bool = False
    #: Why the value is not usable (bad base64, bad UTF-8, raw invalid characters).
    problem: str | None = None


def is_sentinel(value: str) -> bool:
    """Whether ``value`` has the exact (lowercase) ``=?base64?...?=`` form."""
    return len(value) >= len(PREFIX) + len(SUFFIX) and (
        value.startswith(PREFIX) and value.endswith(SUFFIX)
    )


def read(raw: str) -> HeaderValue:
    """Decode a ``Mcp-Name`` / ``Mcp-Param-*`` value as a server must before comparing it."""
    if is_sentinel(raw):
        payload = raw[len(PREFIX) : len(raw) - len(SUFFIX)]
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            return HeaderValue(raw, None, True, "its =?base64?...?= payload is not valid Base64")
        try:
            return HeaderValue(raw, data.decode("utf-8"), True)
        except UnicodeDecodeError:
            return HeaderValue(raw, None, True, "its Base64 payload is not UTF-8")
    if _FIELD_VALUE.fullmatch(raw) is None:
        return HeaderValue(raw, raw, False, "it holds characters outside visible ASCII")
    return HeaderValue(raw, raw, False)


def why_encode(text: str) -> str | None:
    """Why ``text`` must travel Base64-encoded, or None when it may go plain."""
    if _SAFE.fullmatch(text) is not None:
        return "it matches the =?base64?...?= pattern" if is_sentinel(text) else None
    if any(ord(ch) > 0x7E for ch in text):
        return "it has non-ASCII characters"
    if text != text.strip(" \t"):
        return "it has leading or trailing whitespace"
    return "it has control characters"


def rendered(value: Any) -> str | None:
    """A body value as its header carries it (§ Value Encoding > Type conversion).

    ``string`` as is, ``integer`` in decimal, ``boolean`` as ``true``/``false``;
    None for anything else (the header is then omitted).
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) <= SAFE_INTEGER:
        return str(int(value))
    return None


def same_value(text: str, value: Any) -> bool:
    """Whether a decoded header value matches its body value.

    "When validating integer parameter values, servers **SHOULD** compare the
    header value and the body value numerically rather than as strings (e.g.,
    ``42.0`` and ``42`` are considered equal)" (§ Server Validation).
    """
    expected = rendered(value)
    if expected is not None and text == expected:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(text) == float(value)
        except (ValueError, OverflowError):
            return False
    return False


@dataclass(frozen=True, slots=True)
class Annotation:
    """One ``x-mcp-header`` annotation: the header name and the property path it mirrors."""

    name: str
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolHeaders:
    """The ``x-mcp-header`` annotations of one tool, or why they make the tool invalid."""

    annotations: tuple[Annotation, ...]
    problem: str | None = None


NO_HEADERS: Final = ToolHeaders(())


def tool_headers(schema: Any) -> ToolHeaders:
    """The annotations of a tool's ``inputSchema``, judged by tools.mdx § x-mcp-header.

    "**MUST NOT** be empty", "**MUST** match HTTP field-name token syntax",
    "**MUST** be case-insensitively unique", "**MUST** only be applied to
    parameters with primitive types (integer, string, boolean)", and "**MUST**
    only be applied to properties that are *statically reachable* from the
    schema root" (a chain of ``properties`` keys only).
    """
    if not isinstance(schema, dict):
        return NO_HEADERS
    found: list[Annotation] = []
    seen: dict[str, str] = {}
    stack: list[tuple[tuple[str, ...] | None, Any]] = [((), schema)]
    visited = 0
    while stack:
        path, node = stack.pop()
        visited += 1
        if visited > WALK_LIMIT:
            return ToolHeaders(tuple(found))  # too big to judge; what was read stands
        if not isinstance(node, dict):
            continue
        if ANNOTATION in node:
            problem = _annotation_problem(node, path, seen)
            if problem is not None:
                return ToolHeaders((), problem)
            assert path is not None
            found.append(Annotation(node[ANNOTATION], path))
        for key, sub in node.items():
            if key == "properties" and isinstance(sub, dict):
                for name, child in sub.items():
                    stack.append((None if path is None else (*path, name), child))
            elif key in _BRANCHES:
                if isinstance(sub, list):
                    children: Any = sub
                elif isinstance(sub, dict) and key not in _SINGLE:
                    children = sub.values()
                else:
                    children = (sub,)
                stack.extend((None, child) for child in children)
    return ToolHeaders(tuple(sorted(found, key=lambda a: a.path)))


#: Branch keywords whose value is one schema (the others hold a list or a map).
_SINGLE: Final = frozenset(
    {
        "items",
        "contains",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
    }
)


def _annotation_problem(
    node: dict[str, Any], path: tuple[str, ...] | None, seen: dict[str, str]
) -> str | None:
    name = node[ANNOTATION]
    if not isinstance(name, str) or not name:
        return f"an x-mcp-header is {name!r}; it must be a non-empty header name"
    shown = name[:60]
    if _TOKEN.fullmatch(name) is None:
        return f"x-mcp-header {shown!r} is not an HTTP field-name token"
    if path is None or not path:
        return (
            f"x-mcp-header {shown!r} is not on a property reachable through properties alone "
            "(it sits under items, a composition keyword, $ref or the root)"
        )
    kind = node.get("type")
    if not isinstance(kind, str) or kind not in PRIMITIVES:
        return (
            f"x-mcp-header {shown!r} is on a parameter of type {str(kind)[:40]!r}, not integer, "
            "string or boolean"
        )
    folded = name.lower()
    if folded in seen:
        return f"x-mcp-header {shown!r} repeats {seen[folded][:60]!r} (names are case-insensitive)"
    seen[folded] = name
    return None


_ABSENT: Final = object()


def value_at(arguments: Any, path: tuple[str, ...]) -> Any:
    """The argument at ``path``, or None when it is absent (or the chain breaks)."""
    node = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key, _ABSENT)
        if node is _ABSENT:
            return None
    return node
