"""``mcpsniff ls`` counts a record glued after a torn write as the other readers do.

A writer killed mid-line leaves a torn piece without its newline; another
writer sharing the trace appends right after it (``trace.codec.glued_record``).
The torn piece is no record and is not counted; the whole record after it is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.core.model import C2S, EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.trace.codec import encode_line, header
from mcpsniff.trace.writer import TraceWriter

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
FRAME = FrameRecord(1, 2.0, "first", C2S, "stdio", PING)
MESSAGE = MessageRecord(1, "first", C2S, "request", id=1, has_id=True, method="ping")
GLUED_FRAME = FrameRecord(5, 7.0, "second", C2S, "stdio", PING)
GLUED_FINDING = FindingRecord("JR-PARSE", "error", "not JSON", "first", [1], {})
GLUED_EVENT = EventRecord(6, 9.0, "third", "stderr", {"line": "hi"})
#: A frame of more than ``summary.LINE_HEAD`` bytes, whose head alone ls reads.
BIG = FrameRecord(
    3, 3.0, "first", C2S, "stdio", b'{"jsonrpc":"2.0","x":"' + b"a" * (3 << 20) + b'"}\n'
)


def _folder(tmp_path: Path, torn: bytes, glued: bytes) -> Path:
    """A folder with one trace: header, a frame and its message, ``torn`` + ``glued``, a frame."""
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"label": "glue"}, created=1.0)
    writer.write_all([FRAME, MESSAGE])
    writer.close()
    after = FrameRecord(9, 10.0, "first", C2S, "stdio", PING)
    with path.open("ab") as file:
        file.write(torn + glued + encode_line(after))
    return tmp_path


def _ls(folder: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "ls", str(folder), "--format", "json"],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    (row,) = [orjson.loads(line) for line in result.stdout.splitlines()]
    return row


def _lazy(folder: Path) -> dict[str, Any]:
    """What the views' reader (``stats``) reads from the same trace."""
    records = list(LazyTraceRecords(folder / "t.jsonl", on_skip=lambda _: None))
    return {
        "messages": sum(isinstance(r, MessageRecord) for r in records),
        "sessions": len({r.session for r in records if isinstance(r, FrameRecord | EventRecord)}),
        "errors": sum(isinstance(r, FindingRecord) and r.severity == "error" for r in records),
    }


def test_a_finding_glued_after_a_torn_message_is_counted_and_the_piece_is_not(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path, encode_line(MESSAGE)[:40], encode_line(GLUED_FINDING))
    row = _ls(folder)
    assert (row["messages"], row["findings"]["error"]) == (1, 1)
    lazy = _lazy(folder)
    assert (lazy["messages"], lazy["errors"]) == (1, 1)


@pytest.mark.parametrize("glued", [GLUED_FRAME, GLUED_EVENT], ids=["frame", "event"])
def test_a_frame_or_event_glued_after_a_torn_frame_names_its_session(
    tmp_path: Path, glued: Any
) -> None:
    folder = _folder(tmp_path, encode_line(FRAME)[:60], encode_line(glued))
    row = _ls(folder)
    assert row["sessions"] == 2 == _lazy(folder)["sessions"]
    assert row["duration_s"] == pytest.approx(9.0)  # 1.0 (created) to 10.0 (the last frame)


def test_a_header_glued_after_a_torn_line_is_a_launch(tmp_path: Path) -> None:
    appended = orjson.dumps(header({"label": "glue"}, created=5.0)) + b"\n"
    folder = _folder(tmp_path, encode_line(MESSAGE)[:30], appended)
    row = _ls(folder)
    assert (row["launches"], row["messages"]) == (2, 1)


def test_a_record_glued_after_a_torn_long_frame_is_counted(tmp_path: Path) -> None:
    """The torn piece is longer than the head ls reads of a line: the line is read again."""
    torn = encode_line(BIG)[: 2 << 20]
    folder = _folder(tmp_path, torn, encode_line(GLUED_EVENT))
    row = _ls(folder)
    assert row["sessions"] == 2 == _lazy(folder)["sessions"]


def test_a_long_intact_frame_is_counted_once(tmp_path: Path) -> None:
    """A record start nested in a long frame's payload glues nothing: the frame is whole."""
    nested = b'{"jsonrpc":"2.0","x":"' + b"a" * (2 << 20) + b'","y":' + encode_line(GLUED_EVENT)
    big = FrameRecord(3, 3.0, "first", C2S, "stdio", nested[:-2] + b"}\n")
    folder = _folder(tmp_path, b"", encode_line(big))
    row = _ls(folder)
    assert row["sessions"] == 1 == _lazy(folder)["sessions"]


def test_a_finding_nested_in_an_intact_finding_is_counted_once(tmp_path: Path) -> None:
    inner = orjson.loads(encode_line(GLUED_FINDING))
    outer = FindingRecord("JR-PARSE", "warning", "m", "first", [1], {"x": inner})
    folder = _folder(tmp_path, b"", encode_line(outer))
    row = _ls(folder)
    assert row["findings"] == {"error": 0, "warning": 1, "info": 0}


def test_a_server_names_itself_in_bytes_that_are_not_canonical_json(tmp_path: Path) -> None:
    """An initialize result with spaces is kept as ``text``: its serverInfo still names it."""
    from mcpsniff.listing.summary import summarize

    spaced = b'{"jsonrpc": "2.0", "id": 0, "result": {"serverInfo": {"name": "weather"}}}\n'
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={}, created=1.0)
    writer.write(FrameRecord(1, 2.0, "k", "s2c", "stdio", spaced))
    writer.close()
    assert b'"text":' in path.read_bytes()  # stored as text, not as json
    summary = summarize(path)
    assert summary is not None and summary.server == "weather"
    # A text that is no JSON names nobody (and breaks nothing).
    other = tmp_path / "u.jsonl"
    writer = TraceWriter.create(other, meta={}, created=1.0)
    writer.write(FrameRecord(1, 2.0, "k", "s2c", "stdio", b'{"serverInfo": oops\n'))
    writer.close()
    broken = summarize(other)
    assert broken is not None and broken.server == "?"
