"""The recorder: bytes and events in, records to the writer, listeners, batch hooks and sinks."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.core.model import C2S, S2C, EventRecord, FindingRecord, FrameRecord
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

INIT = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'


def test_records_reach_the_trace_listeners_and_batch_hooks_in_order(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl")
    recorder = TraceRecorder(writer, "stdio")
    seen: list[Any] = []
    batches: list[int] = []
    recorder.listeners.append(seen.append)
    recorder.batch_listeners.append(lambda: batches.append(len(seen)))
    recorder.event("stdio", "session-start", 1.0, {"pid": 1})
    recorder.feed("stdio", C2S, INIT[:10], 2.0)  # no whole line yet: no frame
    recorder.feed("stdio", C2S, INIT[10:], 2.5)
    recorder.eof("stdio", S2C, 3.0)
    recorder.close(4.0)
    writer.close()
    frames = [r for r in seen if isinstance(r, FrameRecord)]
    assert [f.raw for f in frames] == [INIT]
    assert len(batches) == 5 and batches == sorted(batches)
    # tools/list before initialize, and never answered: findings, counted.
    assert recorder.findings == len([r for r in seen if isinstance(r, FindingRecord)]) > 0
    with TraceReader(tmp_path / "t.jsonl") as reader:
        assert [type(r) for r in reader.records()] == [type(r) for r in seen]


def test_feed_frame_takes_a_whole_frame_and_its_meta() -> None:
    recorder = TraceRecorder(None, "http", redact=False)
    records = recorder.feed_frame("s", C2S, INIT.rstrip(b"\n"), 1.0, meta={"exchange": 3})
    (frame,) = [r for r in records if isinstance(r, FrameRecord)]
    assert frame.meta == {"exchange": 3} and frame.transport == "http"


def test_close_ends_every_session_once_and_closes_the_sinks() -> None:
    class Sink:
        def __init__(self) -> None:
            self.records: list[Any] = []
            self.batches = 0
            self.closed = 0

        def record(self, record: Any) -> None:
            self.records.append(record)

        def batch_end(self) -> None:
            self.batches += 1

        def close(self) -> None:
            self.closed += 1

    recorder = TraceRecorder(None, "stdio")
    sink = Sink()
    recorder.sinks.append(sink)
    recorder.event("a", "session-start", 1.0)
    recorder.event("b", "session-start", 1.0)
    recorder.close(2.0)
    ends = [r for r in sink.records if isinstance(r, EventRecord) and r.event == "session-end"]
    assert sorted(r.session for r in ends) == ["a", "b"]
    assert sink.closed == 1 and sink.batches == 3


def test_a_session_dropped_at_the_cap_is_written_to_the_trace_and_check_agrees(
    tmp_path: Path,
) -> None:
    # A long-running HTTP relay whose clients never DELETE their sessions: state
    # for at most max_sessions of them (core/analyzer.py MAX_SESSIONS).
    from mcpsniff.core.analyzer import STATE_DROPPED, replay

    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    recorder = TraceRecorder(writer, "http", redact=False)
    recorder.analyzer.max_sessions = 3
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}'
    reply = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
    live: list[Any] = []
    for i in range(5):
        live += recorder.feed_frame(f"s{i}", C2S, call, 1.0 + i)
    after = recorder.feed_frame("s0", S2C, reply, 9.0)  # s0's state was dropped
    live += after
    assert len(recorder.analyzer.sessions) == 3
    drops = [r for r in live if isinstance(r, EventRecord) and r.event == STATE_DROPPED]
    assert [d.session for d in drops] == ["s0", "s1", "s2"]
    # Each drop is written before the frame that caused it, in seq order.
    seqs = [r.seq for r in live if isinstance(r, EventRecord | FrameRecord)]
    assert seqs == sorted(seqs)
    # The reply to s0's forgotten call is no unknown id (its call before any
    # initialize was reported, LC-INIT-FIRST, when it came).
    assert [r for r in after if isinstance(r, FindingRecord)] == []
    writer.close()
    with TraceReader(path) as reader:
        written = [r for r in reader.records() if isinstance(r, EventRecord)]
    assert [r.session for r in written if r.event == STATE_DROPPED] == ["s0", "s1", "s2"]
    with TraceReader(path) as reader:
        checked = list(replay(reader.inputs()))
    # check gives the live verdicts on s0: the one finding about its first frame.
    on_s0 = [(r.rule, r.seq) for r in checked if isinstance(r, FindingRecord) and r.session == "s0"]
    assert on_s0 == [
        (r.rule, r.seq) for r in live if isinstance(r, FindingRecord) and r.session == "s0"
    ]
    assert [r.rule for r in checked if isinstance(r, FindingRecord) and r.session == "s0"] == [
        "LC-INIT-FIRST"
    ]


def test_a_display_sees_records_batch_ends_and_the_sessions_end_once_attached() -> None:
    seen: list[Any] = []
    marks: list[str] = []
    recorder = TraceRecorder(None, "stdio")
    assert recorder.attach_display(None) is recorder  # nothing to show: nothing attached
    assert (recorder.listeners, recorder.batch_listeners, recorder.close_listeners) == ([], [], [])
    recorder.attach_display(seen.append, lambda: marks.append("batch"), lambda: marks.append("end"))
    recorder.event("stdio", "session-start", 1.0)
    recorder.close(2.0)
    assert [r.event for r in seen if isinstance(r, EventRecord)] == [
        "session-start",
        "session-end",
    ]
    assert marks[-1] == "end" and marks.count("end") == 1 and "batch" in marks


#: Reads of a stdio stream for the recording lane: usual frames, and each kind
#: the direct lines leave to the session (a secret, CR, not JSON, bad UTF-8, a
#: blank line, a hint cut by a line break, a huge integer).
LANE_STREAM = b"".join(
    [
        INIT,
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}\n',
        b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"api_key":"' + b"k" * 40 + b'"}}\n',
        b'{"jsonrpc":"2.0","id":4,"method":"ping"}\r\n',
        b"not json\n",
        b'\xff{"bad":"\xc3\x28"}\n',
        b"\n",
        b'{"a":"tok"}\n{"b":"en"}\n',
        b'{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}\n',
        b'  [{"jsonrpc":"2.0","method":"n"}]  \n',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"password":"hunter2"}}\n',
        INIT,
        b'{"cut":',
    ]
)


def _lane_trace(path: Path, cuts: list[int], *, redact: bool, records_path: bool) -> list[Any]:
    """The recording lane's trace of ``LANE_STREAM`` read in pieces ending at ``cuts``."""
    writer = TraceWriter.create(path, created=1.0)
    writer.open_lanes()
    recorder = TraceRecorder(writer, "stdio", redact=redact, autoflush=False, frames_only=True)
    returned: list[Any] = []
    if records_path:
        recorder.listeners.append(lambda record: None)  # the records' way to the writer
    recorder.event("stdio", "session-start", 0.5, {"pid": 1})
    start = 0
    for i, end in enumerate([*cuts, len(LANE_STREAM)]):
        returned += recorder.feed("stdio", C2S, LANE_STREAM[start:end], 1.0 + i)
        start = end
    recorder.close(9.0)
    writer.close()
    return returned


@pytest.mark.parametrize("redact", [True, False], ids=["redacted", "not-redacted"])
def test_the_recording_lane_writes_the_lines_of_its_records(tmp_path: Path, redact: bool) -> None:
    rng = random.Random(30)
    # A read that starts after a secret's name: that line's hint came in an earlier read.
    after_names = sorted(LANE_STREAM.index(s) for s in (b"hunter2", b"kkkk", b'en"}'))
    cutting = [[], [len(LANE_STREAM) // 2], after_names]
    cutting += [sorted(rng.sample(range(1, len(LANE_STREAM)), k)) for k in (3, 9, 40)]
    for n, cuts in enumerate(cutting):
        direct, made = tmp_path / f"direct-{n}.jsonl", tmp_path / f"records-{n}.jsonl"
        assert _lane_trace(direct, cuts, redact=redact, records_path=False) == []
        assert _lane_trace(made, cuts, redact=redact, records_path=True) != []
        assert direct.read_bytes() == made.read_bytes()
    lines = made.read_bytes().splitlines()
    frames = [line for line in lines if line.startswith(b'{"type":"frame"')]
    assert len(frames) == 14  # every line, the unterminated one too (at the end)
    assert any(b'"json":' in f for f in frames) and any(b'"text":' in f for f in frames)
    assert any(b'"b64":' in f for f in frames)
    assert (b"hunter2" in made.read_bytes()) is not redact


def test_an_appended_recording_lane_takes_the_records_way(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    TraceWriter.create(path).close()
    writer = TraceWriter(open(path, "ab"), path, session_suffix="#2", seq_offset=10)  # noqa: SIM115
    recorder = TraceRecorder(writer, "stdio", autoflush=False, frames_only=True)
    records = recorder.feed("stdio", C2S, INIT, 1.0)
    writer.close()
    assert [r.seq for r in records] == [1]
    assert b'"seq":11,' in path.read_bytes() and b'"session":"stdio#2"' in path.read_bytes()
