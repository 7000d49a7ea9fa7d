"""``mcpsniff.trace.gaps``: what a trace says it lacks, and ``mcpsniff check`` saying it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.gaps import GapTally
from mcpsniff.trace.writer import TraceWriter

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
HANDSHAKE = [
    (
        "c2s",
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}\n',
    ),
    (
        "s2c",
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},'
        b'"serverInfo":{"name":"s","version":"1"}}}\n',
    ),
    ("c2s", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'),
]


def _gap(seq: int, data: dict) -> EventRecord:
    return EventRecord(seq, 1.0, "stdio", "capture-gap", data)


def test_a_trace_without_gaps_has_no_warning() -> None:
    assert GapTally().warning() is None


def test_gaps_add_up_and_the_first_reason_is_kept() -> None:
    tally = GapTally()
    tally.note(_gap(4, {"direction": "c2s", "lost_bytes": 10, "reason": "killed\x1b[2J"}))
    tally.note(_gap(9, {"lost_exchanges": 3, "reason": "other"}))
    tally.note(_gap(11, {"lost_calls": 2, "lost_bytes": 5}))
    warning = tally.warning()
    assert warning is not None
    assert "lacks 15 bytes and 3 exchange(s)" in warning
    assert "3 capture gap(s), the first at seq 4: killed" in warning
    assert "\x1b" not in warning  # the reason comes from a file: escaped


@pytest.mark.parametrize(
    ("channel", "lacks"),
    [
        ({"lost_calls": 2, "lost_bytes": 512, "scope": "bodies"}, "lacks 512 bytes"),
        ({"lost_calls": 2, "lost_bytes": 512}, "lacks 512 bytes"),  # before "scope"
        ({"lost_calls": 4, "lost_bytes": 0, "scope": "capture"}, "lacks 512 bytes"),
    ],
)
def test_the_http_channel_s_body_bytes_are_counted_once(channel: dict, lacks: str) -> None:
    """Body pieces the HTTP channel dropped are a gap of their exchange too: said once."""
    tally = GapTally()
    exchange_gap = {"exchange": 3, "direction": "s2c", "lost_bytes": 512}
    tally.note(EventRecord(4, 1.0, "sid-1", "capture-gap", exchange_gap))
    tally.note(EventRecord(5, 1.0, "http", "capture-gap", channel))
    assert lacks in (tally.warning() or "")
    assert "2 capture gap(s)" in (tally.warning() or "")


def test_the_stdio_channel_s_stderr_bytes_are_counted() -> None:
    """Only the HTTP relay's channel repeats bytes told elsewhere."""
    tally = GapTally()
    tally.note(EventRecord(5, 1.0, "stdio", "capture-gap", {"lost_calls": 2, "lost_bytes": 30}))
    assert "lacks 30 bytes" in (tally.warning() or "")


def test_fields_of_the_wrong_type_count_as_nothing() -> None:
    tally = GapTally()
    tally.note(_gap(1, {"lost_bytes": True, "lost_exchanges": "9", "reason": 7}))
    tally.note(_gap(2, {"lost_bytes": -5}))
    assert (tally.lost_bytes, tally.lost_exchanges, tally.reason) == (0, 0, None)
    assert "lacks traffic that passed" in (tally.warning() or "")


def _write(path: Path, gap_direction: str) -> None:
    writer = TraceWriter.create(path)
    frames = [
        FrameRecord(n, 1.0, "stdio", d, "stdio", raw) for n, (d, raw) in enumerate(HANDSHAKE, 1)
    ]
    writer.write_all(
        [
            *frames,
            FrameRecord(4, 1.0, "stdio", "c2s", "stdio", PING),
            _gap(5, {"direction": gap_direction, "lost_bytes": 37, "reason": "the analysis died"}),
            EventRecord(6, 2.0, "stdio", "session-end", {}),
        ]
    )
    writer.close()


def test_check_does_not_judge_a_request_whose_answer_may_be_in_the_gap(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path, "s2c")
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0, result.stdout
    assert "JR-RESP-REQUIRED" not in result.stdout
    assert "the trace lacks 37 bytes" in result.stderr
    assert "first at seq 5: the analysis died" in result.stderr
    assert "1 request(s) pending across a capture gap were not judged" in result.stderr


def test_check_json_stays_findings_only_and_the_note_goes_to_stderr(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path, "s2c")
    result = CliRunner().invoke(main, ["check", "--format", "json", str(path)])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "1 request(s) pending across a capture gap" in result.stderr


def test_check_warns_about_a_gap_that_hides_no_answer_and_still_reports(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    _write(path, "c2s")  # the client's bytes were lost, not the server's answer
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 1
    assert "JR-RESP-REQUIRED" in result.stdout
    assert "the trace lacks 37 bytes" in result.stderr
    assert "not judged" not in result.stderr


def test_unjudged_responses_are_named_too() -> None:
    tally = GapTally()
    tally.note(_gap(4, {"direction": "c2s", "lost_bytes": 10}))
    tally.unjudged = {"JR-RESP-ID": 2, "JR-RESP-REQUIRED": 3}
    warning = tally.warning() or ""
    assert "3 request(s) pending across a capture gap were not judged" in warning
    assert "2 response(s) with an unknown id after a capture gap were not judged" in warning


def test_check_of_a_whole_trace_does_not_warn(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    writer.write_all([EventRecord(1, 2.0, "stdio", "session-end", {})])
    writer.close()
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0 and "lacks" not in result.stderr


def test_dropped_sessions_are_told_with_or_without_a_capture_gap() -> None:
    tally = GapTally()
    tally.note_dropped()
    tally.note_dropped()
    tally.add_unjudged([], {"JR-RESP-ID": 3})
    alone = tally.warning()
    assert alone is not None
    assert alone.startswith("the analyzer dropped the state of 2 session(s)")
    assert "3 response(s) with an unknown id" in alone
    tally.note(_gap(7, {"direction": "c2s", "lost_bytes": 5}))
    both = tally.warning()
    assert both is not None and both.startswith("the trace lacks 5 bytes")
    assert "dropped the state of 2 session(s)" in both


def test_check_says_which_sessions_a_capped_relay_dropped(tmp_path: Path) -> None:
    # A relay that kept at most 2 sessions: its trace says it dropped "s0",
    # and check, replaying it, excuses the reply to s0's forgotten request.
    from mcpsniff.capture.recorder import TraceRecorder

    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    recorder = TraceRecorder(writer, "stdio", redact=False)
    recorder.analyzer.max_sessions = 2
    for key in ("s0", "s1", "s2"):
        for direction, raw in HANDSHAKE:
            recorder.feed_frame(key, direction, raw.rstrip(b"\n"), 1.0)
    recorder.feed_frame("s1", "c2s", PING.rstrip(b"\n"), 2.0)
    recorder.feed_frame("s0", "s2c", b'{"jsonrpc":"2.0","id":7,"result":{}}', 3.0)
    recorder.close(4.0)
    writer.close()
    result = CliRunner().invoke(main, ["check", str(path)])
    assert "dropped the state of 2 session(s)" in result.stderr  # s0, then s2 for s0
    assert "1 response(s) with an unknown id" in result.stderr
    # The one finding: s1's ping, never answered; nothing about s0's reply.
    assert "1 finding(s) in 3 session(s)" in result.output
    assert "JR-RESP-REQUIRED  seq" in result.output
