"""TraceTail: records as the lines of a growing trace complete."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, Record
from mcpsniff.trace.codec import FORMAT_NAME, encode_line
from mcpsniff.trace.tail import TraceTail
from mcpsniff.trace.writer import TraceWriter
from tests.lane_layout import Covered, pieces, two_lane
from tests.trace.support import read_records, sample_records

ROOT = Path(__file__).resolve().parents[2]

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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_growing_two_lane_trace_shows_each_frame_with_its_messages(
    tmp_path: Path, seed: int
) -> None:
    source = ROOT / "recordings" / "unanswered-request.jsonl"
    expected = read_records(source)
    data = two_lane(source.read_bytes(), seed, 4)
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"")
    tail = TraceTail(path, on_skip=lambda _text: None)
    seen: list[Record] = []
    written = b""
    with path.open("ab") as out:
        for piece in pieces(data, seed, 300):
            out.write(piece)
            out.flush()
            written += piece
            got = tail.poll()
            covered = Covered.of(written)
            for record in got:
                if isinstance(record, FrameRecord | EventRecord):
                    assert covered.shows(record.session, record.seq)
            seen += got
            # Never a frame without the messages it has: always a prefix.
            assert seen == expected[: len(seen)]
    assert seen == expected
    tail.close()


def test_a_final_poll_gives_what_a_dead_derived_lane_left_held(tmp_path: Path) -> None:
    source = ROOT / "recordings" / "unanswered-request.jsonl"
    data = two_lane(source.read_bytes(), 0, 3)
    # The derived lane died before its last write: no through covers the last inputs.
    cut = data.rindex(b'"through"')
    path = tmp_path / "cut.jsonl"
    path.write_bytes(data[: data.rindex(b"\n", 0, cut) + 1])
    tail = TraceTail(path, on_skip=lambda _text: None)
    live = tail.poll()
    rest = tail.poll(final=True)
    tail.close()
    assert rest and live + rest == read_records(path)
