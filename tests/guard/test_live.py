"""What a relay's analysis keeps at the end of a capture: each session's last offer."""

from __future__ import annotations

import json
from pathlib import Path

from mcpsniff.core.analyzer import Analyzer
from mcpsniff.guard.history import history_file
from mcpsniff.guard.live import recorded_inventory, remember_capture

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
}
INIT_OK = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "srv", "version": "1"},
    },
}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LISTED = {
    "jsonrpc": "2.0",
    "id": 2,
    "result": {"tools": [{"name": "a", "description": "A.", "inputSchema": {"type": "object"}}]},
}


def _analyzed() -> Analyzer:
    analyzer = Analyzer()
    session = analyzer.session("stdio", "stdio")
    for t, (direction, message) in enumerate(
        [("c2s", INIT), ("s2c", INIT_OK), ("c2s", LIST), ("s2c", LISTED)]
    ):
        session.feed(direction, "stdio", json.dumps(message).encode() + b"\n", 100.0 + t)
    return analyzer


def test_the_analyzed_offers_become_history(tmp_path: Path) -> None:
    analyzer = _analyzed()
    (offer,) = recorded_inventory(analyzer, "stdio:x", "t.jsonl").sessions
    assert offer.identity == "stdio:x [srv]"
    assert [d.name for d in offer.tools()] == ["a"]
    assert offer.started == 103.0
    warnings: list[str] = []
    assert remember_capture(analyzer, "stdio:x", "t.jsonl", warnings.append, tmp_path) == 1
    assert warnings == []
    assert (
        json.loads(history_file("stdio:x [srv]", tmp_path).read_text())["offers"][0]["trace"]
        == "t.jsonl"
    )


def test_a_history_that_cannot_be_written_is_a_warning(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    warnings: list[str] = []
    assert remember_capture(_analyzed(), "stdio:x", "t.jsonl", warnings.append, blocked / "g") == 0
    assert len(warnings) == 1 and "guard history" in warnings[0]
