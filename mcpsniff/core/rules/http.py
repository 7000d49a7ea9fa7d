"""HTTP transport rules (catalogue §9.2, §9.3 and the HTTP rows of §11).

The HTTP shell describes each exchange with transport events, and tags the
frames it carries with the exchange number:

* ``http-request``  ``{exchange, method, path, headers, transport}``, with
  ``client`` (``host:port``) when the shell knows it, and ``mcp: false`` for
  traffic that is no MCP (a reverse proxy forwards OAuth metadata, health
  checks...: recorded, not analyzed, and no rule applies to it)
* ``http-response`` ``{exchange, status, headers}``
* ``http-end``      ``{exchange, outcome, body_bytes}``
* ``sse-event``     ``{exchange, id, event, index}`` for every SSE event, data or not
  (``comment_only`` marks a block of comments only, which is no event)
* ``http-error-body`` ``{exchange, excerpt}``: an error answer that is no JSON-RPC
* ``http-body-not-analyzed`` ``{exchange, dir, reason}``: a body whose
  content-encoding could not be undone (unsupported, or corrupt); it passed
  unchanged but is no frame

``transport`` is ``"streamable"`` (Streamable HTTP) or ``"legacy-sse"``
(2024-11-05 HTTP+SSE). Header names are compared case-insensitively
(catalogue trap 12). Because these are trace records, ``mcpsniff check``
re-runs every HTTP rule offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcpsniff.core.ids import BoundedMap
from mcpsniff.core.model import CALLS, REQUEST, MessageRecord
from mcpsniff.core.protocol import (
    STATELESS,
    V2,
    V3,
    V5,
    is_known_version,
    version_at_least,
)
from mcpsniff.core.rules.registry import EVENT, FRAME, rule
from mcpsniff.core.state import EXCHANGES_BEGUN, Answered, per_run, run_of

if TYPE_CHECKING:
    from mcpsniff.core.model import EventRecord, FrameRecord
    from mcpsniff.core.session import Session

RULES = (
    "HTTP-POST-ACCEPT",
    "HTTP-GET-ACCEPT",
    "HTTP-GET-REPLY",
    "HTTP-202",
    "HTTP-REQ-CONTENT-TYPE",
    "HTTP-SESSION-CHARS",
    "HTTP-SESSION-ECHO",
    "HTTP-SESSION-404",
    "HTTP-PROTO-HEADER",
    "HTTP-PROTO-HEADER-VALUE",
    "HTTP-EVENT-ID-UNIQUE",
    "SSE-ENDPOINT-EVENT",
    "HTTP-SESSION-REINIT",
    "HTTP-PROTO-HEADER-400",
    "AUTH-NO-QUERY-TOKEN",
    "AUTH-BEARER-EVERY",
    "AUTH-401-WWW-AUTH",
)
#: Query keys that put an access token in the URI (AUTH-NO-QUERY-TOKEN).
TOKEN_QUERY_KEYS = frozenset({"access_token", "token", "bearer", "id_token"})

STREAMABLE = "streamable"
LEGACY = "legacy-sse"
#: Event ids remembered per session for HTTP-EVENT-ID-UNIQUE.
EVENT_ID_WINDOW = 65536


@dataclass(slots=True)
class ExchangeFacts:
    """One HTTP request/response pair as the rules see it."""

    number: int
    seq: int
    method: str
    path: str
    headers: dict[str, str]
    transport: str
    kinds: list[str] = field(default_factory=list)
    methods: list[MessageRecord] = field(default_factory=list)
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    first_event_seen: bool = False
    endpoint_seen: bool = False
    #: The client's connection (``host:port``), when the shell says it.
    client: str | None = None
    #: The response body could not be decoded (``http-body-not-analyzed``).
    unreadable: bool = False
    #: The request body was a JSON array (a batch), for the reply's shape (http_bodies.py).
    batch: bool = False
    #: MOD-HTTP-POST-ONLY was reported for this exchange (http_stateless.py).
    minted_reported: bool = False


@dataclass(slots=True)
class HttpState:
    """HTTP facts about one session."""

    exchanges: dict[int, ExchangeFacts] = field(default_factory=dict)
    event_ids: BoundedMap = field(default_factory=lambda: BoundedMap(EVENT_ID_WINDOW))

    # What the session's correlation asks of the exchanges (core/session/).

    def sessionless_client(self, number: int) -> str | None:
        """The client connection of exchange ``number`` if it is session-less Streamable HTTP.

        Such an exchange carries no ``Mcp-Session-Id``: the stateless era pairs
        its request ids per client connection (core/session/scoping.py). None
        for any other exchange, or when the shell did not say the client.
        """
        exchange = self.exchanges.get(number)
        if (
            exchange is None
            or exchange.transport != STREAMABLE
            or "mcp-session-id" in exchange.headers
        ):
            return None
        return exchange.client

    def sole_request(self, number: int) -> MessageRecord | None:
        """The one request the POST of exchange ``number`` carried; None if not exactly one.

        An id-less error in that exchange's HTTP error response answers it
        (core/session/correlation.py).
        """
        exchange = self.exchanges.get(number)
        if exchange is None:
            return None
        requests = [m for m in exchange.methods if m.kind == REQUEST]
        return requests[0] if len(requests) == 1 else None


#: What a header pair may be: a list in a trace, a tuple from a live shell.
_PAIR_TYPES = (list, tuple)


def streamable_exchange(
    session: Session, frame: FrameRecord, method: str | None = None
) -> ExchangeFacts | None:
    """The Streamable HTTP exchange ``frame`` travelled in (its meta names it), if any.

    ``method``: only an exchange of that HTTP method (``POST``: a client's message and its replies).
    """
    meta = frame.meta
    number = meta.get("exchange") if meta else None
    state = session.state.http
    if not isinstance(number, int) or state is None:
        return None
    exchange = state.exchanges.get(number)
    if exchange is None or exchange.transport != STREAMABLE:
        return None
    if method is not None and exchange.method != method:
        return None
    return exchange


def _headers(pairs: Any) -> dict[str, str]:
    """Lower-cased header map from the ``[[name, value], ...]`` of an event.

    The first of repeated names wins; malformed pairs (from a hand-edited
    trace) are skipped.
    """
    out: dict[str, str] = {}
    if isinstance(pairs, list):
        # Performance (two events per exchange): walked from the end and simply
        # assigned, so the first pair of a name is the one left, without setdefault.
        for pair in reversed(pairs):
            if isinstance(pair, _PAIR_TYPES) and len(pair) == 2:
                name, value = pair
                if isinstance(name, str) and isinstance(value, str):
                    out[name.lower()] = value
    return out


def _state(session: Session) -> HttpState:
    state = session.state.http
    if state is None:
        state = session.state.http = HttpState()
    return state


def _shared(session: Session) -> dict[str, Any]:
    return session.shared


#: The transport events ``on_event`` follows.
HTTP_EVENTS = ("http-request", "http-response", "sse-event", "http-end", "http-body-not-analyzed")


@rule(
    "AUTH-401-WWW-AUTH",
    "AUTH-BEARER-EVERY",
    "AUTH-NO-QUERY-TOKEN",
    "HTTP-202",
    "HTTP-EVENT-ID-UNIQUE",
    "HTTP-GET-ACCEPT",
    "HTTP-GET-REPLY",
    "HTTP-POST-ACCEPT",
    "HTTP-PROTO-HEADER",
    "HTTP-PROTO-HEADER-400",
    "HTTP-PROTO-HEADER-VALUE",
    "HTTP-REQ-CONTENT-TYPE",
    "HTTP-SESSION-404",
    "HTTP-SESSION-CHARS",
    "HTTP-SESSION-ECHO",
    "HTTP-SESSION-REINIT",
    "SSE-ENDPOINT-EVENT",
    on=EVENT,
    keys=HTTP_EVENTS,
)
def on_event(session: Session, record: EventRecord) -> None:
    """Dispatch an HTTP or SSE transport event."""
    data = record.data
    number = data.get("exchange")
    if not isinstance(number, int):
        return
    state = _state(session)
    event = record.event
    if event == "http-request":
        run = run_of(session.key)
        begun = per_run(session.shared, EXCHANGES_BEGUN, run)
        if begun is not None and number > begun.get(run, 0):
            # A salvaged gap naming a later exchange names one begun after
            # every request the trace holds of its run (rules/flow.py).
            begun[run] = number
        if data.get("mcp") is False:
            # No MCP traffic (OAuth metadata, a health check) that a reverse proxy
            # forwarded too: the MCP transport's rules do not apply to it.
            return
        state.exchanges[number] = ExchangeFacts(
            number,
            record.seq,
            str(data.get("method", "")),
            str(data.get("path", "")),
            _headers(data.get("headers")),
            str(data.get("transport", STREAMABLE)),
            client=data["client"] if isinstance(data.get("client"), str) else None,
        )
        _request(session, state.exchanges[number])
    elif event == "http-response":
        exchange = state.exchanges.get(number)
        if exchange is None:
            return
        exchange.status = data.get("status") if isinstance(data.get("status"), int) else None
        exchange.response_headers = _headers(data.get("headers"))
        _response(session, exchange, record)
    elif event == "sse-event":
        exchange = state.exchanges.get(number)
        if exchange is not None:
            _sse_event(session, state, exchange, record)
    elif event == "http-end":
        exchange = state.exchanges.pop(number, None)
        if exchange is not None:
            _answered_by_status(session, exchange, record)
    elif event == "http-body-not-analyzed" and data.get("dir") == "s2c":
        exchange = state.exchanges.get(number)
        if exchange is not None:
            exchange.unreadable = True


@rule("HTTP-202", on=FRAME, keys=("parsed",))
def on_frame(session: Session, frame: FrameRecord, messages: list[MessageRecord]) -> None:
    """A request body: remember what it carried (its headers: rules/http_2026.py)."""
    meta = frame.meta or {}
    number = meta.get("exchange")
    if frame.direction != "c2s" or not isinstance(number, int):
        return
    exchange = _state(session).exchanges.get(number)
    if exchange is None:
        return
    top = [m for m in messages if m.index is None or m.kind != "batch"]
    exchange.kinds = [m.kind for m in top if m.kind != "batch"]
    exchange.methods = [m for m in top if m.kind in CALLS]


# An id-less error in an exchange's HTTP error response answers the one request
# its POST carried: ``HttpState.sole_request`` names it, core/session/correlation.py pairs it.


def _answered_by_status(session: Session, exchange: ExchangeFacts, record: EventRecord) -> None:
    """A request rejected with an HTTP error and no JSON-RPC body was still answered.

    The transports let a server refuse a POST with a 4xx whose body "MAY"
    be a JSON-RPC error: with any other body (421 "Invalid Host header"),
    the status itself is the answer, not a missing response.
    """
    status = exchange.status
    # So was a request whose answer came in a body the analyzer could not decode
    # (br without brotli, zstd): it was answered, only not readably.
    if status is None or (status < 400 and not exchange.unreadable) or exchange.method != "POST":
        return
    pending = session.state.pending["c2s"]
    answered = session.state.answered["c2s"]
    for message in exchange.methods:
        if message.kind != REQUEST:
            continue
        key = message.key  # as the session keyed it (per client in the stateless era)
        request = pending.pop(key, None)
        if request is not None:
            answered.put(
                key,
                Answered(
                    request.seq,
                    request.index,
                    request.method,
                    record.seq,
                    fingerprint=request.fingerprint,
                ),
            )


# --------------------------------------------------------------------------- requests


def _request(session: Session, exchange: ExchangeFacts) -> None:
    if exchange.transport != STREAMABLE:
        return
    headers = exchange.headers
    accept = headers.get("accept", "")
    seq = [exchange.seq]
    if exchange.method == "POST":
        if "application/json" not in accept or "text/event-stream" not in accept:
            lenient = "*/*" in accept
            session.report(
                "HTTP-POST-ACCEPT",
                f"the client POSTed with Accept {accept!r}; it must list both application/json "
                "and text/event-stream"
                + (
                    " (*/* alone does not list them, though many servers accept it)"
                    if lenient
                    else ""
                ),
                seq,
                accept=accept,
                severity="warning" if lenient else None,
            )
    elif exchange.method == "GET" and "text/event-stream" not in accept and "*/*" not in accept:
        session.report(
            "HTTP-GET-ACCEPT",
            f"the client opened a GET stream with Accept {accept!r}; it must list "
            "text/event-stream",
            seq,
            accept=accept,
        )
    _auth(session, exchange)
    shared = _shared(session)
    sid = headers.get("mcp-session-id")
    dead = shared.get("dead")
    if sid is not None and dead and sid in dead and exchange.method != "DELETE":
        # transports.mdx § Session Management 4: after a 404 the client "MUST start
        # a new session by sending a new InitializeRequest without a session ID".
        dead.discard(sid)  # once per dead session
        session.report(
            "HTTP-SESSION-REINIT",
            f"the client sent {exchange.method} {exchange.path} with session {sid[:40]!r} after "
            "the server answered 404 for it; it must start a new session with initialize",
            seq,
        )
    # get, not setdefault: no new empty set per request; DELETE creates it.
    terminated = shared.get("terminated")
    if sid is not None and terminated and sid in terminated:
        exchange.headers["x-mcpsniff-terminated"] = "1"
    if session.state.era != STATELESS and version_at_least(session.state.version, V3):
        version = headers.get("mcp-protocol-version")
        if session.state.lifecycle.init_response_seq is not None:
            if version is None:
                session.report(
                    "HTTP-PROTO-HEADER",
                    f"the client's {exchange.method} {exchange.path} after initialization carries "
                    "no MCP-Protocol-Version header",
                    seq,
                    method=exchange.method,
                )
            elif version != session.state.version:
                session.report(
                    "HTTP-PROTO-HEADER-VALUE",
                    f"the client sent MCP-Protocol-Version {version!r}, but the session "
                    f"negotiated {session.state.version!r}",
                    seq,
                    header=version,
                    negotiated=session.state.version,
                )


def _auth(session: Session, exchange: ExchangeFacts) -> None:
    """Bearer tokens go in the Authorization header of every request, never in the URI."""
    query = exchange.path.partition("?")[2]
    keys = {part.partition("=")[0].lower() for part in query.split("&") if part}
    leaked = sorted(keys & TOKEN_QUERY_KEYS)
    seq = [exchange.seq]
    if leaked:
        session.report(
            "AUTH-NO-QUERY-TOKEN",
            f"the client put an access token in the URI query ({', '.join(leaked)}); tokens go "
            "in the Authorization header only",
            seq,
            keys=leaked,
        )
    shared = _shared(session)
    authorized = "authorization" in exchange.headers
    if authorized:
        shared["bearer"] = True
    elif shared.get("bearer") and not shared.get("bearer_reported"):
        shared["bearer_reported"] = True
        session.report(
            "AUTH-BEARER-EVERY",
            f"the client sent {exchange.method} {exchange.path} without Authorization after "
            "earlier requests carried a bearer token; every request must carry it",
            seq,
        )


# --------------------------------------------------------------------------- responses


def _response(session: Session, exchange: ExchangeFacts, record: EventRecord) -> None:
    status = exchange.status
    if status is None:
        return
    headers = exchange.response_headers
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    seq = [exchange.seq, record.seq]
    shared = _shared(session)
    sid = headers.get("mcp-session-id")
    # A session assigned by this very response cannot have been echoed by its request.
    assigned_before = bool(shared.get("assigned"))
    if sid is not None:
        if not all(0x21 <= ord(c) <= 0x7E for c in sid):
            session.report(
                "HTTP-SESSION-CHARS",
                f"the server assigned session id {sid!r}, which has characters outside visible "
                "ASCII (0x21-0x7E)",
                seq,
            )
        shared.setdefault("assigned", set()).add(sid)
    if exchange.headers.get("x-mcpsniff-terminated") and status != 404:
        session.report(
            "HTTP-SESSION-404",
            f"the server answered {status} to a request for a session it had terminated; it "
            "must answer 404",
            seq,
            status=status,
        )
    if status == 401 and "www-authenticate" not in headers:
        session.report(
            "AUTH-401-WWW-AUTH",
            "the server answered 401 without a WWW-Authenticate header; the client cannot find "
            "the authorization server",
            seq,
        )
    if exchange.transport != STREAMABLE:
        return
    request_sid = exchange.headers.get("mcp-session-id")
    if status == 404 and request_sid is not None:
        dead = shared.setdefault("dead", set())
        if len(dead) < 4096:
            dead.add(request_sid)
    proto = exchange.headers.get("mcp-protocol-version")
    if (
        proto is not None
        and not is_known_version(proto)
        and status != 400
        and session.state.era != STATELESS
        and version_at_least(session.state.version, V3)
    ):
        session.report(
            "HTTP-PROTO-HEADER-400",
            f"the client sent MCP-Protocol-Version {proto[:40]!r}, which is no MCP version, and "
            f"the server answered {status}; it must answer 400 Bad Request",
            seq,
            header=proto[:100],
            status=status,
        )
    if exchange.method == "DELETE" and request_sid is not None and 200 <= status < 300:
        shared.setdefault("terminated", set()).add(request_sid)
    if (
        request_sid is None
        and assigned_before
        and session.state.era != STATELESS
        and not any(m.method == "initialize" for m in exchange.methods)
        and exchange.method in ("POST", "GET", "DELETE")
        and session.state.lifecycle.init_seq is None
    ):
        session.report(
            "HTTP-SESSION-ECHO",
            f"the client sent {exchange.method} {exchange.path} without Mcp-Session-Id although "
            "the server assigned a session; every later request must carry it",
            seq,
        )
    if exchange.method == "GET":
        if 200 <= status < 300 and content_type != "text/event-stream":
            session.report(
                "HTTP-GET-REPLY",
                f"the server answered a GET with {status} {content_type or 'no content type'}; "
                "it must be an SSE stream (text/event-stream) or 405",
                seq,
                status=status,
                content_type=content_type,
            )
        return
    if exchange.method != "POST" or not exchange.kinds:
        return
    has_requests = REQUEST in exchange.kinds
    if has_requests:
        if status == 202 or (
            200 <= status < 300 and content_type not in ("application/json", "text/event-stream")
        ):
            session.report(
                "HTTP-REQ-CONTENT-TYPE",
                f"the server answered a POST carrying requests with {status} "
                f"{content_type or 'no content type'}; it must reply with application/json or "
                "text/event-stream",
                seq,
                status=status,
                content_type=content_type,
            )
    elif 200 <= status < 300:
        length = headers.get("content-length")
        if status != 202 or (length is not None and length.strip() not in ("", "0")):
            session.report(
                "HTTP-202",
                f"the server answered a POST of only notifications/responses with {status}"
                f"{' and a body' if status == 202 else ''}; it must be 202 Accepted with no body",
                seq,
                status=status,
            )


def _sse_event(
    session: Session, state: HttpState, exchange: ExchangeFacts, record: EventRecord
) -> None:
    data = record.data
    if data.get("comment_only"):
        # Comments (e.g. padding against buffering proxies) are not events; one
        # before the endpoint event does not break SSE-ENDPOINT-EVENT.
        return
    first = not exchange.first_event_seen
    exchange.first_event_seen = True
    if exchange.transport == LEGACY and exchange.method == "GET" and first:
        if data.get("event") != "endpoint":
            session.report(
                "SSE-ENDPOINT-EVENT",
                f"the first event of the legacy SSE stream is {data.get('event') or 'message'!r}; "
                "the server must first send an endpoint event with the POST URI",
                [record.seq],
            )
    elif (
        data.get("event") == "endpoint"
        and not first
        and not exchange.endpoint_seen
        and exchange.method == "GET"
        and exchange.transport == STREAMABLE
        and "mcp-session-id" not in exchange.headers
    ):
        # A session-less GET stream is taken for Streamable HTTP unless its first
        # event is an endpoint event; one that comes later shows it was a legacy
        # stream that broke the rule (the HTTP shell then moves the rest of the
        # stream to the legacy session the endpoint names).
        session.report(
            "SSE-ENDPOINT-EVENT",
            "the legacy SSE stream sent other events before its endpoint event; the server "
            "must first send an endpoint event with the POST URI",
            [record.seq],
        )
    if data.get("event") == "endpoint":
        exchange.endpoint_seen = True
    event_id = data.get("id")
    if not isinstance(event_id, str) or exchange.transport != STREAMABLE:
        return
    # Ids are remembered whatever the version: the initialize answer's stream
    # comes before the version is known, and its ids count too.
    version = session.state.version
    applies = version_at_least(version, V2) and version != V5
    previous = state.event_ids.get(event_id)
    resuming = "last-event-id" in exchange.headers
    if applies and previous is not None and previous != exchange.number and not resuming:
        session.report(
            "HTTP-EVENT-ID-UNIQUE",
            f"SSE event id {event_id!r} was already used on another stream of this session; "
            "event ids must be unique across all streams",
            [record.seq],
            event_id=event_id,
        )
    state.event_ids.put(event_id, exchange.number)
