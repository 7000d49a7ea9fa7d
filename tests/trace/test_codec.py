"""The trace codec: every record round-trips, raw bytes come back byte for byte, frames embed."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.cli import main
from mcpsniff.core.model import (
    C2S,
    S2C,
    UNPARSED,
    EventRecord,
    FindingRecord,
    FrameRecord,
    MessageRecord,
    Record,
)
from mcpsniff.core.session import Session
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.trace import codec as trace_codec
from mcpsniff.trace.codec import (
    FORMAT_NAME,
    GLUE_TRIES,
    decode_record,
    encode_line,
    encode_record,
    exact_loads,
    glued_record,
    header,
)
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail
from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.follow import Header, OffsetTail, read_record_at
from tests.trace.support import normalized, read_records, sample_records, trace_lines, write_trace

# --------------------------------------------------------------------------- round trip


def test_every_record_type_round_trips(tmp_path: Path) -> None:
    records = sample_records()
    path = write_trace(tmp_path / "t.jsonl", records)
    back = read_records(path)
    assert back == [normalized(r) for r in records]
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
    back = read_records(write_trace(tmp_path / "t.jsonl", records))
    assert [(m.id, m.has_id) for m in back if isinstance(m, MessageRecord)] == [
        (None, True),
        (None, False),
    ]
    assert b'"id":null' in trace_lines(tmp_path / "t.jsonl")[1]
    assert b'"id"' not in trace_lines(tmp_path / "t.jsonl")[2]


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
    (back,) = read_records(write_trace(tmp_path / "t.jsonl", [_frame(raw)]))
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
        path = write_trace(Path(tmp) / "t.jsonl", [_frame(raw)])
        stored = orjson.loads(trace_lines(path)[1])
        (back,) = read_records(path)
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
        path = write_trace(Path(tmp) / "t.jsonl", records)
        with TraceReader(path) as reader:
            frames = [r for r in reader.inputs() if isinstance(r, FrameRecord)]
    assert b"".join(f.raw for f in frames) == stream


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
    """The cached-template fast path writes exactly the bytes ``dump_line`` of the object would."""
    from mcpsniff.trace.codec import dump_line

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
        expected = dump_line(obj)[:-2] + b',"json":' + payload + b"}\n"
        assert encode_line(record) == expected
        assert encode_line(record) == expected  # and again, from the cache


def test_the_frame_template_cache_is_bounded() -> None:
    from mcpsniff.trace import codec as trace_codec

    raw = b'{"jsonrpc":"2.0","method":"x"}\n'
    for i in range(3 * trace_codec._FRAME_MIDDLES_LIMIT):
        line = encode_line(FrameRecord(i, 1.5, f"session-{i}", "s2c", "http", raw, None, {}))
        assert b'"session":"session-%d"' % i in line
        assert len(trace_codec._FRAME_MIDDLES) <= trace_codec._FRAME_MIDDLES_LIMIT


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


# ----------------------------------------------------------------------------
# A whole record glued after a torn piece of another, mid-file (two writers, one died mid-write).
#
# `glued_record` is shared by the readers (`TraceReader`, `TraceTail`) and
# the salvage (`mcpsniff.trace.salvage`): the torn piece is reported as a
# skipped line, the glued record is read.


PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
FRAME = FrameRecord(2, 3.0, "stdio@7.1", C2S, "stdio", PING)
EVENT = EventRecord(3, 4.0, "stdio@7.1", "stderr", {"line": "hello"})
#: A tool result whose content items are ``{"type":"text",...}`` objects.
RESULT = b'{"jsonrpc":"2.0","id":9,"result":{"content":[%s]}}\n' % b",".join(
    b'{"type":"text","text":"item %d"}' % i for i in range(3 * GLUE_TRIES)
)
#: Recorded with its JSON embedded, as the relays record a parsed frame.
RESULT_FRAME = FrameRecord(1, 2.0, "stdio", S2C, "stdio", RESULT, None, orjson.loads(RESULT))


def _torn(record: Any, keep: int) -> bytes:
    return encode_line(record)[:keep]


def _trace(tmp_path: Path, middle: bytes, after: bytes = b"") -> Path:
    """A trace: header, one whole frame, ``middle``, ``after`` (whole lines)."""
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.write(FrameRecord(1, 2.0, "stdio", C2S, "stdio", PING))
    writer.close()
    with path.open("ab") as file:
        file.write(middle + after)
    return path


def test_the_glued_record_and_where_it_starts() -> None:
    torn = _torn(FrameRecord(1, 2.0, "stdio", C2S, "stdio", PING), 50)
    found = glued_record(torn + encode_line(FRAME))
    assert found is not None
    obj, at = found
    assert at == 50
    assert (obj["type"], obj["seq"], obj["session"]) == ("frame", 2, "stdio@7.1")


def test_nested_type_objects_in_the_torn_piece_are_no_candidates() -> None:
    """More ``{"type":"text"`` items than tries in the torn piece: the glued record is found."""
    torn = _torn(RESULT_FRAME, 600)
    assert torn.count(b'{"type":"text"') > GLUE_TRIES
    found = glued_record(torn + encode_line(EVENT))
    assert found is not None
    assert found[0]["event"] == "stderr" and found[1] == 600


def test_a_glued_record_keeps_big_integers_exact() -> None:
    big = 2**70 + 1
    message = MessageRecord(5, "stdio", C2S, "request", id=big, has_id=True, method="ping")
    found = glued_record(b'{"type":"message","fr' + encode_line(message))
    assert found is not None
    assert found[0]["id"] == big and type(found[0]["id"]) is int


@pytest.mark.parametrize(
    "line",
    [
        b"garbage\n",
        b'{"type":"frame","seq":1,"t":\n',  # torn, nothing glued
        b'{"type":"frame","seq":1}{"type":"frame","seq":2\n',  # glued, but torn too
        b'{"type":"event"' * 4 + b"\n",
    ],
)
def test_no_whole_record_no_glued_record(line: bytes) -> None:
    assert glued_record(line) is None


def test_the_work_on_a_hostile_line_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many record starts, none parses: at most GLUE_TRIES parses, then None."""
    line = b'{"type":"frame",' * 100_000 + encode_line(FRAME)
    calls: list[int] = []
    real = orjson.loads

    class CountingOrjson:
        JSONDecodeError = orjson.JSONDecodeError

        @staticmethod
        def loads(data: Any) -> Any:
            calls.append(len(data))
            return real(data)

    monkeypatch.setattr(trace_codec, "orjson", CountingOrjson)
    assert glued_record(line) is None
    assert len(calls) == GLUE_TRIES


def test_a_100_mb_line_of_record_starts_is_read_past(tmp_path: Path) -> None:
    """The hostile line costs one scan (no candidate parses); the record after it is read."""
    skipped: list[str] = []
    path = _trace(tmp_path, b'{"type":"' * (100 * (1 << 20) // 9) + b"\n", encode_line(FRAME))
    with TraceReader(path, on_skip=skipped.append) as reader:
        frames = [r for r in reader.records() if isinstance(r, FrameRecord)]
    assert [f.session for f in frames] == ["stdio", "stdio@7.1"]
    assert len(skipped) == 1 and "line 3: not a JSON record; the record was skipped" in skipped[0]


@pytest.mark.parametrize("how", ["records", "inputs", "tail", "lazy", "ui"])
@pytest.mark.parametrize("record", [FRAME, EVENT], ids=["frame", "event"])
def test_every_reader_keeps_the_glued_record(tmp_path: Path, how: str, record: Any) -> None:
    """``lazy``: what ``stats`` and filters read; ``ui``: the web UI's reader."""
    torn = _torn(RESULT_FRAME, 120)
    after = EventRecord(9, 9.0, "stdio", "stderr", {"line": "after"})
    path = _trace(tmp_path, torn + encode_line(record), encode_line(after))
    skipped: list[str] = []
    if how == "tail":
        tail = TraceTail(path, on_skip=skipped.append)
        got = tail.poll(final=True)
        tail.close()
    elif how == "lazy":
        got = list(LazyTraceRecords(path, on_skip=skipped.append))
    elif how == "ui":
        offset_tail = OffsetTail(path)
        items = [item for item in offset_tail.poll()[0] if not isinstance(item[1], Header)]
        got = [item for _, item in items]
        skipped = [f"{path}: {note}" for note in offset_tail.notes]
        # Each record is read back from its own offset (a click in the UI).
        assert [read_record_at(path, offset) for offset, _ in items] == got
    else:
        with TraceReader(path, on_skip=skipped.append) as reader:
            got = list(reader.records() if how == "records" else reader.inputs())
            assert reader.torn is None
            assert [n for n, _ in reader.skipped] == [3]
    inputs = [r for r in got if isinstance(r, FrameRecord | EventRecord)]
    assert inputs[1:] == [record, after]
    assert len(skipped) == 1, skipped
    assert "line 3: not a JSON record: its first 120 bytes are a torn write" in skipped[0]
    assert "another record glued after them, which was read" in skipped[0]


def test_an_embedded_frame_glued_keeps_its_exact_bytes(tmp_path: Path) -> None:
    spaced = FrameRecord(2, 3.0, "stdio@7.1", S2C, "stdio", b'{ "jsonrpc" : "2.0", "id":1}\r\n')
    path = _trace(tmp_path, b'{"type":"frame","seq":1,"t":2.0,"ses' + encode_line(spaced))
    with TraceReader(path, on_skip=lambda _: None) as reader:
        frames = [r for r in reader.inputs() if isinstance(r, FrameRecord)]
    assert frames[1].raw == spaced.raw


def test_a_torn_last_line_is_still_torn_not_glued(tmp_path: Path) -> None:
    """Only a line followed by others is searched: the last one is a torn tail, as before."""
    torn = _torn(FrameRecord(1, 2.0, "stdio", C2S, "stdio", PING), 50)
    path = _trace(tmp_path, torn + encode_line(FRAME)[:-1])
    with TraceReader(path, on_skip=lambda _: None) as reader:
        frames = [r for r in reader.records() if isinstance(r, FrameRecord)]
        assert reader.torn is not None and reader.torn.line_number == 3
    assert len(frames) == 1


# ----------------------------------------------------------- torn derived lines (check's path)

#: A whole message record and a whole finding record, as the analysis writes them.
MESSAGE = MessageRecord(1, "stdio", C2S, "request", id=1, has_id=True, method="ping")
FINDING = FindingRecord("JR-PARSE", "error", "not JSON", "stdio", [1], {"at": 3})
DERIVED = {"message": MESSAGE, "finding": FINDING}
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n'
)
INIT_RESULT = (
    b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},'
    b'"serverInfo":{"name":"s","version":"1"}}}\n'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
PONG = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'


@pytest.mark.parametrize("torn_kind", sorted(DERIVED))
@pytest.mark.parametrize("record", [FRAME, EVENT], ids=["frame", "event"])
def test_inputs_keeps_a_record_glued_after_a_torn_derived_line(
    tmp_path: Path, torn_kind: str, record: Any
) -> None:
    """check's fast path skips derived lines unparsed: not when a record is glued to one."""
    torn = _torn(DERIVED[torn_kind], 30)
    after = EventRecord(9, 9.0, "stdio", "stderr", {"line": "after"})
    path = _trace(tmp_path, torn + encode_line(record), encode_line(after))
    skipped: list[str] = []
    with TraceReader(path, on_skip=skipped.append) as reader:
        got = list(reader.inputs())
        assert reader.torn is None
        assert [n for n, _ in reader.skipped] == [3]
    assert got[1:] == [record, after]
    assert len(skipped) == 1, skipped
    assert "line 3: not a JSON record: its first 30 bytes are a torn write" in skipped[0]


@pytest.mark.parametrize("torn_kind", sorted(DERIVED))
def test_whole_derived_lines_with_nested_record_starts_are_still_skipped(
    tmp_path: Path, torn_kind: str
) -> None:
    """A record start inside a nested object of an intact line is no glued record."""
    nested = {"type": "frame", "seq": 5, "t": 1.0, "session": "x", "dir": C2S}
    derived = (
        MessageRecord(1, "stdio", C2S, "request", id=nested, has_id=True, method="ping")
        if torn_kind == "message"
        else FindingRecord("JR-PARSE", "error", "m", "stdio", [1], {"x": nested})
    )
    line = encode_line(derived)
    assert line.find(b'{"type":"frame"', 1) > 0
    path = _trace(tmp_path, line, encode_line(EVENT))
    skipped: list[str] = []
    with TraceReader(path, on_skip=skipped.append) as reader:
        got = list(reader.inputs())
    assert [type(r) for r in got] == [FrameRecord, EventRecord]
    assert skipped == []


def _session(tmp_path: Path, torn_kind: str, glued: Any) -> Path:
    """A handshake, a ping, then a torn derived line with ``glued`` after it, then the end."""
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    frames = [
        (C2S, INITIALIZE),
        (S2C, INIT_RESULT),
        (C2S, INITIALIZED),
        (C2S, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'),
    ]
    writer.write_all(
        [FrameRecord(n, 1.0, "stdio", d, "stdio", raw) for n, (d, raw) in enumerate(frames, 1)]
    )
    writer.close()
    end = EventRecord(7, 3.0, "stdio", "session-end", {})
    with path.open("ab") as file:
        file.write(_torn(DERIVED[torn_kind], 40) + encode_line(glued) + encode_line(end))
    return path


@pytest.mark.parametrize("torn_kind", sorted(DERIVED))
@pytest.mark.parametrize("glued", ["frame", "event"])
def test_check_judges_the_record_glued_after_a_torn_derived_line(
    tmp_path: Path, torn_kind: str, glued: str
) -> None:
    """Lost, the ping's answer (a frame) or the gap that may hold it (an event) leaves the
    ping "never answered": a false verdict. Kept, check passes and names the skip once."""
    record: Any = (
        FrameRecord(5, 2.0, "stdio", S2C, "stdio", PONG)
        if glued == "frame"
        else EventRecord(5, 2.0, "stdio", "capture-gap", {"direction": S2C, "lost_bytes": 9})
    )
    path = _session(tmp_path, torn_kind, record)
    result = CliRunner().invoke(main, ["check", "--fail-on", "error", str(path)])
    assert "JR-RESP-REQUIRED" not in result.stdout, result.stdout + result.stderr
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stderr.count("its first 40 bytes are a torn write") == 1, result.stderr
    assert "line 6:" in result.stderr


@pytest.mark.parametrize("big", [2**70 + 1, -(2**66) - 3, 2**63])
def test_a_long_line_keeps_a_big_integer_exact(big: int) -> None:
    """A line past the length searched for a 19-digit literal first is still exact."""
    padding = "x" * (40 << 10)
    line = f'{{"pad":"{padding}","list":[1,2.5,{{"n":{big}}}]}}'.encode()
    value = exact_loads(line)
    assert value["list"][2]["n"] == big and type(value["list"][2]["n"]) is int
    plain = f'{{"pad":"{padding}","n":123456789012345678,"f":1e300}}'.encode()
    assert exact_loads(plain) == {"pad": padding, "n": 123456789012345678, "f": 1e300}


_FIELDS = b'{"type":"frame","seq":1,"t":1.0,"dir":"c2s","transport":"stdio","eol":"\\n"'


@pytest.mark.parametrize(
    ("members", "embedded"),
    [
        (b',"session":"s","len":2,"json":{}', True),
        # "json" as a field's value before the mark: not proved (parsed from the bytes).
        (b',"session":"json","len":2,"json":{}', False),
        # A "json" member before the mark, the mark in a later member.
        (b',"session":"s","len":3,"json":{"a":1},"m":{"b":1,"json":{}}', False),
        (b',"session":"s","len":3,"\\u006ason":{"a":1},"m":{"b":1,"json":{}}', False),
    ],
)
def test_embeds_value_proves_the_parsed_member_is_in_the_payload(
    members: bytes, embedded: bool
) -> None:
    line = _FIELDS + members + b"}\n"
    start = line.rindex(b',"json":') + len(b',"json":')
    assert trace_codec.embeds_value(line, start) is embedded
    frame = trace_codec.frame_from(json.loads(line), line)
    assert (frame.value is not UNPARSED) is embedded


def test_a_lane_record_glued_after_a_torn_piece_is_found() -> None:
    lane = b'{"type":"lane","session":"stdio","through":7}\n'
    found = glued_record(_torn(FRAME, 40) + lane)
    assert found == ({"type": "lane", "session": "stdio", "through": 7}, 40)
    # And the decoder passes it on as no record, like a header.
    assert decode_record(found[0]) == found[0]


@pytest.mark.parametrize(
    ("session", "t", "seq"),
    [("stdio", 1.5, 7), ("100%d-s", 2.0, (1 << 63) - 1), ("s\u2028%%", 1e-7, 0)],
)
def test_frame_line_format_makes_encode_lines_line(session: str, t: float, seq: int) -> None:
    payload = b'{"jsonrpc":"2.0","id":1,"result":{"x":"100%"}}'
    fmt = trace_codec.frame_line_format(session, "c2s", "stdio", t)
    frame = FrameRecord(
        seq, t, session, "c2s", "stdio", payload + b"\n", None, orjson.loads(payload)
    )
    assert fmt is not None and fmt % (seq, len(payload)) + payload + b"}\n" == encode_line(frame)


def test_frame_line_format_leaves_a_time_that_is_no_float_to_encode_line() -> None:
    assert trace_codec.frame_line_format("stdio", "c2s", "stdio", 1) is None  # type: ignore[arg-type]
