"""The web UI's message detail names an error's layer, as ``show`` does."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.details import message_detail
from mcpsniff.ui.report import load_model
from tests.conftest import Conversation, request, result
from tests.ui.support import GALLERY


def test_error_row_detail_names_its_layer() -> None:
    trace = GALLERY / "empty-batch.jsonl"
    (session,) = load_model(trace).sessions.values()
    row = next(r for r in session.all_rows() if r["kind"] == "error")
    detail = message_detail(trace, session, row["n"])
    assert detail is not None
    assert detail["errorLayer"] == "Invalid Request [JSON-RPC protocol]"
    assert detail["errorLayerTitle"] == "JSON-RPC protocol error (-32768..-32600)"
    ok = next(r for r in session.all_rows() if r["kind"] == "response")
    assert "errorLayer" not in (message_detail(trace, session, ok["n"]) or {})


def test_tool_error_detail_names_the_tool_layer(tmp_path: Path) -> None:
    c = Conversation()
    c.handshake()
    c.client(request(1, "tools/call", {"name": "t", "arguments": {}}))
    c.server(result(1, {"content": [], "isError": True}))
    c.close()
    trace = tmp_path / "t.jsonl"
    writer = TraceWriter.create(trace, meta={})
    writer.write_all(c.records)
    writer.close()
    (session,) = load_model(trace).sessions.values()
    row = next(r for r in session.all_rows() if r.get("isError"))
    detail = message_detail(trace, session, row["n"])
    assert detail is not None and detail["errorLayer"] == "[tool error, isError: true]"
