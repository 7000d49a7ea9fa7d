"""A redacted trace stays redacted in its report: the report shows what the trace holds."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import FrameRecord, MessageRecord
from mcpsniff.trace.writer import TraceWriter

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


def test_a_redacted_trace_reports_no_secret(tmp_path: Path) -> None:
    trace = tmp_path / "raw.jsonl"
    writer = TraceWriter.create(trace, meta={}, created=1.0)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "fetch", "arguments": {"api_key": SECRET, "url": "https://x"}},
    }
    writer.write(FrameRecord(1, 1.0, "s", "c2s", "stdio", json.dumps(body).encode() + b"\n"))
    writer.write(MessageRecord(1, "s", "c2s", "request", id=1, has_id=True, method="tools/call"))
    writer.close()
    runner = CliRunner()
    plain = tmp_path / "plain.html"
    assert runner.invoke(main, ["report", str(trace), "-o", str(plain)]).exit_code == 0
    assert SECRET in plain.read_text()  # the report shows what the trace holds ...
    redacted = tmp_path / "redacted.jsonl"
    result = runner.invoke(main, ["redact", str(trace), "-o", str(redacted)])
    assert result.exit_code == 0, result.output
    assert SECRET not in redacted.read_text()
    out = tmp_path / "redacted.html"
    assert runner.invoke(main, ["report", str(redacted), "-o", str(out)]).exit_code == 0
    html = out.read_text()
    assert SECRET not in html and SECRET[:12] not in html  # ... and nothing more
    assert "fetch" in html
    assert oct(out.stat().st_mode & 0o777) == "0o600"
