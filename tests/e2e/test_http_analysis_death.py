"""``mcpsniff http`` whose analysis process is killed holding the trace's lock.

The proxy forks its analysis process the way ``mcpsniff stdio`` does, so it
had the same hang: the lock of a process killed between its ``flock`` of the
trace and the unlock lived on in the proxy's own copy of the file, and the
salvage at the end waited for it forever. Caught for sure, as in
``test_stdio_analysis_death``: stopped while ``/proc/locks`` shows it holding
the lock, then killed.
"""

from __future__ import annotations

import signal
import subprocess
import urllib.request

import pytest

from tests.e2e.test_stdio_analysis_death import LOCKS, flock_holders, kill_when_it_holds_the_lock
from tests.relay.http_upstreams import Upstream
from tests.relay.test_http import (  # noqa: F401  (fixtures)
    ProxyFactory,
    analysis_process,
    start_proxy,
    upstream,
)

TIMEOUT = 60.0
#: A body big enough that writing its records keeps the trace locked a while.
BIG = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"%s"}}' % (b"x" * (4 << 20))


def post(url: str, body: bytes) -> int:
    request = urllib.request.Request(
        url,
        data=body,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
        reply.read()
        return int(reply.status)


@pytest.mark.skipif(not LOCKS.exists(), reason="needs Linux's /proc/locks")
def test_an_analysis_process_killed_holding_the_trace_lock_never_hangs_the_proxy(
    start_proxy: ProxyFactory,  # noqa: F811
    upstream: Upstream,  # noqa: F811
) -> None:
    proxy = start_proxy(upstream.url("/echo/mcp"))
    trace = proxy.trace_path
    analysis = analysis_process(proxy)
    statuses: list[int] = []
    count = kill_when_it_holds_the_lock(
        analysis, trace, lambda: statuses.append(post(proxy.url, BIG)), len(BIG)
    )
    # Forwarding goes on after the death...
    assert post(proxy.url, b'{"jsonrpc":"2.0","id":2,"method":"ping"}') == 200
    assert statuses == [200] * count
    # ...and the proxy stops when told, with the trace completed (3: it is incomplete).
    proxy.proc.send_signal(signal.SIGTERM)
    try:
        assert proxy.proc.wait(TIMEOUT) == 3, proxy.stderr
    except subprocess.TimeoutExpired:
        raise AssertionError(f"mcpsniff http did not exit: {proxy.stderr}") from None
    assert not flock_holders(trace)
    deaths = [
        line
        for line in proxy.stderr_lines
        if "analysis process is gone" in line or "analysis process was killed" in line
    ]
    assert len(deaths) == 1, proxy.stderr
    assert "the trace was completed without the analysis process" in proxy.stderr
    assert trace.read_bytes().endswith(b"\n")
