"""TraceTail: records as the lines of a growing trace complete."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.core.model import FindingRecord
from mcpsniff.trace.codec import FORMAT_NAME, encode_line
from mcpsniff.trace.tail import TraceTail
from mcpsniff.trace.writer import TraceWriter
from tests.trace.support import sample_records

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
