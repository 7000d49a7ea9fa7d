"""A relaunch appends a session with its own header line: every reader takes it in stride.

``paths.open_trace_file`` appends a new session to an existing trace and
starts it with a header of its own (the launch's command and label). Such a
line is part of the format, not damage: ``show`` must not warn about it, and
``redact`` must keep it (with its command line redacted), so that the copy
still tells the launches apart.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.trace.paths import open_trace_file
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail
from tests.relay.stdio_support import relay_env

SECRET = "ghp_" + "a1B2c3D4e5" * 4


def _launch(trace: Path, n: int) -> None:
    opened = open_trace_file(
        trace,
        name="srv",
        meta={"source": "test", "command": ["srv", "--api-key", SECRET], "label": f"run{n}"},
        created=1767225600.0 + n,
    )
    writer = opened.writer
    t = 1767225600.0 + n
    writer.write(EventRecord(1, t, "stdio", "session-start", {"transport": "stdio"}))
    raw = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    writer.write(FrameRecord(2, t + 0.1, "stdio", "c2s", "stdio", raw))
    writer.write(MessageRecord(2, "stdio", "c2s", "request", id=1, has_id=True, method="ping"))
    writer.write(EventRecord(3, t + 0.2, "stdio", "session-end", {}))
    writer.close()


def _appended_trace(tmp_path: Path) -> Path:
    trace = tmp_path / "relaunched.jsonl"
    for n in range(3):
        _launch(trace, n)
    headers = [line for line in trace.read_text().splitlines() if '"type":"header"' in line]
    assert len(headers) == 3  # the file's own and one per appended launch
    return trace


def test_show_reads_an_appended_trace_without_a_warning(tmp_path: Path) -> None:
    trace = _appended_trace(tmp_path)
    for args in ([], ["--format", "json"], ["--filter", "method == ping"]):
        result = CliRunner().invoke(main, ["show", str(trace), *args])
        assert result.exit_code == 0, result.output
        assert result.stderr == "", args
        assert sum("ping" in line for line in result.stdout.splitlines()) == 3, args


def test_trace_tail_skips_appended_headers_quietly(tmp_path: Path) -> None:
    trace = _appended_trace(tmp_path)
    skipped: list[str] = []
    tail = TraceTail(trace, on_skip=skipped.append)
    try:
        records = tail.poll(final=True)
    finally:
        tail.close()
    assert skipped == []
    assert tail.header is not None and tail.header["meta"]["label"] == "run0"
    assert sum(isinstance(r, FrameRecord) for r in records) == 3


def test_redact_keeps_each_appended_header_with_its_command_redacted(tmp_path: Path) -> None:
    trace = _appended_trace(tmp_path)
    out = tmp_path / "shared.jsonl"
    result = CliRunner().invoke(main, ["redact", str(trace), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    text = out.read_text()
    assert SECRET not in text
    headers = [json.loads(line) for line in text.splitlines() if '"type":"header"' in line]
    assert [h["meta"]["label"] for h in headers] == ["run0", "run1", "run2"]
    for h in headers:
        assert h["meta"]["command"] == ["srv", "--api-key", "[REDACTED]"]
        assert h["meta"]["redacted"] is True
    # The appended headers keep their place: each before its launch's records.
    lines = text.splitlines()
    second = next(i for i, line in enumerate(lines) if '"label":"run1"' in line)
    assert '"session":"stdio@' in lines[second + 1]
    assert "3 header record(s)" in result.stderr
    # And the copy lists as three launches, like the original.
    listed = CliRunner().invoke(main, ["ls", str(tmp_path), "--format", "json"])
    rows = {Path(r["path"]).name: r for r in map(json.loads, listed.stdout.splitlines())}
    assert rows["shared.jsonl"]["launches"] == rows["relaunched.jsonl"]["launches"] == 3


def test_an_appended_session_s_findings_name_its_own_records(tmp_path: Path) -> None:
    """Live findings of a relaunch say "seq N" of the records they concern, as check does."""
    trace = tmp_path / "relaunched.jsonl"
    for _ in range(2):
        # A ping nobody answers: cat echoes it back, so both sides leave one unanswered.
        done = subprocess.run(
            [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), "--", "cat"],
            input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
            capture_output=True,
            timeout=60,
            env=relay_env(),
        )
        assert done.returncode == 0, done.stderr
    with TraceReader(trace) as reader:
        recorded = [r for r in reader.records() if isinstance(r, FindingRecord)]
    second = [f for f in recorded if "@" in f.session and f.rule == "JR-RESP-REQUIRED"]
    assert second, recorded
    rechecked = CliRunner().invoke(main, ["check", str(trace), "--format", "json"])
    again = [json.loads(line) for line in rechecked.stdout.splitlines()]
    expected = {
        f["message"] for f in again if "@" in f["session"] and f["rule"] == "JR-RESP-REQUIRED"
    }
    assert {f.message for f in second} == expected
    for finding in second:
        assert f"seq {finding.seq[0]})" in finding.message
