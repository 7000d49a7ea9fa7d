"""Review 3: a record glued to a torn line mid-file, as ``check``/``show`` read it.

A relay's analysis process killed mid-write leaves a partial line; a relay
sharing the trace appends right after it. Salvage reads the glued record
(``mcpsniff.trace.codec.glued_record``); the reader skips the whole line, so the
other relay's frame is lost to ``check`` and ``show``.
"""

from __future__ import annotations

from pathlib import Path

from mcpsniff.core.model import C2S, FrameRecord
from mcpsniff.trace.codec import encode_line
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

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
