"""The recorded script ``replay drive`` plays (replay/script.py): choosing its sessions.

A ``--session`` that names no session of the trace is refused with a list of the
sessions there are; a peer's session keys can be 100,000 characters, and a trace
can hold thousands of sessions, so the list is cut.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from tests.support import long_keys_trace


def test_replay_drive_cuts_long_session_keys_in_its_error(tmp_path: Path) -> None:
    path = long_keys_trace(tmp_path)
    result = CliRunner().invoke(
        main, ["replay", "drive", str(path), "--session", "x", "--", "true"]
    )
    assert result.exit_code == 2, result.output
    assert "no session" in result.output
    assert max(len(line) for line in result.output.splitlines()) < 2000


def test_replay_drive_lists_twenty_sessions_and_counts_the_rest(tmp_path: Path) -> None:
    from mcpsniff.core.analyzer import replay
    from mcpsniff.core.model import FrameRecord
    from mcpsniff.trace.writer import TraceWriter

    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    pong = b'{"jsonrpc":"2.0","id":1,"result":{}}\n'
    records = []
    for n in range(25):
        records.append(FrameRecord(2 * n + 1, 1.0 + n, f"s{n:02d}", "c2s", "stdio", ping))
        records.append(FrameRecord(2 * n + 2, 1.5 + n, f"s{n:02d}", "s2c", "stdio", pong))
    path = tmp_path / "many.jsonl"
    writer = TraceWriter.create(path, meta={"source": "tests"})
    writer.write_all(list(replay(records)))
    writer.close()
    result = CliRunner().invoke(
        main, ["replay", "drive", str(path), "--session", "x", "--", "true"]
    )
    assert result.exit_code == 2, result.output
    assert "s19 (" in result.output and "s20 (" not in result.output
    assert "and 5 more" in result.output


def test_a_two_lane_trace_gives_the_one_lane_script(tmp_path: Path) -> None:
    from mcpsniff.replay.script import load_script
    from tests.lane_layout import two_lane

    source = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"
    laid = tmp_path / "laid.jsonl"
    laid.write_bytes(two_lane(source.read_bytes(), 2, 5))
    warnings: list[str] = []
    got = load_script(laid, warn=warnings.append)
    expected = load_script(source)
    assert warnings == []
    assert got.frames and got.frames == expected.frames
    assert got.messages() == expected.messages() and got.sessions == expected.sessions
