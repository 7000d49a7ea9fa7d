"""``check`` after a real relay's analysis process was SIGKILLed mid-session.

The relay completes the trace itself (``trace/salvage.py``): the server's
answers forwarded after the death become an s2c capture-gap. ``check`` must
not report the requests those answers may have answered as never answered,
must say how many it did not judge, and must still report a request the gap
cannot have answered (a gap in the answering direction only excuses requests
of the other direction).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.relay.stdio_support import analysis_process_of, events, read_trace, relay, wait_until

#: A stdio MCP server, scripted so the test controls when it answers: it
#: holds three tools/list requests until the trigger file exists (created
#: after the analysis process is dead), and with --ask-roots it sends the
#: client a roots/list request the client never answers.
SERVER = r"""
import json, pathlib, sys, time
trigger = pathlib.Path(sys.argv[1])
ask_roots = "--ask-roots" in sys.argv
held = []
def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "gap-server", "version": "1.0"}}})
    elif method == "notifications/initialized" and ask_roots:
        send({"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    elif method == "tools/list":
        held.append(msg["id"])
        if len(held) == 3:
            while not trigger.exists():
                time.sleep(0.01)
            for ident in held:
                send({"jsonrpc": "2.0", "id": ident, "result": {"tools": []}})
"""

HELD = (10, 11, 12)


def _line(message: dict) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _session_killed_mid_answer(tmp_path: Path, *, ask_roots: bool) -> Path:
    trace = tmp_path / "t.jsonl"
    trigger = tmp_path / "answer-now"
    server = [sys.executable, "-c", SERVER, str(trigger)] + (["--ask-roots"] if ask_roots else [])
    with relay(server, "--trace", str(trace)) as r:
        r.send(
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"roots": {}},
                        "clientInfo": {"name": "gap-test", "version": "1.0"},
                    },
                }
            )
        )
        r.wait_stdout(b'"serverInfo"')
        r.send(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        if ask_roots:
            r.wait_stdout(b'"roots/list"')
        r.send(_line({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        r.wait_stdout(b'"id": 2')
        for ident in HELD:
            r.send(_line({"jsonrpc": "2.0", "id": ident, "method": "tools/list"}))
        # Every request and every answer so far is in the trace: only the held
        # answers will travel after the death.
        wait_until(lambda: b'"id":12,"method":"tools/list"' in trace.read_bytes(), "the requests")
        wait_until(lambda: b'"kind":"response","id":2,' in trace.read_bytes(), "the ping's answer")
        os.kill(analysis_process_of(r.proc.pid), signal.SIGKILL)
        trigger.touch()
        for ident in HELD:
            r.wait_stdout(b'"id": %d, "result"' % ident)
        assert r.finish() == 0
    return trace


def _check(trace: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--fail-on", "error", *options, str(trace)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_requests_answered_in_the_gap_are_not_judged_and_check_passes(tmp_path: Path) -> None:
    trace = _session_killed_mid_answer(tmp_path, ask_roots=False)
    gaps = events(read_trace(trace), "capture-gap")
    assert [g.data.get("direction") for g in gaps] == ["s2c"], [g.data for g in gaps]
    check = _check(trace)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "JR-RESP-REQUIRED" not in check.stdout
    assert "3 request(s) pending across a capture gap were not judged unanswered" in check.stderr, (
        check.stderr
    )
    assert "Traceback" not in check.stderr


def test_a_request_the_gap_cannot_answer_still_fires(tmp_path: Path) -> None:
    """The server's roots/list waits for the client, whose bytes had no gap."""
    trace = _session_killed_mid_answer(tmp_path, ask_roots=True)
    check = _check(trace, "--format", "json")
    assert check.returncode == 1, check.stdout + check.stderr
    found = [json.loads(line) for line in check.stdout.splitlines()]
    unanswered = [f for f in found if f["rule"] == "JR-RESP-REQUIRED"]
    assert len(unanswered) == 1, found
    assert "roots/list" in unanswered[0]["message"]
    assert "3 request(s) pending across a capture gap were not judged" in check.stderr
