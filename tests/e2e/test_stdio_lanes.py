"""``mcpsniff stdio --lanes 2`` end to end: a real relay, real servers, real processes.

The recording lane (the analysis process) writes every frame; the derived
lane (its child) writes the messages and findings behind it. ``mcpsniff
check`` on the trace must find exactly what the derived lane wrote, and a
derived lane killed mid-run must cost no frame, no exit status, and no hang.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from mcpsniff.core.model import C2S, S2C, FindingRecord, FrameRecord, MessageRecord
from mcpsniff.terminal.render import finding_json
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.tail import TraceTail
from tests.e2e.sdk_peers import client_result
from tests.relay.stdio_support import (
    TIMEOUT,
    analysis_process_of,
    children_of,
    peer,
    relay,
    wait_until,
)

REPO = Path(__file__).resolve().parents[2]
SDK2_PYTHON = REPO / ".peers" / "sdk2" / "bin" / "python"
PEERS = Path(__file__).resolve().parent / "peers"
SDK_CLIENT = PEERS / "sdk_client.py"
SDK2_SERVER = PEERS / "sdk2_server.py"


def lane_records(trace: Path) -> list[dict[str, Any]]:
    """The trace's ``lane`` records, in file order."""
    out = []
    for line in trace.read_bytes().splitlines():
        if line.startswith(b'{"type":"lane"'):
            out.append(orjson.loads(line))
    return out


@pytest.mark.skipif(not SDK2_PYTHON.exists(), reason="run scripts/setup-peers.sh")
def test_the_sdk_session_in_two_lanes_is_whole_and_check_agrees(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    relay_argv = [sys.executable, "-m", "mcpsniff", "stdio", "--lanes", "2", "--trace", str(trace)]
    server = [str(SDK2_PYTHON), str(SDK2_SERVER), "--declare-logging"]
    proc = subprocess.Popen(
        [str(SDK2_PYTHON), str(SDK_CLIENT), "--", *relay_argv, "--", *server],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    result = client_result(proc, "through mcpsniff --lanes 2")
    assert result["logging_count"] == 6
    with TraceReader(trace) as reader:
        records = list(reader.records())
    frames = [r for r in records if isinstance(r, FrameRecord)]
    messages = [r for r in records if isinstance(r, MessageRecord)]
    # Every frame recorded and analyzed: each is one message, requests answered once.
    assert {m.frame for m in messages} == {f.seq for f in frames}
    assert len(frames) >= 30
    requests = [m for m in messages if m.kind == "request"]
    answered = [m.answers for m in messages if m.kind in ("response", "error")]
    assert sorted(answered) == sorted(r.frame for r in requests)
    lanes = lane_records(trace)
    assert lanes[0] == {"type": "lane", "session": "stdio", "open": 1}
    inputs = [r.seq for r in records if hasattr(r, "seq") and isinstance(r.seq, int)]
    assert lanes[-1] == {"type": "lane", "session": "stdio", "through": max(inputs)}
    assert not [r for r in lanes if "lost" in r]
    live = [finding_json(f) for f in records if isinstance(f, FindingRecord)]
    checked = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--format", "json", str(trace)],
        cwd=REPO,
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert [json.loads(line) for line in checked.stdout.splitlines() if line.strip()] == live
    assert checked.returncode == 0, checked.stderr.decode()


def test_a_killed_derived_lane_costs_no_frame_and_no_hang(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    lines = [b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{}}\n' % n for n in range(4000)]
    with relay(peer("echo"), "--lanes", "2", "--trace", str(trace)) as r:
        r.send(lines[0])
        r.wait_stdout(lines[0])  # the server runs: the analysis process was forked before it
        analysis = analysis_process_of(r.pid)
        wait_until(lambda: bool(children_of(analysis)), "the derived lane")
        (derived,) = children_of(analysis)
        half = len(lines) // 2
        for line in lines[1:half]:
            r.send(line)
        wait_until(lambda: b'"type":"message"' in trace.read_bytes(), "derived records")
        os.kill(derived, signal.SIGKILL)
        done = threading.Event()

        def rest() -> None:
            for line in lines[half:]:
                r.send(line)
            done.set()

        threading.Thread(target=rest, daemon=True).start()
        assert done.wait(TIMEOUT)
        time.sleep(0.05)
        assert r.finish() == 0
    data = b"".join(lines)
    records = []
    with TraceReader(trace) as reader:
        records = list(reader.records())
    sent = b"".join(x.raw for x in records if isinstance(x, FrameRecord) and x.direction == C2S)
    echoed = b"".join(x.raw for x in records if isinstance(x, FrameRecord) and x.direction == S2C)
    assert sent == data and echoed == data
    lost = [x for x in lane_records(trace) if "lost" in x]
    assert lost == [{"type": "lane", "session": "stdio", "lost": 1}]
    assert sum("derived lane" in line for line in r.stderr_lines()) == 1
    assert not any(x for x in records if getattr(x, "event", None) == "capture-gap")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_killed_recording_lane_is_salvaged_and_the_derived_lane_ends(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    lines = [b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":{}}\n' % n for n in range(400)]
    with relay(peer("echo"), "--lanes", "2", "--trace", str(trace)) as r:
        r.send(lines[0])
        r.wait_stdout(lines[0])
        analysis = analysis_process_of(r.pid)
        wait_until(lambda: bool(children_of(analysis)), "the derived lane")
        (derived,) = children_of(analysis)
        for line in lines[1:200]:
            r.send(line)
        r.wait_stdout(b"".join(lines[:200]))
        os.kill(analysis, signal.SIGKILL)
        for line in lines[200:]:
            r.send(line)
        r.wait_stdout(b"".join(lines))
        assert r.finish() == 0
    wait_until(lambda: not alive(derived), "the derived lane to end")
    assert r.stdout.data == b"".join(lines)
    with TraceReader(trace) as reader:
        records = list(reader.records())
    frames = {x.seq for x in records if isinstance(x, FrameRecord)}
    # The derived lane wrote derived records of recorded frames only, and no end of its own.
    assert {m.frame for m in records if isinstance(m, MessageRecord)} <= frames
    ends = [x for x in records if getattr(x, "event", None) == "session-end"]
    assert len(ends) == 1 and ends[0].data["salvaged"] is True
    # The derived lane said it stops, so a follower does not hold the salvaged end.
    assert [x for x in lane_records(trace) if "lost" in x] == [
        {"type": "lane", "session": "stdio", "lost": 1}
    ]
    tail = TraceTail(trace)
    try:
        followed = tail.poll()  # not final: a live follower's view
    finally:
        tail.close()
    assert [getattr(x, "event", None) for x in followed].count("session-end") == 1
    sent = b"".join(x.raw for x in records if isinstance(x, FrameRecord) and x.direction == C2S)
    assert b"".join(lines).startswith(sent)
