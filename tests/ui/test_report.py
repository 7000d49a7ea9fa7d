"""``mcpsniff report`` (ui/report.py): its output paths and the traces it refuses.

Found as a new user would: ``report --format mermaid -o TRACE`` wrote the
diagram over the recording itself (the HTML format refused); the default
``TRACE.html`` was written through a symlink planted there, over whatever it
pointed to; a 2 GB file without a newline made ``report`` hang (its reader
copied the growing partial line on every 8 MiB read, and kept all of it),
where every other command refuses such a file at once; and ``report`` drew a
trace of format version 99, which every other command refuses.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import EventRecord, FrameRecord, MessageRecord
from mcpsniff.trace.writer import TraceWriter
from tests.support import long_keys_trace

GALLERY = Path(__file__).resolve().parents[2] / "recordings" / "clean-2025-11-25.jsonl"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(GALLERY.read_bytes())
    return path


@pytest.mark.parametrize("fmt", ["mermaid", "html"])
def test_report_never_writes_over_its_own_trace(trace: Path, fmt: str) -> None:
    before = trace.read_bytes()
    link = trace.parent / "link.jsonl"
    link.symlink_to(trace.name)
    for target in (trace, link):
        result = CliRunner().invoke(
            main, ["report", str(trace), "--format", fmt, "-o", str(target)]
        )
        assert result.exit_code == 2, result.output
        assert "is the trace itself" in result.output
    assert trace.read_bytes() == before


def test_report_refuses_a_symlink_at_the_default_page_path(trace: Path) -> None:
    victim = trace.parent / "victim.txt"
    victim.write_text("user data\n")
    (trace.parent / "t.html").symlink_to(victim)
    result = CliRunner().invoke(main, ["report", str(trace)])
    assert result.exit_code == 2, result.output
    assert "t.html is a symlink; name the page with -o FILE" in result.output
    assert victim.read_text() == "user data\n"


def test_report_rewrites_its_own_default_page(trace: Path) -> None:
    """The refusal is for links and special files; regenerating a page still works."""
    page = trace.with_suffix(".html")
    page.write_text("old page")
    result = CliRunner().invoke(main, ["report", str(trace)])
    assert result.exit_code == 0, result.output
    assert page.read_text().startswith("<!doctype html>")


def test_report_refuses_a_huge_first_line_at_once(tmp_path: Path) -> None:
    path = tmp_path / "sparse.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(64 << 20)  # sparse: NUL bytes, no newline
    result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid"])
    assert result.exit_code == 2, result.output
    assert "line 1 is longer than 1 MiB, no header" in result.output


def test_report_refuses_a_format_version_it_does_not_read(tmp_path: Path) -> None:
    path = tmp_path / "v99.jsonl"
    path.write_bytes(GALLERY.read_bytes().replace(b'"version":2', b'"version":99', 1))
    for args in (["--format", "mermaid"], ["-o", str(tmp_path / "r.html")]):
        result = CliRunner().invoke(main, ["report", str(path), *args])
        assert result.exit_code == 2, result.output
        assert "trace format version 99 is not supported" in result.output
    assert not (tmp_path / "r.html").exists()


def test_report_messages_cut_long_session_keys(tmp_path: Path) -> None:
    path = long_keys_trace(tmp_path)
    for args in (["--session", "nope" * 50_000], []):
        result = CliRunner().invoke(main, ["report", str(path), "--format", "mermaid", *args])
        lines = [line for line in result.output.splitlines() if line.startswith("mcpsniff")]
        assert lines, result.output
        assert max(len(line) for line in lines) < 600, [len(line) for line in lines]
        assert "aaaa" in lines[0]


# ----------------------------------------------------------------------------
# A redacted trace stays redacted in its report: the report shows what the trace holds.


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


def _batch_trace(path: Path) -> Path:
    """Two sessions recorded as a relay records them: batches with findings in one,
    a request never answered (a finding raised at the end) in both."""
    from mcpsniff.core.analyzer import replay

    init = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
        b'"2025-03-26","capabilities":{},"clientInfo":{"name":"c"}}}\n'
    )
    reply = (
        b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26",'
        b'"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n'
    )
    calls = (
        b"["
        + b",".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}' % i
            for i in range(1, 6)
        )
        + b',{"id":9,"method":"tools/call"}]\n'
    )
    results = (
        b"["
        + b",".join(
            b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":%s}}'
            % (i, b"true" if i == 2 else b"false")
            for i in (3, 1, 2, 5)
        )
        + b"]\n"
    )
    frames = []
    for key in ("a", "b"):
        frames += [(key, "c2s", init), (key, "s2c", reply)]
        frames += [(key, "c2s", b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')]
    frames += [("a", "c2s", calls), ("a", "s2c", results)]
    frames += [("b", "c2s", b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')]
    records = [
        FrameRecord(n + 1, 1767225600.0 + n, key, d, "stdio", raw)
        for n, (key, d, raw) in enumerate(frames)
    ]
    end = len(records)
    records += [
        EventRecord(end + n, 1767225700.0, k, "session-end", {}) for n, k in enumerate("ab", 1)
    ]
    writer = TraceWriter.create(path, meta={"source": "test"})
    writer.write_all(list(replay(records)))
    writer.close()
    return path


@pytest.mark.parametrize("expression", [None, "kind == request", "severity >= warning", "echo"])
def test_the_page_sums_each_session_up_as_stats_does(
    tmp_path: Path, expression: str | None
) -> None:
    """The figures come from the model's own pass now: they must stay ``stats``'s."""
    from mcpsniff.filter import compile_filter
    from mcpsniff.stats.compute import compute
    from mcpsniff.ui.details import json_safe
    from mcpsniff.ui.queries import session_views
    from mcpsniff.ui.report import load_model, report_data

    path = _batch_trace(tmp_path / "t.jsonl")
    flt = compile_filter(expression) if expression is not None else None
    page, _result = report_data(path, flt)
    model = load_model(path)
    findings = 0
    assert page["sessions"], "the filter matches something in every case"
    for summary in page["sessions"]:
        key = summary["key"]
        expected = json_safe(compute(session_views(path, {key}), flt).to_json())
        got = dict(page["data"][summary["id"]]["stats"])
        got.pop("layer_titles")
        assert got == expected
        assert model.sessions[key].key == key
        findings += sum(got["findings"].values())
    assert findings > 0  # the batch's bad element and the unanswered ping are counted


def test_the_scan_keeps_the_findings_of_exactly_the_sessions_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the session cap the scan drops the findings of every session pushed out
    of the newest so far; what remains is the kept sessions' findings, ties included."""
    from mcpsniff.core.analyzer import replay
    from mcpsniff.ui import report
    from mcpsniff.ui.queries import findings_index

    monkeypatch.setattr(report, "REPORT_SESSIONS", 3)
    starts = [5.0, 1.0, 9.0, 5.0, 7.0, 5.0, 2.0, 9.0, 5.0, 3.0]
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    frames = [FrameRecord(n + 1, t, f"s{n}", "c2s", "stdio", ping) for n, t in enumerate(starts)]
    path = tmp_path / "t.jsonl"
    writer = TraceWriter.create(path, meta={})
    writer.write_all(list(replay(frames)))
    writer.close()
    got, index, dropped = report._scan(path, False)
    keep = report._newest(got, list(got))
    assert keep == {"s2", "s7", "s4"}  # 9.0, 9.0, 7.0
    assert keep.isdisjoint(dropped) and len(dropped) == len(starts) - 3
    assert index == findings_index(path, keep) and index
    page, result = report.report_data(path)
    assert {s["key"] for s in page["sessions"]} == keep and result.sessions_cut == 7
    # A tie at the bar: the earlier of two sessions starting at 5.0 is kept, as _newest keeps it.
    monkeypatch.setattr(report, "REPORT_SESSIONS", 5)
    got, index, dropped = report._scan(path, False)
    keep = report._newest(got, list(got))
    assert keep == {"s2", "s7", "s4", "s0", "s3"}
    assert keep.isdisjoint(dropped) and index == findings_index(path, keep)
