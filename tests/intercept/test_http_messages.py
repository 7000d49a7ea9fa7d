"""intercept/http_messages.py: what the relay sends, fed heads from the real parser."""

from __future__ import annotations

from mcpsniff.http1.events import RequestHead, ResponseHead
from mcpsniff.http1.parser import RequestParser, ResponseParser
from mcpsniff.intercept.http_messages import (
    LAST_CHUNK,
    bad_gateway,
    chunk,
    forwarded_head,
    is_event_stream,
    keep_alive_line,
    refusal,
)
from tests.relay.hostile_peers import statuses


def request_head(raw: bytes) -> RequestHead:
    head = RequestParser().feed(raw)[0]
    assert isinstance(head, RequestHead)
    return head


def response_head(raw: bytes) -> ResponseHead:
    parser = ResponseParser()
    parser.expect("GET")
    head = parser.feed(raw)[0]
    assert isinstance(head, ResponseHead)
    return head


def test_a_head_without_hop_by_hop_fields_is_forwarded_as_the_very_bytes_received() -> None:
    head = request_head(
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nx-odd:  spaced \r\nContent-Length: 0\r\n\r\n"
    )
    assert forwarded_head(head) is head.raw


def test_hop_by_hop_fields_and_those_connection_names_go_but_framing_stays() -> None:
    head = request_head(
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Secret, Content-Length\r\n"
        b"Keep-Alive: timeout=5\r\nTE: trailers\r\nX-Secret: s\r\nProxy-Authorization: p\r\n"
        b"X-Kept: k\r\nContent-Length: 2\r\n\r\n"
    )
    assert forwarded_head(head) == (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nX-Kept: k\r\nContent-Length: 2\r\n\r\n"
    )
    response = response_head(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
        b"Upgrade: h2c\r\n\r\n"
    )
    # Transfer-Encoding is hop-by-hop but the body keeps the framing it came with.
    assert forwarded_head(response) == b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_the_host_line_is_swapped_in_place_with_or_without_dropped_fields() -> None:
    raw = b"GET /mcp HTTP/1.1\r\nX-A: 1\r\nHost: proxy:6280\r\nX-B: 2\r\n\r\n"
    head = request_head(raw)
    assert forwarded_head(head, (1, b"Host: upstream:3001")) == raw.replace(
        b"proxy:6280", b"upstream:3001"
    )
    head = request_head(raw.replace(b"X-B: 2", b"TE: trailers"))
    assert forwarded_head(head, (1, b"Host: u")) == (
        b"GET /mcp HTTP/1.1\r\nX-A: 1\r\nHost: u\r\n\r\n"
    )


def test_only_an_http_1_0_keep_alive_is_spoken_on_the_next_hop() -> None:
    ask = b"GET / HTTP/1.0\r\nHost: h\r\nConnection: Keep-Alive\r\n\r\n"
    assert keep_alive_line(request_head(ask)) == b"Connection: keep-alive\r\n"
    assert keep_alive_line(request_head(ask.replace(b"1.0", b"1.1"))) == b""
    assert keep_alive_line(request_head(b"GET / HTTP/1.0\r\n\r\n")) == b""


def test_the_relay_s_own_answers_are_framed_and_labelled() -> None:
    answer = refusal(408, "no request head within 30 s")
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"Connection: close" in head and b"X-Mcpsniff: refused" in head
    assert b"Content-Length: %d" % len(body) in head and body.endswith(b"30 s\n")
    gateway = bad_gateway("http://u:1/mcp", "connection refused")
    head, body = gateway.split(b"\r\n\r\n", 1)
    assert statuses(gateway) == [502] and b"Content-Length: %d" % len(body) in head
    assert chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"


def test_an_event_stream_is_told_by_its_content_type_whatever_its_parameters() -> None:
    assert is_event_stream(
        response_head(b"HTTP/1.1 200 OK\r\ncontent-type: Text/Event-Stream; charset=utf-8\r\n\r\n")
    )
    assert not is_event_stream(
        response_head(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
    )
    assert not is_event_stream(response_head(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    assert chunk(b"")[:3] + b"\r\n" == LAST_CHUNK
