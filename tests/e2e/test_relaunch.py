"""The README's client configuration, launched again and again: one trace, many sessions.

A client restarts its MCP servers all the time, and two clients may launch the
same configuration at once. Real relays (``python -m mcpsniff stdio``) around
the real demo server, five in a row and then five at once, must all start,
and leave one readable trace holding every session whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from click.testing import CliRunner

from mcpsniff.cli import main
from mcpsniff.core.model import FrameRecord
from mcpsniff.trace.reader import TraceReader
from tests.relay.stdio_support import relay_env

SERVER = [sys.executable, "-m", "mcpsniff.demo.server"]
CALLS = 60


def client_bytes(n: int) -> bytes:
    """A whole session: handshake, a tools/list, then many tool calls, each tagged ``n``."""
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": f"client-{n}", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    lines += [
        {
            "jsonrpc": "2.0",
            "id": 2 + i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"client {n} call {i}"}},
        }
        for i in range(CALLS)
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def launch(trace: Path) -> subprocess.Popen[bytes]:
    # The README's line: mcpsniff stdio --trace FILE -- COMMAND...
    return subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace), "--", *SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=relay_env(),
    )


def assert_five_whole_sessions(trace: Path) -> None:
    with TraceReader(trace) as reader:
        records = list(reader.records())
        assert reader.torn is None
    streams: dict[str, bytes] = {}
    for record in records:
        if isinstance(record, FrameRecord) and record.direction == "c2s":
            streams[record.session] = streams.get(record.session, b"") + record.raw
    assert len(streams) == 5, sorted(streams)
    # Every client's bytes are in the trace, whole and in order, in a session of their own.
    assert sorted(streams.values()) == sorted(client_bytes(n) for n in range(5))
    # Mixed sessions would be errors (a second initialize, reused ids). The
    # clients here send before initialize is answered: warnings, not errors.
    result = CliRunner().invoke(main, ["check", str(trace)])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("in 5 session(s); nothing at or above error")


def echoed(out: bytes) -> int:
    return sum(b'"id":' in line and b"call" in line for line in out.splitlines())


def test_five_launches_in_a_row_append_five_sessions(tmp_path: Path) -> None:
    trace = tmp_path / "fs.jsonl"
    for n in range(5):
        proc = launch(trace)
        out, err = proc.communicate(client_bytes(n), timeout=120)
        assert proc.returncode == 0, err.decode()
        assert echoed(out) == CALLS
        verb = "recording" if n == 0 else "appending a session of"
        assert err.decode().splitlines()[0] == f"mcpsniff: {verb} {sys.executable} to {trace}"
    assert_five_whole_sessions(trace)


def test_five_concurrent_launches_share_one_trace_without_mixing_records(tmp_path: Path) -> None:
    trace = tmp_path / "fs.jsonl"
    procs = [launch(trace) for _ in range(5)]
    for proc, n in zip(procs, range(5), strict=True):
        assert proc.stdin is not None
        proc.stdin.write(client_bytes(n))
        proc.stdin.flush()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert echoed(out) == CALLS
    assert_five_whole_sessions(trace)
    # Exactly one header opened the file, and every other launch added its own.
    lines = trace.read_bytes().splitlines()
    assert lines[0].startswith(b'{"type":"header"')
    assert sum(line.startswith(b'{"type":"header"') for line in lines) == 5


def test_a_name_pattern_gives_one_file_per_launch(tmp_path: Path) -> None:
    pattern = str(tmp_path / "{name}-{pid}.jsonl")
    pids = []
    for n in range(2):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcpsniff",
                "stdio",
                "--name",
                "my srv",
                "--trace",
                pattern,
                "--",
                *SERVER,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=relay_env(),
        )
        _, err = proc.communicate(client_bytes(n), timeout=120)
        assert proc.returncode == 0, err.decode()
        pids.append(proc.pid)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"my_srv-{pid}.jsonl" for pid in pids
    )


def test_http_refuses_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_bytes(b"precious\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpsniff",
            "http",
            "--upstream",
            "http://127.0.0.1:9/mcp",
            "--listen",
            "127.0.0.1:0",
            "--trace",
            str(precious),
        ],
        capture_output=True,
        env=relay_env(),
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines() == [
        f"mcpsniff http: {precious} exists and is not an mcpsniff trace; it was left untouched "
        "(choose another --trace)"
    ]
    assert precious.read_bytes() == b"precious\n"
