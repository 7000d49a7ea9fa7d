"""``frames_only`` and ``AnalyzedRecords``: the views' reading of a trace without messages."""

from __future__ import annotations

from pathlib import Path

from mcpsniff.core.model import FindingRecord, FrameRecord, MessageRecord
from mcpsniff.filter.analyzed import AnalyzedRecords, frames_only
from tests.show.test_run import FULL, frames_copy


def test_a_recorded_trace_is_not_frames_only() -> None:
    assert frames_only(FULL) is False


def test_a_trace_of_frames_is_frames_only(tmp_path: Path) -> None:
    assert frames_only(frames_copy(tmp_path)) is True


def test_a_trace_without_frames_is_not_frames_only(tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    path.write_bytes(FULL.read_bytes().splitlines(keepends=True)[0])
    assert frames_only(path) is False


def test_the_analysis_derives_what_was_recorded(tmp_path: Path) -> None:
    """The gallery trace was recorded by the analyzer: its messages and findings come back."""
    from mcpsniff.trace.reader import TraceReader

    with TraceReader(FULL) as reader:
        recorded = [r for r in reader.records() if isinstance(r, MessageRecord | FindingRecord)]
    records = AnalyzedRecords(frames_copy(tmp_path), on_skip=lambda _: None)
    derived = [r for r in records if isinstance(r, MessageRecord | FindingRecord)]
    assert derived == recorded
    assert [r.rule for r in derived if isinstance(r, FindingRecord)] == ["JR-RESP-REQUIRED"]
    assert records.torn is None


def test_a_torn_last_line_is_described(tmp_path: Path) -> None:
    path = frames_copy(tmp_path)
    path.write_bytes(path.read_bytes()[:-20])
    records = AnalyzedRecords(path, on_skip=lambda _: None)
    frames = [r for r in records if isinstance(r, FrameRecord)]
    assert len(frames) == 8
    assert records.torn is not None and records.torn.line_number == 11


def test_the_analyzed_copy_is_private_named_as_the_trace_and_removed(tmp_path: Path) -> None:
    from mcpsniff.filter.analyzed import analyzed_copy
    from mcpsniff.trace.reader import TraceReader

    frames = frames_copy(tmp_path)
    with analyzed_copy(frames) as copy:
        assert copy.name == frames.name and copy.parent != frames.parent
        assert copy.stat().st_mode & 0o777 == 0o600
        assert copy.parent.stat().st_mode & 0o777 == 0o700
        with TraceReader(copy) as reader, TraceReader(FULL) as original:
            assert reader.header["meta"] == original.header["meta"]
            assert reader.header["created"] == original.header["created"]
            assert list(reader.records()) == list(original.records())
    assert not copy.exists() and not copy.parent.exists()
