"""The relay's HTTP/1.1 framing (``mcpsniff/http1/``), sans I/O.

Every message is also fed in every possible two-piece split and one byte at a
time: framing must not depend on how the bytes arrive.
"""

from __future__ import annotations

from typing import Any

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.http1.events import Body, End, Event, Malformed, RequestHead, ResponseHead
from mcpsniff.http1.parser import RequestParser, ResponseParser


def feed_all(parser: Any, pieces: list[bytes], eof: bool = False) -> list[Event]:
    events: list[Event] = []
    for piece in pieces:
        events += parser.feed(piece)
    if eof:
        events += parser.feed_eof()
    return events


def splits(data: bytes) -> list[list[bytes]]:
    """``data`` whole, in every two-piece split, and byte by byte."""
    return (
        [[data]]
        + [[data[:i], data[i:]] for i in range(1, len(data))]
        + [[data[i : i + 1] for i in range(len(data))]]
    )


def summary(events: list[Event]) -> list[Any]:
    """Events with consecutive bodies merged (a split may cut a body anywhere)."""
    out: list[Any] = []
    for event in events:
        if isinstance(event, Body) and out and out[-1][0] == "body":
            out[-1] = ("body", out[-1][1] + event.raw, out[-1][2] + event.payload)
        elif isinstance(event, Body):
            out.append(("body", event.raw, event.payload))
        elif isinstance(event, End):
            out.append(("end", event.raw))
        elif isinstance(event, Malformed):
            out.append(("malformed", event.reason))
        elif isinstance(event, RequestHead):
            out.append(("request", event.method, event.target, event.headers, event.raw))
        else:
            out.append(("response", event.status, event.headers, event.raw))
    return out


def request_events(data: bytes, eof: bool = False) -> list[Any]:
    """The events of ``data``, the same for every way of splitting it."""
    results = [summary(feed_all(RequestParser(), pieces, eof)) for pieces in splits(data)]
    assert all(r == results[0] for r in results)
    return results[0]


def response_events(data: bytes, methods: list[str], eof: bool = False) -> list[Any]:
    results = []
    for pieces in splits(data):
        parser = ResponseParser()
        for method in methods:
            parser.expect(method)
        results.append(summary(feed_all(parser, pieces, eof)))
    assert all(r == results[0] for r in results)
    return results[0]


# --------------------------------------------------------------------------- requests


def test_request_with_content_length() -> None:
    head = b"POST /mcp?x=1 HTTP/1.1\r\nHost: h\r\nX-Dup: 1\r\nx-dup: 2\r\nContent-Length: 5\r\n\r\n"
    events = request_events(head + b"hello")
    assert events == [
        (
            "request",
            "POST",
            "/mcp?x=1",
            [("Host", "h"), ("X-Dup", "1"), ("x-dup", "2"), ("Content-Length", "5")],
            head,
        ),
        ("body", b"hello", b"hello"),
        ("end", b""),
    ]


def test_request_without_body_and_pipelining() -> None:
    first = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
    second = b"DELETE /b HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
    events = request_events(first + second)
    assert [e[0] for e in events] == ["request", "end", "request", "end"]
    assert (events[0][2], events[2][2]) == ("/a", "/b")


def test_chunked_request_with_extensions_and_trailers() -> None:
    head = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = b"5;name=value\r\nhello\r\n6 ; x\r\n world\r\n"
    last = b"0;end\r\nX-Checksum: 1\r\nX-More: 2\r\n\r\n"
    events = request_events(head + chunks + last)
    assert events[1:] == [("body", chunks, b"hello world"), ("end", last)]


def test_chunked_request_without_trailers() -> None:
    head = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    events = request_events(head + b"A\r\n0123456789\r\n0\r\n\r\n" + head)
    assert events[1:3] == [("body", b"A\r\n0123456789\r\n", b"0123456789"), ("end", b"0\r\n\r\n")]
    assert events[3][0] == "request"


def test_empty_lines_before_a_request_are_ignored() -> None:
    # RFC 9112 §2.2: a server SHOULD ignore at least one empty line before a request-line.
    events = request_events(b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert events[0][4] == b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"


def test_field_values_keep_utf8_and_lose_surrounding_whitespace() -> None:
    events = request_events("GET / HTTP/1.1\r\nHost: h\r\nX-Name:  é \t\r\n\r\n".encode())
    assert events[0][3] == [("Host", "h"), ("X-Name", "é")]


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            "both Transfer-Encoding and Content-Length",
        ),
        (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", "conflicting"),
        (b"POST / HTTP/1.1\r\nContent-Length: -3\r\n\r\n", "invalid Content-Length"),
        (b"POST / HTTP/1.1\r\nContent-Length: 0x3\r\n\r\n", "invalid Content-Length"),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "without final chunked"),
        (b"GET / HTTP/1.1\r\nX-A: 1\nX-B: 2\r\n\r\n", "bare CR"),
        (b"GET / HTTP/1.1\r\nX-A: 1\r\n folded\r\n\r\n", "invalid field line"),
        (b"GET / HTTP/1.1\r\nX-A : 1\r\n\r\n", "invalid field line"),
        (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", "invalid field line"),
        (b"GET /  HTTP/1.1\r\n\r\n", "invalid request line"),
        (b"GET / HTTP/2.0\r\n\r\n", "invalid request line"),
    ],
)
def test_bad_request_heads(data: bytes, reason: str) -> None:
    (event,) = feed_all(RequestParser(), [data])
    assert isinstance(event, Malformed)
    assert reason in event.reason
    # A head whose framing fields are bad is not handed out to be forwarded, but
    # comes with the Malformed event (to be recorded).
    if "Length" in reason or "Transfer" in reason or "conflicting" in reason:
        assert isinstance(event.head, RequestHead)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"z\r\n", "invalid chunk-size"),
        (b"2\r\nabX\r\n", "not followed"),
        (b"1" * 5000, "too long"),
    ],
)
def test_bad_chunks(body: bytes, reason: str) -> None:
    head = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    events = feed_all(RequestParser(), [head + body])
    assert isinstance(events[0], RequestHead)
    assert isinstance(events[-1], Malformed) and reason in events[-1].reason


def test_bad_chunk_keeps_what_came_before() -> None:
    head = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    events = feed_all(RequestParser(), [head + b"3\r\nabc\r\nxyz\r\n"])
    assert isinstance(events[0], RequestHead)
    assert (events[1].raw, events[1].payload) == (b"3\r\nabc\r\n", b"abc")  # type: ignore[union-attr]
    assert isinstance(events[2], Malformed)
    assert RequestParser().feed(b"x" * 10) == []


def test_request_cut_short_is_malformed_at_eof() -> None:
    parser = RequestParser()
    parser.feed(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
    assert [type(e) for e in parser.feed_eof()] == [Malformed]
    idle = RequestParser()
    idle.feed(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert idle.idle and idle.feed_eof() == []


def test_head_too_long() -> None:
    events = RequestParser().feed(b"GET / HTTP/1.1\r\nX: " + b"a" * (300 << 10))
    assert isinstance(events[-1], Malformed)


# --------------------------------------------------------------------------- responses


def test_response_with_content_length_then_chunked() -> None:
    first = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    second = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    events = response_events(first + second, ["POST", "GET"])
    assert [e[0] for e in events] == ["response", "body", "end", "response", "body", "end"]
    assert events[4] == ("body", b"3\r\nabc\r\n", b"abc")


@pytest.mark.parametrize(("method", "status"), [("HEAD", 200), ("GET", 204), ("GET", 304)])
def test_responses_without_body(method: str, status: int) -> None:
    head = b"HTTP/1.1 %d X\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n" % status
    if method == "HEAD":
        head = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
    events = response_events(
        head + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", [method, "GET"]
    )
    assert [e[0] for e in events] == ["response", "end", "response", "end"]


def test_interim_responses_come_before_the_final_one() -> None:
    data = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx"
    )
    parser = ResponseParser()
    parser.expect("POST")
    events = parser.feed(data)
    heads = [e for e in events if isinstance(e, ResponseHead)]
    assert [(h.status, h.interim) for h in heads] == [(100, True), (103, True), (201, False)]
    assert isinstance(events[-1], End)


def test_response_delimited_by_close() -> None:
    data = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: 1\n\n"
    events = response_events(data, ["GET"], eof=True)
    assert events[1:] == [("body", b"data: 1\n\n", b"data: 1\n\n"), ("end", b"")]


def test_response_cut_off() -> None:
    parser = ResponseParser()
    parser.expect("GET")
    parser.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
    (event,) = parser.feed_eof()
    assert isinstance(event, Malformed)


def test_response_without_request_and_bad_status() -> None:
    assert isinstance(ResponseParser().feed(b"HTTP/1.1 200 OK\r\n\r\n")[-1], Malformed)
    parser = ResponseParser()
    parser.expect("GET")
    assert isinstance(parser.feed(b"HTTP/1.1 2000 OK\r\n\r\n")[-1], Malformed)


# --------------------------------------------------------------------------- any chunking


@st.composite
def chunked_message(draw: st.DrawFn) -> tuple[bytes, bytes, bytes]:
    """A chunked request: its bytes, its head, its payload."""
    payload = draw(st.binary(max_size=600))
    cuts = sorted(draw(st.lists(st.integers(0, len(payload)), max_size=6)))
    pieces = [payload[a:b] for a, b in zip([0, *cuts], [*cuts, len(payload)], strict=True)]
    head = b"PUT /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = b"".join(b"%x;e=1\r\n%s\r\n" % (len(p), p) for p in pieces if p)
    trailer = draw(st.sampled_from([b"", b"X-T: 1\r\n"]))
    return head + body + b"0\r\n" + trailer + b"\r\n", head, payload


@settings(max_examples=200, deadline=None)
@given(chunked_message(), st.lists(st.integers(1, 50), min_size=1, max_size=40))
def test_any_chunking_gives_the_same_bytes(
    message: tuple[bytes, bytes, bytes], sizes: list[int]
) -> None:
    data, head, payload = message
    pieces = []
    at = 0
    for size in sizes * (len(data) // sum(sizes) + 1):
        if at >= len(data):
            break
        pieces.append(data[at : at + size])
        at += size
    events = feed_all(RequestParser(), pieces * 2)  # two messages back to back
    raw = b"".join(e.raw for e in events if isinstance(e, (Body, End, RequestHead)))
    assert raw == data * 2
    bodies = b"".join(e.payload for e in events if isinstance(e, Body))
    assert bodies == payload * 2
    assert [type(e) for e in events if not isinstance(e, Body)] == [RequestHead, End] * 2
    assert isinstance(events[0], RequestHead) and events[0].raw == head


def test_between_chunks_says_whether_the_raw_so_far_ends_with_whole_chunks() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    # Chunk data ending like an SSE event's end, "\r\n" included, so that data and
    # framing look alike; a chunk extension too.
    chunks = [b"6\r\nab\r\n\r\n\r\n", b"3;x=y\r\nc\n\n\r\n", b"2\r\n\r\r\r\n"]
    data = head + b"".join(chunks) + b"0\r\n\r\n"
    boundaries = {len(head) + len(b"".join(chunks[:n])) for n in range(len(chunks) + 1)}
    for cut in range(len(head), len(data) - 5):
        parser = ResponseParser()
        parser.expect("POST")
        events = parser.feed(data[:cut])
        raw = b"".join(e.raw for e in events if isinstance(e, (Body, ResponseHead)))
        # One Body per feed (the relay's fault carrier relies on it).
        assert sum(isinstance(e, Body) for e in events) <= 1
        assert parser.between_chunks is (len(raw) in boundaries), cut
        rest = parser.feed(data[cut:])
        assert sum(isinstance(e, Body) for e in rest) <= 1
        assert b"".join(e.raw for e in events + rest) == data  # type: ignore[union-attr]
        assert not parser.between_chunks  # the message ended


# --------------------------------------------------------------------------- strictness

CHUNKED_HEAD = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        # RFC 9110 §5.6.1: OWS is SP and HTAB only; "\v" or a no-break space is no OWS.
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\x0b\r\n\r\n", "control character"),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\xc2\xa0\r\n\r\n", "final chunked"),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", "more than once"),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "more than once",
        ),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.0"),
        (b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n", "repeated"),
        (b"POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n", "repeated"),
        (b"GET / HTTP/1.1\r\nX-A: a\x01b\r\n\r\n", "control character"),
        (b"GET / HTTP/1.1\r\nX-A: a\x7fb\r\n\r\n", "control character"),
        (b"GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n", "bare CR"),
        (b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", "CONNECT"),
        (b"GET http://evil.example/mcp HTTP/1.1\r\nHost: h\r\n\r\n", "origin-form"),
        (b"GET * HTTP/1.1\r\nHost: h\r\n\r\n", "origin-form"),
    ],
)
def test_strict_heads(data: bytes, reason: str) -> None:
    for pieces in ([data], [bytes([b]) for b in data]):
        events = feed_all(RequestParser(), pieces)
        assert isinstance(events[-1], Malformed), events
        assert reason in events[-1].reason
        assert not any(isinstance(e, RequestHead) for e in events)


def test_options_asterisk_is_accepted() -> None:
    (head, end) = feed_all(RequestParser(), [b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"])
    assert isinstance(head, RequestHead) and head.target == "*" and isinstance(end, End)


@pytest.mark.parametrize(
    "data",
    [
        b"GET / HTTP/1.1\nHost: h\n\n",  # bare LF line endings
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
        b"\x00\x00\x00",
    ],
)
def test_heads_that_can_never_be_valid_are_refused_before_they_end(data: bytes) -> None:
    """Answered at once: waiting for a CRLF CRLF that never comes would hold the client."""
    events = RequestParser().feed(data)
    assert [type(e) for e in events] == [Malformed]


def test_a_crlf_split_between_feeds_is_no_bare_lf() -> None:
    data = b"GET / HTTP/1.1\r\nHost: h\r\nX-Long: " + b"v" * 100 + b"\r\n\r\n"
    for at in range(1, len(data)):
        events = feed_all(RequestParser(), [data[:at], data[at:]])
        assert [type(e) for e in events] == [RequestHead, End], at


def test_head_limit_holds_when_the_end_arrives_at_once() -> None:
    """A head longer than MAX_HEAD is refused even when its end came in the same read."""
    head = b"GET / HTTP/1.1\r\nX: " + b"a" * (400 << 10) + b"\r\n\r\n"
    (event,) = RequestParser().feed(head)
    assert isinstance(event, Malformed) and "too long" in event.reason
    response = ResponseParser()
    response.expect("GET")
    big = b"HTTP/1.1 200 OK\r\nX: " + b"a" * (307 << 10) + b"\r\nContent-Length: 0\r\n\r\n"
    (event,) = response.feed(big)
    assert isinstance(event, Malformed) and "too long" in event.reason


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # The smuggling case: a trailer ended by bare LFs, then a hidden request.
        (b"0\r\nX: y\n\nGET /hidden HTTP/1.1\r\nHost: h\r\n\r\n", "bare CR or LF"),
        (b"0\r\n\nGET /hidden HTTP/1.1\r\nHost: h\r\n\r\n", "bare CR or LF"),
        (b"0\r\nX y\r\n\r\n", "invalid trailer field"),
        (b"0\r\nX: a\x00b\r\n\r\n", "control character"),
        (b"3;ext=a\rb\r\nabc\r\n0\r\n\r\n", "control character in a chunk-size"),
        (b"3\nabc\r\n0\r\n\r\n", "control character in a chunk-size"),
        (b"1" * 17 + b"\r\n", "invalid chunk-size"),
        (b"0\r\nX: " + b"a" * (300 << 10) + b"\r\n\r\n", "too long"),
    ],
)
def test_strict_chunks_and_trailers(body: bytes, reason: str) -> None:
    for pieces in ([CHUNKED_HEAD + body], [CHUNKED_HEAD, *(bytes([b]) for b in body[:200])]):
        events = feed_all(RequestParser(), pieces)
        if len(pieces) > 1 and not any(isinstance(e, Malformed) for e in events):
            continue  # byte by byte, a long case is cut before its bad part
        assert isinstance(events[-1], Malformed), events
        assert reason in events[-1].reason
        # Nothing after the bad part was handed out to be forwarded.
        assert not any(isinstance(e, End) for e in events)
        assert b"hidden" not in b"".join(getattr(e, "raw", b"") for e in events)


def test_valid_trailers_pass_in_any_pieces() -> None:
    body = b"3\r\nabc\r\n0\r\nX-Sum: 1\r\nX-Other: two\r\n\r\n"
    for pieces in splits(CHUNKED_HEAD + body):
        events = feed_all(RequestParser(), pieces)
        assert isinstance(events[-1], End)
        assert b"".join(getattr(e, "raw", b"") for e in events[1:]) == body


def test_response_heads_must_start_with_http() -> None:
    parser = ResponseParser()
    parser.expect("GET")
    (event,) = parser.feed(b"<html>")
    assert isinstance(event, Malformed) and "not an HTTP" in event.reason


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "more than one Host"),
        (b"GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n", "more than one Host"),
        (b"GET / HTTP/1.1\r\nX: y\r\n\r\n", "without Host"),
        (b"GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", "not ASCII"),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity, chunked\r\n\r\n", "identity"),
    ],
)
def test_host_count_target_bytes_and_identity_are_held_to_rfc_9112(
    data: bytes, reason: str
) -> None:
    events = RequestParser().feed(data)
    assert len(events) == 1 and isinstance(events[0], Malformed), events
    assert reason in events[0].reason


def test_an_http_1_0_request_may_go_without_host() -> None:
    events = RequestParser().feed(b"GET / HTTP/1.0\r\n\r\n")
    assert isinstance(events[0], RequestHead) and events[0].names == []


# ------------------------------------------------------------ as strict as h11

# The relay's HTTP/1.1 request parser against RFC 9112 and h11 (the strictest common one).
#
# Issue 12: "anything the relay cannot frame unambiguously it refuses (400, or
# close) and records ... Be as strict as RFC 9112 and as the strictest common
# server parser." Each head below is refused by h11 (checked in the test, so
# the claim stays true) and by RFC 9112, but the relay hands it out to be forwarded.


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
