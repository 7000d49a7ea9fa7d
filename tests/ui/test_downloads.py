"""A session of a trace as a file: the slice holds its records byte for byte, and only its."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.trace.reader import TraceReader
from mcpsniff.ui.downloads import DownloadError, session_download, session_slice
from tests.ui.support import GALLERY


def two_sessions(tmp_path: Path) -> Path:
    """A trace of two sessions ("a" and "b\\"q", a key with an escape), interleaved."""
    source = (GALLERY / "clean-2025-11-25.jsonl").read_bytes().splitlines(keepends=True)
    header, body = source[0], source[1:]
    other = [line.replace(b'"session":"clean-2025-11-25"', b'"session":"b\\"q"') for line in body]
    mixed = [x for pair in zip(body, other, strict=True) for x in pair]
    path = tmp_path / "two.jsonl"
    path.write_bytes(header + b"".join(mixed))
    return path


def test_the_slice_is_the_header_and_the_sessions_own_lines(tmp_path: Path) -> None:
    path = two_sessions(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    sliced = session_slice(path, 'b"q')
    assert sliced == lines[0] + b"".join(lines[2::2])
    with TraceReader(_write(tmp_path / "s.jsonl", sliced)) as reader:
        sessions = {getattr(r, "session", None) for r in reader.records()}
    assert sessions == {'b"q'}
    # Near miss: a key that is a prefix of another selects nothing of it.
    assert session_slice(path, "b") == lines[0]


def test_a_report_downloads_and_a_stdio_har_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = two_sessions(tmp_path)
    report = session_download(path, "clean-2025-11-25", "html")
    assert report.media_type == "text/html"
    assert report.filename == "two-clean-2025-11-25.html"
    assert b"<title>mcpsniff report</title>" in report.body
    with pytest.raises(DownloadError, match="this session is stdio"):
        session_download(path, "clean-2025-11-25", "har")
    hostile = session_download(path, 'b"q', "jsonl")
    assert hostile.filename == "two-b_q.jsonl"  # nothing that could leave the header's quotes


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_two_lane_session_slices_with_its_lane_records(tmp_path: Path) -> None:
    from tests.lane_layout import two_lane

    source = GALLERY / "unanswered-request.jsonl"
    laid = tmp_path / "laid.jsonl"
    laid.write_bytes(two_lane(source.read_bytes(), 1, 4))
    sliced = session_slice(laid, "unanswered-request")
    assert sliced.count(b'{"type":"lane"') == laid.read_bytes().count(b'{"type":"lane"') > 1
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(session_slice(source, "unanswered-request"))
    two.write_bytes(sliced)
    with TraceReader(one) as first, TraceReader(two) as second:
        assert list(second.records()) == list(first.records())
    html = session_download(laid, "unanswered-request", "html").body
    assert html == session_download(source, "unanswered-request", "html").body
