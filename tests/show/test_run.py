"""``run_show``: the timeline on stdout, notes on the side, ShowError for an unreadable trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.filter import compile_filter
from mcpsniff.show.run import ShowError, ShowOptions, run_show

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def test_run_show_prints_the_timeline_and_notes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    notes: list[str] = []
    run_show(ShowOptions(RECORDINGS / "string-id-echo.jsonl"), notes.append)
    out = capsys.readouterr().out
    assert "initialize" in out and "JR-RESP-ID" in out
    assert notes == []


def test_run_show_notes_a_filter_that_matched_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    notes: list[str] = []
    flt = compile_filter('method == "no/such/method"')
    run_show(ShowOptions(RECORDINGS / "string-id-echo.jsonl", flt=flt), notes.append)
    assert capsys.readouterr().out == ""
    assert notes == ["no message or event matched --filter"]


def test_run_show_on_a_missing_trace_raises_one_line(tmp_path: Path) -> None:
    with pytest.raises(ShowError) as caught:
        run_show(ShowOptions(tmp_path / "absent.jsonl"), print)
    assert str(caught.value) == f"{tmp_path / 'absent.jsonl'}: no such file"
