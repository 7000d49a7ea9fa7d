"""What was never answered stays unanswered: a cancelled request, and a server that exits.

The cancelled request is real: the SDK 2.x client abandons a 5 s
``trigger-long-running-operation`` on server-everything after 0.5 s, the SDK
sends ``notifications/cancelled``, and the server never answers it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from mcpsniff.core.model import MessageRecord
from mcpsniff.replay import serve as serve_module
from mcpsniff.replay.script import load_script
from mcpsniff.replay.serve import NOT_ANSWERED_CODE, ReplayServer
from mcpsniff.trace.reader import TraceReader
from tests.replay.support import (
    EVERYTHING,
    EVERYTHING_JS,
    EXITS_AFTER_FIRST,
    MCPSNIFF,
    SDK2_PYTHON,
    VARIANT_CLIENT,
    Recording,
    all_match,
    need,
    recorded_answers,
    run,
)

CALL = "trigger-long-running-operation"


@pytest.fixture(scope="module")
def cancelled_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need(SDK2_PYTHON, EVERYTHING_JS)
    trace = tmp_path_factory.mktemp("cancel") / "cancelled.jsonl"
    relay = [*MCPSNIFF, "stdio", "--trace", str(trace), "--", *EVERYTHING]
    result = run([str(SDK2_PYTHON), str(VARIANT_CLIENT), "cancel", "--", *relay])
    assert result.code == 0, result.out + result.err
    assert json.loads(result.out) == {"cancelled": True, "ping": "ok"}
    return trace


def messages(trace: Path) -> list[MessageRecord]:
    with TraceReader(trace) as reader:
        return [r for r in reader.records() if isinstance(r, MessageRecord)]


def unanswered_calls(trace: Path) -> list[MessageRecord]:
    """The recorded tools/call requests of CALL that no response answers."""
    records = messages(trace)
    answered = {r.answers for r in records if r.direction == "s2c" and r.answers is not None}
    return [
        r for r in records if r.kind == "request" and r.target == CALL and r.frame not in answered
    ]


def test_the_recording_holds_a_cancelled_unanswered_call(cancelled_recording: Path) -> None:
    assert len(unanswered_calls(cancelled_recording)) == 1
    assert any(r.method == "notifications/cancelled" for r in messages(cancelled_recording))


def test_serve_replays_the_cancelled_call_as_recorded(
    cancelled_recording: Path, tmp_path: Path
) -> None:
    own = tmp_path / "served.jsonl"
    served = [*MCPSNIFF, "replay", "serve", "--trace", str(own), str(cancelled_recording)]
    result = run([str(SDK2_PYTHON), str(VARIANT_CLIENT), "cancel", "--", *served])
    assert result.code == 0, result.out + result.err
    # The client waited, cancelled, and pinged: no early answer ended its wait.
    assert json.loads(result.out) == {"cancelled": True, "ping": "ok"}
    # The replay sent nothing for the call, as the recorded server did.
    assert len(unanswered_calls(own)) == 1
    records = messages(own)
    methods = {r.frame: r.method for r in records if r.kind == "request"}
    errors = [methods.get(r.answers) for r in records if r.kind == "error" and r.direction == "s2c"]
    assert errors == ["server/discover"]  # answered with an error in the recording too


def test_a_client_that_never_cancels_is_told_it_was_cancelled_in_the_recording(
    cancelled_recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve_module, "CANCEL_WAIT", 0.05)
    server = ReplayServer(load_script(cancelled_recording))
    sent: list[bytes] = []

    async def emit(frame: bytes) -> None:
        sent.append(frame)

    request = {
        "jsonrpc": "2.0",
        "id": "mine",
        "method": "tools/call",
        "params": {"name": CALL, "arguments": {"duration": 5, "steps": 5}},
    }
    asyncio.run(server.handle(json.dumps(request).encode(), emit))
    reply = json.loads(sent[-1])
    assert reply["id"] == "mine"
    assert reply["error"]["code"] == NOT_ANSWERED_CODE
    assert reply["error"]["message"].startswith(
        "replay: tools/call was cancelled by the client in the recording "
        "(notifications/cancelled at trace seq "
    )
    assert reply["error"]["message"].endswith("and never answered, so there is no answer to replay")


def test_drive_compares_every_answered_request_and_skips_the_cancelled_one(
    cancelled_recording: Path,
) -> None:
    result = run([*MCPSNIFF, "replay", "drive", str(cancelled_recording), "--", *EVERYTHING])
    assert result.code == 0, result.out + result.err
    assert result.out.strip() == all_match(recorded_answers(cancelled_recording))


def test_drive_against_a_server_that_exits_reports_it_once_and_ends(
    everything_recording: Recording,
) -> None:
    trace = everything_recording.trace
    total = recorded_answers(trace)
    # With 600 s to wait for each response, the run ends within the test's 60 s command
    # timeout only if the drive stops waiting as soon as the server has gone.
    server = [sys.executable, str(EXITS_AFTER_FIRST)]
    result = run([*MCPSNIFF, "replay", "drive", str(trace), "--timeout", "600", "--", *server])
    assert result.code == 1, result.out + result.err
    lines = result.out.splitlines()
    assert [line for line in lines if "exited" in line] == [
        f"the live server exited with code 3 before the drive ended; "
        f"{total - 1} recorded response(s) not compared"
    ]
    block = lines.index("  its last stderr lines:")
    assert lines[block + 1 : block + 3] == ["    loading the model...", "    fatal: out of memory"]
    assert lines[-1] == (
        f"1 of {total} recorded response(s) compared, 1 differ, {total - 1} not compared, 0 match"
    )
    assert "pipe closed" not in result.err and "Traceback" not in result.err
