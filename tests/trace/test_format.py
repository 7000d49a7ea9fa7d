"""The JSONL trace format: round trips, file safety, torn lines, tailing, replay.

The trace is the one source of truth ``mcpsniff check`` works from (docs/architecture.md,
invariant 4), so these tests pin down that every record survives a round
trip, that raw bytes come back byte for byte, that a crash can cost at most
the last line, and that replaying the stored frames and events reproduces the
findings the live session wrote.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.core.analyzer import replay
from mcpsniff.core.model import C2S, EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.core.session import Session
from mcpsniff.trace.format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    TraceError,
    TraceReader,
    TraceTail,
    TraceWriter,
    encode_line,
    encode_record,
    header,
)

# --------------------------------------------------------------------------- helpers


def _normalized(record: Record) -> Record:
    """``record`` as a trace stores it: ``MessageRecord.size`` is not written."""
    if isinstance(record, MessageRecord):
        return dataclasses.replace(record, size=None)
    return record


def _write(path: Path, records: list[Record], **kwargs: Any) -> Path:
    writer = TraceWriter.create(path, **kwargs)
    writer.write_all(records)
    writer.close()
    return path


def _read(path: Path) -> list[Record]:
    with TraceReader(path) as reader:
        return list(reader.records())


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.fixture
def umask_022() -> Iterator[None]:
    """A predictable umask, so that file modes do not depend on the environment."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def sample_records() -> list[Record]:
    """One of every record type, with every optional field exercised somewhere."""
    return [
        EventRecord(1, 1700000000.0, "s1", "session-start", {"argv": ["srv", "--x"], "pid": 7}),
        FrameRecord(2, 1700000000.25, "s1", "c2s", "stdio", b'{"jsonrpc":"2.0","id":1}\n'),
        FrameRecord(3, 1700000000.5, "s1", "s2c", "stdio", b"\xff\xfebinary\r\n"),
        FrameRecord(
            4, 1700000001.0, "h1", "s2c", "sse", b'{"a":"\xc3\xa9"}', meta={"event_id": "42"}
        ),
        MessageRecord(2, "s1", "c2s", "request", id=1, has_id=True, method="ping", size=25),
        MessageRecord(
            2,
            "s1",
            "c2s",
            "request",
            index=0,
            id="t",
            has_id=True,
            method="tools/call",
            target="echo",
        ),
        MessageRecord(
            3,
            "s1",
            "s2c",
            "response",
            index=2,
            id="abc",
            has_id=True,
            answers=2,
            request_index=1,
            latency_ms=12.5,
            note="id-type-mismatch",
            size=12,
        ),
        MessageRecord(4, "s1", "s2c", "error", id=None, has_id=True, error_code=-32600),
        MessageRecord(4, "s1", "c2s", "notification", method="notifications/initialized"),
        MessageRecord(4, "s1", "s2c", "response", id=9, has_id=True, answers=2, note="orphan"),
        MessageRecord(3, "s1", "s2c", "unparseable", size=11),
        FindingRecord(
            "JR-RESP-ID",
            "error",
            'server answered request id 1 with id "1"',
            "s1",
            [2, 3],
            {"cause": "id-type", "request_id": 1, "response_id": "1", "nested": {"a": [1, None]}},
        ),
        FindingRecord("JR-PARSE", "info", "empty line", "s1", [3]),
        EventRecord(5, 1700000002.0, "s1", "stderr", {"line": "Loading model... ✓"}),
        EventRecord(6, 1700000003.0, "s1", "exit", {"code": 0}),
        EventRecord(7, 1700000003.0, "s1", "session-end"),
    ]


# --------------------------------------------------------------------------- round trip


def test_every_record_type_round_trips(tmp_path: Path) -> None:
    records = sample_records()
    path = _write(tmp_path / "t.jsonl", records)
    back = _read(path)
    assert back == [_normalized(r) for r in records]
    assert [type(r) for r in back] == [type(r) for r in records]


def test_message_record_stores_exactly_its_set_fields() -> None:
    full = MessageRecord(
        7,
        "s",
        "s2c",
        "error",
        index=0,
        id="x",
        has_id=True,
        method=None,
        answers=3,
        request_index=1,
        latency_ms=2.5,
        note="duplicate-response",
        size=99,
        error_code=-32601,
        target="notes://today",
    )
    assert encode_record(full) == {
        "type": "message",
        "frame": 7,
        "session": "s",
        "dir": "s2c",
        "kind": "error",
        "index": 0,
        "id": "x",
        "answers": 3,
        "request_index": 1,
        "latency_ms": 2.5,
        "error_code": -32601,
        "target": "notes://today",
        "note": "duplicate-response",
    }
    bare = MessageRecord(7, "s", "c2s", "notification", method="x", size=10)
    assert encode_record(bare) == {
        "type": "message",
        "frame": 7,
        "session": "s",
        "dir": "c2s",
        "kind": "notification",
        "method": "x",
    }


def test_null_id_and_absent_id_stay_distinct(tmp_path: Path) -> None:
    records: list[Record] = [
        MessageRecord(1, "s", "c2s", "request", id=None, has_id=True, method="ping"),
        MessageRecord(2, "s", "c2s", "notification", method="ping"),
    ]
    back = _read(_write(tmp_path / "t.jsonl", records))
    assert [(m.id, m.has_id) for m in back if isinstance(m, MessageRecord)] == [
        (None, True),
        (None, False),
    ]
    assert b'"id":null' in _lines(tmp_path / "t.jsonl")[1]
    assert b'"id"' not in _lines(tmp_path / "t.jsonl")[2]


def test_records_written_counts_records_not_the_header(tmp_path: Path) -> None:
    writer = TraceWriter.create(tmp_path / "t.jsonl")
    writer.write_all(sample_records())
    writer.close()
    assert writer.records_written == len(sample_records())
    assert writer.failed is None
    assert writer.path == tmp_path / "t.jsonl"


# --------------------------------------------------------------------------- raw bytes


def _frame(raw: bytes) -> FrameRecord:
    return FrameRecord(1, 1.5, "s", "s2c", "stdio", raw)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        (b'{"jsonrpc":"2.0","method":"x"}\n', "text"),
        (b'{"a":1}\r\n', "text"),
        ("caf\u00e9 \u2713 \U0001f600\n".encode(), "text"),
        (b"", "text"),
        (b"\x00\x01\x7f", "text"),
        (b"\xff\n", "b64"),
        (b"\xc3", "b64"),  # truncated two-byte sequence
        (b"\xed\xa0\x80", "b64"),  # an encoded surrogate is not UTF-8
        (b"\xef\xbb\xbf{}\n", "text"),  # a BOM is valid UTF-8 and must survive
    ],
)
def test_frame_storage_form(tmp_path: Path, raw: bytes, key: str) -> None:
    stored = encode_record(_frame(raw))
    assert key in stored
    assert ({"text", "b64"} - {key}).isdisjoint(stored)
    if key == "b64":
        assert base64.b64decode(stored["b64"]) == raw
    else:
        assert stored["text"] == raw.decode("utf-8")
    (back,) = _read(_write(tmp_path / "t.jsonl", [_frame(raw)]))
    assert isinstance(back, FrameRecord)
    assert back.raw == raw


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=300))
def test_arbitrary_bytes_come_back_byte_exact(raw: bytes) -> None:
    try:
        raw.decode("utf-8")
        expected_key = "text"
    except UnicodeDecodeError:
        expected_key = "b64"
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "t.jsonl", [_frame(raw)])
        stored = orjson.loads(_lines(path)[1])
        (back,) = _read(path)
    assert expected_key in stored
    assert back == _frame(raw)


@settings(max_examples=100, deadline=None)
@given(chunks=st.lists(st.binary(max_size=40), max_size=8))
def test_stdio_frames_concatenate_back_to_the_stream(chunks: list[bytes]) -> None:
    stream = b"".join(chunks)
    session = Session("s", "stdio")
    records: list[Record] = []
    for i, chunk in enumerate(chunks):
        records.extend(session.feed("s2c", "stdio", chunk, float(i)))
    records.extend(session.close(99.0))
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "t.jsonl", records)
        with TraceReader(path) as reader:
            frames = [r for r in reader.inputs() if isinstance(r, FrameRecord)]
    assert b"".join(f.raw for f in frames) == stream


# --------------------------------------------------------------------------- the file


def test_trace_is_created_with_mode_0600(tmp_path: Path, umask_022: None) -> None:
    path = _write(tmp_path / "t.jsonl", sample_records())
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
    _write(path, sample_records()[:2], overwrite=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert b"old content" not in path.read_bytes()
    assert _read(path) == sample_records()[:2]


def test_header_is_line_one(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl", sample_records(), meta={"command": ["srv"]}, created=1700000000.0
    )
    lines = _lines(path)
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
    head = orjson.loads(_lines(_write(tmp_path / "t.jsonl", []))[0])
    assert head["meta"] == {}
    assert "created" not in head
    assert _read(tmp_path / "t.jsonl") == []


def test_every_record_line_starts_with_type_and_ends_with_newline(tmp_path: Path) -> None:
    records = sample_records()
    lines = _lines(_write(tmp_path / "t.jsonl", records))
    assert len(lines) == 1 + len(records)
    for line, record in zip(lines[1:], records, strict=True):
        assert line.startswith(b'{"type":')
        assert line.endswith(b"\n")
        assert line.count(b"\n") == 1
        assert line == encode_line(record)
        assert next(iter(orjson.loads(line))) == "type"


# --------------------------------------------------------------------------- torn and bad files


def test_torn_last_line_is_skipped_and_described(tmp_path: Path) -> None:
    records = sample_records()
    path = _write(tmp_path / "t.jsonl", records)
    extra = encode_line(FindingRecord("JR-PARSE", "error", "x" * 40, "s1", [3]))
    half = extra[: len(extra) // 2]
    with open(path, "ab") as f:
        f.write(half)
    with TraceReader(path) as reader:
        assert list(reader.records()) == [_normalized(r) for r in records]
        assert reader.torn is not None
        assert reader.torn.line_number == len(records) + 2
        assert reader.torn.length == len(half)
        assert f"({len(records) + 2}, {len(half)} bytes)" in reader.torn.describe()


def test_torn_frame_line_is_noticed_by_inputs(tmp_path: Path) -> None:
    records = sample_records()
    path = _write(tmp_path / "t.jsonl", records)
    line = encode_line(FrameRecord(99, 2.0, "s1", "c2s", "stdio", b"{}\n"))
    with open(path, "ab") as f:
        f.write(line[:-5])
    with TraceReader(path) as reader:
        inputs = list(reader.inputs())
        assert inputs == [r for r in records if isinstance(r, FrameRecord | EventRecord)]
        assert reader.torn is not None
        assert reader.torn.line_number == len(records) + 2


def test_complete_last_line_without_newline_is_not_torn(tmp_path: Path) -> None:
    records = sample_records()
    path = _write(tmp_path / "t.jsonl", records)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with TraceReader(path) as reader:
        assert list(reader.records()) == [_normalized(r) for r in records]
        assert reader.torn is None
    with TraceReader(path) as reader:
        assert list(reader.inputs())[-1] == records[-1]
        assert reader.torn is None


def test_not_torn_when_nothing_is_cut(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", sample_records())
    with TraceReader(path) as reader:
        assert len(list(reader.records())) == len(sample_records())
        assert reader.torn is None


@pytest.mark.parametrize("bad", [b"garbage\n", b'{"type":"frame","seq":\n', b"[1,2]\n", b"\n"])
def test_a_corrupt_line_in_the_middle_is_skipped_and_named(tmp_path: Path, bad: bytes) -> None:
    """One damaged line costs that line only; every record after it is still read."""
    path = _write(tmp_path / "t.jsonl", sample_records()[:3])
    lines = _lines(path)
    path.write_bytes(b"".join([*lines[:2], bad, *lines[2:]]))
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        assert list(reader.records()) == sample_records()[:3]
        assert reader.skipped == [(3, "not a JSON record")]
    with TraceReader(path, on_skip=warnings.append) as reader:
        assert len(list(reader.inputs())) == sum(
            isinstance(r, FrameRecord | EventRecord) for r in sample_records()[:3]
        )
    assert len(warnings) == 2 and all("line 3: not a JSON record" in w for w in warnings)


def test_malformed_record_is_skipped_with_a_warning_naming_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", sample_records()[:2])
    with open(path, "ab") as f:
        f.write(b'{"type":"frame","seq":3}\n{"type":"event","seq":4,"t":1,"session":"s"}\n')
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        records = list(reader.records())
    assert records == sample_records()[:2]
    assert [n for n, _ in reader.skipped] == [4, 5]
    assert warnings[0].endswith("line 4: t is not a time in seconds; the record was skipped")
    assert "line 5: event is not a string" in warnings[1]


def test_unknown_record_type_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", sample_records()[:2])
    with open(path, "ab") as f:
        f.write(b'{"type":"mystery","x":1}\n')
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        assert list(reader.records()) == sample_records()[:2]
    assert warnings == [f"{path}: line 4: unknown record type 'mystery'; the record was skipped"]


@pytest.mark.parametrize(
    ("first_line", "reason"),
    [
        (encode_line(sample_records()[1]), "no mcpsniff-trace header"),
        (b'{"type":"header","format":"other-trace","version":1}\n', "no mcpsniff-trace header"),
        (b"hello world\n", "line 1 is not JSON"),
        (b"", "the file is empty"),
        (b"[1]\n", "no mcpsniff-trace header"),
    ],
)
def test_file_without_header_is_not_a_trace(tmp_path: Path, first_line: bytes, reason: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(first_line)
    with pytest.raises(TraceError, match="not an mcpsniff trace") as info:
        TraceReader(path)
    assert reason in str(info.value)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file") as info:
        TraceReader(tmp_path / "nope.jsonl")
    assert str(tmp_path / "nope.jsonl") in str(info.value)


def test_directory_is_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="directory") as info:
        TraceReader(tmp_path)
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize(
    ("version", "shown"),
    [(3, "3"), (0, "0"), ("1", "'1'"), (None, "None"), (1.5, "1.5"), (True, "True"), ([1], "[1]")],
)
def test_unsupported_version_is_refused(tmp_path: Path, version: Any, shown: str) -> None:
    path = tmp_path / "t.jsonl"
    head = {"type": "header", "format": FORMAT_NAME, "version": version}
    path.write_bytes(orjson.dumps(head) + b"\n" + encode_line(sample_records()[0]))
    with pytest.raises(TraceError, match="not supported") as info:
        TraceReader(path)
    assert f"version {shown} is not supported" in str(info.value)
    assert "reads [1, 2]" in str(info.value)


# --------------------------------------------------------------------------- inputs()


def test_inputs_yields_only_frames_and_events_in_order(tmp_path: Path) -> None:
    records = sample_records()
    path = _write(tmp_path / "t.jsonl", records)
    with TraceReader(path) as reader:
        inputs = list(reader.inputs())
    expected = [r for r in records if isinstance(r, FrameRecord | EventRecord)]
    assert inputs == expected
    assert [r.seq for r in inputs] == [1, 2, 3, 4, 5, 6, 7]


def test_inputs_reads_lines_written_with_other_spacing(tmp_path: Path) -> None:
    # Another tool writing with the stdlib's default separators: '{"type": "frame", ...}'.
    # These lines lack the compact prefix, so they must be parsed, not skipped.
    records = sample_records()
    path = tmp_path / "t.jsonl"
    lines = _lines(_write(tmp_path / "compact.jsonl", records))
    path.write_bytes(b"".join(json.dumps(orjson.loads(x)).encode() + b"\n" for x in lines))
    assert _lines(path)[1].startswith(b'{"type": "event"')
    with TraceReader(path) as reader:
        inputs = list(reader.inputs())
    assert inputs == [r for r in records if isinstance(r, FrameRecord | EventRecord)]
    assert _read(path) == [_normalized(r) for r in records]


_PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'


def _embedded_line(eol: str = "\n") -> bytes:
    """One embedded frame line of ``_PING``, newline included."""
    frame = FrameRecord(
        2, 1.5, "s", "c2s", "stdio", _PING + eol.encode(), value=orjson.loads(_PING)
    )
    line = encode_line(frame)
    assert b'"json":' + _PING + b"}\n" in line
    return line


@pytest.mark.parametrize("eol", ["", "\n", "\r\n"])
def test_inputs_reads_a_last_embedded_frame_without_its_newline(tmp_path: Path, eol: str) -> None:
    # The payload is found from the line's end: "}" ends a last line without
    # its newline, "}\n" every other line.
    path = _write(tmp_path / "t.jsonl", [])
    with path.open("ab") as f:
        f.write(_embedded_line(eol) + _embedded_line(eol)[:-1])
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        frames = list(reader.inputs())
        torn = reader.torn
    assert [f.raw for f in frames] == [_PING + eol.encode()] * 2
    assert [f.value for f in frames] == [orjson.loads(_PING)] * 2
    assert warnings == [] and torn is None


@pytest.mark.parametrize("after", [b" ", b"\t", b"\r"])
def test_inputs_skips_an_embedded_frame_whose_len_misses_by_a_trailing_blank(
    tmp_path: Path, after: bytes
) -> None:
    # Blank after the closing brace of a last line without its newline: the
    # payload does not end where len says (read from the end, the "}" is
    # taken for the payload's last byte), so the line is skipped with that
    # reason, as the general reader does, and never read a byte off.
    path = _write(tmp_path / "t.jsonl", [])
    with path.open("ab") as f:
        f.write(_embedded_line()[:-1] + after)
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        frames = list(reader.inputs())
    assert frames == []
    assert len(warnings) == 1 and "where len says" in warnings[0] and "line 2" in warnings[0]


def test_inputs_reads_a_frame_glued_after_a_torn_message_with_a_nested_object(
    tmp_path: Path,
) -> None:
    # A message line with a "{" after its first byte is not skipped unread: a
    # record may be glued after a torn piece of it.
    message = MessageRecord(2, "s", "c2s", "request", id={"k": 1}, has_id=True, method="ping")
    torn = encode_line(message)[:-5]
    assert b"{" in torn[1:]
    path = _write(tmp_path / "t.jsonl", [])
    with path.open("ab") as f:
        f.write(encode_line(message) + torn + _embedded_line())
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        frames = list(reader.inputs())
    assert [f.raw for f in frames] == [_PING + b"\n"]
    assert len(warnings) == 1 and "line 3" in warnings[0] and "torn write" in warnings[0]


# --------------------------------------------------------------------------- TraceTail


def test_tail_returns_records_as_lines_complete(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"m": 1})
    writer.flush()
    tail = TraceTail(path)
    try:
        assert tail.poll() == []
        assert tail.header is not None
        assert tail.header["format"] == FORMAT_NAME
        assert tail.header["meta"] == {"m": 1}
        assert tail.poll() == []

        first, second, third = sample_records()[:3]
        writer.write(first)
        writer.flush()
        assert tail.poll() == [first]
        writer.write_all([second, third])
        writer.flush()
        assert tail.poll() == [second, third]
        assert tail.poll() == []

        finding = FindingRecord("JR-PARSE", "error", "not JSON", "s1", [3], {"cause": "log-line"})
        line = encode_line(finding)
        with open(path, "ab") as f:
            f.write(line[:10])
            f.flush()
            assert tail.poll() == []
            f.write(line[10:-1])
            f.flush()
            assert tail.poll() == []
            f.write(b"\n")
            f.flush()
        assert tail.poll() == [finding]
    finally:
        tail.close()
        writer.close()


# --------------------------------------------------------------------------- live vs replay


class StdioScript:
    """A scripted stdio conversation fed to a live Session, every record written to a trace."""

    def __init__(self, writer: TraceWriter) -> None:
        self.session = Session("stdio-1", "stdio")
        self.writer = writer
        self.records: list[Record] = []
        self.t = 1700000000.0

    def _keep(self, out: list[Record]) -> None:
        self.records.extend(out)
        self.writer.write_all(out)

    def send(self, direction: str, payload: Any, dt: float = 0.01) -> None:
        self.t += dt
        raw = payload if isinstance(payload, bytes) else orjson.dumps(payload) + b"\n"
        self._keep(self.session.feed(direction, "stdio", raw, self.t))

    def event(self, name: str, data: dict[str, Any]) -> None:
        self._keep(self.session.event(name, self.t, data))

    def close(self) -> None:
        self.t += 5.0
        self._keep(self.session.close(self.t, {"reason": "client closed stdin"}))


def _run_script(script: StdioScript) -> None:
    script.event("session-start", {"argv": ["python", "server.py"], "pid": 4242})
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "client", "version": "1.0"},
    }
    script.send("c2s", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    script.send("s2c", b"Loading model...\n")
    script.event("stderr", {"line": "INFO starting"})
    server_info = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "server", "version": "2.0"},
    }
    script.send("s2c", {"jsonrpc": "2.0", "id": 0, "result": server_info}, dt=0.2)
    script.send("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})
    script.send("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = [{"name": "echo", "inputSchema": {"type": "object"}}]
    script.send("s2c", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}, dt=0.03)
    call = {"name": "echo", "arguments": {"text": "hi"}}
    script.send("c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    # The server echoes the numeric id 2 as the string "2".
    content = {"content": [{"type": "text", "text": "hi"}]}
    script.send("s2c", {"jsonrpc": "2.0", "id": "2", "result": content}, dt=0.05)
    # Sent in two chunks: framing must not depend on how reads split the stream.
    script.send("c2s", b'{"jsonrpc":"2.0","id":3,"method":"tools/ca')
    script.send("c2s", b'll","params":{"name":"echo","arguments":{}}}\n')
    # A last request without its newline: the session flushes it at close.
    script.send("c2s", b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
    script.event("exit", {"code": 0})
    script.close()


def _finding_key(f: FindingRecord) -> tuple[Any, ...]:
    return (f.rule, f.severity, f.message, f.session, f.seq, f.data)


def _message_key(m: MessageRecord) -> tuple[Any, ...]:
    return (m.frame, m.kind, m.index, m.id, m.answers, m.latency_ms, m.note)


def test_replay_of_the_trace_reproduces_the_live_analysis(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    writer = TraceWriter.create(path, meta={"transport": "stdio"})
    script = StdioScript(writer)
    _run_script(script)
    writer.close()
    live = script.records

    live_findings = [r for r in live if isinstance(r, FindingRecord)]
    live_messages = [r for r in live if isinstance(r, MessageRecord)]
    rules = [f.rule for f in live_findings]
    # The script exercises what it claims to: a log line on stdout, an id echoed with
    # the wrong type and two requests left unanswered.
    assert {"JR-PARSE", "STDIO-STDOUT-CLEAN", "JR-RESP-ID", "JR-RESP-REQUIRED"} <= set(rules)
    assert rules.count("JR-RESP-REQUIRED") == 2
    assert ("2", "id-type-mismatch") in [(m.id, m.note) for m in live_messages]
    assert [m.kind for m in live_messages].count("unparseable") == 1

    with TraceReader(path) as reader:
        stored = list(reader.records())
        assert reader.torn is None
    assert stored == [_normalized(r) for r in live]

    with TraceReader(path) as reader:
        replayed = list(replay(reader.inputs()))
    replay_findings = [r for r in replayed if isinstance(r, FindingRecord)]
    replay_messages = [r for r in replayed if isinstance(r, MessageRecord)]
    stored_findings = [r for r in stored if isinstance(r, FindingRecord)]
    stored_messages = [r for r in stored if isinstance(r, MessageRecord)]

    assert [_finding_key(f) for f in replay_findings] == [_finding_key(f) for f in live_findings]
    assert [_finding_key(f) for f in replay_findings] == [_finding_key(f) for f in stored_findings]
    assert [_message_key(m) for m in replay_messages] == [_message_key(m) for m in live_messages]
    assert [_message_key(m) for m in replay_messages] == [_message_key(m) for m in stored_messages]
    # Nothing synthetic was added: the trace holds its own session-end.
    assert [_normalized(r) for r in replayed] == stored
    ends = [r for r in replayed if isinstance(r, EventRecord) and r.event == "session-end"]
    assert [e.data for e in ends] == [{"reason": "client closed stdin"}]


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
    path = _write(tmp_path / "t.jsonl", live)
    stored = _read(path)
    assert stored == [_normalized(r) for r in live]
    ids = [m.id for m in stored if isinstance(m, MessageRecord)]
    assert ids[0] == 10**400
    assert ids[1] == "\ud800"
    assert json.dumps(ids[2]) == deep.decode()
    assert ids[3:] == [123456789012345678901234567890, -(2**63) - 1]
    assert [type(i) for i in ids[3:]] == [int, int]
    with TraceReader(path) as reader:
        replayed = [_normalized(r) for r in replay(reader.inputs())]
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


# --------------------------------------------------------------------------- crash safety


def _many_records() -> list[Record]:
    records: list[Record] = []
    for i in range(20):
        base = 3 * i + 1
        records.append(FrameRecord(base, 1.0 + i, "s", "c2s", "stdio", b'{"id":%d}\n' % i))
        records.append(MessageRecord(base, "s", "c2s", "invalid", id=i, has_id=True))
        records.append(
            FindingRecord("JR-REQ-SHAPE", "error", f"bad {i} \u2713", "s", [base], {"i": i})
        )
        records.append(EventRecord(base + 1, 1.5 + i, "s", "stderr", {"line": f"log {i}"}))
        records.append(FrameRecord(base + 2, 1.7 + i, "s", "s2c", "stdio", b"\xff\xfe%d\n" % i))
    return records


def test_truncation_anywhere_in_the_last_two_lines_yields_a_prefix(tmp_path: Path) -> None:
    records = _many_records()
    full = _write(tmp_path / "full.jsonl", records).read_bytes()
    lines = full.splitlines(keepends=True)
    expected = [_normalized(r) for r in records]
    expected_inputs = [r for r in records if isinstance(r, FrameRecord | EventRecord)]
    start = len(full) - len(lines[-1]) - len(lines[-2])
    cut = tmp_path / "cut.jsonl"
    for offset in range(start, len(full) + 1):
        data = full[:offset]
        cut.write_bytes(data)
        whole = data.count(b"\n") - 1  # record lines with their newline
        tail = data[data.rfind(b"\n") + 1 :]
        complete_tail = tail != b"" and tail + b"\n" in lines
        count = whole + (1 if complete_tail else 0)
        with TraceReader(cut) as reader:
            got = list(reader.records())
            torn = reader.torn
        assert got == expected[:count], offset
        assert count >= len(records) - 2
        if tail and not complete_tail:
            assert torn is not None and torn.line_number == whole + 2 and torn.length == len(tail)
        else:
            assert torn is None, offset
        with TraceReader(cut) as reader:
            got_inputs = list(reader.inputs())
        assert got_inputs == expected_inputs[: len(got_inputs)], offset
        assert got_inputs == [r for r in got if isinstance(r, FrameRecord | EventRecord)]


# ------------------------------------------------------------- format 2: embedded JSON


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        b'  { "jsonrpc" : "2.0", "id": 2, "result": {} }  \r\n',
        b'[{"jsonrpc":"2.0","method":"a"}]',
        b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"json":1,"len":9}}\n',
    ],
)
def test_parsed_frames_are_embedded_and_read_back_exactly(tmp_path: Path, raw: bytes) -> None:
    from mcpsniff.core.session import Session

    session = Session("s", "stdio")
    (frame, *_) = session.feed_frame("c2s", "stdio", raw, 1.0)
    line = encode_line(frame)
    assert b',"json":' in line and line.endswith(b"}\n")
    assert raw.rstrip(b"\r\n") in line  # the payload is stored verbatim
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    writer.write(frame)
    writer.close()
    with TraceReader(path) as reader:
        (back,) = list(reader.inputs())
    assert back.raw == raw
    assert back.value == orjson.loads(raw)
    with TraceReader(path) as reader:
        assert [r.raw for r in reader.records()] == [raw]


@pytest.mark.parametrize("session", ["stdio", 'a"b\u2028', "\u00e9\U0001f600", "\udc80x", ""])
@pytest.mark.parametrize("t", [1764638000.123456, 0.0, 1e16, 1e-7, float("nan"), 3, -0.0])
@pytest.mark.parametrize("seq", [0, 7, 2**63 - 1, 2**63, 2**70, -1])
@pytest.mark.parametrize("meta", [None, {"redacted": 2}])
def test_an_embedded_frame_line_is_what_the_generic_encoder_writes(
    session: str, t: float, seq: int, meta: dict[str, int] | None
) -> None:
    """The cached-template fast path writes exactly the bytes ``_dumps`` of the object would."""
    from mcpsniff.trace.format import _dumps

    for raw, end, eol in (
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n', -1, "\n"),
        (b'[{"a":1}]\r\n', -2, "\r\n"),
        (b'{"b":2}', None, ""),
        # Past the slice limit: a memoryview join, or (no terminator) one orjson call.
        (b'{"c":"' + b"x" * 70_000 + b'"}\r\n', -2, "\r\n"),
        (b'{"c":"' + b"x" * 70_000 + b'"}', None, ""),
    ):
        payload = raw[:end]
        record = FrameRecord(seq, t, session, "c2s", "stdio", raw, meta, orjson.loads(raw))
        obj: dict[str, Any] = {
            "type": "frame",
            "seq": seq,
            "t": t,
            "session": session,
            "dir": "c2s",
            "transport": "stdio",
        }
        if meta:
            obj["meta"] = meta
        obj["eol"] = eol
        obj["len"] = len(payload)
        expected = _dumps(obj)[:-2] + b',"json":' + payload + b"}\n"
        assert encode_line(record) == expected
        assert encode_line(record) == expected  # and again, from the cache


def test_the_frame_template_cache_is_bounded() -> None:
    from mcpsniff.trace import format as trace_format

    raw = b'{"jsonrpc":"2.0","method":"x"}\n'
    for i in range(3 * trace_format._FRAME_MIDDLES_LIMIT):
        line = encode_line(FrameRecord(i, 1.5, f"session-{i}", "s2c", "http", raw, None, {}))
        assert b'"session":"session-%d"' % i in line
        assert len(trace_format._FRAME_MIDDLES) <= trace_format._FRAME_MIDDLES_LIMIT


@pytest.mark.parametrize(
    "raw", [b'{"a":\n1}\n', b'{"a":1}\r\r\n', b'{"a":1}\n\n', b'{"a":\r1}', b"  \n", b""]
)
def test_frames_with_inner_line_breaks_or_no_payload_are_not_embedded(raw: bytes) -> None:
    record = FrameRecord(1, 1.0, "s", "c2s", "stdio", raw, None, {"a": 1})
    line = encode_line(record)
    assert b',"json":' not in line
    assert json.loads(line)["text"] == raw.decode()


def test_multi_line_bodies_and_non_json_stay_text(tmp_path: Path) -> None:
    from mcpsniff.core.session import Session

    session = Session("s", "http")
    pretty = session.feed_frame("s2c", "http", b'{\n "jsonrpc": "2.0",\n "id": 1\n}', 1.0)[0]
    garbage = session.feed_frame("s2c", "http", b"Loading model...", 1.0)[0]
    assert b'"text":' in encode_line(pretty) and b'"json":' not in encode_line(pretty)
    assert b'"text":' in encode_line(garbage)


def test_a_version_1_trace_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    head = {"type": "header", "format": FORMAT_NAME, "version": 1}
    frame = {
        "type": "frame",
        "seq": 1,
        "t": 1.0,
        "session": "s",
        "dir": "c2s",
        "transport": "stdio",
        "text": '{"jsonrpc":"2.0","method":"a"}\n',
    }
    path.write_bytes(orjson.dumps(head) + b"\n" + orjson.dumps(frame) + b"\n")
    with TraceReader(path) as reader:
        (back,) = list(reader.inputs())
    assert back.raw == b'{"jsonrpc":"2.0","method":"a"}\n'


def test_an_embedded_frame_with_a_wrong_len_is_skipped(tmp_path: Path) -> None:
    from mcpsniff.core.session import Session

    frame = Session("s").feed_frame("c2s", "stdio", b'{"jsonrpc":"2.0","method":"a"}\n', 1.0)[0]
    line = encode_line(frame).replace(b'"len":30', b'"len":31')
    path = tmp_path / "t.jsonl"
    path.write_bytes(orjson.dumps(header()) + b"\n" + line + encode_line(frame))
    warnings: list[str] = []
    with TraceReader(path, on_skip=warnings.append) as reader:
        frames = list(reader.inputs())
    assert [f.raw for f in frames] == [frame.raw]
    assert len(warnings) == 1 and "line 2: malformed frame record" in warnings[0]


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


# ------------------------------------------------------------ a record glued to a torn line

# A record glued to a torn line mid-file, as ``check``/``show`` read it.
#
# A relay's analysis process killed mid-write leaves a partial line; a relay
# sharing the trace appends right after it. Salvage reads the glued record
# (``mcpsniff.trace.format.glued_record``); the reader skips the whole line, so the
# other relay's frame is lost to ``check`` and ``show``.


PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def test_the_reader_keeps_a_frame_glued_to_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.close()
    torn = encode_line(FrameRecord(1, 2.0, "stdio", C2S, "stdio", PING))[:50]
    glued = FrameRecord(2, 3.0, "stdio@7.1", C2S, "stdio", PING)
    with path.open("ab") as file:
        file.write(torn + encode_line(glued))
    skipped: list[str] = []
    with TraceReader(path, on_skip=skipped.append) as reader:
        frames = [r for r in reader.records() if isinstance(r, FrameRecord)]
    assert [(f.session, f.raw) for f in frames] == [("stdio@7.1", PING)], skipped
