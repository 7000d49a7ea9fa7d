"""``mcpsniff.trace.gaps``: what a trace says it lacks, and ``mcpsniff check`` saying it."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.trace.format import TraceWriter
from mcpsniff.trace.gaps import GapTally

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


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


def test_fields_of_the_wrong_type_count_as_nothing() -> None:
    tally = GapTally()
    tally.note(_gap(1, {"lost_bytes": True, "lost_exchanges": "9", "reason": 7}))
    tally.note(_gap(2, {"lost_bytes": -5}))
    assert (tally.lost_bytes, tally.lost_exchanges, tally.reason) == (0, 0, None)
    assert "lacks traffic that passed" in (tally.warning() or "")


def test_check_warns_about_the_gap_and_still_reports(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    writer.write_all(
        [
            FrameRecord(1, 1.0, "stdio", "c2s", "stdio", PING),
            _gap(2, {"direction": "s2c", "lost_bytes": 37, "reason": "the analysis died"}),
            EventRecord(3, 2.0, "stdio", "session-end", {}),
        ]
    )
    writer.close()
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 1  # the ping is still reported
    assert "JR-RESP-REQUIRED" in result.stdout
    assert "the trace lacks 37 bytes" in result.stderr
    assert "first at seq 2: the analysis died" in result.stderr


def test_check_of_a_whole_trace_does_not_warn(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path)
    writer.write_all([EventRecord(1, 2.0, "stdio", "session-end", {})])
    writer.close()
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0 and "lacks" not in result.stderr
