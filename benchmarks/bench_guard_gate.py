"""What ``--guard enforce`` costs the relays per forwarded call, measured in one process.

The relay benchmarks (``bench_stdio_relay.py``, ``bench_http_relay.py``, each
with ``--guard-enforce``) time whole processes, and on a shared machine their
ratios move by tens of percent from run to run. This one times the part the
guard adds, in one process, alternating the configurations so that any
disturbance hits them alike (median of ``--repeat`` runs each):

* **http**: the HTTP relay's connection code (``http_wire.ClientSide`` and its
  ``UpstreamSide`` on transports that keep nothing, the observations made and
  dropped) moving one exchange: a 1 KiB ``tools/call`` POST in, a ~1 KiB JSON
  answer out, as ``bench_http_relay.py`` sends them. Off, then ``--guard
  enforce --forbid-tool 'never_*'`` (every call judged, none refused), then
  ``--pins`` with the session's ``tools/list`` read by the gate (every call
  compared with its pin).
* **stdio**: the gate's own work per line (``Gate.client_line`` on the stdio
  benchmark's 1 KiB request and ``server_line`` on its answer), against the
  cost of the default relay's forwarding the same two lines
  (``bench_stdio_relay.py``'s "mcpsniff" proxy CPU per call, printed by it).

Usage::

    python benchmarks/bench_guard_gate.py [--repeat 9] [--count 2000]

Prints microseconds per call for each configuration (the fastest run and the
median; on a loaded machine even the fastest run is disturbed, so read the
medians) and the ratios to guard off.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_stdio_relay import (  # noqa: E402
    ECHO_RESULT,
    INIT_RESULT,
    TOOLS_RESULT,
    request_line,
    response_line,
)

from mcpsniff.core.guard.diff import Listed  # noqa: E402
from mcpsniff.core.guard.fingerprint import definitions  # noqa: E402
from mcpsniff.guard.enforce import EnforcePolicy, Gate, Gates  # noqa: E402
from mcpsniff.guard.lockfile import Lock  # noqa: E402
from mcpsniff.intercept.http_gate import HttpGate  # noqa: E402
from mcpsniff.intercept.http_upstream import UpstreamSide  # noqa: E402
from mcpsniff.intercept.http_wire import ClientSide  # noqa: E402
from mcpsniff.relay.http import HttpOptions, HttpRelay  # noqa: E402

LABEL = "http:http://127.0.0.1:1/mcp"


class Wire:
    """A transport that keeps nothing but a count of the bytes written to it."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default


class Dropped:
    """A capture that drops every observation (their making is still timed)."""

    def send(self, observation: Any) -> None:
        pass

    def end(self, t: float) -> None:
        pass


def http_post(body: bytes) -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: s1\r\n"
        b"MCP-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def http_reply(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


def lock() -> Lock:
    """The lock file of the benchmark server's tools (as ``mcpsniff pin`` would write it)."""
    pinned = {
        d.key: Listed(d.kind, d.name, d.fingerprint, d.body)
        for d in definitions("tools/list", orjson.loads(TOOLS_RESULT))
    }
    return Lock(Path("bench.lock"), {f"{LABEL} [bench-stdio-server]": pinned})


def http_case(policy: EnforcePolicy | None, count: int) -> Callable[[], float]:
    """One connection moving ``count`` calls; returns seconds per call."""
    relay = HttpRelay(HttpOptions(upstream="http://127.0.0.1:1/mcp"), None, capture=Dropped())
    relay.gate = HttpGate(Gates(policy)) if policy is not None else None
    client = ClientSide(relay)
    client.connection_made(Wire())  # type: ignore[arg-type]
    upstream = UpstreamSide(client)
    upstream.connection_made(Wire())  # type: ignore[arg-type]
    client.upstream = upstream
    upstream_wire = upstream.transport
    # The session's start, so that a pinned gate knows the server and its tools.
    for number, method, result in ((1, "initialize", INIT_RESULT), (2, "tools/list", TOOLS_RESULT)):
        request = orjson.dumps({"jsonrpc": "2.0", "id": number, "method": method})
        client.data_received(http_post(request))
        upstream.data_received(http_reply(response_line(number, result)[:-1]))
    requests = [http_post(request_line(n)[:-1]) for n in range(3, 3 + count)]
    replies = [http_reply(response_line(n, ECHO_RESULT)[:-1]) for n in range(3, 3 + count)]

    def run() -> float:
        before = upstream_wire.written  # type: ignore[union-attr]
        started = time.perf_counter()
        for request, reply in zip(requests, replies, strict=True):
            client.data_received(request)
            upstream.data_received(reply)
        took = (time.perf_counter() - started) / count
        # Every call was forwarded (none refused): the same work in every configuration.
        assert upstream_wire.written - before == sum(map(len, requests))  # type: ignore[union-attr]
        return took

    return run


def stdio_case(count: int) -> Callable[[], float]:
    """The gate's own work on ``count`` calls and their answers; seconds per call."""
    gate = Gate(EnforcePolicy(LABEL, lock(), ()))  # the label only names the lock entry
    gate.learn(("initialize", False), orjson.loads(INIT_RESULT))
    gate.learn(("tools/list", False), orjson.loads(TOOLS_RESULT))
    requests = [request_line(n) for n in range(3, 3 + count)]
    replies = [response_line(n, ECHO_RESULT) for n in range(3, 3 + count)]

    def run() -> float:
        started = time.perf_counter()
        for request, reply in zip(requests, replies, strict=True):
            if gate.client_line(request) is not None:
                raise AssertionError("the pinned gate refused a call")
            gate.server_line(reply)
        return (time.perf_counter() - started) / count

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="timed runs of each case")
    parser.add_argument("--count", type=int, default=2000, help="calls per run")
    ns = parser.parse_args()
    forbid = EnforcePolicy(LABEL, None, ("never_*",))
    pins = EnforcePolicy(LABEL, lock(), ())
    cases = {
        "http, guard off": http_case(None, ns.count),
        "http, --guard enforce --forbid-tool": http_case(forbid, ns.count),
        "http, --guard enforce --pins": http_case(pins, ns.count),
        "stdio gate alone, --pins": stdio_case(ns.count),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for run in cases.values():
        run()  # warm up
    for _ in range(ns.repeat):
        for name, run in cases.items():
            times[name].append(run())
    off = min(times["http, guard off"])
    off_median = statistics.median(times["http, guard off"])
    print(f"{'':40} {'fastest':>8}  {'median':>8} us per call")
    for name, samples in times.items():
        best, median = min(samples), statistics.median(samples)
        ratio = ""
        if name.startswith("http"):
            ratio = f"   {best / off:.3f}x and {median / off_median:.3f}x guard off"
        print(f"{name:40} {best * 1e6:8.2f}  {median * 1e6:8.2f}{ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
