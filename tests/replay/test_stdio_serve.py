"""``replay serve`` and ``replay drive`` over stdio, with real SDK peers and real recordings.

Every recording is a real session: the official SDK 2.x client against
server-everything (handshake era) or the SDK 2.x server (2026-07-28,
stateless), through ``mcpsniff stdio``.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord
from mcpsniff.replay.stdio_serve import LINE_LIMIT, InFlight
from mcpsniff.trace.reader import TraceReader
from tests.intercept.test_stdio_faults import (
    EVERYTHING_JS,
    FAULT_CLIENT,
    RUN_TIMEOUT,
    SDK1_PYTHON,
)
from tests.replay.support import (
    CHANGED_SERVER,
    EVERYTHING,
    MCPSNIFF,
    REPO,
    SDK2,
    SDK2_PYTHON,
    Recording,
    all_match,
    recorded_answers,
    run,
    sdk_client,
)

RECORDINGS = ["everything_recording", "modern_recording"]
SERVERS = {"everything_recording": EVERYTHING, "modern_recording": SDK2}


@pytest.mark.parametrize("recording_name", RECORDINGS)
def test_serve_gives_the_sdk_client_the_recorded_results(
    recording_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    recording: Recording = request.getfixturevalue(recording_name)
    own = tmp_path / "served.jsonl"
    results = sdk_client([*MCPSNIFF, "replay", "serve", "--trace", str(own), str(recording.trace)])
    assert results == recording.results
    assert results["progress_count"] == 3
    # The replay's own trace holds what it served, and the check finds what it found in the
    # recording (the SDK 2.x server logs without declaring logging: a real finding).
    records = list(TraceReader(own).records())
    served = [r for r in records if isinstance(r, FrameRecord) and r.direction == "s2c"]
    assert len(served) >= 20
    assert error_rules(records) == error_rules(TraceReader(recording.trace).records())
    assert not [r for r in records if isinstance(r, EventRecord) and r.event == "replay-unmatched"]


@pytest.mark.parametrize("recording_name", RECORDINGS)
def test_drive_against_a_fresh_server_finds_no_difference(
    recording_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    recording: Recording = request.getfixturevalue(recording_name)
    own = tmp_path / "driven.jsonl"
    server = SERVERS[recording_name]
    result = run(
        [*MCPSNIFF, "replay", "drive", str(recording.trace), "--trace", str(own), "--", *server]
    )
    assert result.code == 0, result.out + result.err
    assert result.out.strip() == all_match(recorded_answers(recording.trace))
    # The drive's own trace is a complete session: every request answered.
    kinds = [r for r in TraceReader(own).records() if isinstance(r, FrameRecord)]
    assert sum(1 for f in kinds if f.direction == "c2s") >= 15


def test_drive_against_a_changed_server_names_the_tool_and_the_field(
    modern_recording: Recording,
) -> None:
    changed = [str(SDK2_PYTHON), str(CHANGED_SERVER)]
    result = run([*MCPSNIFF, "replay", "drive", str(modern_recording.trace), "--", *changed])
    assert result.code == 1, result.out + result.err
    lines = result.out.splitlines()
    heads = [line for line in lines if not line.startswith(" ")][:-1]
    assert len(heads) == 1
    assert heads[0].startswith("tools/call tool 'get-structured-content' (request id ")
    block = "\n".join(lines)
    assert "  $.result.structuredContent.humidity\n    recorded: 82.0\n    live:     50.0" in block
    assert "$.result.content[0].text" in block
    total = recorded_answers(modern_recording.trace)
    assert lines[-1] == (
        f"{total} of {total} recorded response(s) compared, 1 differ, {total - 1} match"
    )


def test_drive_ignores_the_paths_it_is_told_to(modern_recording: Recording) -> None:
    changed = [str(SDK2_PYTHON), str(CHANGED_SERVER)]
    ignores = ["--ignore", "$.result.content[*].text", "--ignore", "result.structuredContent"]
    result = run(
        [*MCPSNIFF, "replay", "drive", str(modern_recording.trace), *ignores, "--", *changed]
    )
    assert result.code == 0, result.out + result.err


def test_serve_strict_answers_an_unrecorded_request_with_an_error(
    everything_recording: Recording, tmp_path: Path
) -> None:
    own = tmp_path / "strict.jsonl"
    asked = [
        {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "no-such-tool"}},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
    ]
    proc = run_serve(
        [str(everything_recording.trace), "--match", "strict", "--trace", str(own)], asked
    )
    assert proc.code == 1
    replies = [json.loads(line) for line in proc.out.splitlines()]
    error = replies[0]
    assert error["id"] == "a"
    assert error["error"]["code"] == -32601
    first, nearest, *diff = error["error"]["message"].splitlines()
    trace = everything_recording.trace
    assert first == f"replay: nothing was recorded for tools/call (no-such-tool) in {trace}"
    # The nearest recorded call is named, with the paths that differ in drive's format.
    name = error["error"]["data"]["nearest"]["target"]
    assert nearest.startswith(f"nearest recorded request: tools/call ({name}), request id ")
    assert diff[:3] == [
        "  $.params.name",
        f'    recorded: "{name}"',
        '    asked:    "no-such-tool"',
    ]
    assert error["error"]["data"]["nearest"]["method"] == "tools/call"
    # The recorded tools/list answer, with the id this client chose.
    assert replies[1]["id"] == "b"
    assert replies[1]["result"]["tools"][0]["name"] == "echo"
    events = [
        r
        for r in TraceReader(own).records()
        if isinstance(r, EventRecord) and r.event == "replay-unmatched"
    ]
    assert [(e.data["method"], e.data["target"], e.data["id"]) for e in events] == [
        ("tools/call", "no-such-tool", "a")
    ]
    assert "1 request(s) had no recorded counterpart" in proc.err


def error_rules(records: object) -> set[str]:
    """The rules of the error findings among ``records``."""
    return {
        r.rule
        for r in records  # type: ignore[attr-defined]
        if isinstance(r, FindingRecord) and r.severity == "error"
    }


def run_serve(args: list[str], messages: list[object]):  # type: ignore[no-untyped-def]
    """Run ``replay serve`` over stdio with these client lines; stdin then closes."""
    import subprocess

    from tests.replay.support import REPO, TIMEOUT, Run

    text = "".join(json.dumps(m) + "\n" for m in messages)
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


# --------------------------------------------------------------------------- --fault
# ``replay serve --fault``: a misbehaving mock made from a recording. A session of
# ``fault_client.py`` (SDK 2.x) against server-everything is recorded once; the same
# client (SDK 2.x and 1.x) then talks to the mock and sees exactly the misbehaviour
# asked for, recorded in the replay's own trace.


def _client(
    python: Path, server: list[str], calls: int = 3, timeout: float = 2.0
) -> dict[str, Any]:
    command = [str(python), str(FAULT_CLIENT), "--calls", str(calls), "--timeout", str(timeout)]
    proc = subprocess.run(
        [*command, "--", *server], capture_output=True, timeout=RUN_TIMEOUT, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@pytest.fixture(scope="module")
def fault_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for path in (SDK2_PYTHON, EVERYTHING_JS):
        if not path.exists():
            pytest.skip(f"{path} missing (scripts/setup-peers.sh builds the peers)")
    trace = tmp_path_factory.mktemp("faulty-replay") / "recorded.jsonl"
    relay = [*MCPSNIFF, "stdio", "--trace", str(trace), "--", *EVERYTHING]
    report = _client(SDK2_PYTHON, relay)
    assert [c["outcome"] for c in report["calls"]] == ["ok", "ok", "ok"]
    return trace


def _serve(fault_recording: Path, own: Path, *faults: str) -> list[str]:
    command = [*MCPSNIFF, "replay", "serve", "--trace", str(own)]
    for spec in faults:
        command += ["--fault", spec]
    return [*command, str(fault_recording)]


def _fault_records(trace: Path) -> list[EventRecord]:
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if isinstance(r, EventRecord) and r.event == "fault"]


@pytest.mark.parametrize("python", [SDK2_PYTHON, SDK1_PYTHON], ids=["sdk2", "sdk1"])
def test_a_slow_tool_from_the_recording(
    fault_recording: Path, tmp_path: Path, python: Path
) -> None:
    own = tmp_path / "served.jsonl"
    server = _serve(fault_recording, own, 'delay 300ms when tool == "echo" and direction == s2c')
    report = _client(python, server)
    assert [c["outcome"] for c in report["calls"]] == ["ok", "ok", "ok"]
    assert [c["text"] for c in report["calls"]] == ["Echo: call 0", "Echo: call 1", "Echo: call 2"]
    # Held at least 300 ms each (the replay itself answers call 1 after the pause
    # it recorded before a server notification; tests/relay measures 300-400 ms).
    assert all(300 <= c["ms"] < 2000 for c in report["calls"]), report
    assert [f.data["delay_ms"] for f in _fault_records(own)] == [300, 300, 300]


def test_errors_drops_and_duplicates_from_the_recording(
    fault_recording: Path, tmp_path: Path
) -> None:
    own = tmp_path / "served.jsonl"
    server = _serve(
        fault_recording,
        own,
        'error -32603 "backend down" when tool == "echo" times 1',
        'drop when tool == "echo" and direction == s2c times 1',
        'duplicate when tool == "echo" and direction == s2c',
    )
    report = _client(SDK2_PYTHON, server, timeout=1)
    assert [c["outcome"] for c in report["calls"]] == ["error", "timeout", "ok"]
    assert [f.data["action"] for f in _fault_records(own)] == ["error", "drop", "duplicate"]
    check = subprocess.run(
        [*MCPSNIFF, "check", "--faults-summary", str(own)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    summary = check.stdout.decode()
    assert "Faults: 3 injected" in summary
    assert "reaction: coped: the client cancelled it" in summary


def test_kill_stops_the_mock_server(fault_recording: Path, tmp_path: Path) -> None:
    own = tmp_path / "served.jsonl"
    server = _serve(fault_recording, own, 'kill when tool == "echo" and direction == s2c after 1')
    report = _client(SDK2_PYTHON, server, timeout=2)
    outcomes = [c["outcome"] for c in report["calls"]]
    assert outcomes[:2] == ["ok", "ok"]
    assert outcomes[2] != "ok"


def test_a_bad_fault_is_refused_before_serving(fault_recording: Path) -> None:
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", "--fault", "corrupt sideways", str(fault_recording)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.decode()
        .splitlines()[0]
        .startswith("mcpsniff replay: --fault: corrupt takes one of truncate")
    )


# ---------------------------------------------------------------- memory bounds
# Real processes on real pipes; peak memory from /proc/PID/status (VmHWM).

BOUNDS_TRACE = REPO / "recordings" / "clean-2025-11-25.jsonl"
#: Peak resident memory the replay may reach in these tests.
MEMORY_LIMIT_KB = 200 << 10


def _peak_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        pytest.skip("needs /proc to read the peak memory")
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


def _serve_plain() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*MCPSNIFF, "replay", "serve", str(BOUNDS_TRACE)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _ping(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode() + b"\n"


def test_a_line_longer_than_the_limit_is_refused_without_holding_it() -> None:
    # 2.0 GB for a 500 MB line before; here a line of 3x the limit, never held.
    proc = _serve_plain()
    assert proc.stdin is not None and proc.stdout is not None
    chunk = b"x" * (1 << 20)
    peak = 0

    def write() -> None:
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"p":"')
        for _ in range(3 * (LINE_LIMIT >> 20)):
            proc.stdin.write(chunk)
        proc.stdin.write(b'"}}\n' + _ping(7))
        proc.stdin.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        first = json.loads(proc.stdout.readline())
        second = json.loads(proc.stdout.readline())
        peak = _peak_kb(proc.pid)
    finally:
        writer.join(60)
        proc.wait(60)
    assert first["id"] is None and first["error"]["code"] == -32700
    assert f"longer than {LINE_LIMIT} bytes" in first["error"]["message"]
    assert second == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert peak < MEMORY_LIMIT_KB, peak


def test_a_flood_of_requests_is_slowed_by_its_own_pipe() -> None:
    # The client writes 30,000 requests and reads nothing: the replay stops reading
    # stdin once its budget is full instead of queueing every line.
    count = 30_000
    proc = _serve_plain()
    assert proc.stdin is not None and proc.stdout is not None
    written = threading.Event()

    def write() -> None:
        assert proc.stdin is not None
        try:
            for n in range(count):
                proc.stdin.write(_ping(n))
            proc.stdin.close()
        except BrokenPipeError:
            return
        written.set()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        assert not written.wait(5.0), "30,000 requests were all read with nobody answering"
        peak = _peak_kb(proc.pid)
        answers = 0
        deadline = time.monotonic() + 120
        while answers < count and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            answers += 1
        assert answers == count
        assert written.wait(30)
    finally:
        proc.kill()
        proc.wait(30)
    assert peak < MEMORY_LIMIT_KB, peak


def test_the_budget_blocks_the_reader_until_a_line_is_answered() -> None:
    budget = InFlight(lines=2, size=100)
    budget.acquire(60)
    got = threading.Event()

    def second() -> None:
        budget.acquire(60)  # 120 bytes would exceed the budget
        got.set()

    thread = threading.Thread(target=second, daemon=True)
    thread.start()
    assert not got.wait(0.3)
    budget.release(60)
    assert got.wait(5)
    # A line bigger than the whole budget still passes when nothing else is in flight.
    budget.release(60)
    budget.acquire(500)
    budget.release(500)
