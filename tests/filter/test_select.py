"""Selecting records with a filter (filter/select.py): a frame's records stay together."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter

_INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
}

_RESULT = {
    "jsonrpc": "2.0",
    "id": 0,
    "result": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    },
}


def test_check_filter_keeps_the_findings_about_a_batch_element(tmp_path: Path) -> None:
    """filter/select.py completed the frame at the first record after a finding: the same loss."""
    path = tmp_path / "t.jsonl"
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "pingX"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    records = [
        FrameRecord(1, 1.0, "s", "c2s", "stdio", (json.dumps(_INIT) + "\n").encode()),
        FrameRecord(2, 2.0, "s", "s2c", "stdio", (json.dumps(_RESULT) + "\n").encode()),
        FrameRecord(
            3, 3.0, "s", "c2s", "stdio", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        ),
        FrameRecord(4, 4.0, "s", "c2s", "stdio", (json.dumps(batch) + "\n").encode()),
        EventRecord(9, 9.0, "s", "session-end", {}),
    ]
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    everything = CliRunner().invoke(
        main, ["check", str(path), "--format", "json", "--fail-on", "info"]
    )
    rules = [json.loads(line)["rule"] for line in everything.output.splitlines()]
    assert "MSG-BATCH-REMOVED" in rules and "MSG-METHOD-UNKNOWN" in rules
    result = CliRunner().invoke(
        main, ["check", str(path), "--format", "json", "--filter", "method == pingX"]
    )
    assert result.exit_code in (0, 1), result.output
    selected = [json.loads(line) for line in result.output.splitlines()]
    assert [f["data"].get("method") for f in selected if f["rule"] == "MSG-METHOD-UNKNOWN"] == [
        "pingX"
    ]
