"""faults/http.py: SSE events taken apart and put back, answers in the server's place."""

from __future__ import annotations

import orjson
import pytest

from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.http import (
    ServerAnswer,
    answer_fields,
    event_data,
    response_bytes,
    server_answer,
    split_events,
    status_text,
    with_data,
)
from mcpsniff.faults.spec import parse_faults


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


def _answer(spec: str) -> ServerAnswer:
    engine = FaultEngine(parse_faults([spec]))
    call = {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "echo"}}
    injection = engine.judge(engine.read("c2s", orjson.dumps(call)))
    assert injection is not None
    return server_answer(injection)


def test_a_status_answer_is_plain_text_and_marks_only_the_request() -> None:
    reply = _answer("status 503")
    assert reply == ServerAnswer(
        503, b"mcpsniff: injected HTTP 503\n", "text/plain; charset=utf-8", {"c2s": 1}
    )


@pytest.mark.parametrize(
    ("spec", "member"),
    [('error -32020 "no header"', "error"), ('tool-error "disk full"', "result")],
)
def test_a_json_rpc_answer_is_200_json_and_marks_both_ways(spec: str, member: str) -> None:
    reply = _answer(spec)
    assert (reply.status, reply.content_type) == (200, "application/json")
    assert reply.marks == {"c2s": 1, "s2c": 1}
    message = orjson.loads(reply.body)
    assert message["id"] == "a" and member in message
