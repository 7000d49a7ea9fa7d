"""MOD-HTTP-SSE: a 2026-07-28 request's SSE stream (streamable-http.mdx § Receiving Messages).

* "The server **MAY** send JSON-RPC *notifications* [...] before the final
  response. These notifications **MUST** relate to the originating client
  request": a ``notifications/progress`` on a request's stream carries that
  request's ``progressToken``.
* "The final JSON-RPC *response* **SHOULD** terminate the stream": nothing
  follows it on the stream (warning).
* "When initiating an SSE stream, servers **SHOULD** include the
  ``X-Accel-Buffering: no`` header in the HTTP response" (warning).

Requests on the stream are MOD-NO-SERVER-REQUESTS (rules/lifecycle.py);
``notifications/message`` is MOD-LOG-OPTIN (rules/utilities_2026.py); a
``subscriptions/listen`` stream is rules/subscriptions.py's. SSE comments
("keep-alive") are no events and never judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import ERROR, NOTIFICATION, REQUEST, RESPONSE, S2C
from mcpsniff.core.protocol import STATELESS
from mcpsniff.core.rules import http
from mcpsniff.core.rules.registry import EVENT, FRAME, rule

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord
    from mcpsniff.core.session import Session

RULES = ("MOD-HTTP-SSE",)
#: Streams remembered as finished (their final response seen), by exchange number.
STREAM_WINDOW = 4096
_LISTEN = "subscriptions/listen"


def _stream(session: Session, number: Any) -> http.ExchangeFacts | None:
    """The exchange of a 2026-07-28 POST answered with an SSE stream, if ``number`` is one."""
    state = session.state.http
    if state is None or not isinstance(number, int) or session.state.era != STATELESS:
        return None
    exchange = state.exchanges.get(number)
    if (
        exchange is None
        or exchange.method != "POST"
        or exchange.transport != http.STREAMABLE
        or not exchange.response_headers.get("content-type", "").startswith("text/event-stream")
    ):
        return None
    return exchange


def _request(exchange: http.ExchangeFacts) -> MessageRecord | None:
    for message in exchange.methods:
        if message.kind == REQUEST:
            return message
    return None


@rule("MOD-HTTP-SSE", on=EVENT, keys=("http-response",))
def stream_headers(session: Session, record: EventRecord) -> None:
    """An SSE response to a 2026-07-28 request carries ``X-Accel-Buffering: no``."""
    exchange = _stream(session, record.data.get("exchange"))
    if exchange is None or _request(exchange) is None:
        return
    value = exchange.response_headers.get("x-accel-buffering")
    if value is None or value.strip().lower() != "no":
        session.report(
            "MOD-HTTP-SSE",
            "the server answered with an SSE stream without X-Accel-Buffering: no; reverse "
            "proxies may then hold its events back",
            [exchange.seq, record.seq],
            header=None if value is None else value[:40],
            severity="warning",
        )


@rule("MOD-HTTP-SSE", on=FRAME, keys=("parsed",))
def stream_messages(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """What travels on a request's stream: its notifications, then its response, then nothing."""
    if frame.direction != S2C or not messages:
        return
    meta = frame.meta
    exchange = _stream(session, meta.get("exchange") if meta else None)
    if exchange is None:
        return
    request = _request(exchange)
    if request is None or request.method == _LISTEN:
        return
    finished = session.state.rule_state.get("sse_finished")
    if finished is None:
        finished = session.state.rule_state["sse_finished"] = BoundedMap(STREAM_WINDOW)
    ended_at = finished.get(exchange.number)
    if ended_at is not None:
        finished.pop(exchange.number)  # once per stream
        session.report(
            "MOD-HTTP-SSE",
            f"the server went on sending on the SSE stream of {str(request.method)[:60]} after "
            f"its final response (seq {ended_at}); the response should end the stream",
            [ended_at, frame.seq],
            severity="warning",
        )
        return
    for message in messages:
        if message.kind == RESPONSE or message.kind == ERROR:
            if message.request is not None and message.request.seq == request.frame:
                finished.put(exchange.number, frame.seq)
        elif message.kind == NOTIFICATION and message.method == "notifications/progress":
            _progress(session, message, request)


def _progress(session: Session, message: MessageRecord, request: MessageRecord) -> None:
    token = (message.params or {}).get("progressToken")
    params = request.params or {}
    meta = params.get("_meta")
    own = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is None or (own is not None and token == own and type(token) is type(own)):
        return
    session.report(
        "MOD-HTTP-SSE",
        f"the server sent progress for token {str(token)[:60]!r} on the SSE stream of "
        f"{str(request.method)[:60]}, whose progressToken is "
        + (f"{str(own)[:60]!r}" if own is not None else "absent")
        + "; notifications on a request's stream must relate to that request",
        [request.frame, message.frame],
    )


@rule("MOD-HTTP-SSE", on=EVENT, keys=("http-end",))
def stream_end(session: Session, record: EventRecord) -> None:
    """The stream is over: nothing more can follow its response."""
    finished = session.state.rule_state.get("sse_finished")
    if finished:
        finished.pop(record.data.get("exchange"), None)
