"""What was never answered stays unanswered: a cancelled request, and a server that exits.

The cancelled request is real: the SDK 2.x client abandons a 5 s
``trigger-long-running-operation`` on server-everything after 0.5 s, the SDK
sends ``notifications/cancelled``, and the server never answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
    INSPECTOR_JS,
    MCPSNIFF,
    REPO,
    SDK2_PYTHON,
    TIMEOUT,
    VARIANT_CLIENT,
    Recording,
    all_match,
    free_port,
    need,
    recorded_answers,
    run,
    wait_for_port,
)
from tests.replay.test_stdio_serve import run_serve

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


# ----------------------------------------------------------------------------
# Replays of the small gallery recordings (`recordings/`), driven by hand-written lines.
#
# They pin what the SDK sessions cannot show on their own: progress tokens
# rewritten to the client's, batches rebuilt element by element, and a drive
# against `replay serve` itself matching a batch answered out of order.


CLEAN = REPO / "recordings" / "clean-2025-11-25.jsonl"
BATCH = REPO / "recordings" / "out-of-order-batch.jsonl"


def serve(trace: str, messages: list[object]) -> list[object]:
    """Every line ``replay serve`` writes for these client lines."""
    text = "".join(json.dumps(m) + "\n" for m in messages)
    proc = subprocess.run(
        [*MCPSNIFF, "replay", "serve", trace],
        input=text,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_progress_comes_before_the_response_with_the_clients_token() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 99,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 5, "b": 5}, "_meta": {"progressToken": "t"}},
    }
    out = serve(str(CLEAN), [call])
    assert out == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "adding 5 and 5"},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 2},
        },
        {"jsonrpc": "2.0", "id": 99, "result": {"content": [{"type": "text", "text": "10"}]}},
    ]


def test_a_batch_is_answered_element_by_element_with_the_clients_ids() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "x", "method": "ping"},
        {
            "jsonrpc": "2.0",
            "id": "y",
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}},
        },
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}},
    ]
    (answer,) = serve(str(BATCH), [batch])
    assert answer == [
        {"jsonrpc": "2.0", "id": "x", "result": {}},
        {"jsonrpc": "2.0", "id": "y", "result": {"content": [{"type": "text", "text": "2"}]}},
    ]


def test_drive_against_replay_serve_matches_a_batch_answered_out_of_order() -> None:
    served = [*MCPSNIFF, "replay", "serve", str(BATCH)]
    result = run([*MCPSNIFF, "replay", "drive", str(BATCH), "--", *served])
    assert result.code == 0, result.out + result.err
    assert result.out.strip() == all_match(4)


# ----------------------------------------------------------------------------
# `replay serve` answering clients other than the one recorded, and explaining what it cannot.
#
# The recording is the SDK 2.x client with server-everything over Streamable
# HTTP (`http_recording`) or stdio (`everything_recording`). The clients
# served are the MCP Inspector CLI, and an SDK 2.x client with another
# clientInfo and a sampling callback (so other capabilities).


ECHO_ARGS = {"message": "hello from mcpsniff e2e"}


@contextlib.contextmanager
def http_replay(recording: Recording, *options: str) -> Iterator[tuple[str, list[str]]]:
    """``replay serve --http`` of the recording; the list gets its stderr once it stopped."""
    port = free_port()
    proc = subprocess.Popen(
        [
            *MCPSNIFF,
            "replay",
            "serve",
            "--http",
            f"127.0.0.1:{port}",
            *options,
            str(recording.trace),
        ],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    err: list[str] = []
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", err
    finally:
        proc.terminate()
        _out, text = proc.communicate(timeout=10)
        err.extend(text.splitlines())


def inspector(url: str, *args: str) -> tuple[int, str]:
    """One Inspector CLI call against ``url``: exit status and everything it printed."""
    result = run(["node", str(INSPECTOR_JS), "--cli", url, "--transport", "http", *args])
    return result.code, result.out + result.err


def recorded_call(recording: Recording, tool: str) -> dict[str, Any]:
    """What the recorded client got from its first call of ``tool``."""
    return next(c for c in recording.results["tool_calls"] if c["tool"] == tool)


def test_the_inspector_cli_is_served_the_recording(http_recording: Recording) -> None:
    need(INSPECTOR_JS)
    recorded_tools = [t["name"] for t in http_recording.results["tools"]["tools"]]
    with http_replay(http_recording) as (url, err):
        code, out = inspector(url, "--method", "tools/list")
        assert code == 0, out
        assert [t["name"] for t in json.loads(out)["tools"]] == recorded_tools
        code, out = inspector(
            url, "--method", "tools/call", "--tool-name", "echo", "--tool-arg",
            f"message={ECHO_ARGS['message']}",
        )  # fmt: skip
        assert code == 0, out
        assert (
            json.loads(out)["content"] == recorded_call(http_recording, "echo")["result"]["content"]
        )
        # Arguments the recording never saw: the error names the recorded call and the paths.
        code, out = inspector(
            url, "--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=1", "b=2"
        )
    assert code == 1
    assert "replay: nothing was recorded for tools/call (get-sum) in " in out
    assert "nearest recorded request: tools/call (get-sum), request id " in out
    assert "  $.params.arguments.a\n    recorded: 2\n    asked:    1\n" in out
    # The same explanation on the replay's stderr.
    assert "nearest recorded request: tools/call (get-sum), request id " in "\n".join(err)


def test_an_sdk_client_with_other_clientinfo_and_capabilities(http_recording: Recording) -> None:
    need(SDK2_PYTHON, VARIANT_CLIENT)
    with http_replay(http_recording) as (url, err):
        result = run([str(SDK2_PYTHON), str(VARIANT_CLIENT), "other", url])
    assert result.code == 0, result.out + result.err
    got = json.loads(result.out)
    assert got["protocol_version"] == http_recording.results["protocol_version"]
    assert got["tools"] == [t["name"] for t in http_recording.results["tools"]["tools"]]
    assert got["echo"] == recorded_call(http_recording, "echo")["result"]
    assert got["get-sum"] == recorded_call(http_recording, "get-sum")["result"]
    # A tool the recorded client never called: the explaining error, not another tool's result.
    error = got["get-tiny-image-error"]
    assert error.startswith("replay: nothing was recorded for tools/call (get-tiny-image) in ")
    assert "\nnearest recorded request: tools/call (" in error
    assert "\n  $.params.name\n" in error and '\n    asked:    "get-tiny-image"' in error
    assert (
        "mcpsniff replay: warning: initialize: this client's capabilities differ from the "
        "recorded client's ($.params.capabilities.sampling); the recorded answer may not suit it"
    ) in err


def call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_sequential_keeps_order_but_never_crosses_a_tool_name(
    everything_recording: Recording,
) -> None:
    asked = [
        call(1, "get-sum", {"a": 1, "b": 1}),
        call(2, "get-tiny-image", {}),
        call(3, "echo", {}),
    ]
    proc = run_serve([str(everything_recording.trace), "--match", "sequential"], asked)
    replies = {r["id"]: r for r in map(json.loads, proc.out.splitlines())}
    # Any get-sum arguments take the next recorded get-sum answer; never echo's.
    recorded_sum = recorded_call(everything_recording, "get-sum")["result"]["content"]
    assert replies[1]["result"]["content"] == recorded_sum
    recorded_echo = recorded_call(everything_recording, "echo")["result"]["content"]
    assert replies[3]["result"]["content"] == recorded_echo
    assert replies[2]["error"]["code"] == -32601
    assert replies[2]["error"]["message"].startswith(
        "replay: nothing was recorded for tools/call (get-tiny-image) in "
    )


def test_allowed_differences_serve_the_nearest_call_with_a_warning(
    everything_recording: Recording,
) -> None:
    asked = [call(7, "echo", {"message": "something else"})]
    plain = run_serve([str(everything_recording.trace)], asked)
    assert json.loads(plain.out)["error"]["code"] == -32601
    allowed = run_serve(
        [str(everything_recording.trace), "--allow", "$.params.arguments.message"], asked
    )
    recorded_echo = recorded_call(everything_recording, "echo")["result"]["content"]
    assert json.loads(allowed.out)["result"]["content"] == recorded_echo
    assert (
        "served the recorded request id 5, which differs only where --allow lets it:\n"
        "  $.params.arguments.message\n"
        '    recorded: "hello from mcpsniff e2e"\n'
        '    asked:    "something else"\n'
    ) in allowed.err
