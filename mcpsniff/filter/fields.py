"""The fields a filter can name, what type each is, and how to read it from a view.

Names follow the OpenTelemetry semantic conventions for MCP and GenAI where
one exists (``mcp.method.name``, ``gen_ai.tool.name``, ``jsonrpc.request.id``,
``mcp.session.id``, ``error.type``); ``error.type`` is ``tool_error`` for a
``tools/call`` result with ``isError: true``, as those conventions say, and
the error code as a string for a JSON-RPC error. The rest are mcpsniff's own.
Every getter returns a tuple of values: empty when the field is absent, and
several for ``rule`` and ``severity`` when a message has several findings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcpsniff.core.model import KINDS
from mcpsniff.filter.view import EVENT, FINDING, MessageView

TEXT = "text"
NUMBER = "number"
DURATION = "duration"
SEVERITY = "severity"
ID = "id"
CHOICE = "choice"

#: Severity order for ``severity >= warning``.
SEVERITY_ORDER = {"info": 0, "warning": 1, "error": 2}
DIRECTIONS = ("c2s", "s2c")
VIEW_KINDS = (*KINDS, EVENT, FINDING)
#: Friendlier spellings a user may type for a choice value.
CHOICE_ALIASES = {"result": "response", "notify": "notification", "client": "c2s", "server": "s2c"}


@dataclass(frozen=True, slots=True)
class Field:
    """One filter field."""

    name: str
    type: str
    get: Callable[[MessageView], tuple[Any, ...]]
    help: str
    choices: tuple[str, ...] = ()


def _one(value: Any) -> tuple[Any, ...]:
    return () if value is None else (value,)


def _error_code(view: MessageView) -> tuple[Any, ...]:
    code = view.error_code
    return (code,) if isinstance(code, int | float) and not isinstance(code, bool) else ()


def _error_type(view: MessageView) -> tuple[Any, ...]:
    if view.is_error:
        return ("tool_error",)
    if view.error_code is not None:
        return (str(view.error_code),)
    return ()


def _trace_id(view: MessageView) -> tuple[Any, ...]:
    trace = view.trace
    return (trace.trace_id,) if trace is not None and trace.trace_id is not None else ()


def _trace_problem(view: MessageView) -> tuple[Any, ...]:
    trace = view.trace
    return (trace.problem,) if trace is not None and trace.problem is not None else ()


def _resource_uri(view: MessageView) -> tuple[Any, ...]:
    method = view.method or ""
    return _one(view.target) if method.startswith("resources/") else ()


def _size(view: MessageView) -> tuple[Any, ...]:
    return (len(view.frame.raw),) if view.frame is not None else ()


_FIELD_LIST = (
    Field(
        "mcp.method.name",
        TEXT,
        lambda v: _one(v.method),
        "the method; for a response, its request's",
    ),
    Field(
        "gen_ai.tool.name",
        TEXT,
        lambda v: _one(v.tool),
        "the tool of a tools/call request, its response or its cancellation",
    ),
    Field(
        "jsonrpc.request.id",
        ID,
        lambda v: (v.id,) if v.has_id else (),
        'the message id: 3 matches the number, "3" the string',
    ),
    Field("mcp.session.id", TEXT, lambda v: (v.session,), "the session key"),
    Field("mcp.resource.uri", TEXT, _resource_uri, "the URI of a resources/* request"),
    Field("error.code", NUMBER, _error_code, "a JSON-RPC error's code"),
    Field(
        "error.type",
        TEXT,
        _error_type,
        "the error code as text, or tool_error for an isError tool result",
    ),
    Field(
        "trace.id",
        TEXT,
        _trace_id,
        "the W3C trace-id in params._meta.traceparent (a response: its request's)",
    ),
    Field(
        "trace.problem",
        TEXT,
        _trace_problem,
        "why a params._meta.traceparent is not valid W3C Trace Context",
    ),
    Field("direction", CHOICE, lambda v: _one(v.direction), "c2s or s2c", DIRECTIONS),
    Field("kind", CHOICE, lambda v: (v.kind,), "the kind of message", VIEW_KINDS),
    Field("latency", DURATION, lambda v: _one(v.latency_ms), "a response's latency"),
    Field("rule", TEXT, lambda v: tuple(f.rule for f in v.findings), "a finding's rule id"),
    Field(
        "severity",
        SEVERITY,
        lambda v: tuple(f.severity for f in v.findings),
        "a finding's severity: info < warning < error",
        tuple(SEVERITY_ORDER),
    ),
    Field("event", TEXT, lambda v: _one(v.event.event if v.event else None), "an event's name"),
    Field("seq", NUMBER, lambda v: (v.seq,), "the frame's (or event's) sequence number"),
    Field("size", NUMBER, _size, "the frame's size in bytes"),
)

FIELDS: dict[str, Field] = {f.name: f for f in _FIELD_LIST}
#: Short names accepted for the long OpenTelemetry ones.
ALIASES = {
    "method": "mcp.method.name",
    "tool": "gen_ai.tool.name",
    "id": "jsonrpc.request.id",
    "session": "mcp.session.id",
    "uri": "mcp.resource.uri",
    "code": "error.code",
    "dir": "direction",
    "traceid": "trace.id",
    "trace_id": "trace.id",
}


def resolve(name: str) -> str | None:
    """The canonical field for ``name`` (a field or an alias), or ``None``."""
    if name in FIELDS:
        return name
    return ALIASES.get(name)
