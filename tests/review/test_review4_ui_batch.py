"""Review 4: a batch in a session whose version removed batching, in the web UI and report.

The analyzer writes a batch's own finding (MSG-BATCH-REMOVED, from 2025-06-18
on) right after the batch's message record and before its elements' records.
The UI's model completed the frame's views at every finding, so the elements
that followed were dropped: the page showed "batch of 0", and the requests
and responses inside the batch were nowhere (not in the list, the diagram,
the report or the Mermaid text), while ``show`` listed them. Exactly the
traffic whose finding says "look here".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.library import Library
from mcpsniff.ui.report import load_model


def _trace(path: Path, version: str) -> Path:
    messages = [
        (
            "c2s",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}},
            },
        ),
        (
            "s2c",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        ),
        ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (
            "c2s",
            [
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            ],
        ),
        (
            "s2c",
            [
                {"jsonrpc": "2.0", "id": 1, "result": {}},
                {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}},
            ],
        ),
    ]
    records: list[FrameRecord | EventRecord] = [
        FrameRecord(n + 1, 1.0 + n, "s", d, "stdio", (json.dumps(m) + "\n").encode())
        for n, (d, m) in enumerate(messages)
    ]
    records.append(EventRecord(9, 9.0, "s", "session-end", {}))
    writer = TraceWriter.create(path, meta={"source": "review4"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


EXPECTED = [
    (1, "request", None),
    (2, "response", None),
    (3, "notification", None),
    (4, "batch", None),
    (4, "request", 0),
    (4, "request", 1),
    (5, "batch", None),
    (5, "response", 0),
    (5, "response", 1),
    (9, "event", None),
]


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_batch_elements_are_rows_whatever_the_version(tmp_path: Path, version: str) -> None:
    path = _trace(tmp_path / "t.jsonl", version)
    model = load_model(path)
    (session,) = model.sessions.values()
    rows = [session.row(n) for n in range(len(session.rows))]
    assert [(r["seq"], r["kind"], r.get("index")) for r in rows] == EXPECTED
    assert [r.get("batch") for r in rows if r["kind"] == "batch"] == [2, 2]
    removed = [f for f in session.findings if f["rule"] == "MSG-BATCH-REMOVED"]
    if version == "2025-03-26":
        assert removed == []
    else:
        # Each batch's finding still links to the batch's rows, elements included.
        assert [f["rows"] for f in removed] == [[3, 4, 5], [6, 7, 8]]


def test_the_live_library_shows_the_elements_too(tmp_path: Path) -> None:
    _trace(tmp_path / "t.jsonl", "2025-06-18")
    library = Library([tmp_path])
    library.poll()
    library.poll()  # the quiet poll completes the last frame's views
    (summary,) = library.sessions()
    assert summary["rows"] == len(EXPECTED)
    assert summary["findings"]["error"] == 3  # LC-INIT-PARAMS (no clientInfo), 2 batches


def test_the_mermaid_diagram_draws_the_elements(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.jsonl", "2025-06-18")
    result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid"])
    assert result.exit_code == 0, result.output
    assert "batch of 2" in result.output
    assert "tools/list id=2" in result.output


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
    writer = TraceWriter.create(path, meta={"source": "review4"})
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
