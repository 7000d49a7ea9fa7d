"""The analysis worker: observations from a pipe replayed into a trace, ended either way."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

from mcpsniff.capture.analysis_process import TRACE_INCOMPLETE
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.worker import COLLECT_RARELY, Worker, fork_analysis
from mcpsniff.core.model import C2S, S2C, EventRecord, FrameRecord
from mcpsniff.core.observation_codec import encode_bytes
from mcpsniff.core.observations import CaptureEnd, StreamData
from mcpsniff.core.stdio_adapter import StdioAdapter
from mcpsniff.trace.paths import open_trace_file
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def run_worker(trace: Path, data: bytes, sink: Any = None) -> tuple[int, list[str], list[Any]]:
    """A worker on a pipe holding ``data``; its status, warnings and the trace's records."""
    writer = TraceWriter.create(trace)
    recorder = TraceRecorder(writer, "stdio", autoflush=False)
    if sink is not None:
        recorder.sinks.append(sink)
    adapter = StdioAdapter(recorder)
    warnings: list[str] = []
    worker = Worker(recorder, adapter.apply, lost=adapter.lost, warn=warnings.append)
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    status = worker.run(read_fd)
    os.close(read_fd)
    with TraceReader(trace) as reader:
        return status, warnings, list(reader.records())


def test_capture_end_ends_the_sessions_and_the_trace_is_whole(tmp_path: Path) -> None:
    data = encode_bytes(StreamData(C2S, 1.0, PING)) + encode_bytes(CaptureEnd(2.0))
    status, warnings, records = run_worker(tmp_path / "t.jsonl", data)
    assert (status, warnings) == (0, [])
    assert [r.raw for r in records if isinstance(r, FrameRecord)] == [PING]
    (end,) = [r for r in records if isinstance(r, EventRecord) and r.event == "session-end"]
    assert "unframed_bytes" not in end.data


class ClosingSink:
    closed = 0

    def record(self, record: Any) -> None:
        pass

    def batch_end(self) -> None:
        pass

    def close(self) -> None:
        ClosingSink.closed += 1


def test_a_pipe_that_ends_without_capture_end_means_the_shell_died(tmp_path: Path) -> None:
    data = encode_bytes(StreamData(C2S, 1.0, PING)) + encode_bytes(StreamData(S2C, 1.5, b'{"id'))
    ClosingSink.closed = 0
    status, _, records = run_worker(tmp_path / "t.jsonl", data, sink=ClosingSink())
    assert status == 0
    assert ClosingSink.closed == 1  # an exporter still gets to flush
    (end,) = [r for r in records if isinstance(r, EventRecord) and r.event == "session-end"]
    assert end.data["reason"] == "the relay ended without finishing"
    assert end.data["unframed_bytes"] == {C2S: 0, S2C: 4}


def test_bytes_that_are_no_observations_are_one_warning_not_a_traceback(tmp_path: Path) -> None:
    data = encode_bytes(StreamData(C2S, 1.0, PING)) + bytes([150]) + b"\x00" * 8
    status, warnings, records = run_worker(tmp_path / "t.jsonl", data)
    assert status == 0
    assert len(warnings) == 1 and "internal error while recording" in warnings[0]
    assert [r.raw for r in records if isinstance(r, FrameRecord)] == [PING]


def test_an_adapter_error_is_a_warning_and_recording_goes_on(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl")
    recorder = TraceRecorder(writer, "stdio", autoflush=False)
    adapter = StdioAdapter(recorder)
    seen: list[Any] = []

    def apply(observation: Any) -> None:
        seen.append(observation)
        if len(seen) == 1:
            raise RuntimeError("boom")
        adapter.apply(observation)

    warnings: list[str] = []
    worker = Worker(recorder, apply, warn=warnings.append, label="mcpsniff stdio")
    read_fd, write_fd = os.pipe()
    os.write(write_fd, encode_bytes(StreamData(C2S, 1.0, PING)) + encode_bytes(CaptureEnd(2.0)))
    os.close(write_fd)
    assert worker.run(read_fd) == 0
    os.close(read_fd)
    assert warnings == ["mcpsniff stdio: internal error while recording: RuntimeError('boom')"]
    assert len(seen) == 2


def test_a_trace_that_cannot_be_written_says_so_and_exits_3(tmp_path: Path) -> None:
    full = open("/dev/full", "wb")  # noqa: SIM115 - the writer owns it
    writer = TraceWriter(full, None)
    recorder = TraceRecorder(writer, "stdio", autoflush=False)
    adapter = StdioAdapter(recorder)
    warnings: list[str] = []
    worker = Worker(recorder, adapter.apply, warn=warnings.append)
    read_fd, write_fd = os.pipe()
    os.write(write_fd, encode_bytes(StreamData(C2S, 1.0, PING)) + encode_bytes(CaptureEnd(2.0)))
    os.close(write_fd)
    assert worker.run(read_fd) == TRACE_INCOMPLETE
    os.close(read_fd)
    assert len(warnings) == 1 and "cannot write the trace" in warnings[0]


class CollectorProbe:
    """An adapter that records the analysis process's collector settings as an event."""

    def __init__(self, recorder: TraceRecorder) -> None:
        self.recorder = recorder

    def apply(self, observation: Any) -> None:
        data = {"threshold": list(gc.get_threshold()), "frozen": gc.get_freeze_count()}
        self.recorder.event("stdio", "collector", observation.t, data)
        if isinstance(observation, CaptureEnd):
            self.recorder.close(observation.t)


def test_a_forked_analysis_process_collects_cycles_rarely(tmp_path: Path) -> None:
    """Its collector skips what the fork inherited, and runs every 100,000 allocations."""
    trace = tmp_path / "t.jsonl"
    writer = open_trace_file(trace, name="test", meta={}).writer
    # This process's own setting, known: an earlier in-process `check` in the same
    # test run may have left the collector at COLLECT_RARELY.
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        analysis = fork_analysis(
            writer, "stdio", CollectorProbe, limit=1 << 20, redact=True, outputs=Outputs()
        )
        analysis.channel.send(StreamData(C2S, 1.0, PING))
        analysis.channel.end(2.0)
        analysis.channel.close_blocking()
        assert analysis.wait_blocking(10) == 0
        assert gc.get_threshold() == (700, 10, 10)  # this process is untouched
    finally:
        gc.set_threshold(*before)
    with TraceReader(trace) as reader:
        events = [r for r in reader.records() if isinstance(r, EventRecord)]
    probes = [e.data for e in events if e.event == "collector"]
    assert len(probes) == 2
    assert all(p["threshold"] == list(COLLECT_RARELY) for p in probes)
    assert all(p["frozen"] > 1000 for p in probes)  # the modules the fork inherited
