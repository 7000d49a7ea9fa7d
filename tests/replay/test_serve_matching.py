"""``replay serve`` answering clients other than the one recorded, and explaining what it cannot.

The recording is the SDK 2.x client with server-everything over Streamable
HTTP (``http_recording``) or stdio (``everything_recording``). The clients
served are the MCP Inspector CLI, and an SDK 2.x client with another
clientInfo and a sampling callback (so other capabilities).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from typing import Any

from tests.replay.support import (
    INSPECTOR_JS,
    MCPSNIFF,
    REPO,
    SDK2_PYTHON,
    VARIANT_CLIENT,
    Recording,
    free_port,
    need,
    run,
    wait_for_port,
)
from tests.replay.test_stdio_replay import run_serve

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
