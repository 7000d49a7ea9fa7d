"""Which session an HTTP exchange belongs to: the key its records are grouped under.

Session keys follow the transport: ``Mcp-Session-Id`` (Streamable HTTP), the
``sessionId`` query parameter of the legacy HTTP+SSE endpoint (``sse-ID``),
one group for stateless 2026-07-28 traffic (``stateless``), and ``http`` for
the rest. A proxy that sees many servers prefixes each key with the server's
host.
"""

from __future__ import annotations

from mcpsniff.core.http.legacy import legacy_session
from mcpsniff.core.protocol import META_VERSION

#: The session key of relay-wide events (capture gaps, refusals), and of
#: exchanges that name no session.
RELAY_SESSION = "http"
#: The one group of stateless (2026-07-28) traffic, which has no sessions.
STATELESS_SESSION = "stateless"

#: Looked for in a request body to tell the stateless (2026-07-28) era.
_META_VERSION_BYTES = META_VERSION.encode()


def prefixed(key: str, host: str | None, key_by_host: bool) -> str:
    """A session key, prefixed with the server's host when sessions are keyed by host."""
    if key_by_host and host:
        return f"{host} {key}"
    return key


def request_session(
    method: str,
    path: str,
    request_names: dict[str, str],
    analyzed: bytes,
    response_sid: str | None,
    *,
    undecided_get: bool,
) -> str | None:
    """An exchange's session key (unprefixed), or None when only its stream can tell.

    ``request_names``: the request's end-to-end headers by lower-cased name;
    ``analyzed``: the analyzer's copy of its body; ``response_sid``: the
    response's Mcp-Session-Id (None before a response); ``undecided_get``: the
    exchange is a GET whose transport is still to be decided.
    """
    sid = response_sid or request_names.get("mcp-session-id")
    if sid:
        return sid
    legacy = legacy_session(path)
    if legacy:
        return f"sse-{legacy}"
    if method == "GET" and undecided_get:
        return None
    version = request_names.get("mcp-protocol-version") or ""
    if version >= "2026-07-28" or _META_VERSION_BYTES in analyzed:
        # Stateless era: there are no sessions at all. (One group for every
        # client: the server's discovered capabilities are judged across it.)
        return STATELESS_SESSION
    return RELAY_SESSION


def legacy_stream_session(endpoint: str, number: int) -> str:
    """The session of a legacy stream: the session id its endpoint URL names.

    An endpoint naming none gets a session of its own, after the exchange's number.
    """
    session_id = legacy_session(endpoint)
    return f"sse-{session_id}" if session_id else f"sse-{number}"
