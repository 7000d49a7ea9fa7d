"""``mcpsniff http`` when its analysis process dies: clients unaffected, the trace honest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import aiohttp

from mcpsniff.core.model import EventRecord
from mcpsniff.trace.reader import TraceReader
from tests.relay.http_upstreams import Upstream
from tests.relay.test_http import (  # noqa: F401  (fixtures)
    Proxy,
    ProxyFactory,
    analysis_process,
    run,
    start_proxy,
    upstream,
)

PING = b'{"jsonrpc": "2.0", "id": %d, "method": "ping"}'


async def _post_all(url: str, count: int, first: int) -> list[int]:
    statuses = []
    async with aiohttp.ClientSession() as http:
        for i in range(first, first + count):
            async with http.post(
                url,
                data=PING % i,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            ) as reply:
                await reply.read()
                statuses.append(reply.status)
    return statuses


def _killed_mid_run(proxy: Proxy) -> tuple[list[int], list[EventRecord]]:
    statuses = run(_post_all(proxy.url, 1, 0))
    deadline = time.monotonic() + 20
    while b'"http-response"' not in proxy.trace_path.read_bytes():
        assert time.monotonic() < deadline, "the first exchange never reached the trace"
        time.sleep(0.02)
    os.kill(analysis_process(proxy), signal.SIGKILL)
    statuses += run(_post_all(proxy.url, 20, 1))
    proxy.proc.send_signal(signal.SIGTERM)
    # 3: the trace is incomplete (mcpsniff http --help); the clients were all served.
    assert proxy.proc.wait(30) == 3, proxy.stderr
    with TraceReader(proxy.trace_path) as reader:
        events = [r for r in reader.records() if isinstance(r, EventRecord)]
    return statuses, events


def test_every_client_is_answered_after_the_analysis_dies(
    start_proxy: ProxyFactory,  # noqa: F811
    upstream: Upstream,  # noqa: F811
) -> None:
    proxy = start_proxy(upstream.url("/echo/mcp"))
    statuses, events = _killed_mid_run(proxy)
    assert statuses == [200] * 21
    assert any(e.event == "http-request" for e in events)


def test_a_dead_analysis_process_is_accounted_for_in_the_trace(
    start_proxy: ProxyFactory,  # noqa: F811
    upstream: Upstream,  # noqa: F811
) -> None:
    proxy = start_proxy(upstream.url("/echo/mcp"))
    _, events = _killed_mid_run(proxy)
    names = [e.event for e in events]
    assert "capture-gap" in names, names
    assert "session-end" in names or "relay-end" in names, names
    # Exactly the exchanges whose end the trace lacks are named, and the stderr says so.
    # (One gap once the relay saw the death, another for what came after.)
    ended = {e.data["exchange"] for e in events if e.event == "http-end"}
    gaps = [e for e in events if e.event == "capture-gap"]
    named = [n for g in gaps for first, last in g.data["exchanges"] for n in range(first, last + 1)]
    assert sorted(named) == sorted(set(range(1, 22)) - ended)
    assert sum(g.data["lost_exchanges"] for g in gaps) == len(named)
    assert all("SIGKILL" in g.data["reason"] for g in gaps)
    assert f"it lacks {len(named)} exchange(s)" in proxy.stderr
    assert names.count("session-end") == len(set(e.session for e in events))
    # ``check`` reads the completed trace and says what its verdict lacks.
    check = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", str(proxy.trace_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode in (0, 1) and "Traceback" not in check.stderr, check.stderr
    assert f"the trace lacks {len(named)} exchange(s)" in check.stderr
