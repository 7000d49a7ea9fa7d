"""TraceWriter: the file (mode 0600, never clobbered), hostile values, batched writes,
and ``hand_over``.

``hand_over``: a relay lets go of the trace its forked analysis process writes.

An ``flock`` belongs to the open file description, which a fork shares: the
lock of a fork killed while it held it lasts as long as any process keeps
that description open. These tests fork real processes and take real locks.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.core.session import Session
from mcpsniff.trace.codec import FORMAT_NAME, FORMAT_VERSION, encode_line
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
from tests.trace.support import normalized, read_records, sample_records, trace_lines, write_trace

# --------------------------------------------------------------------------- the file


def test_trace_is_created_with_mode_0600(tmp_path: Path, umask_022: None) -> None:
    path = write_trace(tmp_path / "t.jsonl", sample_records())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_existing_file_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "precious.txt"
    path.write_bytes(b"my notes\n")
    with pytest.raises(FileExistsError):
        TraceWriter.create(path)
    assert path.read_bytes() == b"my notes\n"


def test_overwrite_replaces_the_file_and_makes_it_private(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"old content that is much longer than nothing\n" * 100)
    path.chmod(0o644)
    write_trace(path, sample_records()[:2], overwrite=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"old content" not in path.read_bytes()
    assert read_records(path) == sample_records()[:2]


def test_header_is_line_one(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path / "t.jsonl", sample_records(), meta={"command": ["srv"]}, created=1700000000.0
    )
    lines = trace_lines(path)
    head = orjson.loads(lines[0])
    assert lines[0].startswith(b'{"type":"header"')
    assert head["format"] == FORMAT_NAME == "mcpsniff-trace"
    assert head["version"] == FORMAT_VERSION == 2
    assert head["tool"].startswith("mcpsniff/")
    assert head["created"] == 1700000000.0
    assert head["meta"] == {"command": ["srv"]}
    with TraceReader(path) as reader:
        assert reader.header == head


def test_header_without_meta_or_created(tmp_path: Path) -> None:
    head = orjson.loads(trace_lines(write_trace(tmp_path / "t.jsonl", []))[0])
    assert head["meta"] == {}
    assert "created" not in head
    assert read_records(tmp_path / "t.jsonl") == []


def test_every_record_line_starts_with_type_and_ends_with_newline(tmp_path: Path) -> None:
    records = sample_records()
    lines = trace_lines(write_trace(tmp_path / "t.jsonl", records))
    assert len(lines) == 1 + len(records)
    for line, record in zip(lines[1:], records, strict=True):
        assert line.startswith(b'{"type":')
        assert line.endswith(b"\n")
        assert line.count(b"\n") == 1
        assert line == encode_line(record)
        assert next(iter(orjson.loads(line))) == "type"


def test_hostile_values_do_not_stop_the_writer(tmp_path: Path) -> None:
    # Ids orjson cannot write (beyond 64 bits, a lone surrogate, nesting deeper than 255)
    # or reads back inexactly (beyond 64 bits) reach message and finding records; the
    # trace must still be written, and read back exactly.
    deep = b"[" * 300 + b"0" + b"]" * 300
    frames = [
        b'{"jsonrpc":"2.0","id":1' + b"0" * 400 + b',"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":' + deep + b',"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}\n',
    ]
    session = Session("s", "stdio")
    live: list[Record] = []
    for i, raw in enumerate(frames):
        live.extend(session.feed("c2s", "stdio", raw, float(i)))
    live.extend(session.close(10.0))
    path = write_trace(tmp_path / "t.jsonl", live)
    stored = read_records(path)
    assert stored == [normalized(r) for r in live]
    ids = [m.id for m in stored if isinstance(m, MessageRecord)]
    assert ids[0] == 10**400
    assert ids[1] == "\ud800"
    assert json.dumps(ids[2]) == deep.decode()
    assert ids[3:] == [123456789012345678901234567890, -(2**63) - 1]
    assert [type(i) for i in ids[3:]] == [int, int]
    with TraceReader(path) as reader:
        replayed = [normalized(r) for r in replay(reader.inputs())]
    assert replayed == stored


def test_non_finite_floats_are_written_as_null(tmp_path: Path) -> None:
    # NaN is not JSON; a derived record that carries one (next to a value that
    # forces the stdlib encoder) must still produce a valid line.
    finding = FindingRecord(
        "X", "info", "m", "s", [1], {"big": 10**30, "nan": float("nan"), "inf": float("inf")}
    )
    line = encode_line(finding)
    assert line.endswith(b"\n") and line.startswith(b'{"type":"finding"')
    assert json.loads(line, parse_constant=lambda name: pytest.fail(name))["data"] == {
        "big": 10**30,
        "nan": None,
        "inf": None,
    }


class _Writes:
    """A binary stream that keeps each ``write`` apart (to compare where writers flush)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: Any) -> int:
        self.writes.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_write_all_writes_and_flushes_exactly_like_write_per_record() -> None:
    """Batches of any size and payload: the same lines, cut into the same writes."""
    import random

    rng = random.Random(14)
    batches: list[list[Any]] = []
    seq = 0
    for _ in range(400):
        batch: list[Any] = []
        for _ in range(rng.choice([1, 2, 4, 8, 9, 30])):
            seq += 1
            size = rng.choice([10, 1000, 20_000, 70_000])
            raw = b'{"a":"' + b"x" * size + b'"}\n'
            kind = rng.random()
            if kind < 0.5:
                batch.append(FrameRecord(seq, 1.5, "s", "c2s", "stdio", raw, None, {}))
            elif kind < 0.8:
                batch.append(MessageRecord(seq - 1, "s", "c2s", "request", None, seq, True, "m"))
            else:
                batch.append(EventRecord(seq, 1.5, "s", "stderr", {"line": "x" * size}))
        batches.append(batch)
    one, each = _Writes(), _Writes()
    by_batch, by_record = TraceWriter(one), TraceWriter(each)  # type: ignore[arg-type]
    for batch in batches:
        by_batch.write_all(batch)
        for record in batch:
            by_record.write(record)
        if rng.random() < 0.1:
            by_batch.flush()
            by_record.flush()
    by_batch.close()
    by_record.close()
    assert one.writes == each.writes and len(one.writes) > 100
    assert by_batch.records_written == by_record.records_written == seq


# --------------------------------------------------------------------------- hand_over


def _event(seq: int) -> EventRecord:
    return EventRecord(seq, 1.0 + seq, "stdio", "note", {"n": seq})


def _locked_elsewhere(path: Path) -> bool:
    """Whether another open file description holds an ``flock`` on ``path``."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _fork(child: object) -> int:
    """Fork; the child runs ``child()`` and exits 0 (70 should it raise). Its wait status."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        status = 70
        try:
            child()  # type: ignore[operator]
            status = 0
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return status


def test_the_lock_of_a_fork_killed_holding_it_goes_once_the_parent_hands_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})

    def lock_and_die() -> None:
        fcntl.flock(writer._stream.fileno(), fcntl.LOCK_EX)
        os.kill(os.getpid(), signal.SIGKILL)

    status = _fork(lock_and_die)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    # The dead fork's lock lives on with the description the parent still has open...
    assert _locked_elsewhere(path)
    writer.hand_over()
    # ...and goes with it.
    assert not _locked_elsewhere(path)


def test_what_is_buffered_is_the_forks_to_write_and_written_once(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.write(_event(1))  # buffered in both processes after the fork

    def finish() -> None:
        writer.write(_event(2))
        writer.close()

    assert _fork(finish) == 0
    writer.hand_over()
    # Later writes here go nowhere: the file is the fork's.
    writer.write(_event(3))
    writer.flush()
    writer.close()
    with TraceReader(path) as reader:
        assert [r.seq for r in reader.records()] == [1, 2]
    assert writer.failed is not None and writer.failed.errno == errno.EBADF


def test_hand_over_closes_this_process_copy(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl", meta={"source": "test"})
    fd = writer._stream.fileno()
    writer.hand_over()
    with pytest.raises(OSError) as caught:
        os.fstat(fd)
    assert caught.value.errno == errno.EBADF


# ---------------------------------------------------------------------- lanes (capture/lanes.py)


def _appending(kind: Any, path: Path, **shift: Any) -> Any:
    """A ``kind`` writer (``TraceWriter``, ``DerivedWriter``) appending to ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return kind.from_fd(fd, path, **shift)


def _lane_lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_a_recording_lane_writer_opens_each_session_once_and_loses_them_once(
    tmp_path: Path,
) -> None:
    from mcpsniff.trace.writer import lane_line

    path = tmp_path / "t.jsonl"
    writer = _appending(TraceWriter, path, session_suffix="@x", seq_offset=10)
    writer.open_lanes()
    a = FrameRecord(1, 1.0, "a", "c2s", "stdio", b'{"id":1}\n')
    b = EventRecord(2, 1.0, "b", "stderr", {"line": "x"})
    writer.write_all([a, b])
    writer.write(FrameRecord(3, 1.0, "a", "s2c", "stdio", b'{"id":1}\n'))
    writer.write_lost()
    writer.write_lost()
    writer.close()
    objs = _lane_lines(path)
    assert [
        (o["type"], o["session"], o.get("seq"), o.get("open"), o.get("lost")) for o in objs
    ] == [
        ("lane", "a@x", None, 1, None),
        ("frame", "a@x", 11, None, None),
        ("lane", "b@x", None, 1, None),
        ("event", "b@x", 12, None, None),
        ("frame", "a@x", 13, None, None),
        ("lane", "a@x", None, None, 1),
        ("lane", "b@x", None, None, 1),
    ]
    assert lane_line("s", "through", 5) == b'{"type":"lane","session":"s","through":5}\n'


def test_a_one_lane_writer_writes_no_lane_record(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    writer.write_all([FrameRecord(1, 1.0, "a", "c2s", "stdio", b'{"id":1}\n')])
    writer.write_lost()
    writer.close()
    assert b'"lane"' not in path.read_bytes()


def test_the_derived_writer_writes_derived_records_markers_and_throughs(tmp_path: Path) -> None:
    from mcpsniff.trace.writer import DerivedWriter

    path = tmp_path / "t.jsonl"
    writer = _appending(DerivedWriter, path)
    frame = FrameRecord(1, 1.0, "s", "c2s", "stdio", b'{"id":1}\n')
    message = MessageRecord(1, "s", "c2s", "request")
    finding = FindingRecord("R", "error", "seq 1", "s", [1], {})
    end = EventRecord(2, 2.0, "s", "session-end", {})
    error = EventRecord(3, 2.0, "s", "analyzer-error", {"error": "x"})
    bad = FrameRecord(3, 2.0, "s", "c2s", "stdio", b"x\n")
    writer.write_all([frame, message, finding, end, finding])
    writer.flush()
    writer.write_all([bad, error])
    writer.flush()
    writer.flush()  # nothing new: no second through
    writer.close()
    objs = _lane_lines(path)
    assert [o["type"] for o in objs] == [
        "message",
        "finding",
        "lane",  # input 2: a finding after the session's end
        "finding",
        "lane",  # through 2
        "lane",  # input 3: an analyzer-error first
        "event",
        "lane",  # through 3
    ]
    assert objs[2] == {"type": "lane", "session": "s", "input": 2}
    assert objs[4] == {"type": "lane", "session": "s", "through": 2}
    assert objs[5] == {"type": "lane", "session": "s", "input": 3}
    assert objs[7] == {"type": "lane", "session": "s", "through": 3}


def test_the_derived_writer_writes_big_outputs_in_pieces_through_what_is_complete(
    tmp_path: Path,
) -> None:
    from mcpsniff.trace.writer import DerivedWriter

    path = tmp_path / "t.jsonl"
    writer = _appending(DerivedWriter, path, session_suffix="@x", seq_offset=100)
    records: list[Record] = []
    for seq in range(1, 11):
        records.append(FrameRecord(seq, 1.0, "s", "c2s", "stdio", b"{}\n"))
        records.append(FindingRecord("R", "error", "x" * 20_000, "s", [seq], {}))
    writer.write_all(records)
    # Written in pieces already (past 64 KiB, at an input's start), each through
    # the inputs whose derived records were all in it.
    partial = [o["through"] for o in _lane_lines(path) if o["type"] == "lane" and "through" in o]
    assert partial and all(101 <= t < 110 for t in partial)
    writer.close()
    objs = _lane_lines(path)
    throughs = [o["through"] for o in objs if o["type"] == "lane" and "through" in o]
    assert throughs == sorted(set(throughs)) and throughs[-1] == 110
    markers = [o["input"] for o in objs if o["type"] == "lane" and "input" in o]
    assert markers == list(range(101, 111))
    assert [o["seq"] for o in objs if o["type"] == "finding"] == [[s] for s in range(101, 111)]
    assert {o["session"] for o in objs} == {"s@x"}


def test_write_lines_appends_whole_lines_and_writes_a_full_buffer_first(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl")
    writer.open_lanes()
    assert not writer.takes_lines("stdio")  # its lane's open record is not written yet
    writer.write(FrameRecord(1, 1.0, "stdio", "c2s", "stdio", b"x\n"))
    assert writer.takes_lines("stdio")
    before = (tmp_path / "t.jsonl").stat().st_size
    big = [b"y" * (1 << 15) + b"%d\n" % i for i in range(2)]
    writer.write_lines(big, 2)
    assert (tmp_path / "t.jsonl").stat().st_size == before  # buffered: below 64 KiB before
    writer.write_lines([b"z", b"\n"], 1)  # the buffer held 64 KiB: written before these
    assert (tmp_path / "t.jsonl").stat().st_size > before + (1 << 16)
    writer.close()
    assert writer.records_written == 4
    assert (tmp_path / "t.jsonl").read_bytes().endswith(big[1] + b"z\n")
    appended = TraceWriter(open(tmp_path / "t.jsonl", "ab"), seq_offset=3)  # noqa: SIM115
    assert not appended.takes_lines("stdio")
    appended.close()
