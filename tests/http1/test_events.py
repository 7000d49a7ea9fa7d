"""http1/events.py: what the parsers return."""

from __future__ import annotations

from mcpsniff.http1.events import ResponseHead


def head(status: int) -> ResponseHead:
    raw = b"HTTP/1.1 %d X\r\n\r\n" % status
    return ResponseHead("HTTP/1.1", status, "X", [], [], raw, [])


def test_a_1xx_response_is_interim_and_the_final_one_is_not() -> None:
    assert head(100).interim and head(103).interim
    assert not head(200).interim and not head(204).interim
