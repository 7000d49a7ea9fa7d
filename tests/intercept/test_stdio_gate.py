"""The gated pumps: line splitting, and a real relay answering what the gate refuses
(with a real scripted server: tests/e2e/test_guard_enforce.py)."""

from __future__ import annotations

import json
from pathlib import Path

from mcpsniff.guard.enforce import REFUSED
from mcpsniff.intercept import stdio_gate
from mcpsniff.intercept.stdio_gate import _lines
from tests.relay.stdio_support import events, peer, read_trace, relay


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


def test_a_batch_with_a_forbidden_call_is_answered_whole_and_the_rest_passes(
    tmp_path: Path,
) -> None:
    """The echo peer copies its stdin to stdout: whatever it got comes back as it was."""
    trace = tmp_path / "t.jsonl"
    batch = json.dumps(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read"}},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "delete_x"}},
        ]
    ).encode()
    allowed = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read"}}\n'
    options = ("--trace", str(trace), "--guard", "enforce", "--forbid-tool", "delete_*")
    with relay(peer("echo"), *options) as r:
        r.send(batch + b"\n" + allowed)
        out = r.wait_stdout(allowed)
        r.close_stdin()
        assert r.wait() == 0
    answer, echoed = out.splitlines(keepends=True)
    assert echoed == allowed  # forwarded, and echoed back unchanged
    replies = json.loads(answer)  # mcpsniff's: the batch never reached the server
    assert [(r["id"], r["error"]["code"]) for r in replies] == [(1, REFUSED), (2, REFUSED)]
    assert replies[1]["error"]["data"]["tool"] == "delete_x"
    refused = events(read_trace(trace), "guard-answered")
    assert [(e.data["tool"], e.data["id"]) for e in refused] == [("delete_x", 2)]
