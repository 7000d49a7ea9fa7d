"""The timeline and the findings report bound each piece of traffic text they show."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord
from mcpsniff.terminal.render import MAX_PIECE, Style, Timeline
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


def test_stderr_and_exit_lines_name_their_session_as_message_lines_do() -> None:
    timeline = Timeline(Style(False))
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    beta = "beta\x1b[31m"
    lines: list[str] = []
    for record in [
        FrameRecord(1, 1767225600.0, "alpha", "c2s", "stdio", ping),
        MessageRecord(1, "alpha", "c2s", "request", id=1, has_id=True, method="ping"),
        FrameRecord(2, 1767225600.1, beta, "c2s", "stdio", ping),
        MessageRecord(2, beta, "c2s", "request", id=1, has_id=True, method="ping"),
        EventRecord(3, 1767225600.2, "alpha", "stderr", {"line": "alpha says hi"}),
        EventRecord(4, 1767225600.3, beta, "stderr", {"line": "beta says hi"}),
        EventRecord(5, 1767225600.4, "alpha", "exit", {"status": 0, "returncode": 0}),
    ]:
        lines.extend(timeline.feed(record))
    lines.extend(timeline.flush())
    events = [line for line in lines if "···" in line]
    assert len(events) == 3
    assert "[alpha]" in events[0] and events[0].endswith("stderr alpha says hi")
    assert "[beta\\x1b[31m]" in events[1] and events[1].endswith("stderr beta says hi")
    assert "[alpha]" in events[2] and "exit" in events[2]
    # The escape in the key is shown, never sent to the terminal.
    assert all("\x1b" not in line for line in lines)
    # The message line of the second session carries the same tag.
    assert "[beta\\x1b[31m]" in [line for line in lines if "request" in line][1]


def test_one_session_puts_no_tag_on_its_event_lines() -> None:
    timeline = Timeline(Style(False))
    lines = timeline.feed(EventRecord(1, 1767225600.0, "only", "stderr", {"line": "hello"}))
    assert lines == [lines[0]] and "[only]" not in lines[0] and lines[0].endswith("stderr hello")
