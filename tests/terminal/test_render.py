"""The timeline and the findings report bound each piece of traffic text they show."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import FrameRecord
from mcpsniff.terminal.render import MAX_PIECE
from mcpsniff.trace.writer import TraceWriter


def _trace(path: Path, method: str) -> Path:
    raw = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}).encode() + b"\n"
    writer = TraceWriter.create(path, meta={})
    writer.write_all(list(replay([FrameRecord(1, 1767225600.0, "s", "c2s", "stdio", raw)])))
    writer.close()
    return path


def test_a_two_megabyte_method_name_is_not_a_two_megabyte_line(tmp_path: Path) -> None:
    method = "x" * 2_000_000
    trace = _trace(tmp_path / "t.jsonl", method)
    for args in (["show"], ["check"]):
        result = CliRunner().invoke(main, [*args, str(trace)])
        assert result.exit_code in (0, 1), result.output
        longest = max(len(line) for line in result.output.splitlines())
        assert longest < 3 * MAX_PIECE, args
        assert " more characters)" in result.output, args
    # The body itself, asked for with -v, is shown whole.
    verbose = CliRunner().invoke(main, ["show", "-v", str(trace)])
    assert method in verbose.output


def test_a_fault_event_on_the_timeline() -> None:
    from mcpsniff.core.model import EventRecord
    from mcpsniff.terminal.render import _event_detail

    data = {
        "fault_version": 1,
        "spec": "drop when direction == s2c",
        "action": "drop",
        "dir": "s2c",
        "kind": "response",
        "method": "tools/call",
        "id": 3,
        "delivered": False,
    }
    line = _event_detail(EventRecord(4, 1.0, "stdio", "fault", data))
    assert line == (
        "injected drop to s2c response tools/call id=3 (not delivered)"
        "  [drop when direction == s2c]"
    )
    delay = {"action": "delay", "delay_ms": 301.4, "dir": "s2c", "kind": "response"}
    assert _event_detail(EventRecord(5, 1.0, "stdio", "fault", delay)).startswith(
        "injected delay 301 ms to s2c response"
    )


def test_every_kind_is_padded_alike_so_ids_line_up(tmp_path: Path) -> None:
    bodies = [
        ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
        ("c2s", {"jsonrpc": "2.0", "id": 2, "method": "nope"}),
        ("s2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "no"}}),
    ]
    frames = [
        FrameRecord(i, 1767225600.0 + i, "s", d, "stdio", json.dumps(b).encode() + b"\n")
        for i, (d, b) in enumerate(bodies, start=1)
    ]
    writer = TraceWriter.create(tmp_path / "t.jsonl", meta={})
    writer.write_all(list(replay(frames)))
    writer.close()
    result = CliRunner().invoke(main, ["show", str(tmp_path / "t.jsonl")])
    lines = [line for line in result.output.splitlines() if " id=" in line]
    assert len(lines) == 4
    # "error id=2" was one column left of "result   id=1".
    assert len({line.index(" id=") for line in lines}) == 1, lines
    assert "error    id=2" in lines[3]
