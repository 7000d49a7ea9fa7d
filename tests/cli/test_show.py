"""``mcpsniff show``: -v bodies, -vv raw bytes, --format json, --filter, annotations, --follow."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.trace.writer import TraceWriter
from tests.conftest import Conversation, notification, request, result
from tests.relay.stdio_support import show_follow, stop_follow

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = Conversation()
    c.handshake()
    c.client(request(1, "tools/call", {"name": "fs_read", "arguments": {"path": "/etc"}}))
    c.server(result(1, {"content": [{"type": "text", "text": "denied"}], "isError": True}))
    c.client(
        request(
            2, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "tok"}}
        )
    )
    c.server(
        notification("notifications/progress", {"progressToken": "tok", "progress": 3, "total": 10})
    )
    c.t += 5.0
    c.client(notification("notifications/cancelled", {"requestId": 2, "reason": "user"}))
    c.client(request(3, "tools/call", {"name": "evil\x1b]0;pwned\x07", "arguments": {}}))
    c.server(result(3, {"content": [{"type": "text", "text": "\u202etxt.exe"}]}))
    c.close()
    path = tmp_path_factory.mktemp("show") / "t.jsonl"
    writer = TraceWriter.create(path, meta={})
    writer.write_all(c.records)
    writer.close()
    return path


def show(*args: str) -> list[str]:
    result = CliRunner().invoke(main, ["show", *args])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_tool_errors_cancellations_and_progress_are_annotated(trace: Path) -> None:
    lines = show(str(trace))
    i = next(n for n, line in enumerate(lines) if "result" in line and "id=1" in line)
    assert lines[i + 1].strip() == "✖ tool error (result with isError: true)"
    assert '      progress 3/10 token="tok"' in lines
    j = next(n for n, line in enumerate(lines) if "notifications/cancelled" in line)
    assert lines[j + 1].strip() == "cancels requestId=2 (tools/call slow, seq 6)"
    assert lines[j + 2].strip() == "ℹ request 2 was cancelled after 5.00 s without an answer"


def test_verbose_prints_bodies_and_raw_bytes_safely(trace: Path) -> None:
    lines = show(str(trace), "-vv", "--filter", "id == 3")
    text = "\n".join(lines)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert '"name": "evil\\u001b]0;pwned\\u0007"' in text  # JSON's own escapes, shown as such
    assert '"text": "\\u202etxt.exe"' in text  # the bidi override made visible
    raws = [line.strip() for line in lines if line.strip().startswith("raw ")]
    assert len(raws) == 2
    assert raws[0].endswith("\\x0a")
    # -v: bodies without the raw line
    assert not [line for line in show(str(trace), "-v", "--filter", "id == 3") if "raw " in line]


def test_filter_keeps_matching_messages_and_labels_responses(trace: Path) -> None:
    title, *lines = show(str(trace), "--filter", "kind == response and tool == fs_read")
    # The session's title above its first line, as an unfiltered show lists it first.
    assert title == "session test: s 1 · client t 1 · 1970-01-01 00:16:40 · 6.0 s · ended"
    assert len(lines) == 2
    # The request was filtered out, yet the response still names it.
    assert "result" in lines[0] and "tools/call fs_read" in lines[0]
    assert "isError" in lines[1]


def test_json_lines_for_scripts(trace: Path) -> None:
    lines = show(
        str(trace),
        "--format",
        "json",
        "--filter",
        "tool == slow or method == notifications/progress",
    )
    objs = [orjson.loads(line) for line in lines]
    assert [o["kind"] for o in objs] == ["request", "notification", "notification"]
    progress, cancel = objs[1], objs[2]
    assert progress["progress"] == {"progressToken": "tok", "progress": 3, "total": 10}
    assert cancel["request_id"] == 2
    assert cancel["cancelled"]["method"] == "tools/call" and not cancel["cancelled"]["answered"]
    assert cancel["cancelled"]["after_s"] == pytest.approx(5.001, abs=0.002)
    assert objs[0]["body"]["params"]["name"] == "slow"
    (error,) = [
        orjson.loads(line)
        for line in show(str(trace), "--format", "json", "--filter", "error.type == tool_error")
    ]
    assert error["is_error"] is True and error["tool"] == "fs_read"
    raw = [
        orjson.loads(line)
        for line in show(str(trace), "--format", "json", "-vv", "--filter", "id == 1")
    ]
    assert raw[0]["raw"].endswith("\n") and orjson.loads(raw[0]["raw"]) == raw[0]["body"]


def test_json_output_is_terminal_safe(trace: Path) -> None:
    lines = show(str(trace), "--format", "json", "--filter", "id == 3")
    assert all("\u202e" not in line and "\x1b" not in line for line in lines)
    assert orjson.loads(lines[1])["body"]["result"]["content"][0]["text"] == "\u202etxt.exe"


def test_late_findings_sit_with_their_request_when_filtering() -> None:
    title, *lines = show(
        str(RECORDINGS / "unanswered-request.jsonl"), "--filter", "rule == JR-RESP-REQUIRED"
    )
    assert title.startswith("session unanswered-request: gallery-server 1.0 · client ")
    assert len(lines) == 2
    assert "request" in lines[0] and "id=3" in lines[0]
    assert "JR-RESP-REQUIRED" in lines[1]


def test_bad_filter_is_one_line_with_a_caret(trace: Path) -> None:
    result = CliRunner().invoke(main, ["show", str(trace), "--filter", "kind == reqest"])
    assert result.exit_code == 2
    assert result.output.splitlines()[1:] == ["  kind == reqest", "          ^"]
    assert result.output.startswith("mcpsniff show: --filter: unknown kind 'reqest'")


def test_check_honours_the_filter() -> None:
    trace = str(RECORDINGS / "string-id-echo.jsonl")
    runner = CliRunner()
    everything = runner.invoke(main, ["check", trace, "--format", "json", "--fail-on", "info"])
    assert everything.exit_code == 1
    assert len(everything.output.splitlines()) >= 1
    none = runner.invoke(main, ["check", trace, "--filter", "method == ping"])
    assert none.exit_code == 0
    assert none.output.strip().endswith("0 finding(s) in 1 session(s); nothing at or above error")
    some = runner.invoke(
        main, ["check", trace, "--format", "json", "--filter", "rule == JR-RESP-ID"]
    )
    assert some.exit_code == 1
    assert {orjson.loads(line)["rule"] for line in some.output.splitlines()} == {"JR-RESP-ID"}


def test_follow_waits_for_a_trace_that_does_not_exist_yet(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    proc = show_follow(path)
    try:
        assert proc.stderr is not None and proc.stdout is not None
        assert (
            proc.stderr.readline().decode().strip()
            == f"mcpsniff show: waiting for {path} to appear"
        )
        assert proc.poll() is None
        c = Conversation()
        c.handshake()
        writer = TraceWriter.create(path, meta={})
        writer.write_all(c.records)
        writer.flush()
        first = proc.stdout.readline().decode()
        assert "initialize" in first
        time.sleep(0.1)
        writer.close()
    finally:
        stop_follow(proc)


@pytest.mark.parametrize("command", ["show", "check", "stats"])
def test_help_shows_filter_examples_unwrapped(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    lines = [line.strip() for line in result.output.splitlines()]
    assert "mcp.method.name == tools/call and latency > 100ms" in lines
    assert any(line.startswith("gen_ai.tool.name") and "tools/call" in line for line in lines)


# ``show --filter`` that matched nothing printed nothing at all, which reads as an empty
# trace or a broken command.


def test_show_says_when_its_filter_matched_nothing() -> None:
    result = CliRunner().invoke(
        main, ["show", str(RECORDINGS / "clean-2025-11-25.jsonl"), "--filter", "method == nope"]
    )
    assert result.exit_code == 0
    assert result.output == "mcpsniff show: no message or event matched --filter\n"
    matched = CliRunner().invoke(
        main, ["show", str(RECORDINGS / "clean-2025-11-25.jsonl"), "--filter", "method == ping"]
    )
    assert "ping" in matched.output
    assert "matched --filter" not in matched.output
