"""``replay serve --http`` and ``replay drive --url`` with a real Streamable HTTP session.

The recording is the SDK 2.x client with server-everything over Streamable
HTTP (SSE responses, an assigned ``Mcp-Session-Id``, 202s for notifications),
through ``mcpsniff http``. The HTTP replay is started with the pytest fixture
that ``mcpsniff.replay.fixture`` offers to users' own suites.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from mcpsniff.core.model import EventRecord, FrameRecord
from mcpsniff.replay.fixture import ReplayServers
from mcpsniff.trace.reader import TraceReader
from tests.replay.support import (
    MCPSNIFF,
    REPO,
    Recording,
    all_match,
    everything_http,
    free_port,
    recorded_answers,
    run,
    sdk_client,
)


def test_serve_http_gives_the_sdk_client_the_recorded_results(
    http_recording: Recording, replay_server: ReplayServers
) -> None:
    url = replay_server(http_recording.trace, transport="http")
    assert isinstance(url, str) and url.startswith("http://127.0.0.1:")
    assert sdk_client(url=url) == http_recording.results
    # The recording answered over SSE; so did the replay.
    frames = [r for r in TraceReader(http_recording.trace).records() if isinstance(r, FrameRecord)]
    assert any(f.transport == "sse" for f in frames)


def test_the_fixture_gives_a_command_for_stdio(
    http_recording: Recording, replay_server: ReplayServers
) -> None:
    command = replay_server(http_recording.trace)
    assert isinstance(command, list)
    assert command[-3:] == ["--match", "auto", str(http_recording.trace)]


def test_drive_url_against_a_fresh_server_finds_no_difference(
    http_recording: Recording, tmp_path: Path
) -> None:
    port = free_port()
    own = tmp_path / "driven-http.jsonl"
    with everything_http(port):
        result = run(
            [
                *MCPSNIFF,
                "replay",
                "drive",
                str(http_recording.trace),
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "--trace",
                str(own),
            ]
        )
    assert result.code == 0, result.out + result.err
    assert result.out.strip() == all_match(recorded_answers(http_recording.trace))
    sent = [r for r in TraceReader(own).records() if isinstance(r, FrameRecord)]
    assert sum(1 for f in sent if f.direction == "c2s") >= 15


def test_serve_http_with_a_fault_misbehaves_and_records_it(
    http_recording: Recording, tmp_path: Path
) -> None:
    """``replay serve --http --fault``: the mock server behind a faulty relay, whose
    trace says what the client got and which fault did it."""
    own = tmp_path / "served.jsonl"
    argv = [*MCPSNIFF, "replay", "serve", str(http_recording.trace), "--http", "127.0.0.1:0"]
    argv += ["--trace", str(own), "--fault", 'tool-error "rate limited" when tool == "echo"']
    proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        assert " at http://127.0.0.1:" in line, line
        url = line.rsplit(" at ", 1)[1].strip()
        results = sdk_client(url=url)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    echoes = [c for c in results["tool_calls"] if c["tool"] == "echo"]
    assert echoes and all(c["result"]["isError"] for c in echoes)
    assert echoes[0]["result"]["content"][0]["text"] == "rate limited"
    others = [c for c in results["tool_calls"] if c["tool"] != "echo"]
    recorded = [c for c in http_recording.results["tool_calls"] if c["tool"] != "echo"]
    assert others == recorded
    records = list(TraceReader(own).records())
    faults = [r for r in records if isinstance(r, EventRecord) and r.event == "fault"]
    assert [f.data["action"] for f in faults] == ["tool-error"] * len(echoes)
    assert all(f.data["transport"] == "http" for f in faults)
    answered = [r for r in records if isinstance(r, FrameRecord) and b"rate limited" in r.raw]
    assert len(answered) == len(echoes)
