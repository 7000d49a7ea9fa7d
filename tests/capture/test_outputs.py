"""The one place the analysis side's sinks are built: ``mcpsniff.capture.outputs``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcpsniff.capture import outputs
from mcpsniff.capture.outputs import Outputs, attach
from mcpsniff.capture.recorder import Recorder
from mcpsniff.core.model import EventRecord, Record
from mcpsniff.relay.http import HttpOptions, HttpRelay
from tests.relay.hostile_peers import AiohttpUpstream, exchange_raw


class Collecting:
    """A sink that keeps what it is given."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.batches = 0
        self.closed = False

    def record(self, record: Record) -> None:
        self.records.append(record)

    def batch_end(self) -> None:
        self.batches += 1

    def close(self) -> None:
        self.closed = True


def test_outputs_travel_as_json_and_ignore_unknown_keys() -> None:
    assert Outputs.from_json(Outputs().to_json()) == Outputs()
    assert Outputs.from_json("") == Outputs()
    assert Outputs.from_json('{"from-a-newer-sender": 1}') == Outputs()


def test_attach_adds_the_built_sinks(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = Collecting()
    monkeypatch.setattr(outputs, "build_sinks", lambda o: [sink])
    recorder = attach(Recorder(None, "http"), Outputs())
    assert recorder.sinks == [sink]
    assert attach(Recorder(None, "http"), None).sinks == []


def test_the_http_relay_feeds_the_built_sinks(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = Collecting()
    monkeypatch.setattr(outputs, "build_sinks", lambda o: [sink])

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
