"""intercept/relayed_exchange.py: a request body is held for the observer only up to STREAM_AT."""

from __future__ import annotations

from mcpsniff.http1.events import RequestHead
from mcpsniff.http1.parser import RequestParser
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
