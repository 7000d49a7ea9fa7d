"""intercept/relayed_exchange.py: what an exchange holds, for the observer and for the client."""

from __future__ import annotations

from typing import Any

from mcpsniff.capture.remote_exchange import RemoteObserver
from mcpsniff.core.observations import RequestBegin, RequestBody
from mcpsniff.http1.events import RequestHead, ResponseHead
from mcpsniff.http1.parser import RequestParser, ResponseParser
from mcpsniff.intercept.relayed_exchange import STREAM_AT, RelayedExchange


def exchange() -> RelayedExchange:
    head = RequestParser().feed(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\n")[0]
    assert isinstance(head, RequestHead)
    return RelayedExchange(head, 1.0)


def test_pieces_are_held_until_streaming_them_on_is_due() -> None:
    relayed = exchange()
    assert relayed.keep(b"abc") is False
    assert relayed.keep(b"x" * (STREAM_AT - 4)) is False
    assert relayed.keep(b"y") is True  # STREAM_AT bytes held
    assert relayed.body_bytes == STREAM_AT


def test_take_hands_the_held_body_over_once() -> None:
    relayed = exchange()
    relayed.keep(b"ab")
    relayed.keep(b"cd")
    assert relayed.take() == b"abcd"
    assert relayed.take() == b"" and relayed.kept == 0
    relayed.keep(b"e")
    assert relayed.take() == b"e" and relayed.body_bytes == 5


def test_a_big_body_streams_on_numbered_and_begin_carries_its_rest() -> None:
    told: list[Any] = []
    observer = RemoteObserver(told.append, "/mcp")
    relayed = exchange()
    relayed.keep(b"x" * STREAM_AT)
    relayed.stream_body(observer)
    relayed.keep(b"tail")
    remote = relayed.begin(observer, "10.0.0.1:5")
    ahead, begun = told
    assert type(ahead) is RequestBody and (ahead.exchange, ahead.offset) == (1, 0)
    assert ahead.body == b"x" * STREAM_AT
    assert type(begun) is RequestBegin and begun.exchange == 1 and begun.body == b"tail"
    assert begun.client == "10.0.0.1:5" and begun.t == 1.0 and begun.method == "POST"
    assert begun.size == STREAM_AT + 4
    assert relayed.kept == 0 and remote is not None


def response(fields: bytes) -> ResponseHead:
    parser = ResponseParser()
    parser.expect("GET")
    head = parser.feed(b"HTTP/1.1 200 OK\r\n" + fields + b"\r\n")[0]
    assert isinstance(head, ResponseHead)
    return head


def test_a_stream_is_held_unless_its_length_is_fixed() -> None:
    sized = exchange()
    assert sized.hold_stream(response(b"Content-Length: 5\r\n")) is False
    assert not sized.holding
    chunked = exchange()
    assert chunked.hold_stream(response(b"Transfer-Encoding: chunked\r\n")) is True
    assert chunked.holding and chunked.chunked
    until_close = exchange()
    assert until_close.hold_stream(response(b"")) is True
    assert until_close.holding and not until_close.chunked


def test_let_go_hands_over_the_held_bytes_and_holds_no_more() -> None:
    relayed = exchange()
    relayed.hold_stream(response(b""))
    relayed.held += b"event: endpoint\n"
    assert relayed.let_go() == b"event: endpoint\n"
    assert not relayed.holding and relayed.held == bytearray()
