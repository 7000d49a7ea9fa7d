"""Two lanes (mcpsniff/capture/lanes.py): the same observations make the same trace lines.

Every test forks real analysis processes (the recording lane, which forks the
derived lane) and feeds them through the relay's channel, as ``mcpsniff
stdio`` does; the one-lane run of the same observations, with fixed times, is
the reference. A two-lane trace must hold the very same input lines in the
same order, and the very same derived lines in the same order, placed by
``lane`` records as docs/trace-format.md says.
"""

from __future__ import annotations

import mmap
import os
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.capture import lanes as lanes_module
from mcpsniff.capture.lanes import DEFAULT_LANES, DerivedLane, lanes_for, reopen
from mcpsniff.capture.sinks import Outputs
from mcpsniff.capture.worker import fork_analysis
from mcpsniff.core.model import C2S, S2C
from mcpsniff.core.observations import ChildExited, Stderr, StdioStart, StreamData
from mcpsniff.core.session import classification
from mcpsniff.core.stdio_adapter import StdioAdapter
from mcpsniff.trace.paths import open_trace_file
from mcpsniff.trace.writer import TraceWriter

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n'
)
INIT_RESULT = (
    b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":'
    b'{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n'
)
CALL = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t","arguments":'
    b'{"api_key":"' + SECRET.encode() + b'"}}}\n'
)
RESULT = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}\n'
#: A frame the test's rule raises on (an analyzer-error in the full analysis).
BOOM = b'{"jsonrpc":"2.0","id":"boom","method":"ping"}\n'


def observations() -> list[Any]:
    """A session with hostile frames, at fixed times; ``CaptureEnd`` is the channel's ``end``."""
    huge = b'{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"pad":"%s"}}\n' % (
        b"y" * (3 << 20)
    )
    out: list[Any] = [
        StdioStart(1.0, ["server"], 42),
        StreamData(C2S, 1.1, INIT),
        StreamData(S2C, 1.2, INIT_RESULT),
        StreamData(C2S, 1.25, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
    ]
    t = 1.3
    for n in range(1, 40):
        out.append(StreamData(C2S, t, CALL % n))
        out.append(StreamData(S2C, t + 0.001, RESULT % n))
        t += 0.01
    out += [
        Stderr(2.0, b"server log: token=" + SECRET.encode() + b"\npartial"),
        StreamData(C2S, 2.1, b"not json {\n"),
        StreamData(S2C, 2.2, b'{"jsonrpc":"2.0","id":5,"result":"\xff\xfe"}\n'),
        StreamData(C2S, 2.3, b'[{"jsonrpc":"2.0","id":70,"method":"ping"},42]\n'),
        StreamData(C2S, 2.4, huge[: 1 << 20]),
        StreamData(C2S, 2.5, huge[1 << 20 :]),
        StreamData(C2S, 2.6, BOOM),
        StreamData(S2C, 2.7, b'{"jsonrpc":"2.0","id":"boom","result":{}}\n'),
        StreamData(C2S, 2.8, b'{"jsonrpc":"2.0","id":77,"method":"ping"}\n'),  # never answered
        StreamData(S2C, 2.9, b'{"jsonrpc":"2.0","method":"notifications/message","params":{}}'),
        ChildExited(3.0, 0, 0, None, []),
    ]
    return out


@pytest.fixture
def raising_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that raises on ``BOOM`` (the forks inherit it)."""
    original = classification.message

    def message(session: Any, obj: Any, frame: Any, index: Any) -> Any:
        if obj.get("id") == "boom" and frame.direction == C2S:
            raise RuntimeError("a rule failed")
        return original(session, obj, frame, index)

    monkeypatch.setattr(classification, "message", message)


def record(trace: Path, lanes: int, *, redact: bool = True, end: float = 4.0) -> int:
    """Record ``observations()`` into ``trace`` (appending if it exists); the exit status."""
    writer = open_trace_file(trace, name="t", meta={"label": "t"}).writer
    analysis = fork_analysis(
        writer,
        "stdio",
        lambda recorder: StdioAdapter(recorder, redact=redact),
        limit=1 << 30,
        redact=redact,
        outputs=Outputs(),
        lanes=lanes,
    )
    for observation in observations():
        analysis.channel.send(observation)
    analysis.channel.end(end)
    analysis.channel.close_blocking()
    status = analysis.wait_blocking(60)
    assert status is not None, "the analysis process did not finish"
    return status


def lines(trace: Path) -> list[dict[str, Any]]:
    """Every line but the headers (their creation times differ run to run), parsed.

    An appended session's key ends in a suffix made of a pid and a time
    (``trace.paths``): it is written ``@S`` here, to compare two files.
    """
    out = []
    for line in trace.read_bytes().splitlines():
        obj = orjson.loads(line)
        if obj["type"] == "header":
            continue
        if "@" in obj.get("session", ""):
            obj["session"] = obj["session"].split("@")[0] + "@S"
        out.append(obj)
    return out


def is_input(obj: dict[str, Any]) -> bool:
    return obj["type"] == "frame" or (obj["type"] == "event" and obj["event"] != "analyzer-error")


def is_lane(obj: dict[str, Any]) -> bool:
    return obj["type"] == "lane"


def expected_derived_stream(one: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A one-lane trace's derived lines, with the ``input`` markers the spec asks for."""
    out: list[dict[str, Any]] = []
    current: int | None = None
    first = False
    for obj in one:
        if is_input(obj):
            current, first = obj["seq"], True
            session = obj["session"]
            continue
        if first:
            first = False
            if not (obj["type"] == "message" and obj["frame"] == current):
                out.append({"type": "lane", "session": session, "input": current})
        out.append(obj)
    return out


def check_lanes(one: list[dict[str, Any]], two: list[dict[str, Any]]) -> None:
    """``two`` is ``one`` in two lanes: the same inputs, the same derived lines, well placed."""
    assert [o for o in two if is_input(o)] == [o for o in one if is_input(o)]
    assert [o for o in two if not is_input(o) and not is_lane(o)] == [
        o for o in one if not is_input(o)
    ]
    sessions = {o["session"] for o in one if is_input(o)}
    (session,) = sessions
    opens = [o for o in two if is_lane(o) and "open" in o]
    assert opens == [{"type": "lane", "session": session, "open": 1}]
    first_input = next(i for i, o in enumerate(two) if is_input(o))
    assert two.index(opens[0]) < first_input
    # The derived lane's output in file order: markers where the spec says, nothing else.
    derived = [o for o in two if not is_input(o) and not ("open" in o or "through" in o)]
    assert derived == expected_derived_stream(one)
    throughs = [o["through"] for o in two if is_lane(o) and "through" in o]
    assert throughs == sorted(throughs) and len(set(throughs)) == len(throughs)
    assert throughs[-1] == max(o["seq"] for o in one if is_input(o))
    # A derived record never comes before its input, and a through never before the inputs.
    seen: set[int] = set()
    for obj in two:
        if is_input(obj):
            seen.add(obj["seq"])
        elif obj["type"] == "message":
            assert obj["frame"] in seen
        elif is_lane(obj) and "through" in obj:
            assert obj["through"] in seen
        elif is_lane(obj) and "input" in obj:
            assert obj["input"] in seen
    assert not [o for o in two if is_lane(o) and "lost" in o]


@pytest.mark.parametrize("redact", [True, False], ids=["redacted", "not-redacted"])
def test_two_lanes_write_the_lines_of_one(tmp_path: Path, raising_rule: None, redact: bool) -> None:
    assert record(tmp_path / "one.jsonl", 1, redact=redact) == 0
    assert record(tmp_path / "two.jsonl", 2, redact=redact) == 0
    one, two = lines(tmp_path / "one.jsonl"), lines(tmp_path / "two.jsonl")
    check_lanes(one, two)
    # What the observations hold, so that the comparison compares something.
    kinds = {(o["type"], o.get("event"), o.get("rule")) for o in one}
    assert ("event", "analyzer-error", None) in kinds
    assert ("event", "stderr", None) in kinds
    assert any(o["type"] == "frame" and "b64" in o for o in one)  # invalid UTF-8
    assert any(o["type"] == "frame" and "text" in o for o in one)  # invalid JSON
    assert any(o["type"] == "frame" and o.get("len", 0) > 3 << 20 for o in one)  # the huge line
    assert any(o["type"] == "message" and o.get("index") == 1 for o in one)  # the batch
    assert (SECRET.encode() in (tmp_path / "two.jsonl").read_bytes()) is not redact
    # The session's end has findings (the unanswered ping): an ``input`` marker.
    end = next(o["seq"] for o in one if o.get("event") == "session-end")
    assert {"type": "lane", "session": "stdio", "input": end} in two


def test_an_appended_session_shifts_the_lane_records_too(
    tmp_path: Path, raising_rule: None
) -> None:
    for name in ("one.jsonl", "two.jsonl"):
        assert record(tmp_path / name, 1) == 0
    assert record(tmp_path / "one.jsonl", 1) == 0
    assert record(tmp_path / "two.jsonl", 2) == 0
    one, two = lines(tmp_path / "one.jsonl"), lines(tmp_path / "two.jsonl")
    # The first sessions are one-lane in both files.
    first = sum(1 for o in one if o.get("session") == "stdio")
    assert two[:first] == one[:first]
    check_lanes(one[first:], two[first:])
    (opened,) = [o for o in two if is_lane(o) and "open" in o]
    assert opened["session"] == "stdio@S"
    offset = max(o["seq"] for o in one[:first] if is_input(o))
    assert min(o["seq"] for o in two[first:] if is_input(o)) == offset + 1
    assert min(o["through"] for o in two if is_lane(o) and "through" in o) > offset


def fork_two_lanes(writer: TraceWriter, start_derived_lane: Any) -> Any:
    """``fork_analysis`` of two lanes whose derived lane ``start_derived_lane`` starts."""
    patch = pytest.MonkeyPatch()
    patch.setattr("mcpsniff.capture.worker.start_derived_lane", start_derived_lane)
    try:
        return fork_analysis(
            writer, "stdio", StdioAdapter, limit=1 << 30, redact=True, outputs=Outputs(), lanes=2
        )
    finally:
        patch.undo()


def test_a_killed_derived_lane_is_lost_and_every_frame_recorded(tmp_path: Path) -> None:
    """SIGKILL the derived lane at once: the inputs are all written, ``lost`` once."""
    trace = tmp_path / "t.jsonl"
    writer = open_trace_file(trace, name="t", meta={}).writer
    start = lanes_module.start_derived_lane

    def start_and_kill(*args: Any, **kwargs: Any) -> Any:
        lane = start(*args, **kwargs)
        os.kill(lane.pid, signal.SIGKILL)  # in the recording lane, before any byte
        return lane

    analysis = fork_two_lanes(writer, start_and_kill)
    sent = b""
    for n in range(1, 2000):
        analysis.channel.send(StreamData(C2S, 1.0 + n / 1e4, CALL % n))
        sent += CALL % n
    analysis.channel.end(3.0)
    analysis.channel.close_blocking()
    assert analysis.wait_blocking(60) == 0
    objs = lines(trace)
    frames = [o for o in objs if o["type"] == "frame"]
    assert len(frames) == 1999
    assert [o for o in objs if is_lane(o) and "lost" in o] == [
        {"type": "lane", "session": "stdio", "lost": 1}
    ]
    assert not [o for o in objs if o["type"] in ("message", "finding")]


def test_two_lanes_only_where_the_trace_is_the_only_output(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl")
    assert DEFAULT_LANES in (1, 2)
    assert lanes_for(2, show=False, sinks=False, writer=writer) == 2
    assert lanes_for(2, show=True, sinks=False, writer=writer) == 1
    assert lanes_for(2, show=False, sinks=True, writer=writer) == 1
    assert lanes_for(1, show=False, sinks=False, writer=writer) == 1
    assert lanes_for(None, show=False, sinks=False, writer=writer) == DEFAULT_LANES
    fd = reopen(writer)
    assert fd is not None and fd > 0
    os.write(fd, b"x\n")  # its own file description, appending
    os.close(fd)
    writer.close()
    assert (tmp_path / "t.jsonl").read_bytes().endswith(b"\nx\n")
    read_fd, write_fd = os.pipe()
    piped = TraceWriter(os.fdopen(write_fd, "wb", buffering=0))
    assert lanes_for(2, show=False, sinks=False, writer=piped) == 1
    piped.close()
    os.close(read_fd)


def test_the_recording_lane_waits_for_nobody_while_the_derived_lane_is_slow(
    tmp_path: Path,
) -> None:
    """A stopped derived lane: the inputs are written anyway, and all comes once it runs."""
    trace = tmp_path / "t.jsonl"
    writer = open_trace_file(trace, name="t", meta={}).writer
    pids: list[int] = []
    start = lanes_module.start_derived_lane

    def start_and_stop(*args: Any, **kwargs: Any) -> Any:
        lane = start(*args, **kwargs)
        os.kill(lane.pid, signal.SIGSTOP)
        os.write(pid_w, b"%d\n" % lane.pid)
        return lane

    pid_r, pid_w = os.pipe()
    try:
        analysis = fork_two_lanes(writer, start_and_stop)
    finally:
        os.close(pid_w)
    derived = int(os.read(pid_r, 64))
    os.close(pid_r)
    pids.append(derived)
    for n in range(1, 3000):
        analysis.channel.send(StreamData(C2S, 1.0, CALL % n))
    analysis.channel.flush()

    def frames() -> int:
        return trace.read_bytes().count(b'"type":"frame"')

    deadline = time.monotonic() + 60
    while frames() < 2999 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert frames() == 2999
    assert b'"type":"message"' not in trace.read_bytes()
    os.kill(derived, signal.SIGCONT)
    analysis.channel.end(3.0)
    analysis.channel.close_blocking()
    assert analysis.wait_blocking(60) == 0
    objs = lines(trace)
    assert len([o for o in objs if o["type"] == "message"]) == 2999
    assert [o["through"] for o in objs if is_lane(o) and "through" in o][-1] == max(
        o["seq"] for o in objs if is_input(o)
    )


def test_the_bytes_held_for_the_derived_lane_are_shared_with_it(tmp_path: Path) -> None:
    # The derived lane reads them (lanes.FAR_BEHIND) to work through a burst with no pause.
    read_end, write_end = os.pipe()
    ready_r, ready_w = os.pipe()
    os.write(ready_w, b"x")  # the channel has input: ``recorded`` returns at once
    done = mmap.mmap(-1, mmap.PAGESIZE)
    with (tmp_path / "t.jsonl").open("wb") as stream:
        lane = DerivedLane(0, write_end, TraceWriter(stream), done, lambda _text: None)
        for _ in range(3):
            lane.hold(b"y" * (1 << 20))
        lane.recorded(ready_r)
        shared = memoryview(done).cast("q")
        assert 2 << 20 < lane.queued == shared[1] < 3 << 20  # the pipe took some
        os.read(read_end, 1 << 16)
        lane.recorded(ready_r)
        assert shared[1] == lane.queued
    for fd in (read_end, ready_r, ready_w):
        os.close(fd)
    lane._close()
