"""The legacy HTTP+SSE transport (2024-11-05): its endpoint event and its session ids.

"When a client connects, the server MUST send an endpoint event containing a
URI for the client to use for sending messages." The session is the
``sessionId`` query parameter of that URI, which every POST to it carries.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from mcpsniff.core.framing import SseEvent

#: How much of a legacy endpoint URI an sse-event record keeps.
ENDPOINT_LIMIT = 2048


def legacy_endpoint(event: SseEvent | None) -> str | None:
    """The POST URL a stream's first event names if it is a legacy ``endpoint`` event."""
    if event is not None and event.event == "endpoint" and event.data:
        return event.data.strip()
    return None


def legacy_session(url: str) -> str | None:
    """The session id a legacy endpoint URL (or a POST to it) carries in its query."""
    if "?" not in url:  # no query at all: the usual case, and no parsing
        return None
    query = parse_qs(urlsplit(url).query)
    values = query.get("sessionId") or query.get("session_id")
    return values[0] if values else None
