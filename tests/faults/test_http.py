"""faults/http.py: SSE events taken apart and put back, answers in the server's place."""

from __future__ import annotations

from mcpsniff.faults.http import (
    answer_fields,
    event_data,
    response_bytes,
    split_events,
    status_text,
    with_data,
)


def test_event_data_joins_data_lines() -> None:
    assert event_data(b'event: message\nid: 7\ndata: {"a":\ndata: 1}\n\n') == b'{"a":\n1}'
    assert event_data(b"data:x\r\n\r\n") == b"x"
    assert event_data(b": keep-alive\n\n") is None


def test_with_data_keeps_the_other_fields() -> None:
    block = b"event: message\nid: 7\ndata: {}\n\n"
    assert with_data(block, b"{\n}") == b"event: message\nid: 7\ndata: {\ndata: }\n\n"


def test_response_bytes_says_it_is_a_fault() -> None:
    data, fields = response_bytes(503, b"down\n", b"text/plain")
    assert data.startswith(b"HTTP/1.1 503 Fault\r\n")
    assert ("Retry-After", "1") in fields and ("X-Mcpsniff", "fault") in fields
    assert data.endswith(b"Content-Length: 5\r\n\r\ndown\n")


def test_split_events_takes_whole_events_only() -> None:
    buffer = bytearray(b"data: 1\n\ndata: 2\r\n\r\ndata: 3\n")
    assert split_events(buffer) == [b"data: 1\n\n", b"data: 2\r\n\r\n"]
    assert buffer == b"data: 3\n"
    assert split_events(buffer) == []


def test_answer_fields_and_status_text() -> None:
    assert answer_fields(404, "text/plain") == [
        ("Content-Type", "text/plain"),
        ("X-Mcpsniff", "fault"),
    ]
    assert ("Retry-After", "1") in answer_fields(429, "text/plain")
    assert status_text(500) == b"mcpsniff: injected HTTP 500\n"
