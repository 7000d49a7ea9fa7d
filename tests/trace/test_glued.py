"""A whole record glued after a torn piece of another, mid-file (two writers, one died mid-write).

``glued_record`` is shared by the readers (``TraceReader``, ``TraceTail``) and
the salvage (``mcpsniff.trace.salvage``): the torn piece is reported as a
skipped line, the glued record is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import C2S, S2C, EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.trace import codec as trace_codec
from mcpsniff.trace.codec import GLUE_TRIES, encode_line, glued_record
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail
from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.follow import Header, OffsetTail, read_record_at

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
