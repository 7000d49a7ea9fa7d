"""``run_report``: the page or the diagram, notes on the side, ReportError for nothing to draw."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.ui.report_run import ReportError, ReportOptions, run_report

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
TRACE = RECORDINGS / "string-id-echo.jsonl"


def test_run_report_hands_the_diagram_to_write_when_there_is_no_file() -> None:
    written: list[str] = []
    notes: list[str] = []
    result = run_report(ReportOptions(TRACE, None, "mermaid"), written.append, notes.append)
    assert result is None
    (text,) = written
    assert text.startswith("sequenceDiagram") and "initialize" in text
    assert notes == []


def test_run_report_writes_the_page_beside_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(TRACE.read_bytes())
    written: list[str] = []
    result = run_report(ReportOptions(trace, None, "html"), written.append, print)
    assert result is not None and result.sessions == 1
    assert (tmp_path / "t.html").read_text().startswith("<!doctype html>")
    assert written == []


def test_run_report_names_the_sessions_when_the_asked_one_is_missing() -> None:
    options = ReportOptions(TRACE, None, "mermaid", session_key="nope")
    with pytest.raises(ReportError) as caught:
        run_report(options, print, print)
    assert str(caught.value).startswith(f"no session 'nope' in {TRACE} (")
