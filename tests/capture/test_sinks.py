"""The recorder hands every record to its sinks, marks batches, and closes them."""

from __future__ import annotations

from mcpsniff.capture.recorder import Recorder
from mcpsniff.capture.sinks import Sink
from mcpsniff.core.model import FrameRecord, Record


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
    recorder = Recorder(None)
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
