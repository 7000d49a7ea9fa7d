"""What an HTTP exchange is: MCP traffic or not, and which transport a GET stream speaks.

A reverse proxy forwards every path of the upstream's origin, MCP or not
(OAuth metadata, token endpoints, health checks). Such *plain* exchanges
(``is_plain_request``) are recorded as HTTP events marked ``"mcp": false``,
and their bodies are not analyzed as JSON-RPC.

A GET event stream that names no session may be a legacy HTTP+SSE stream
(2024-11-05) or a Streamable HTTP listening stream: only its first event can
tell (``undecided_stream``, then ``stream_verdict``). The shell decides it to
rewrite a legacy endpoint before forwarding it; the analysis decides it to
put the stream in its session. Both call these same pure functions on the same
bytes, so they reach the same decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcpsniff.core.framing import SseEvent
from mcpsniff.core.http.headers import lowered
from mcpsniff.core.http.legacy import legacy_endpoint, legacy_session

#: A GET stream whose transport only its first event can tell.
PENDING = "pending"
STREAMABLE = "streamable"
LEGACY = "legacy-sse"


def comment_only(event: SseEvent) -> bool:
    """Whether an SSE block held only comments (or unknown fields): no event for a client."""
    return event.data is None and event.event is None and event.id is None and event.retry is None


def is_plain_request(
    method: str, path: str, names: dict[str, str], body: bytes, mcp_path: str | None
) -> bool:
    """Whether a request a reverse proxy forwards is no MCP traffic (recorded, not analyzed).

    ``mcp_path`` is the MCP endpoint's path (the path of ``--upstream``); None
    means every request is MCP traffic (a shell that filtered them already).
    A request is MCP traffic when it goes to that path, or says it is MCP
    wherever it goes: an ``Mcp-Session-Id``, a legacy ``sessionId`` query, a
    JSON-RPC body, a GET asking for an event stream (Streamable HTTP: "The
    client MUST include an Accept header, listing text/event-stream"). An
    ``MCP-Protocol-Version`` header alone does not count: SDK clients send it
    with their OAuth discovery requests too, whose JSON answers are no
    JSON-RPC (analyzed, they were false HTTP-GET-REPLY and JR-* errors).
    """
    if mcp_path is None or path.split("?", 1)[0] == mcp_path:
        return False
    if names.get("mcp-session-id") or legacy_session(path):
        return False
    if method == "POST":
        return b'"jsonrpc"' not in body[:4096]
    if method == "GET":
        return "text/event-stream" not in (names.get("accept") or "")
    return True


def is_mcp_request(
    method: str,
    headers: list[tuple[str, str]],
    body: bytes,
    path: str,
    *,
    names: dict[str, str] | None = None,
) -> bool:
    """Whether a request looks like MCP traffic (for shells that see other traffic too).

    ``names`` is ``lowered(headers)`` when the caller has it already.
    """
    first = lowered(headers) if names is None else names
    sid = first.get("mcp-session-id")
    if sid or first.get("mcp-protocol-version"):
        return True
    if method == "POST":
        return b'"jsonrpc"' in body[:4096]
    if method == "GET":
        accept = first.get("accept") or ""
        return "text/event-stream" in accept or path.split("?")[0].endswith("/sse")
    return method == "DELETE" and sid is not None


def undecided_stream(method: str, request_sid: str | None, is_sse: bool, plain: bool) -> bool:
    """Whether only its first event can tell a response stream's transport (and session).

    An event stream answering a GET of MCP traffic (not ``plain``) that sent no
    Mcp-Session-Id is a legacy HTTP+SSE stream if its first event is an
    ``endpoint`` (2024-11-05: "the server MUST send an endpoint event" first),
    else a Streamable HTTP listening stream.
    """
    return is_sse and method == "GET" and not request_sid and not plain


@dataclass(frozen=True, slots=True)
class StreamVerdict:
    """What an undecided stream is, as its first event tells."""

    #: ``LEGACY`` or ``STREAMABLE``.
    transport: str
    #: The POST URL a legacy stream's ``endpoint`` event named.
    endpoint: str | None = None


_STREAMABLE_VERDICT = StreamVerdict(STREAMABLE)


def stream_verdict(event: SseEvent | None) -> StreamVerdict | None:
    """What an undecided stream is, given its next event (None: it sent none in time).

    A comment-only block decides nothing (padding against buffering proxies
    comes before the first event): None. An ``endpoint`` event makes it a
    legacy stream; anything else, or no event at all, a Streamable HTTP one.
    """
    if event is not None and comment_only(event):
        return None
    endpoint = legacy_endpoint(event)
    if endpoint is not None:
        return StreamVerdict(LEGACY, endpoint)
    return _STREAMABLE_VERDICT
