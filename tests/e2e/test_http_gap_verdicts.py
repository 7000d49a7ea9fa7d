"""``check`` after ``mcpsniff http``'s analysis process was SIGKILLed mid-session.

A real client session (raw Streamable HTTP, so the test decides when each
call goes out) against the real server-everything through a real ``mcpsniff
http``. A long-running tool call is recorded, then the analysis process is
killed while it runs; its answer and five more calls pass the relay but never
reach the trace. The relay completes the trace itself (``trace/salvage.py``):
a capture-gap naming the exchanges it began whose end the trace lacks. Then
``mcpsniff check --fail-on error`` must pass: the long call is not "never
answered" (JR-RESP-REQUIRED) since its answer is in the gap, and stderr says
how many verdicts the gap left unjudged.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mcpsniff.core.model import EventRecord, MessageRecord
from mcpsniff.trace.format import TraceReader
from tests.e2e.test_http_peers import EVERYTHING_JS, REPO, Relay, Server, stop_process

#: Headers of every POST (Streamable HTTP: the server answers JSON or SSE).
POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LONG_CALL = 3
#: Calls sent after the analysis process died.
AFTER = range(4, 9)


def _request(ident: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def _echo(ident: int) -> bytes:
    return _request(ident, "tools/call", {"name": "echo", "arguments": {"message": f"m{ident}"}})


def _analysis_process(relay: Relay) -> int:
    children = [
        int(pid)
        for task in Path(f"/proc/{relay.proc.pid}/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]
    assert len(children) == 1, children
    return children[0]


async def _wait_for(path: Path, needle: bytes, what: str) -> None:
    deadline = time.monotonic() + 30
    while needle not in path.read_bytes():
        assert time.monotonic() < deadline, f"{what} never reached the trace"
        await asyncio.sleep(0.02)


async def _session(relay: Relay) -> list[str]:
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
            {"name": "trigger-long-running-operation", "arguments": {"duration": 2, "steps": 2}},
        )
        running = asyncio.ensure_future(post(long, session))
        # The long call's request is analysed and written; its answer comes later.
        await _wait_for(relay.trace, b'"id":3,"method":"tools/call"', "the long call")
        os.kill(_analysis_process(relay), signal.SIGKILL)
        bodies = []
        for ident in AFTER:
            status, text, _ = await post(_echo(ident), session)
            assert status == 200, text
            bodies.append(text)
        status, text, _ = await running
        assert status == 200, text
        bodies.append(text)
        return bodies


def _check(trace: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--fail-on", "error", *options, str(trace)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def killed_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    if not EVERYTHING_JS.exists():
        pytest.skip("server-everything is not installed; run scripts/setup-peers.sh")
    folder = tmp_path_factory.mktemp("http-gap")
    server = Server(
        ["node", str(EVERYTHING_JS), "streamableHttp"], {"PORT": "{port}"}, folder / "server.log"
    )
    try:
        relay = Relay(server.url("/mcp"), folder / "trace.jsonl")
        try:
            bodies = asyncio.run(_session(relay))
        finally:
            code = stop_process(relay.proc, signal.SIGINT)
    finally:
        server.stop()
    # 3: the trace is incomplete (mcpsniff http --help), and the relay completed it.
    assert code == 3, relay.stderr
    return relay.trace, bodies, relay.stderr


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
