"""What the HTTP relay sends: heads as forwarded, re-chunked pieces, and its own answers.

Pure functions of the framer's events (``mcpsniff.http1.events``); the
connection code (``http_wire``) writes what they return.
"""

from __future__ import annotations

from mcpsniff.core.http.headers import HOP_BY_HOP
from mcpsniff.http1.events import Head, ResponseHead
from mcpsniff.http1.fields import field_tokens

#: Hop-by-hop fields a relay drops; the framing fields stay, since each body is
#: forwarded with the framing it came with.
_DROP = HOP_BY_HOP - {"transfer-encoding"}
_FRAMING = frozenset({"transfer-encoding", "content-length"})
#: The last chunk of chunked framing, with an empty trailer section (RFC 9112 §7.1).
LAST_CHUNK = b"0\r\n\r\n"


def forwarded_head(head: Head, replace: tuple[int, bytes] | None = None) -> bytes:
    """The head to forward: as received, minus hop-by-hop fields (RFC 9110 §7.6.1).

    Those are the HOP_BY_HOP fields and every field a Connection field names;
    the framing fields are kept (the body keeps its framing). ``replace``:
    the index of a field line and the line to send instead (the Host field).
    """
    names = head.names
    drop = _DROP
    if "connection" in names:
        drop = _DROP | (set(field_tokens(head.headers, "connection")) - _FRAMING)
    if drop.isdisjoint(names):
        if replace is None:
            return head.raw  # the usual case: the exact bytes received
        # One line swapped in the received bytes (field lines sit between CRLFs).
        line = b"\r\n" + head.lines[replace[0]] + b"\r\n"
        return head.raw.replace(line, b"\r\n" + replace[1] + b"\r\n", 1)
    start = head.raw.split(b"\r\n", 1)[0]
    lines = head.lines
    if replace is not None:
        lines = list(lines)
        lines[replace[0]] = replace[1]
    kept = [line for name, line in zip(names, lines, strict=True) if name not in drop]
    return b"\r\n".join([start, *kept]) + b"\r\n\r\n"


def bad_gateway(target: str, reason: str) -> bytes:
    """The 502 the relay answers with when the upstream cannot be reached."""
    body = f"mcpsniff: the upstream server {target} is unreachable: {reason}\n".encode()
    return (
        b"HTTP/1.1 502 Bad Gateway\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        b"X-Mcpsniff: upstream-unreachable\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body


def refusal(status: int, reason: str) -> bytes:
    """What the relay answers a request it cannot frame or waited too long for, then closes."""
    phrase = {400: b"Bad Request", 408: b"Request Timeout", 503: b"Service Unavailable"}.get(
        status, b"Error"
    )
    body = f"mcpsniff: {reason}\n".encode()
    return (
        b"HTTP/1.1 %d %s\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        b"X-Mcpsniff: refused\r\n"
        b"Connection: close\r\n"
        b"Content-Length: %d\r\n\r\n" % (status, phrase, len(body))
    ) + body


def keep_alive_line(head: Head) -> bytes:
    """``Connection: keep-alive`` for an HTTP/1.0 message that asked for it, else b"".

    Connection is hop-by-hop and dropped, but an HTTP/1.0 peer persists only
    with "keep-alive" (RFC 9112 §9.3): without it the upstream closes after one
    response while the client, told nothing, sends its next request.
    """
    if head.version == "HTTP/1.0" and "keep-alive" in field_tokens(head.headers, "connection"):
        return b"Connection: keep-alive\r\n"
    return b""


def chunk(data: bytes) -> bytes:
    """One chunk of chunked framing (RFC 9112 §7.1)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def is_event_stream(head: ResponseHead) -> bool:
    """Whether a response is an event stream (its Content-Type, parameters aside)."""
    names = head.names  # lowercase, in the order of ``headers``
    if "content-type" not in names:
        return False
    value = head.headers[names.index("content-type")][1]
    return value.split(";")[0].strip().lower() == "text/event-stream"
