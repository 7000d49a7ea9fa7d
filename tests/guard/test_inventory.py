"""Reading a trace's offers: identities, pagination, slow requests, hostile frames."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.guard.inventory import InventoryBuilder, InventoryError, read_inventory, trace_label


def frame(seq: int, direction: str, value: object, t: float | None = None) -> FrameRecord:
    raw = value if isinstance(value, bytes) else orjson.dumps(value) + b"\n"
    return FrameRecord(seq, 100.0 + (t if t is not None else seq), "s", direction, "stdio", raw)


def test_labels_from_the_header() -> None:
    assert trace_label({"meta": {"label": "fs"}}) == "stdio:fs"
    assert trace_label({"meta": {"upstream": "http://h/mcp"}}) == "http:http://h/mcp"
    assert trace_label({"meta": {"command": ["node", "x.js"]}}) == "stdio:node x.js"
    assert trace_label({"meta": {"source": "mcpsniff demo"}}) == "trace:mcpsniff demo"
    assert trace_label({"meta": "junk"}) == "trace:unknown"


def test_pages_are_joined_and_slow_requests_counted() -> None:
    builder = InventoryBuilder(Path("t.jsonl"), {"meta": {"label": "x"}}, slower_than=1.0)
    builder.feed(EventRecord(0, 100.0, "s", "session-start", {}))
    feed = [
        frame(1, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "initialize"}),
        frame(2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "n"}}}),
        frame(3, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        frame(
            4,
            "s2c",
            {"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "a"}], "nextCursor": "c"}},
        ),
        frame(
            5, "c2s", {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "c"}}
        ),
        frame(9, "s2c", {"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "b"}]}}),
        frame(10, "s2c", b"not json\n"),
        frame(11, "c2s", [{"jsonrpc": "2.0", "id": 4, "method": "ping"}, 7]),
        frame(12, "s2c", {"jsonrpc": "2.0", "id": 99, "result": {}}),  # answers nothing
    ]
    for record in feed:
        builder.feed(record)
    (offer,) = builder.finish()
    assert offer.identity == "stdio:x [n]"
    assert [t.name for t in offer.tools()] == ["a", "b"]
    assert offer.list_seqs == {"tool": 9}
    assert offer.slow == 1 and offer.slowest[0].seconds == pytest.approx(4.0)
    assert offer.slowest[0].request_seq == 5


def test_an_unreadable_trace_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("hello\n")
    with pytest.raises(InventoryError) as caught:
        read_inventory([path])
    assert "\n" not in str(caught.value)
    with pytest.raises(InventoryError):
        read_inventory([tmp_path / "missing.jsonl"])
