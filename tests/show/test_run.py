"""``run_show``: the timeline on stdout, notes on the side, ShowError for an unreadable trace."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsniff.filter import compile_filter
from mcpsniff.show.run import ShowError, ShowOptions, run_show
from tests.relay.stdio_support import relay_env

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


# ----------------------------------------------------------------------------
# `mcpsniff show` on a trace of frames without message records (cut by hand, or
# written without analysis): its frames are analyzed, as `check` analyzes them,
# instead of printing only the events and nothing of the traffic.


FULL = RECORDINGS / "unanswered-request.jsonl"


def frames_copy(tmp_path: Path) -> Path:
    """``FULL`` without its message and finding lines: the header, events and frames."""
    path = tmp_path / "frames.jsonl"
    kept = [
        line
        for line in FULL.read_bytes().splitlines(keepends=True)
        if not line.startswith((b'{"type":"message"', b'{"type":"finding"'))
    ]
    assert any(line.startswith(b'{"type":"frame"') for line in kept)
    path.write_bytes(b"".join(kept))
    return path


@pytest.fixture
def frames_only(tmp_path: Path) -> Path:
    return frames_copy(tmp_path)


def _show(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "show", *args],
        capture_output=True,
        text=True,
        env=relay_env(NO_COLOR="1"),
        timeout=60,
    )


def test_frames_are_analyzed_and_shown_as_a_recorded_trace_is(frames_only: Path) -> None:
    recorded = _show(str(FULL))
    analyzed = _show(str(frames_only))
    assert recorded.returncode == analyzed.returncode == 0, analyzed.stderr
    assert "C→S request  id=3 tools/call add" in analyzed.stdout
    assert "JR-RESP-REQUIRED" in analyzed.stdout
    assert analyzed.stdout == recorded.stdout
    assert recorded.stderr == ""
    assert analyzed.stderr.splitlines() == [
        f"mcpsniff show: {frames_only} holds frames but no message records: "
        "analyzing its frames with today's rules, as check does"
    ]


@pytest.mark.parametrize(
    "args",
    [["--filter", "severity >= error"], ["--format", "json"], ["-vv"]],
    ids=["filter", "json", "raw"],
)
def test_the_options_see_the_analyzed_messages(frames_only: Path, args: list[str]) -> None:
    recorded = _show(*args, str(FULL))
    analyzed = _show(*args, str(frames_only))
    assert analyzed.returncode == 0, analyzed.stderr
    assert analyzed.stdout == recorded.stdout
    assert "tools/call" in analyzed.stdout


def test_a_trace_of_events_only_is_not_analyzed(tmp_path: Path) -> None:
    """Nothing to analyze: the events are shown, with no note."""
    path = tmp_path / "events.jsonl"
    lines = FULL.read_bytes().splitlines(keepends=True)
    path.write_bytes(
        b"".join(x for x in lines if x.startswith((b'{"type":"header', b'{"type":"event')))
    )
    result = _show(str(path))
    assert result.returncode == 0
    assert result.stderr == ""
    assert [line.split("··· ")[1] for line in result.stdout.splitlines()] == [
        "session-start transport=stdio",
        "session-end",
    ]


def test_follow_says_why_it_shows_only_events(frames_only: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "show", "-f", "--interval", "0.05", str(frames_only)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=relay_env(NO_COLOR="1"),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed after the warning, if any
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert b"session-start" in first
    assert err.decode().splitlines() == [
        f"mcpsniff show: warning: {frames_only} holds frames but no message records, so "
        "--follow shows only its events; without --follow its frames are analyzed"
    ]
