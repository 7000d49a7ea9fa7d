"""The legacy HTTP+SSE transport's two endpoints (2024-11-05 transports.mdx § HTTP with SSE).

"The server MUST provide two endpoints: an SSE endpoint, for clients to
establish a connection and receive messages from the server; a regular HTTP
POST endpoint for clients to send messages to the server." On connect the
server sends an ``endpoint`` event naming the POST URI, and "All subsequent
client messages MUST be sent as HTTP POST requests to this endpoint."

* SSE-POST-TARGET: a client POST in the legacy session to another URI than the
  one the endpoint event named (compared as path and query, resolved against
  the SSE stream's URL as a relative reference is; a proxy that rewrites an
  absolute endpoint URL keeps its path and query).
* SSE-TWO-ENDPOINTS: a POST to exactly that URI answered 404 or 405 while the
  SSE stream is still open: the server named a POST endpoint it does not
  serve. (A 404 after the stream closed is a session that ended, not this.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from mcpsniff.core.rules import http
from mcpsniff.core.rules.registry import EVENT, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.core.session import Session

RULES = ("SSE-POST-TARGET", "SSE-TWO-ENDPOINTS")

_STATE_KEY = "sse-endpoint"


@dataclass(slots=True)
class Endpoint:
    """The POST URI a legacy stream named."""

    target: str  # path and query, as a request line names it
    stream: int  # the exchange number of the GET stream that named it
    seq: int  # the sse-event record
    reported: bool = False


def request_target(url: str, base: str) -> str:
    """The path and query ``url`` (absolute or relative to ``base``) names."""
    try:
        parts = urlsplit(urljoin(base, url))
    except ValueError:
        return url
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


@rule("SSE-POST-TARGET", on=EVENT, keys=("sse-event",))
def endpoint_event(session: Session, record: EventRecord) -> None:
    """Remember the POST URI a legacy stream's endpoint event names."""
    data = record.data
    endpoint = data.get("endpoint")
    state = session.state.http
    if not isinstance(endpoint, str) or data.get("event") != "endpoint" or state is None:
        return
    number = data.get("exchange")
    exchange = state.exchanges.get(number) if isinstance(number, int) else None
    if exchange is None or exchange.method != "GET":
        return
    base = exchange.path.partition("?")[0] or "/"
    session.state.rule_state[_STATE_KEY] = Endpoint(
        request_target(endpoint, base), exchange.number, record.seq
    )


@rule("SSE-POST-TARGET", on=EVENT, keys=("http-request",))
def post_target(session: Session, record: EventRecord) -> None:
    """A legacy POST to another URI than the endpoint event named."""
    endpoint = session.state.rule_state.get(_STATE_KEY)
    exchange = _legacy_post(session, record)
    if endpoint is None or exchange is None or endpoint.reported:
        return
    if exchange.path != endpoint.target:
        endpoint.reported = True  # once per stream: every later POST goes the same way
        session.report(
            "SSE-POST-TARGET",
            f"the client POSTed to {exchange.path[:200]!r}, but the server's endpoint event "
            f"named {endpoint.target[:200]!r}; every client message must be POSTed to that URI",
            [endpoint.seq, exchange.seq],
            path=exchange.path[:200],
            endpoint=endpoint.target[:200],
        )


@rule("SSE-TWO-ENDPOINTS", on=EVENT, keys=("http-response",))
def post_endpoint_missing(session: Session, record: EventRecord) -> None:
    """The POST endpoint the server named answered 404/405 while its stream was open."""
    endpoint = session.state.rule_state.get(_STATE_KEY)
    exchange = _legacy_post(session, record)
    if endpoint is None or exchange is None or exchange.status not in (404, 405):
        return
    state = session.state.http
    if exchange.path != endpoint.target or endpoint.stream not in state.exchanges:
        return
    session.report(
        "SSE-TWO-ENDPOINTS",
        f"the server answered {exchange.status} to a POST to {endpoint.target[:200]!r}, the "
        "endpoint its own SSE stream named (still open); a legacy server must serve a POST "
        "endpoint next to the SSE endpoint",
        [endpoint.seq, exchange.seq, record.seq],
        status=exchange.status,
        endpoint=endpoint.target[:200],
    )


def _legacy_post(session: Session, record: EventRecord) -> http.ExchangeFacts | None:
    state = session.state.http
    number = record.data.get("exchange")
    if state is None or not isinstance(number, int):
        return None
    exchange = state.exchanges.get(number)
    if exchange is None or exchange.method != "POST" or exchange.transport != http.LEGACY:
        return None
    return exchange
