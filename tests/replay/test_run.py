"""Bad input to ``replay serve`` and ``replay drive``: one clear line, exit 2, no traceback.

A torn trace (the last line cut off by a crash) is the exception: the
replay warns and serves what is whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpsniff.core.model import FrameRecord
from mcpsniff.trace.writer import TraceWriter
from tests.replay.support import MCPSNIFF, REPO, TIMEOUT, run

CLEAN = REPO / "recordings" / "clean-2025-11-25.jsonl"
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def client_only_trace(path: Path) -> Path:
    writer = TraceWriter.create(path, meta={})
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode() + b"\n"
    writer.write(FrameRecord(1, 1.0, "stdio", "c2s", "stdio", line))
    writer.close()
    return path


def assert_clean_failure(argv: list[str], expected: str) -> None:
    result = run(argv)
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("mcpsniff replay: ")
    assert expected in lines[0]


@pytest.mark.parametrize("command", ["serve", "drive"])
def test_a_session_not_in_the_trace(command: str) -> None:
    extra = ["--", sys.executable, "-c", "pass"] if command == "drive" else []
    assert_clean_failure(
        [*MCPSNIFF, "replay", command, str(CLEAN), "--session", "nope", *extra],
        "no session 'nope' in this trace "
        "(sessions: clean-2025-11-25 (gallery-client 1.0, 14 message(s)))",
    )


@pytest.mark.parametrize("command", ["serve", "drive"])
def test_a_trace_with_no_server_side(command: str, tmp_path: Path) -> None:
    trace = client_only_trace(tmp_path / "client-only.jsonl")
    extra = ["--", sys.executable, "-c", "pass"] if command == "drive" else []
    assert_clean_failure(
        [*MCPSNIFF, "replay", command, str(trace), *extra],
        "the trace has no server side (no server-to-client messages): nothing to replay",
    )


def test_not_a_trace_and_no_such_file(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    assert_clean_failure([*MCPSNIFF, "replay", "serve", str(other)], "not an mcpsniff trace")
    missing = tmp_path / "missing.jsonl"
    assert_clean_failure([*MCPSNIFF, "replay", "serve", str(missing)], "no such file")


def test_drive_needs_exactly_one_target() -> None:
    assert_clean_failure(
        [*MCPSNIFF, "replay", "drive", str(CLEAN)], "needs either --url URL or -- COMMAND"
    )


def test_drive_a_command_that_cannot_start() -> None:
    assert_clean_failure(
        [*MCPSNIFF, "replay", "drive", str(CLEAN), "--", "/nonexistent/server"],
        "cannot start /nonexistent/server",
    )


def test_a_torn_trace_warns_and_still_serves(tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(CLEAN.read_bytes() + b'{"type":"frame","seq":99,"t":1.0,"ses')
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", str(torn)],
        input=json.dumps(PING) + "\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert "is incomplete, probably cut off by a crash; it was skipped" in proc.stderr
    assert "Traceback" not in proc.stderr


def serve_lines(trace: Path, lines: list[str], *options: str) -> subprocess.CompletedProcess[str]:
    """``replay serve`` over stdio fed these raw lines; stdin then closes."""
    return subprocess.run(
        [*MCPSNIFF, "replay", "serve", *options, str(trace)],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )


def test_unparseable_and_deeply_nested_lines_get_parse_errors_and_serving_goes_on() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    just_too_deep = json.dumps(json.loads("[" * 201 + "]" * 201))
    proc = serve_lines(CLEAN, ["{bad", deep, just_too_deep, "[]", json.dumps(PING)])
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["error"] for r in replies[:4]] == [
        {"code": -32700, "message": "Parse error: invalid JSON"},
        {"code": -32700, "message": "Parse error: JSON nested deeper than 200 levels"},
        {"code": -32700, "message": "Parse error: JSON nested deeper than 200 levels"},
        {"code": -32600, "message": "Invalid Request: empty batch"},
    ]
    assert all(r["id"] is None for r in replies[:4])
    assert replies[4] == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_a_hostile_trace_with_deep_nesting_is_served_without_a_recursion_error(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "deep.jsonl"
    writer = TraceWriter.create(trace, meta={})
    ping = json.dumps(PING).encode() + b"\n"
    deep = b'{"jsonrpc":"2.0","id":1,"result":' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    writer.write(FrameRecord(1, 1.0, "s", "c2s", "stdio", ping))
    writer.write(FrameRecord(2, 1.1, "s", "s2c", "stdio", deep))
    writer.write(FrameRecord(3, 1.2, "s", "c2s", "stdio", ping))
    writer.write(
        FrameRecord(4, 1.3, "s", "s2c", "stdio", b'{"jsonrpc":"2.0","id":1,"result":{}}\n')
    )
    writer.close()
    proc = serve_lines(trace, [json.dumps(PING)])
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    # The deep frame is no message replay can serve; the next recorded answer is.
    assert json.loads(proc.stdout) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    drive = run([*MCPSNIFF, "replay", "drive", str(trace), "--", *SERVE_CLEAN])
    assert "Traceback" not in drive.err


SERVE_CLEAN = [*MCPSNIFF, "replay", "serve", str(CLEAN)]


def test_traffic_strings_reach_the_terminal_escaped() -> None:
    hostile = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "x\x1b]0;owned\x07\u202e"},
    }
    proc = serve_lines(CLEAN, [json.dumps(hostile)])
    assert "\x1b" not in proc.stderr and "\u202e" not in proc.stderr and "\x07" not in proc.stderr
    assert "nothing was recorded for tools/call (x\\x1b]0;owned\\x07\\u202e)" in proc.stderr


def test_serve_on_a_wildcard_address_warns_as_mcpsniff_http_does() -> None:
    proc = subprocess.Popen(
        [*MCPSNIFF, "replay", "serve", "--http", "0.0.0.0:0", str(CLEAN)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        first = proc.stderr.readline()
        second = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert first == (
        "mcpsniff replay: warning: listening on 0.0.0.0, not loopback: anyone who can reach "
        "this address can use the replay and read the recorded traffic it serves\n"
    )
    assert second.startswith(f"mcpsniff replay: serving {CLEAN} at http://0.0.0.0:")


def _strict_json(line: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"{name} in a reply: not JSON")

    return json.loads(line, parse_constant=refuse)


def test_an_id_no_float_can_hold_gets_a_parse_error_not_an_infinity_echo() -> None:
    """``1e999`` parsed to inf and was echoed as ``Infinity``: a reply no JSON parser reads."""
    lines = [
        '{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
        '{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
        '[{"jsonrpc":"2.0","id":-1e400,"method":"ping"}]',
        json.dumps(PING),
    ]
    proc = serve_lines(CLEAN, lines)
    assert proc.returncode == 0, proc.stderr
    replies = [_strict_json(line) for line in proc.stdout.splitlines()]
    assert replies[:3] == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: number 1e999 is out of range"},
        },
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: invalid JSON"},
        },
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: number -1e400 is out of range"},
        },
    ]
    assert replies[3] == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/mcp", "Port out of range 0-65535"),
        ("http:///mcp", "it names no host"),
        ("http://127.0.0.1:0/mcp", "port 0 is not a port a server listens on"),
    ],
)
def test_drive_a_url_that_cannot_be_used_is_one_line(url: str, reason: str) -> None:
    """Not five "the server's HTTP response broke off" lines, as if the server were at fault."""
    assert_clean_failure(
        [*MCPSNIFF, "replay", "drive", str(CLEAN), "--url", url],
        f"--url {url!r} is not a usable URL: {reason}",
    )


def test_a_lone_surrogate_in_a_client_id_is_echoed_as_its_escape() -> None:
    """``"\\ud800"`` is valid JSON; the reply was lost to UnicodeEncodeError (a traceback)."""
    proc = serve_lines(
        CLEAN, ['{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', json.dumps(PING)]
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == '{"jsonrpc":"2.0","id":"\\ud800","result":{}}'
    assert json.loads(lines[0])["id"] == "\ud800"
    assert json.loads(lines[1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_drive_prints_a_live_lone_surrogate_escaped(tmp_path: Path) -> None:
    server = tmp_path / "server.py"
    server.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if 'id' in m and 'method' in m:\n"
        '        reply = \'{"jsonrpc":"2.0","id":%s,"result":{"v":"\\\\ud800"}}\'\n'
        "        print(reply % json.dumps(m['id']), flush=True)\n"
    )
    result = run([*MCPSNIFF, "replay", "drive", str(CLEAN), "--", sys.executable, str(server)])
    assert result.code == 1, result.out + result.err
    assert "Traceback" not in result.err
    assert 'live:     "\\ud800"' in result.out


@pytest.mark.parametrize("path", ["$", "", " $ "])
@pytest.mark.parametrize("command", ["drive", "serve"])
def test_a_path_naming_the_whole_message_is_refused(command: str, path: str) -> None:
    """``--ignore '$'`` (or ``"$unset"`` in a shell) made any server "all match", exit 0."""
    option = "--ignore" if command == "drive" else "--allow"
    extra = ["--", sys.executable, "-c", "pass"] if command == "drive" else []
    assert_clean_failure(
        [*MCPSNIFF, "replay", command, str(CLEAN), option, path, *extra],
        f"{option} {path!r} names the whole message, so every difference would be left out",
    )


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("[::1", "an IPv6 address goes inside [ ]"),
        ("[::1]", "HOST:PORT"),
        ("::1:6290", "an IPv6 address goes inside [ ]"),
        ("[nothost]:6290", "not an IPv6 address"),
        ("bad host:6290", "not a host name or IP address"),
        ("999.1.1.1:6290", "not a host name or IP address"),
        ("h:99999", "no TCP port"),
    ],
)
def test_a_bad_http_address_fails_before_any_warning(address: str, expected: str) -> None:
    # Validate first: '[::1' once printed "warning: listening on :, not loopback"
    # before failing on the address it had misread.
    assert_clean_failure([*MCPSNIFF, "replay", "serve", "--http", address, str(CLEAN)], expected)
