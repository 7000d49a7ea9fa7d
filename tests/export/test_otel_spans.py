"""The pure span building (records in, span drafts out) and the live sink's bounds."""

from __future__ import annotations

import socket
import threading
from typing import Any

import orjson
import pytest

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FrameRecord, Record
from mcpsniff.core.session import Session
from mcpsniff.export import otel_spans
from mcpsniff.export.otel_spans import ExportOptions, SpanBuilder, parse_traceparent

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_traceparent_parsing_follows_w3c() -> None:
    parent = parse_traceparent(TP, "rojo=1")
    assert parent is not None
    assert parent.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert parent.span_id == 0x00F067AA0BA902B7
    assert parent.flags == 1 and parent.state == "rojo=1"
    for bad in (
        None,
        42,
        "",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # forbidden version
        TP + "-extra",  # version 00 has exactly four fields
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # short trace id
        "x" * 10_000,
    ):
        assert parse_traceparent(bad) is None, bad
    # A future version may append fields.
    assert parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-ab")


class Wire:
    """Feeds a Session (the real analyzer) and a SpanBuilder the same records."""

    def __init__(self, transport: str = "stdio", **options: Any) -> None:
        self.session = Session("s", transport)
        self.builder = SpanBuilder(ExportOptions(**options))
        self.t = 1000.0
        self.seq = 10_000

    def feed(self, records: list[Record]) -> None:
        for record in records:
            self.builder.feed(record)

    def send(self, direction: str, message: Any) -> None:
        self.t += 0.01
        raw = orjson.dumps(message) + b"\n"
        if self.session.transport == "stdio":
            self.feed(self.session.feed(direction, "stdio", raw, self.t))
        else:
            self.feed(self.session.feed_frame(direction, self.session.transport, raw, self.t))

    def event(self, name: str, data: dict[str, Any]) -> None:
        self.seq += 1
        self.builder.feed(EventRecord(self.seq, self.t, "s", name, data))

    def close(self) -> tuple[list[Any], list[Any], list[Any]]:
        self.feed(self.session.close(self.t + 1))
        self.builder.finish()
        return self.builder.take()


def handshake(wire: Wire, version: str) -> None:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c"}}
    wire.send("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {}}
    wire.send("s2c", {"jsonrpc": "2.0", "id": 0, "result": result})
    wire.send("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_session_id_from_http_headers_but_not_in_the_stateless_era() -> None:
    wire = Wire("http")
    wire.event(
        "http-request",
        {"exchange": 1, "headers": [["Mcp-Session-Id", "abc123"]], "client": "127.0.0.1:52336"},
    )
    handshake(wire, "2025-11-25")
    wire.send("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    wire.send("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
    ops, _, _ = wire.close()
    tools = [op for op in ops if op.client.name == "tools/list"]
    assert tools[0].client.attributes["mcp.session.id"] == "abc123"
    assert tools[0].client.attributes["network.transport"] == "tcp"
    assert tools[0].client.attributes["network.protocol.version"] == "1.1"
    assert tools[0].server.attributes["client.address"] == "127.0.0.1"
    assert tools[0].server.attributes["client.port"] == 52336
    assert "client.address" not in tools[0].client.attributes

    modern = Wire("http")
    modern.event("http-request", {"exchange": 1, "headers": [["mcp-session-id", "zzz"]]})
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    modern.send(
        "c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    )
    modern.send("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
    ops, _, _ = modern.close()
    assert ops[0].client.attributes["mcp.protocol.version"] == "2026-07-28"
    assert "mcp.session.id" not in ops[0].client.attributes


def test_hostile_names_are_escaped_and_bounded() -> None:
    wire = Wire()
    handshake(wire, "2025-11-25")
    name = "\x1b]0;pwn\x07\u202e" + "n" * 5000
    params = {"name": name, "arguments": {}}
    wire.send("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    wire.send("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"content": []}})
    ops, _, _ = wire.close()
    [call] = [op for op in ops if op.client.attributes["mcp.method.name"] == "tools/call"]
    tool = call.client.attributes["gen_ai.tool.name"]
    assert isinstance(tool, str)
    assert "\x1b" not in tool and "\u202e" not in tool and "\\x1b" in tool
    assert len(tool) < 1200
    assert "\x1b" not in call.client.name


def test_unanswered_requests_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otel_spans, "MAX_PENDING", 5)
    wire = Wire()
    handshake(wire, "2025-11-25")
    for i in range(1, 13):
        wire.send("c2s", {"jsonrpc": "2.0", "id": i, "method": "ping"})
    assert wire.builder.evicted == 7
    ops, _, _ = wire.close()
    pings = [op for op in ops if op.client.name == "ping"]
    assert len(pings) == 12
    reasons = [op.client.attributes["error.type"] for op in pings]
    assert reasons.count("mcpsniff_dropped") == 7
    assert reasons.count("no_response") == 5
    assert all(op.client.status_error for op in pings)


def test_content_is_opt_in_and_redacted() -> None:
    for include in (False, True):
        wire = Wire(include_content=include)
        handshake(wire, "2025-11-25")
        arguments = {"q": "weather", "password": "hunter2-very-secret"}
        params = {"name": "search", "arguments": arguments}
        wire.send("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        result = {"content": [{"type": "text", "text": "sunny"}]}
        wire.send("s2c", {"jsonrpc": "2.0", "id": 1, "result": result})
        ops, _, _ = wire.close()
        [call] = [op for op in ops if op.client.name == "tools/call search"]
        attributes = call.client.attributes
        if not include:
            assert "gen_ai.tool.call.arguments" not in attributes
            continue
        assert '"q":"weather"' in str(attributes["gen_ai.tool.call.arguments"])
        assert "hunter2" not in str(attributes["gen_ai.tool.call.arguments"])
        assert "sunny" in str(attributes["gen_ai.tool.call.result"])


def test_findings_per_span_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otel_spans, "MAX_EVENTS", 2)
    draft = otel_spans.SpanDraft("x", "client", 0.0, 0.0, {})
    for i in range(5):
        otel_spans._add_event(draft, otel_spans.SpanEvent(f"R{i}", 0.0, {}))
    assert [e.name for e in draft.events] == ["R0", "R1"]
    assert draft.attributes["mcpsniff.findings.dropped"] == 3


class Blackhole:
    """A TCP listener that accepts and never answers: a collector that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


def test_sink_never_blocks_on_a_hung_collector_and_counts_what_it_drops() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from mcpsniff.export.otlp import OtlpSettings
    from mcpsniff.export.otlp_sink import OtlpSink

    hole = Blackhole()
    warnings: list[str] = []
    sink = OtlpSink(
        OtlpSettings(endpoint=f"http://127.0.0.1:{hole.port}", timeout=2.0),
        warn=warnings.append,
        queue_limit=2,
    )
    session = Session("s", "stdio")
    t = 1000.0
    try:
        for i in range(2000):
            t += 0.001
            request = {"jsonrpc": "2.0", "id": i, "method": "ping"}
            for record in session.feed("c2s", "stdio", orjson.dumps(request) + b"\n", t):
                sink.record(record)
            sink.batch_end()
            response = {"jsonrpc": "2.0", "id": i, "result": {}}
            for record in session.feed("s2c", "stdio", orjson.dumps(response) + b"\n", t):
                sink.record(record)
            sink.batch_end()
        # All fed while the worker still hangs on its first export: the
        # recorder's side never waited for the network, and what did not fit
        # in the queue was dropped and counted.
        assert sink._thread is not None and sink._thread.is_alive()
        assert sink.dropped_batches > 0
        sink.close()
    finally:
        hole.close()
    assert sink.dropped_operations > 0
    assert len(warnings) == 1, warnings
    assert "OTLP export" in warnings[0] or "collector" in warnings[0]


def test_unsampled_traceparent_is_respected() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from mcpsniff.export.otlp import OtlpExporter, OtlpSettings

    wire = Wire()
    handshake(wire, "2025-11-25")
    for id_, flags in ((1, "00"), (2, "01")):
        meta = {"traceparent": TP[:-2] + flags}
        params = {"name": "t", "arguments": {}, "_meta": meta}
        wire.send("c2s", {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})
        wire.send("s2c", {"jsonrpc": "2.0", "id": id_, "result": {"content": []}})
    ops, lone, metrics = wire.close()
    exporter = OtlpExporter(OtlpSettings(endpoint="http://127.0.0.1:9"))
    try:
        exporter.emit(ops, lone, metrics)
        assert exporter.unsampled == 1
        # initialize, notifications/initialized and the sampled call: two spans each.
        assert exporter.pending == 6
        spans = exporter._finished
        traced = [s for s in spans if s.context.trace_id == int(TP[3:35], 16)]
        assert len(traced) == 2
        assert {s.parent.span_id for s in traced} >= {int(TP[36:52], 16)}
    finally:
        exporter.shutdown()


def test_error_messages_uris_and_findings_sent_to_the_collector_are_redacted() -> None:
    """Not only the opt-in content: every traffic text a span carries (an unredacted trace)."""
    token = "ghp_" + "Z9y8X7w6V5" * 4
    wire = Wire()
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    wire.send("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    result = {"protocolVersion": "2025-11-25", "capabilities": {"resources": {}}}
    wire.send("s2c", {"jsonrpc": "2.0", "id": 0, "result": result})
    wire.send("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})
    uri = "https://bot:pa55w0rd-x@example.com/doc?api_key=k3y-s3cr3t-v4lue"
    read = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    wire.send("c2s", read)
    error = {"code": -32000, "message": f"upstream refused token {token}"}
    wire.send("s2c", {"jsonrpc": "2.0", "id": 1, "error": error})
    # A finding that quotes the wire: stdout text that is not a message.
    wire.t += 0.01
    wire.feed(wire.session.feed("s2c", "stdio", f"debug: using {token}\n".encode(), wire.t))
    ops, lone, _ = wire.close()
    [call] = [op for op in ops if op.client.name == "resources/read"]
    texts = [
        str(call.client.status_message),
        str(call.client.attributes["mcp.resource.uri"]),
        *(str(v) for span in lone for e in span.events for v in e.attributes.values()),
        *(str(span.status_message) for span in lone),
    ]
    joined = "\n".join(texts)
    assert "upstream refused token [REDACTED]" in joined
    assert "example.com/doc" in joined
    assert any("STDIO-STDOUT-CLEAN" in span.name for span in lone)
    for secret in (token, "pa55w0rd-x", "k3y-s3cr3t-v4lue"):
        assert secret not in joined


def test_traceparent_parsing_is_strict_w3c_and_drops_a_bad_tracestate() -> None:
    assert parse_traceparent(TP.upper()) is None  # HEXDIGLC: lowercase only
    assert parse_traceparent(f" {TP}") is None
    parent = parse_traceparent(TP, "Bad Key=1")
    assert parent is not None and parent.state is None


# ------------------------------------------------------------ open sessions

# ``export otlp`` and ``--otlp`` remembered every open session.
#
# ``SpanBuilder`` kept per-session state until a session ended, and sessions
# that never end (a trace cut short, HTTP sessions nobody DELETEs, a hostile
# trace) were kept all: a 30 MB trace of 200,000 one-request sessions cost
# ``export otlp`` 2.2 GB and 240 s (20,000: 261 MB, 22 s). At most
# ``MAX_SESSIONS`` open ones are kept now; the least recently active is given up
# and its requests exported as unanswered (``mcpsniff_dropped``), as the oldest
# of too many unanswered requests in one session already were.


REQUEST = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'

ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


def test_open_sessions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(otel_spans, "MAX_SESSIONS", 10)
    frames = [FrameRecord(i + 1, 1.0 + i, f"s{i}", "c2s", "stdio", REQUEST) for i in range(25)]
    # s0 is answered after every other session began: the most recently active.
    frames.append(FrameRecord(100, 100.0, "s0", "s2c", "stdio", ANSWER))
    builder = SpanBuilder()
    ops = []
    for record in replay(frames):
        builder.feed(record)
        done, _, _ = builder.take()
        ops.extend(done)
        assert len(builder._sessions) <= 10
    builder.finish()
    ops.extend(builder.take()[0])
    # s0 was given up before its answer came (s10 needed the room); the answer
    # opened it again, giving up s15. So s0..s15 went out as given up, one
    # request each, and s16..s24 as unanswered when the capture ended.
    assert builder.evicted == 16
    dropped = [op for op in ops if op.client.attributes.get("error.type") == "mcpsniff_dropped"]
    assert sorted(op.session for op in dropped) == sorted(f"s{i}" for i in range(16))
    unanswered = [op for op in ops if op.client.attributes.get("error.type") == "no_response"]
    assert sorted(op.session for op in unanswered) == sorted(f"s{i}" for i in range(16, 25))
