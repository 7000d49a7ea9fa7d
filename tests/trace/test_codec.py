"""The trace codec: every record round-trips, raw bytes come back byte for byte, frames embed."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpsniff.core.model import FrameRecord, MessageRecord, Record
from mcpsniff.core.session import Session
from mcpsniff.trace.codec import FORMAT_NAME, encode_line, encode_record, header
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
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
