"""What the HTTP layer tells the analysis about an exchange: small typed events.

``AnalyzedExchange`` returns these, each routed to a session
(``Routed``); the adapter hands them to the recorder, which writes them to
the trace. The trace keeps its one record shape for every transport event, a
name and a JSON object: ``record_data`` is the only place that turns a typed
event into that object, so the trace stays as it always was (the rules in
``mcpsniff/core/rules/http.py`` read it, from a live capture or a file).

A ``Frame`` is no event but a message body for the analyzer (a POST body, a
JSON reply, an SSE event's data).

The events are frozen, slotted dataclasses made by ``fast_init``
(``mcpsniff.core.frozen``): the adapter makes an event and a frame for every
SSE event, and a frozen dataclass's own ``__init__`` would cost four times as
much. ``EndpointRewritten``, ``RequestCut``, ``HttpGuardAnswered``, ``ExchangeFault``
and ``HttpRefused`` are observations too: the shell sends them as they are
(``mcpsniff.core.observations``); ``Unreachable`` as well, once its URL is redacted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mcpsniff.core.frozen import fast_init
from mcpsniff.core.observations import (
    EndpointRewritten,
    Event,
    ExchangeFault,
    HttpGuardAnswered,
    HttpRefused,
    RequestCut,
    Unreachable,
)


@fast_init
@dataclass(frozen=True, slots=True)
class HttpRequest(Event):
    """A request went to the server (its frame, if any, follows it)."""

    name: ClassVar[str] = "http-request"
    exchange: int
    t: float
    method: str
    #: Redacted unless redaction is off.
    path: str
    headers: list[list[str]]
    transport: str
    host: str | None
    client: str | None
    #: False for a plain exchange (no MCP traffic).
    mcp: bool

    def data(self) -> dict[str, Any]:
        return {
            "exchange": self.exchange,
            "method": self.method,
            "path": self.path,
            "headers": self.headers,
            "transport": self.transport,
            **({"host": self.host} if self.host else {}),
            **({"client": self.client} if self.client else {}),
            **({} if self.mcp else {"mcp": False}),
        }


@fast_init
@dataclass(frozen=True, slots=True)
class HttpResponse(Event):
    """The response head came back."""

    name: ClassVar[str] = "http-response"
    exchange: int
    t: float
    status: int
    headers: list[list[str]]


@fast_init
@dataclass(frozen=True, slots=True)
class SseEventSeen(Event):
    """One event (or comment-only block) of a response's event stream."""

    name: ClassVar[str] = "sse-event"
    optional: ClassVar[tuple[str, ...]] = (
        "id",
        "event",
        "retry",
        "incomplete",
        "comment_only",
        "endpoint",
    )
    exchange: int
    t: float
    #: Its place in the stream, from 0.
    index: int
    id: str | None
    event: str | None
    retry: int | None
    incomplete: bool
    comment_only: bool
    #: The POST URI of a legacy ``endpoint`` event (redacted, bounded).
    endpoint: str | None


@fast_init
@dataclass(frozen=True, slots=True)
class HttpEnd(Event):
    """The exchange is over (``body_bytes``: the response body's size; None: no response)."""

    name: ClassVar[str] = "http-end"
    optional: ClassVar[tuple[str, ...]] = ("body_bytes",)
    exchange: int
    t: float
    outcome: str
    body_bytes: int | None


@fast_init
@dataclass(frozen=True, slots=True)
class HttpErrorBody(Event):
    """The start of an HTTP error's body that is no JSON-RPC (an HTML 404 page, say)."""

    name: ClassVar[str] = "http-error-body"
    exchange: int
    t: float
    excerpt: str


@fast_init
@dataclass(frozen=True, slots=True)
class BodyNotAnalyzed(Event):
    """A body passed, but could not be decoded for the analyzer: no frame."""

    name: ClassVar[str] = "http-body-not-analyzed"
    renamed: ClassVar[dict[str, str]] = {"direction": "dir"}
    exchange: int
    t: float
    #: ``c2s`` (the request body) or ``s2c`` (the response body).
    direction: str
    reason: str


@fast_init
@dataclass(frozen=True, slots=True)
class ExchangeGap(Event):
    """Bytes of an exchange's body never reached the analysis: forwarded, not analyzed."""

    name: ClassVar[str] = "capture-gap"
    optional: ClassVar[tuple[str, ...]] = ("reason",)
    exchange: int
    t: float
    direction: str
    lost_bytes: int
    #: Why, when it is not the usual full backlog.
    reason: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class Frame:
    """A message body for the analyzer, with the meta its frame record carries."""

    direction: str
    t: float
    raw: bytes
    #: ``http`` (a whole body) or ``sse`` (an event's data).
    transport: str
    meta: dict[str, Any]


HttpEvent = (
    HttpRequest
    | HttpResponse
    | SseEventSeen
    | HttpEnd
    | Unreachable
    | HttpErrorBody
    | BodyNotAnalyzed
    | ExchangeGap
    | EndpointRewritten
    | RequestCut
    | HttpGuardAnswered
    | ExchangeFault
    | HttpRefused
)

#: An event or frame, and the session it belongs to.
Routed = tuple[str, "HttpEvent | Frame"]


def record_data(event: HttpEvent) -> tuple[str, dict[str, Any]]:
    """The trace's name and data of ``event``: the one place the record shape is made."""
    return event.name, event.data()
