"""The sinks: what the recorder hands them, and the one place a command's options become sinks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpsniff.capture import recorder as recorder_module
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.sinks import Outputs, Sink
from mcpsniff.core.model import EventRecord, FrameRecord, Record
from mcpsniff.relay.http import HttpOptions, HttpRelay
from tests.relay.hostile_peers import AiohttpUpstream, exchange_raw


class Collecting:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.batches = 0
        self.closed = 0

    def record(self, record: Record) -> None:
        self.records.append(record)

    def batch_end(self) -> None:
        self.batches += 1

    def close(self) -> None:
        self.closed += 1


def test_a_sink_sees_every_record_each_batch_and_the_close() -> None:
    sink = Collecting()
    assert isinstance(sink, Sink)
    recorder = TraceRecorder(None)
    recorder.sinks.append(sink)
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    fed = recorder.feed("s1", "c2s", line, 1.0)
    assert sink.batches == 1
    assert sink.records == fed
    assert any(isinstance(r, FrameRecord) and r.seq >= 0 for r in sink.records)
    closing = recorder.close(2.0)
    assert sink.batches == 2
    assert sink.records == fed + closing
    assert sink.closed == 1


def test_outputs_travel_as_json_and_ignore_unknown_keys() -> None:
    assert Outputs.from_json(Outputs().to_json()) == Outputs()
    assert Outputs.from_json("") == Outputs()
    assert Outputs.from_json('{"from-a-newer-sender": 1}') == Outputs()


def test_attach_sinks_adds_the_built_sinks(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = Collecting()
    monkeypatch.setattr(recorder_module, "build_sinks", lambda o: [sink])
    recorder = TraceRecorder(None, "http").attach_sinks(Outputs())
    assert recorder.sinks == [sink]
    assert TraceRecorder(None, "http").attach_sinks(None).sinks == []


def test_the_http_relay_feeds_the_built_sinks(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = Collecting()
    monkeypatch.setattr(recorder_module, "build_sinks", lambda o: [sink])

    async def scenario() -> None:
        upstream = AiohttpUpstream()
        await upstream.start()
        relay = HttpRelay(HttpOptions(upstream=f"http://127.0.0.1:{upstream.port}/", port=0), None)
        await relay.start()
        try:
            request = b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
            await exchange_raw(relay.port or 0, request)
        finally:
            await relay.stop()
            await upstream.stop()

    asyncio.run(scenario())
    events: list[Any] = [r.event for r in sink.records if isinstance(r, EventRecord)]
    assert events[:3] == ["http-request", "http-response", "http-end"]
    assert sink.batches > 0 and sink.closed
