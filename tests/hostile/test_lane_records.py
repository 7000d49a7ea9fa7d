"""Hostile ``lane`` records (docs/trace-format.md): no traceback, bounded memory."""

from __future__ import annotations

import tracemalloc
from collections import deque
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.lanes import MAX_HELD
from mcpsniff.trace.reader import TraceReader
from mcpsniff.ui.follow import trace_records

HEADER = b'{"type":"header","format":"mcpsniff-trace","version":2,"tool":"t","meta":{}}\n'


def _frame(seq: int, session: str = "s") -> bytes:
    return (
        b'{"type":"frame","seq":%d,"t":1.0,"session":"%s","dir":"c2s","transport":"stdio",'
        b'"eol":"\\n","len":2,"json":{}}\n' % (seq, session.encode())
    )


def _peak(read: callable) -> tuple[int, object]:
    tracemalloc.start()
    try:
        result = read()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def test_a_million_open_records(tmp_path: Path) -> None:
    path = tmp_path / "opens.jsonl"
    with path.open("wb") as out:
        out.write(HEADER)
        out.writelines(b'{"type":"lane","session":"s%d","open":1}\n' % n for n in range(1_000_000))
        out.write(_frame(1, "s999999") + _frame(2, "s3"))
    skipped: list[str] = []

    def read() -> list:
        with TraceReader(path, on_skip=skipped.append) as reader:
            return [r.seq for r in reader.records()]

    peak, seqs = _peak(read)
    assert seqs == [1, 2] and len(skipped) == 1 and "more than 10000 sessions" in skipped[0]
    assert peak < 32 << 20


def test_inputs_no_through_ever_covers_are_held_within_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "held.jsonl"
    count = MAX_HELD + 10_000
    with path.open("wb") as out:
        out.write(HEADER + b'{"type":"lane","session":"s","open":1}\n')
        out.write(b'{"type":"lane","session":"s","through":0}\n')
        out.writelines(_frame(n) for n in range(1, count + 1))
    peak, seqs = _peak(lambda: deque((r.seq for r in trace_records(path)), maxlen=3))
    assert list(seqs) == [count - 2, count - 1, count]
    # About 100,000 frames held, a few hundred bytes each.
    assert peak < 160 << 20


def test_commands_read_hostile_lane_records_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    lines = [
        b'{"type":"lane","session":"s","open":1}\n',
        _frame(1),
        b'{"type":"lane","session":"s","through":1000000000000000000000000000000}\n',
        b'{"type":"lane","session":"s","through":"1"}\n',
        b'{"type":"lane","session":"s","input":-3}\n',
        b'{"type":"lane","session":["s"],"lost":1}\n',
        b'{"type":"lane"}\n',
        b'{"type":"lane","session":"s","through":5}\n',
        b'{"type":"lane","session":"s","through":2}\n',
        b'{"type":"message","frame":77,"session":"s","dir":"c2s","kind":"request","method":"x"}\n',
        b'{"type":"finding","rule":"R","severity":"error","message":"m","session":"s","seq":[1]}\n',
        b'{"type":"lane","session":"nobody","input":4}\n',
        _frame(2),
    ]
    path.write_bytes(HEADER + b"".join(lines))
    for args in (
        ["show", str(path)],
        ["show", "--format", "json", str(path)],
        ["stats", "--format", "json", str(path)],
        ["check", "--format", "json", str(path)],
        ["report", "-o", str(tmp_path / "r.html"), str(path)],
        ["export", "har", str(path)],
        ["ls", str(tmp_path)],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        assert "Traceback" not in result.output
    with TraceReader(path, on_skip=lambda _text: None) as reader:
        records = list(reader.records())
        reasons = [reason for _number, reason in reader.skipped]
    assert [type(r).__name__ for r in records] == [
        "FrameRecord",
        "MessageRecord",
        "FindingRecord",
        "FrameRecord",
    ]
    assert len(reasons) == 7 and "through 2 goes back from 5" in reasons
