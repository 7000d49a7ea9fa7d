"""Tests of mcpsniff/intercept/fault_heads.py: the heads a faulted exchange sends."""

from __future__ import annotations

from mcpsniff.faults.http import response_bytes
from mcpsniff.http1.parser import ResponseParser
from mcpsniff.intercept.fault_heads import answer_parts, chunked_head, silent_head, with_length


def test_with_length_frames_the_new_body() -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nAccept: */*\r\n\r\n"
    assert with_length(head, 12) == (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nContent-Length: 12\r\n\r\n"
    )


def test_chunked_head_drops_the_length() -> None:
    parser = ResponseParser()
    parser.expect("POST")
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\n"
    head = parser.feed(raw)[0]
    changed = chunked_head(head)  # type: ignore[arg-type]
    assert changed.raw == b"HTTP/1.1 200 OK\r\nX-A: b\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert changed.names == ["x-a", "transfer-encoding"]


def test_silent_head_forwards_nothing_and_keeps_the_status() -> None:
    parser = ResponseParser()
    parser.expect("POST")
    head = parser.feed(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")[0]
    silent = silent_head(head)  # type: ignore[arg-type]
    assert (silent.raw, silent.lines, silent.names) == (b"", [], [])
    assert silent.status == head.status == 202  # type: ignore[attr-defined]


def test_answer_parts_reads_back_an_answer_mcpsniff_made() -> None:
    data, fields = response_bytes(503, b'{"x":1}', b"application/json")
    assert answer_parts(data) == (503, fields, b'{"x":1}')
