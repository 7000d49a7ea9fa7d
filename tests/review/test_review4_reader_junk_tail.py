"""Review 4: the trace readers of trace/format.py hold a junk line whole in memory.

A file system can leave a crashed writer's file with a tail of NUL bytes (the
size was extended, the data never written), and a sparse or binary file may
sit behind a valid header. Measured on a trace whose header is followed by a
2 GB sparse tail: ``check`` 47 s at 4.7 GB RSS, ``stats``, ``redact``,
``export har`` and ``replay serve`` 13-25 s at 4.7 GB each (TraceReader reads
the line whole to report it as torn), and ``show`` did not finish in 60 s
(TraceTail copies its growing partial line on every 4 MiB read: quadratic).
A line whose first byte is not ``{`` can never be a record; it can be skipped
(and reported with its length) as it is read, as the UI's reader now does
(tests/review/test_review4_report.py).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail

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
