"""``check`` after the analysis process of ``mcpsniff http`` (or the mitmproxy addon) was
SIGKILLed mid-session.

A real client session (raw Streamable HTTP, so the test decides when each
call goes out) against the real server-everything through a real ``mcpsniff
http``. A long-running tool call is recorded, then the analysis process is
killed while it runs; its answer and five more calls pass the relay but never
reach the trace. The relay completes the trace itself (``trace/salvage.py``):
a capture-gap naming the exchanges it began whose end the trace lacks. Then
``mcpsniff check --fail-on error`` must pass: the long call is not "never
answered" (JR-RESP-REQUIRED) since its answer is in the gap, and stderr says
how many verdicts the gap left unjudged. Through ``mcpsniff http`` and
through ``mitmdump`` with the addon (reverse mode), each of which completes
its trace its own way.

The same with the server asking: a tool call makes server-everything send the
client a ``sampling/createMessage`` request on the call's SSE stream; the
analysis process is killed once that request is recorded, so the client's
answer (its own POST) and the tool's result are forwarded, not recorded. The
server's request is not "never answered" either: its answer is in the gap.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mcpsniff.core.model import EventRecord, MessageRecord
from mcpsniff.trace.reader import TraceReader
from tests.e2e.test_http_peers import EVERYTHING_JS, REPO, Relay, Server, stop_process
from tests.mitm.support import Mitmdump, mitmdump_path, require_peers

#: Headers of every POST (Streamable HTTP: the server answers JSON or SSE).
POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LONG_CALL = 3
SAMPLING_CALL = 7
#: Calls sent after the analysis process died.
AFTER = range(4, 9)


def _request(ident: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def _echo(ident: int) -> bytes:
    return _request(ident, "tools/call", {"name": "echo", "arguments": {"message": f"m{ident}"}})


@dataclass
class Through:
    """The proxy a session goes through: its MCP URL, its trace, how to kill its analysis."""

    url: str
    trace: Path
    proc: subprocess.Popen[bytes]

    def kill_analysis(self) -> None:
        children = [
            int(pid)
            for task in Path(f"/proc/{self.proc.pid}/task").iterdir()
            for pid in (task / "children").read_text().split()
        ]
        assert len(children) == 1, children
        os.kill(children[0], signal.SIGKILL)


async def _wait_for(path: Path, needle: bytes, what: str) -> None:
    deadline = time.monotonic() + 30
    while needle not in path.read_bytes():
        assert time.monotonic() < deadline, f"{what} never reached the trace"
        await asyncio.sleep(0.02)


async def _session(relay: Through) -> list[str]:
    """The client's session; the bodies of its answers after the death, in order."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:

        async def post(body: bytes, headers: dict[str, str]) -> tuple[int, str, Any]:
            async with http.post(relay.url, data=body, headers=headers) as reply:
                return reply.status, await reply.text(), reply.headers

        init = _request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "gap-e2e", "version": "1.0"},
            },
        )
        status, text, headers = await post(init, POST_HEADERS)
        assert status == 200 and '"serverInfo"' in text, text
        session = {**POST_HEADERS, "Mcp-Session-Id": headers["Mcp-Session-Id"]}
        session["MCP-Protocol-Version"] = "2025-06-18"
        notified = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        assert (await post(notified, session))[0] == 202
        status, text, _ = await post(_echo(2), session)
        assert status == 200 and "Echo: m2" in text, text
        long = _request(
            LONG_CALL,
            "tools/call",
            {"name": "trigger-long-running-operation", "arguments": {"duration": 4, "steps": 2}},
        )
        running = asyncio.ensure_future(post(long, session))
        # The long call's request is analysed and written; its answer comes later.
        await _wait_for(relay.trace, b'"id":3,"method":"tools/call"', "the long call")
        relay.kill_analysis()
        bodies = []
        for ident in AFTER:
            status, text, _ = await post(_echo(ident), session)
            assert status == 200, text
            bodies.append(text)
        status, text, _ = await running
        assert status == 200, text
        bodies.append(text)
        return bodies


async def _sampling_session(relay: Through) -> str:
    """initialize with sampling; a tool call whose server asks the client to sample."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http:
        init = _request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"sampling": {}},
                "clientInfo": {"name": "gap-e2e", "version": "1.0"},
            },
        )
        async with http.post(relay.url, data=init, headers=POST_HEADERS) as reply:
            assert reply.status == 200
            session = {**POST_HEADERS, "Mcp-Session-Id": reply.headers["Mcp-Session-Id"]}
            await reply.read()
        session["MCP-Protocol-Version"] = "2025-06-18"
        notified = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        async with http.post(relay.url, data=notified, headers=session) as reply:
            assert reply.status == 202
        call = _request(
            SAMPLING_CALL,
            "tools/call",
            {"name": "trigger-sampling-request", "arguments": {"prompt": "hi", "maxTokens": 5}},
        )
        async with http.post(relay.url, data=call, headers=session) as reply:
            assert reply.status == 200, await reply.text()
            asked = None
            async for line in reply.content:
                if line.startswith(b"data:") and b"sampling/createMessage" in line:
                    asked = json.loads(line[5:])
                    break
            assert asked is not None
            await _wait_for(
                relay.trace, b'"method":"sampling/createMessage"', "the server's request"
            )
            relay.kill_analysis()
            answer = {
                "jsonrpc": "2.0",
                "id": asked["id"],
                "result": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "sampled"},
                    "model": "test-model",
                    "stopReason": "endTurn",
                },
            }
            async with http.post(relay.url, data=json.dumps(answer), headers=session) as posted:
                assert posted.status == 202, await posted.text()
            rest = (await reply.read()).decode()
        assert "LLM sampling result" in rest, rest
        return rest


def _check(trace: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--fail-on", "error", *options, str(trace)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _killed(
    folder: Path, session: Callable[[Through], Awaitable[Any]], via: str = "http"
) -> tuple[Path, Any, str]:
    """Run ``session`` through ``via`` in front of server-everything; the trace, its result."""
    if not EVERYTHING_JS.exists():
        pytest.skip("server-everything is not installed; run scripts/setup-peers.sh")
    if via == "addon":
        require_peers(mitmdump_path())
    server = Server(
        ["node", str(EVERYTHING_JS), "streamableHttp"], {"PORT": "{port}"}, folder / "server.log"
    )
    trace = folder / "trace.jsonl"
    try:
        if via == "http":
            relay = Relay(server.url("/mcp"), trace)
            try:
                result = asyncio.run(session(Through(relay.url, trace, relay.proc)))
            finally:
                code = stop_process(relay.proc, signal.SIGINT)
            # 3: the trace is incomplete (mcpsniff http --help); the relay completed it.
            assert code == 3, relay.stderr
            return trace, result, relay.stderr
        mitm = Mitmdump(folder, mode=f"reverse:{server.url('/')}", trace=trace).started()
        try:
            result = asyncio.run(session(Through(mitm.url("/mcp"), trace, mitm.proc)))
            mitm.wait_for("the trace was completed without the analysis process")
        finally:
            code = mitm.stop(signal.SIGINT)
        assert code == 0, mitm.output
        return trace, result, mitm.output
    finally:
        server.stop()


VIA = ["http", "addon"]


@pytest.fixture(scope="module", params=VIA)
def killed_trace(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str], str]:
    return _killed(tmp_path_factory.mktemp(f"gap-{request.param}"), _session, request.param)


def test_every_call_is_answered_through_the_relay(
    killed_trace: tuple[Path, list[str], str],
) -> None:
    _, bodies, _ = killed_trace
    assert [f"Echo: m{i}" in body for i, body in zip(AFTER, bodies, strict=False)] == [True] * 5
    assert '"id":3' in bodies[-1].replace(" ", "") and "Long running operation" in bodies[-1]


def test_the_trace_names_the_exchanges_it_lacks(killed_trace: tuple[Path, list[str], str]) -> None:
    trace, _, stderr = killed_trace
    with TraceReader(trace) as reader:
        records = list(reader.records())
    gaps = [r for r in records if isinstance(r, EventRecord) and r.event == "capture-gap"]
    assert gaps, stderr
    lost = sum(g.data.get("lost_exchanges", 0) for g in gaps)
    # The long call's exchange and the five after the death, at least.
    assert lost >= 1 + len(AFTER), [g.data for g in gaps]
    recorded = {r.id for r in records if isinstance(r, MessageRecord) and r.kind == "request"}
    assert LONG_CALL in recorded and not recorded & set(AFTER)


def test_check_passes_and_names_what_it_did_not_judge(
    killed_trace: tuple[Path, list[str], str],
) -> None:
    trace, _, _ = killed_trace
    check = _check(trace, "--format", "json")
    found = [json.loads(line) for line in check.stdout.splitlines()]
    errors = [f for f in found if f["severity"] == "error"]
    assert errors == [], found
    assert check.returncode == 0, check.stdout + check.stderr
    assert "the trace lacks" in check.stderr and "exchange(s)" in check.stderr, check.stderr
    assert "1 request(s) pending across a capture gap were not judged unanswered" in check.stderr
    assert "Traceback" not in check.stderr


@pytest.mark.parametrize("via", VIA)
def test_a_server_request_answered_in_the_gap_is_not_judged(tmp_path: Path, via: str) -> None:
    trace, _, stderr = _killed(tmp_path, _sampling_session, via)
    with TraceReader(trace) as reader:
        records = list(reader.records())
    asked = [
        r for r in records if isinstance(r, MessageRecord) and r.method == "sampling/createMessage"
    ]
    assert [r.direction for r in asked] == ["s2c"], stderr
    check = _check(trace, "--format", "json")
    found = [json.loads(line) for line in check.stdout.splitlines()]
    assert [f for f in found if f["severity"] == "error"] == [], found
    assert check.returncode == 0, check.stdout + check.stderr
    assert "2 request(s) pending across a capture gap were not judged unanswered" in check.stderr
