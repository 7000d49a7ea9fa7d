"""The relay's HTTP/1.1 request parser against RFC 9112 and h11 (the strictest common one).

Issue 12: "anything the relay cannot frame unambiguously it refuses (400, or
close) and records ... Be as strict as RFC 9112 and as the strictest common
server parser." Each head below is refused by h11 (checked in the test, so
the claim stays true) and by RFC 9112, but the relay hands it out to be forwarded.
"""

from __future__ import annotations

import h11
import pytest

from mcpsniff.http1.events import Malformed, RequestHead
from mcpsniff.http1.parser import RequestParser

HEADS = {
    # RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any
    # HTTP/1.1 request message that lacks a Host header field and to any request message
    # that contains more than one Host header field line". With two, which one the relay
    # rewrites and which one the upstream routes by may differ: through `mcpsniff http`
    # the upstream received "Host: 127.0.0.1:<upstream>" then "Host: internal.example".
    "two-hosts": b"GET /mcp HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
    "no-host": b"GET /mcp HTTP/1.1\r\n\r\n",
    # RFC 9112 §3.2 request-target is a URI: ASCII only (RFC 3986 §2).
    "non-ascii-target": b"GET /mcp\xff HTTP/1.1\r\nHost: h\r\n\r\n",
    # RFC 9112 §6.1: "identity" is no transfer coding any more; h11 answers 501.
    "identity-chunked": b"POST /mcp HTTP/1.1\r\nHost: h\r\n"
    b"Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n",
}


def _h11_refuses(data: bytes) -> bool:
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(data)
    try:
        while connection.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
    except h11.RemoteProtocolError:
        return True
    return False


def test_a_plain_request_passes_both() -> None:
    """The near-miss: one Host, an ASCII target, chunked alone."""
    data = b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    assert not _h11_refuses(data)
    events = RequestParser().feed(data)
    assert isinstance(events[0], RequestHead)
    assert not any(isinstance(e, Malformed) for e in events)


@pytest.mark.parametrize("case", sorted(HEADS))
def test_heads_h11_refuses_are_refused(case: str) -> None:
    data = HEADS[case]
    assert _h11_refuses(data), "premise: h11 refuses this head"
    events = RequestParser().feed(data)
    assert not any(isinstance(e, RequestHead) for e in events), events
    assert isinstance(events[-1], Malformed), events
