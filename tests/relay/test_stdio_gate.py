"""The gated pumps' line splitting (the pumps themselves: tests/guard/test_enforce_peers.py)."""

from __future__ import annotations

from mcpsniff.relay import stdio_gate
from mcpsniff.relay.stdio_gate import _lines


def test_complete_lines_leave_the_rest_in_the_buffer() -> None:
    buffer = bytearray(b'{"a":1}\n{"b":2}\r\n{"c"')
    assert _lines(buffer) == [b'{"a":1}\n', b'{"b":2}\r\n']
    assert buffer == bytearray(b'{"c"')
    assert _lines(buffer) == []


def test_an_overlong_partial_line_is_let_through(monkeypatch: object) -> None:
    monkeypatch.setattr(stdio_gate, "MAX_LINE", 8)  # type: ignore[attr-defined]
    buffer = bytearray(b"0123456789")
    assert _lines(buffer) == [b"0123456789"]
    assert buffer == bytearray()
