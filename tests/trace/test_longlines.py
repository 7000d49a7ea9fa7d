"""Lines that cannot be records are read past, not held; everything around them is read.

These check what the readers return and report around such lines and, at the end,
that none of them holds such a line in memory (a 48 MiB NUL line).
"""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path

import pytest

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace import longlines
from mcpsniff.trace.longlines import NOT_A_RECORD, PROBE, TOO_LONG, ReadPast, line_from
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail
from mcpsniff.trace.writer import TraceWriter


def _frame(seq: int, size: int = 10) -> FrameRecord:
    body = b'{"jsonrpc":"2.0","method":"x","params":{"p":"' + b"a" * size + b'"}}\n'
    return FrameRecord(seq, 1.5, "s", "c2s", "stdio", body)


def _write(path: Path, records: list[FrameRecord | EventRecord]) -> None:
    writer = TraceWriter.create(path)
    writer.write_all(list(records))
    writer.close()


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def _readline(data: bytes):  # type: ignore[no-untyped-def]
    return io.BytesIO(data).readline


def test_line_from_returns_a_short_or_a_record_line_whole() -> None:
    assert line_from(_readline(b"rest\nnext\n"), b"start ") == b"start rest\n"
    big = b'{"type":"frame"' + b"x" * (3 * PROBE) + b"}\n"
    assert line_from(_readline(big[5:]), big[:5]) == big
    # Short junk is the parser's to judge (a record may be glued after it).
    assert line_from(_readline(b"\x00" * 100 + b"\n"), b"\x00") == b"\x00" * 101 + b"\n"
    # The torn last line, without its newline, comes back as it is.
    assert line_from(_readline(b""), b'{"type":"fr') == b'{"type":"fr'


def test_line_from_reads_past_a_long_line_that_is_no_record() -> None:
    junk = b"\x00" * (3 * PROBE)
    assert line_from(_readline(junk[1:] + b"\n{}\n"), junk[:1]) == ReadPast(
        3 * PROBE + 1, True, NOT_A_RECORD
    )
    # At the end of the file: not ended (the torn last line).
    assert line_from(_readline(junk[1:]), junk[:1]) == ReadPast(3 * PROBE, False, NOT_A_RECORD)
    # Blanks first: the first token decides.
    spaced = b" " * (PROBE + 5) + b"\x01" * PROBE + b"\n"
    assert line_from(_readline(spaced[3:]), spaced[:3]) == ReadPast(len(spaced), True, NOT_A_RECORD)


def test_line_from_reads_past_a_line_longer_than_any_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(longlines, "LINE_LIMIT", 3 * PROBE)
    line = b'{"type":"frame"' + b"x" * (5 * PROBE) + b"\n"
    result = line_from(_readline(line[4:]), line[:4])
    assert result == ReadPast(len(line), True, TOO_LONG)


def _junk_trace(tmp_path: Path, junk: bytes) -> tuple[Path, list[FrameRecord]]:
    """Frames of many sizes (lines crossing every block), a junk line, the frames again."""
    frames = [_frame(i, (i * 7919) % 300_000) for i in range(1, 60)]
    frames.append(_frame(60, 2 * PROBE))  # a record longer than PROBE stays a record
    path = tmp_path / "t.jsonl"
    _write(path, frames)
    _append(path, junk + b"\n")
    _append(path, b"not json\n")
    after = path.read_bytes().split(b"\n", 1)[1].split(junk)[0].replace(b"not json\n", b"")
    _append(path, after)
    return path, frames


@pytest.mark.parametrize("junk", [b"\x00" * (3 * PROBE + 17), b"\xff\xfe" * PROBE])
def test_trace_reader_reads_every_record_around_a_junk_line(tmp_path: Path, junk: bytes) -> None:
    path, frames = _junk_trace(tmp_path, junk)
    junk_line = len(frames) + 2
    for method in ("records", "inputs"):
        notes: list[str] = []
        with TraceReader(path, on_skip=notes.append) as reader:
            got = list(getattr(reader, method)())
            assert reader.torn is None
        assert [f.raw for f in got] == [f.raw for f in frames] * 2, method
        # Reported once each, at the right line numbers, the junk with its length.
        assert notes == [
            f"{path}: line {junk_line}: not a JSON record ({len(junk)} bytes, read past); "
            "the record was skipped",
            f"{path}: line {junk_line + 1}: not a JSON record; the record was skipped",
        ], method


def test_trace_reader_reports_a_junk_tail_as_the_torn_last_line(tmp_path: Path) -> None:
    frames = [_frame(i, 400_000) for i in range(1, 4)]
    path = tmp_path / "t.jsonl"
    _write(path, frames)
    _append(path, b"\x00" * (5 * PROBE))
    for method in ("records", "inputs"):
        notes: list[str] = []
        with TraceReader(path, on_skip=notes.append) as reader:
            assert [f.raw for f in getattr(reader, method)()] == [f.raw for f in frames]
            assert reader.torn is not None
            assert (reader.torn.line_number, reader.torn.length) == (5, 5 * PROBE)
        assert notes == []


def _tail_all(path: Path, notes: list[str], step: int) -> list[FrameRecord]:
    tail = TraceTail(path, on_skip=notes.append)
    out: list[FrameRecord] = []
    try:
        while True:
            out.extend(tail.poll(final=True, max_bytes=step))  # type: ignore[arg-type]
            if not tail.more:
                return out
    finally:
        tail.close()


@pytest.mark.parametrize("step", [4096, 300_000, 1 << 30])
def test_trace_tail_reads_every_record_around_a_junk_line(tmp_path: Path, step: int) -> None:
    junk = b"\x00" * (3 * PROBE + 17)
    path, frames = _junk_trace(tmp_path, junk)
    notes: list[str] = []
    got = _tail_all(path, notes, step)
    assert [f.raw for f in got] == [f.raw for f in frames] * 2
    junk_line = len(frames) + 2
    reported = [n.split(": ", 1)[1] for n in notes]
    if step >= len(junk):
        # The whole junk line came in one read: judged as any line is.
        assert reported == [
            f"line {junk_line}: not a JSON record; the record was skipped",
            f"line {junk_line + 1}: not a JSON record; the record was skipped",
        ]
    else:
        assert reported == [
            f"line {junk_line}: not a JSON record ({len(junk)} bytes, read past); "
            "the record was skipped",
            f"line {junk_line + 1}: not a JSON record; the record was skipped",
        ]


def test_trace_tail_keeps_a_record_glued_after_a_short_torn_piece(tmp_path: Path) -> None:
    """A short piece that is no record is kept until its newline: what is glued after it counts."""
    path = tmp_path / "t.jsonl"
    _write(path, [_frame(1)])
    _append(path, b"\x00" * 100)  # a torn write, then another writer's record
    notes: list[str] = []
    tail = TraceTail(path, on_skip=notes.append)
    try:
        assert [f.seq for f in tail.poll()] == [1]  # type: ignore[attr-defined]
        writer = TraceWriter(open(path, "ab"))  # noqa: SIM115 - closed below
        writer.write(_frame(2))
        writer.close()
        assert [f.seq for f in tail.poll()] == [2]  # type: ignore[attr-defined]
    finally:
        tail.close()
    assert len(notes) == 1 and "torn write" in notes[0] and "first 100 bytes" in notes[0]


def test_trace_reader_reads_past_a_junk_line_from_a_pipe(tmp_path: Path) -> None:
    """A pipe cannot be read again to number the junk line: its lines are counted as they pass."""
    import os
    import threading

    junk = b"\x00" * (3 * PROBE + 17)
    path, frames = _junk_trace(tmp_path, junk)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    data = path.read_bytes()

    def feed() -> None:
        with open(fifo, "wb") as handle:
            handle.write(data)

    feeder = threading.Thread(target=feed)
    feeder.start()
    notes: list[str] = []
    try:
        with TraceReader(fifo, on_skip=notes.append) as reader:
            got = list(reader.inputs())
    finally:
        feeder.join()
    assert [f.raw for f in got] == [f.raw for f in frames] * 2
    junk_line = len(frames) + 2
    assert [n.split(": ", 1)[1] for n in notes] == [
        f"line {junk_line}: not a JSON record ({len(junk)} bytes, read past); "
        "the record was skipped",
        f"line {junk_line + 1}: not a JSON record; the record was skipped",
    ]


# ------------------------------------------------------------ memory: a junk line is never held

# The trace readers (trace/reader.py, trace/tail.py) held a junk line whole in memory.
#
# A file system can leave a crashed writer's file with a tail of NUL bytes (the
# size was extended, the data never written), and a sparse or binary file may
# sit behind a valid header. Measured on a trace whose header is followed by a
# 2 GB sparse tail: ``check`` 47 s at 4.7 GB RSS, ``stats``, ``redact``,
# ``export har`` and ``replay serve`` 13-25 s at 4.7 GB each (TraceReader reads
# the line whole to report it as torn), and ``show`` did not finish in 60 s
# (TraceTail copies its growing partial line on every 4 MiB read: quadratic).
# A line whose first byte is not ``{`` can never be a record; it can be skipped
# (and reported with its length) as it is read, as the UI's reader now does
# (tests/ui/test_follow.py).


GALLERY = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"

JUNK = 48 << 20


def _trace(tmp_path: Path, *, records_after: bool) -> tuple[Path, int]:
    """The gallery trace, then ``JUNK`` NUL bytes (sparse), then maybe its records again."""
    path = tmp_path / "t.jsonl"
    data = GALLERY.read_bytes()
    path.write_bytes(data)
    with open(path, "r+b") as handle:
        handle.truncate(len(data) + JUNK)
    records = data.count(b"\n") - 1
    if records_after:
        with open(path, "ab") as handle:
            handle.write(b"\n" + data.split(b"\n", 1)[1])
    return path, records


def _peak(run) -> tuple[object, int]:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        value = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak


@pytest.mark.parametrize("records_after", [False, True], ids=["torn-tail", "mid-file"])
def test_trace_reader_does_not_hold_a_junk_line(tmp_path: Path, records_after: bool) -> None:
    path, records = _trace(tmp_path, records_after=records_after)

    def read() -> int:
        with TraceReader(path, on_skip=lambda _m: None) as reader:
            return sum(1 for _ in reader.records())

    count, peak = _peak(read)
    assert count == records * (2 if records_after else 1)  # nothing lost around the junk
    assert peak < 16 << 20, f"peak {peak >> 20} MiB for a {JUNK >> 20} MiB junk line"


def test_trace_tail_does_not_hold_a_junk_line(tmp_path: Path) -> None:
    path, records = _trace(tmp_path, records_after=True)

    def read() -> int:
        tail = TraceTail(path, on_skip=lambda _m: None)
        count = 0
        try:
            while True:
                count += len(tail.poll(final=True, max_bytes=1 << 20))
                if not tail.more:
                    return count
        finally:
            tail.close()

    count, peak = _peak(read)
    assert count == 2 * records
    assert peak < 16 << 20, f"peak {peak >> 20} MiB for a {JUNK >> 20} MiB junk line"


def test_ls_reads_past_a_junk_line_without_holding_it(tmp_path: Path) -> None:
    """listing/summary.py iterated whole lines: 2 GB of NULs cost ls 17 s and 4.2 GB (fixed)."""
    from mcpsniff.listing.summary import summarize

    path, _records = _trace(tmp_path, records_after=True)
    summary, peak = _peak(lambda: summarize(path))
    assert summary is not None
    assert summary.messages == 2 * GALLERY.read_bytes().count(b'{"type":"message"')
    assert peak < 8 << 20, f"peak {peak >> 20} MiB for a {JUNK >> 20} MiB junk line"


@pytest.mark.parametrize("records_after", [False, True], ids=["torn-tail", "mid-file"])
def test_lazy_records_read_past_a_junk_line(tmp_path: Path, records_after: bool) -> None:
    """filter/reading.py (stats, show --filter) held it whole: 4.7 GB for 2 GB (fixed)."""
    from mcpsniff.filter.reading import LazyTraceRecords

    path, records = _trace(tmp_path, records_after=records_after)
    skipped: list[str] = []
    reader = LazyTraceRecords(path, on_skip=skipped.append)
    count, peak = _peak(lambda: sum(1 for _ in reader))
    assert count == records * (2 if records_after else 1)
    assert peak < 8 << 20, f"peak {peak >> 20} MiB for a {JUNK >> 20} MiB junk line"
    if records_after:
        assert reader.torn is None
        assert len(skipped) == 1 and "not a JSON record" in skipped[0]
    else:
        # Still reported as the torn last line, with its length.
        assert reader.torn is not None and reader.torn.length == JUNK
        assert skipped == []
