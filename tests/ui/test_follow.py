"""``OffsetTail`` on a followed trace (the file grows between polls): long lines.

The UI follows traces being written; a line longer than ``longlines.PROBE``
arrives over several polls. It is judged by the rules every reader shares
(``trace/longlines.py``): kept while it may be a record, read past otherwise.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from mcpsniff.core.model import C2S, EventRecord, FrameRecord
from mcpsniff.trace.codec import TraceError, encode_line
from mcpsniff.trace.longlines import NOT_A_RECORD, PROBE
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
from mcpsniff.ui.follow import Header, OffsetTail, read_record_at, trace_records
from mcpsniff.ui.model import TraceModel
from mcpsniff.ui.report import load_model
from tests.lane_layout import Covered, pieces, two_lane

REPO = Path(__file__).resolve().parents[2]

BIG = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"' + b"x" * (3 * PROBE) + b'"}}\n'
FRAME = FrameRecord(2, 2.0, "s", C2S, "stdio", BIG)
AFTER = EventRecord(3, 3.0, "s", "stderr", {"line": "after"})


def _start(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.write(EventRecord(1, 1.0, "s", "session-start", {}))
    writer.close()
    return path


def _follow(tail: OffsetTail, path: Path, data: bytes, piece: int) -> list[tuple[int, object]]:
    """Append ``data`` to ``path`` ``piece`` bytes at a time, polling after each."""
    got: list[tuple[int, object]] = []
    for start in range(0, len(data), piece):
        with path.open("ab") as file:
            file.write(data[start : start + piece])
        more = True
        while more:
            items, more = tail.poll(limit=PROBE // 2)
            got.extend(items)
            # Never more of a line held than the rules allow (a record may be 3 MiB).
            assert sum(map(len, tail._pieces)) <= len(data)
    return [(offset, item) for offset, item in got if not isinstance(item, Header)]


def test_a_frame_longer_than_the_probe_arrives_whole(tmp_path: Path) -> None:
    path = _start(tmp_path)
    tail = OffsetTail(path)
    tail.poll()
    before = path.stat().st_size
    got = _follow(tail, path, encode_line(FRAME) + encode_line(AFTER), PROBE // 3)
    assert [type(item) for _, item in got] == [FrameRecord, EventRecord]
    offset, frame = got[0]
    assert offset == before
    assert read_record_at(path, offset) == frame
    assert isinstance(frame, FrameRecord) and frame.raw == BIG
    assert got[1][1] == AFTER
    assert (tail.skipped, tail.notes) == (0, [])
    with TraceReader(path) as reader:  # what every other reader reads
        assert list(reader.records())[1:] == [frame, AFTER]


def test_a_junk_line_longer_than_the_probe_is_read_past_not_held(tmp_path: Path) -> None:
    path = _start(tmp_path)
    tail = OffsetTail(path)
    tail.poll()
    junk = b"\x00" * (3 * PROBE) + b"\n"
    got = _follow(tail, path, junk + encode_line(AFTER), PROBE // 3)
    assert [item for _, item in got] == [AFTER]
    assert tail.skipped == 1
    assert tail.notes == [f"line 3: {NOT_A_RECORD}"]
    assert tail._pieces == [] and tail._discarding is None


@pytest.mark.parametrize("piece", [7, 1 << 20], ids=["many-polls", "one-poll"])
def test_a_short_junk_line_is_judged_whole_however_it_arrives(tmp_path: Path, piece: int) -> None:
    """A record glued after junk is read, whether the line came in one poll or many
    (the readers' rule: only a line of PROBE bytes or more is read past unparsed)."""
    path = _start(tmp_path)
    tail = OffsetTail(path)
    tail.poll()
    glued = FrameRecord(2, 2.0, "s", C2S, "stdio", b'{"jsonrpc":"2.0","method":"x"}\n')
    got = _follow(tail, path, b"garbage" + encode_line(glued) + encode_line(AFTER), piece)
    assert [item for _, item in got] == [glued, AFTER]
    assert tail.skipped == 1
    assert tail.notes[0].startswith("line 3: not a JSON record: its first 7 bytes are a torn")


# ---------------------------------------- junk lines and records split across polls

# The UI's trace reader on a 2 GB file without a newline copied the growing partial line on
# every 8 MiB read, and kept all of it.


CLEAN = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"


def test_offset_tail_skips_a_junk_tail_without_holding_it(tmp_path: Path) -> None:
    """A crash can leave a file's tail as NUL bytes: read past, never kept whole."""
    path = tmp_path / "t.jsonl"
    data = CLEAN.read_bytes()
    path.write_bytes(data)
    with open(path, "r+b") as handle:
        handle.truncate(len(data) + (48 << 20))
    with open(path, "ab") as handle:
        handle.write(b"\n" + data.split(b"\n", 1)[1])  # the records again, after the junk
    tail = OffsetTail(path)
    tracemalloc.start()
    try:
        items = []
        more = True
        while more:
            got, more = tail.poll(limit=1 << 20)
            items.extend(got)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert tail.skipped == 1
    lines = data.count(b"\n")
    assert tail.notes == [f"line {lines + 1}: not a JSON record"]
    assert len(items) == 2 * lines - 1  # the records twice, and the one header
    assert tail.consumed == path.stat().st_size


def test_offset_tail_still_reads_a_record_split_across_many_polls(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    data = CLEAN.read_bytes()
    path.write_bytes(data)
    whole = []
    more = True
    reference = OffsetTail(path)
    while more:
        got, more = reference.poll()
        whole.extend(got)
    tail = OffsetTail(path)
    pieces = []
    more = True
    while more or tail.consumed < len(data):
        got, more = tail.poll(limit=7)
        pieces.extend(got)
    assert [(offset, type(item)) for offset, item in pieces] == [
        (offset, type(item)) for offset, item in whole
    ]
    assert tail.skipped == 0


def test_offset_tail_refuses_a_junk_first_line_read_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\x00\xff" * 100 + b"\n" + CLEAN.read_bytes())
    tail = OffsetTail(path)
    with pytest.raises(TraceError, match="no mcpsniff-trace header"):
        for _ in range(100):
            tail.poll(limit=16)


def test_a_pass_without_messages_reads_every_other_record(tmp_path: Path) -> None:
    """``trace_records(messages=False)``: message lines passed over unparsed, the rest read."""
    from mcpsniff.core.model import FindingRecord, MessageRecord
    from mcpsniff.ui.follow import trace_records

    path = _start(tmp_path)
    message = MessageRecord(2, "s", C2S, "request", id=1, has_id=True, method="ping")
    finding = FindingRecord("JR-RESP-REQUIRED", "error", "m", "s", [2])
    with path.open("ab") as handle:
        handle.write(encode_line(FRAME) + encode_line(message) + encode_line(finding))
    every = list(trace_records(path))
    some = list(trace_records(path, messages=False))
    assert any(isinstance(r, MessageRecord) for r in every)
    assert some == [r for r in every if not isinstance(r, MessageRecord)]
    assert [type(r) for r in some] == [EventRecord, FrameRecord, FindingRecord]


def test_a_frame_read_back_is_read_from_its_head(tmp_path: Path) -> None:
    """The detail pane reads a frame back at its offset: a batch's payload stays bytes
    (exact), parsed only when a view asks for its body."""
    from mcpsniff.core.model import UNPARSED
    from mcpsniff.ui.follow import decode_line

    raw = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":18446744073709551617}]\n'
    parsed = FrameRecord(2, 2.0, "s", C2S, "stdio", raw, value=[{}, {}])
    line = encode_line(parsed)
    assert b'"json":[' in line  # embedded, as relays write parsed frames
    frame = decode_line(line)
    assert isinstance(frame, FrameRecord)
    assert frame.raw == raw and frame.value is UNPARSED and frame.seq == 2
    # A line whose head is not a frame's takes the full path, and is refused.
    assert decode_line(b'{"type":"frame","seq":"x","json":[]}\n') is None


def _records(items: list) -> list:
    return [item for _offset, item in items if not isinstance(item, Header)]


def _model_view(model: TraceModel) -> list:
    return [(s.summary(), list(s.all_rows())) for s in model.sessions.values()]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_growing_two_lane_trace_gives_the_one_lane_model(tmp_path: Path, seed: int) -> None:
    source = REPO / "recordings" / "clean-2025-11-25.jsonl"
    expected = _records(OffsetTail(source).poll()[0])
    data = two_lane(source.read_bytes(), seed, 5)
    path = tmp_path / "live.jsonl"
    path.write_bytes(b"")
    tail = OffsetTail(path)
    model = TraceModel(path, "0")
    seen: list = []
    with path.open("ab") as out:
        for piece in pieces(data, seed, 400):
            out.write(piece)
            out.flush()
            items, _more = tail.poll()
            covered = Covered.of(path.read_bytes())
            for offset, item in items:
                if isinstance(item, FrameRecord | EventRecord):
                    assert covered.shows(item.session, item.seq)
                    # The offset still points at the frame's own line.
                    assert read_record_at(path, offset) == item or isinstance(item, EventRecord)
                model.feed(offset, item)
            seen += _records(items)
            assert seen == expected[: len(seen)]
    assert seen == expected and tail.finish() == []
    model.flush()
    assert _model_view(model) == _model_view(load_model(source))


def test_a_pass_without_messages_places_findings_as_in_one_lane(tmp_path: Path) -> None:
    source = REPO / "recordings" / "unanswered-request.jsonl"
    path = tmp_path / "laid.jsonl"
    path.write_bytes(two_lane(source.read_bytes(), 4, 6))
    assert list(trace_records(path, messages=False)) == list(trace_records(source, False))
    assert list(trace_records(path)) == list(trace_records(source))
