"""http1/events.py: what the parsers return."""

from __future__ import annotations

from mcpsniff.http1.events import Head, RequestHead, ResponseHead


def head(status: int) -> ResponseHead:
    raw = b"HTTP/1.1 %d X\r\n\r\n" % status
    return ResponseHead("HTTP/1.1", status, "X", headers=[], lines=[], raw=raw, names=[])


def test_a_1xx_response_is_interim_and_the_final_one_is_not() -> None:
    assert head(100).interim and head(103).interim
    assert not head(200).interim and not head(204).interim


def test_both_heads_are_heads_whose_shared_fields_are_given_by_name() -> None:
    request = RequestHead(
        "POST",
        "/mcp",
        "HTTP/1.1",
        headers=[("Host", "h")],
        lines=[b"Host: h"],
        raw=b"R",
        names=["host"],
    )
    response = head(200)
    assert isinstance(request, Head) and isinstance(response, Head)
    assert (request.method, request.target, request.version) == ("POST", "/mcp", "HTTP/1.1")
    assert (request.headers, request.lines, request.raw, request.names) == (
        [("Host", "h")],
        [b"Host: h"],
        b"R",
        ["host"],
    )
    assert (response.version, response.status, response.reason) == ("HTTP/1.1", 200, "X")
    assert response.raw == b"HTTP/1.1 200 X\r\n\r\n"
