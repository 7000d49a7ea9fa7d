"""Benchmark the mitmproxy addon: mitmdump recording MCP traffic vs plain mitmdump.

Target (from the issue): with ``addons/mcpsniff.py`` recording, mitmdump keeps at
least 0.85x the request rate it has without the addon.

Two ``mitmdump`` processes run side by side in reverse mode in front of the same
upstream, a small, fast aiohttp server (its own process) that answers every
JSON-RPC POST with a JSON result: one with the addon recording a trace, one
without any addon. Both log nothing per flow (``flow_detail=0``), so the
difference is the addon. 16 concurrent clients (one aiohttp session, 16
connections, keep-alive) each open an MCP session (initialize,
notifications/initialized, tools/list) and then send ``tools/call`` POSTs of
1 KiB for a fixed time. Rounds alternate between the two proxies (with, without,
with, ...), so drift of the machine hits both alike; the rates are the requests
completed per second of each round, and the verdict uses the medians. The
ratio of each round's pair is printed too, to show how noisy the run was.

The addon analyzes and writes the trace in an analysis process of its own
(mitmdump's child): its CPU per request is measured and printed beside
mitmdump's, since it competes for the same cores. By default (no flow file)
the addon holds no response for its findings; ``--hold on`` measures the
mode a flow file (``-w``) turns on, where each response waits for them.

Usage::

    python benchmarks/bench_mitmproxy_addon.py
    python benchmarks/bench_mitmproxy_addon.py --rounds 6 --seconds 5 --clients 16
    python benchmarks/bench_mitmproxy_addon.py --hold on
    python benchmarks/bench_mitmproxy_addon.py --fault 'delay 1s when tool == "none"'

``--fault`` adds a third proxy, mitmdump with the addon and that fault, to the
rounds, and prints its CPU per request against the addon's without it (each
round's ratio and their median; information, no target).

Exit status: 0 when the ratio meets the target, 1 when it does not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

REPO = Path(__file__).resolve().parents[1]
ADDON = REPO / "addons" / "mcpsniff.py"
TARGET_RATIO = 0.85
PROTOCOL = "2025-11-25"
START_TIMEOUT = 30.0
#: The proxy of ``--fault``: mitmdump with the addon and those faults.
FAULTED = "mitmdump+fault"


# --------------------------------------------------------------------------- upstream


def serve_upstream(port_file: Path) -> None:
    """The upstream process: JSON answers to every POST; writes its port to ``port_file``."""

    async def handle(request: web.Request) -> web.Response:
        message = json.loads(await request.read())
        if "id" not in message:
            return web.Response(status=202)
        method = message.get("method")
        headers = {}
        if method == "initialize":
            headers["Mcp-Session-Id"] = os.urandom(8).hex()
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-upstream", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        else:
            result = {"content": [{"type": "text", "text": "ok"}]}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        return web.Response(text=body, content_type="application/json", headers=headers)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/mcp", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        assert site._server is not None
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        port_file.write_text(str(port))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        await stop.wait()
        await runner.cleanup()

    asyncio.run(main())


# --------------------------------------------------------------------------- processes


def wait_for(predicate: Any, what: str, proc: subprocess.Popen[bytes]) -> Any:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            sys.exit(f"bench: {what}: the process exited {proc.returncode}")
        time.sleep(0.05)
    sys.exit(f"bench: {what}: not ready within {START_TIMEOUT} s")


def start_mitmdump(
    folder: Path,
    name: str,
    upstream: str,
    addon: bool,
    hold: str = "auto",
    faults: list[str] | None = None,
    prefix: list[str] | None = None,
) -> tuple[Any, int, Path]:
    """mitmdump in reverse mode (with the addon, and its ``faults``): process, port, log.

    ``prefix`` runs it under another program (valgrind), as a script of this Python.
    """
    mitmdump = Path(sys.executable).with_name("mitmdump")
    log = folder / f"{name}.log"
    argv = [*prefix, str(mitmdump)] if prefix else [str(mitmdump)]
    argv += ["--mode", f"reverse:{upstream}/", "--listen-host", "127.0.0.1"]
    argv += ["-p", "0", "--set", f"confdir={folder / (name + '-conf')}", "--flow-detail", "0"]
    if addon:
        argv += ["-s", str(ADDON), "--set", f"mcpsniff_trace={folder / (name + '.jsonl')}"]
        argv += ["--set", f"mcpsniff_hold={hold}"]
        for spec in faults or []:
            argv += ["--set", f"mcpsniff_fault={spec}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)

    def port() -> int | None:
        match = re.search(r"listening at 127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
        return int(match.group(1)) if match else None

    return proc, wait_for(port, name, proc), log


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --------------------------------------------------------------------------- load


def tools_call(request_id: int) -> bytes:
    """A tools/call POST body of 1 KiB."""
    base = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": ""}},
    }
    pad = 1024 - len(json.dumps(base, separators=(",", ":")))
    base["params"]["arguments"]["message"] = "x" * pad  # type: ignore[index]
    body = json.dumps(base, separators=(",", ":")).encode()
    assert len(body) == 1024, len(body)
    return body


class Client:
    """One of the concurrent clients: an MCP session on one proxy."""

    def __init__(self, http: aiohttp.ClientSession, url: str) -> None:
        self.http = http
        self.url = url
        self.session = ""
        self.next_id = 0

    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
            headers["MCP-Protocol-Version"] = PROTOCOL
        return headers

    async def send(self, body: bytes) -> aiohttp.ClientResponse:
        async with self.http.post(self.url, data=body, headers=self.headers()) as response:
            await response.read()
            if response.status >= 300:
                raise RuntimeError(f"{self.url}: HTTP {response.status}")
            return response

    def message(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        self.next_id += 1
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            body["params"] = params
        return json.dumps(body).encode()

    async def open(self) -> None:
        init = self.message(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        response = await self.send(init)
        self.session = response.headers["Mcp-Session-Id"]
        await self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        await self.send(self.message("tools/list"))

    async def run(self, until: float) -> int:
        done = 0
        while time.monotonic() < until:
            self.next_id += 1
            await self.send(tools_call(self.next_id))
            done += 1
        return done


async def measure(clients: list[Client], seconds: float) -> float:
    """Requests per second over one round, all clients at once."""
    start = time.monotonic()
    counts = await asyncio.gather(*(c.run(start + seconds) for c in clients))
    return sum(counts) / (time.monotonic() - start)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc): the addon's analysis process."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def children_cpu(pid: int) -> float:
    """CPU seconds used so far by ``pid``'s children (those still running)."""
    total = 0.0
    for child in children(pid):
        try:
            total += cpu_seconds(child)
        except OSError:
            continue
    return total


async def bench(
    urls: dict[str, str], pids: dict[str, int], rounds: int, seconds: float, count: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]]]:
    """Requests per second of each round; mitmdump's and its children's CPU ms per request."""
    rates: dict[str, list[float]] = {name: [] for name in urls}
    costs: dict[str, list[float]] = {name: [] for name in urls}
    child_costs: dict[str, list[float]] = {name: [] for name in urls}
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        clients = {name: [Client(http, url) for _ in range(count)] for name, url in urls.items()}
        for group in clients.values():
            await asyncio.gather(*(c.open() for c in group))
            await measure(group, min(1.0, seconds))  # warm-up, not counted
        for number in range(rounds):
            order = list(urls) if number % 2 == 0 else list(reversed(urls))
            for name in order:
                cpu = cpu_seconds(pids[name])
                child_cpu = children_cpu(pids[name])
                start = time.monotonic()
                rate = await measure(clients[name], seconds)
                requests = rate * (time.monotonic() - start)
                cost = (cpu_seconds(pids[name]) - cpu) * 1000 / requests
                child_cost = (children_cpu(pids[name]) - child_cpu) * 1000 / requests
                rates[name].append(rate)
                costs[name].append(cost)
                child_costs[name].append(child_cost)
                print(
                    f"round {number + 1}: {name:<16} {rate:8.0f} requests/s"
                    f"  {cost:6.3f} ms mitmdump CPU per request"
                    f"  {child_cost:6.3f} ms analysis process CPU per request",
                    flush=True,
                )
    return rates, costs, child_costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per proxy (default 4)")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of a round")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients")
    parser.add_argument(
        "--hold",
        choices=["auto", "on", "off"],
        default="auto",
        help="the addon's mcpsniff_hold (default auto: no flow file, so responses are not held)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        help="also run mitmdump+addon with this mcpsniff_fault (repeatable), for its cost",
    )
    parser.add_argument("--serve-upstream", type=Path, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve_upstream is not None:
        serve_upstream(ns.serve_upstream)
        return 0

    with tempfile.TemporaryDirectory(prefix="bench-mitmproxy-") as tmp:
        folder = Path(tmp)
        port_file = folder / "upstream.port"
        upstream_proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-upstream", str(port_file)],
            stdin=subprocess.DEVNULL,
        )
        procs = [upstream_proc]
        try:
            wait_for(
                lambda: port_file.exists() and port_file.read_text(), "upstream", upstream_proc
            )
            upstream = f"http://127.0.0.1:{port_file.read_text()}"
            with_proc, with_port, _ = start_mitmdump(folder, "with-addon", upstream, True, ns.hold)
            procs.append(with_proc)
            without_proc, without_port, _ = start_mitmdump(folder, "without-addon", upstream, False)
            procs.append(without_proc)
            urls = {
                "mitmdump+addon": f"http://127.0.0.1:{with_port}/mcp",
                "mitmdump alone": f"http://127.0.0.1:{without_port}/mcp",
            }
            pids = {"mitmdump+addon": with_proc.pid, "mitmdump alone": without_proc.pid}
            if ns.fault:
                fault_proc, fault_port, _ = start_mitmdump(
                    folder, "with-fault", upstream, True, ns.hold, faults=ns.fault
                )
                procs.append(fault_proc)
                urls[FAULTED] = f"http://127.0.0.1:{fault_port}/mcp"
                pids[FAULTED] = fault_proc.pid
            print(
                f"{ns.clients} clients, 1 KiB tools/call POSTs, {ns.rounds} rounds of "
                f"{ns.seconds:g} s per proxy, alternating; mcpsniff_hold={ns.hold}",
                flush=True,
            )
            rates, costs, child_costs = asyncio.run(
                bench(urls, pids, ns.rounds, ns.seconds, ns.clients)
            )
        finally:
            for proc in reversed(procs):
                stop(proc)
        trace = folder / "with-addon.jsonl"
        trace_size = trace.stat().st_size if trace.exists() else 0

    with_addon = statistics.median(rates["mitmdump+addon"])
    alone = statistics.median(rates["mitmdump alone"])
    ratio = with_addon / alone
    cost_with = statistics.median(costs["mitmdump+addon"])
    cost_alone = statistics.median(costs["mitmdump alone"])
    print(f"median mitmdump+addon: {with_addon:8.0f} requests/s  {cost_with:6.3f} ms CPU/request")
    print(f"median mitmdump alone: {alone:8.0f} requests/s  {cost_alone:6.3f} ms CPU/request")
    print(f"CPU ratio (alone / with addon): {cost_alone / cost_with:.3f}")
    analysis_cost = statistics.median(child_costs["mitmdump+addon"])
    print(f"median analysis process CPU: {analysis_cost:6.3f} ms/request (beside mitmdump)")
    # For judging the noise: each round's two proxies ran back to back.
    pairs = [w / a for w, a in zip(rates["mitmdump+addon"], rates["mitmdump alone"], strict=True)]
    print(
        "per-round ratios: "
        + ", ".join(f"{r:.3f}" for r in pairs)
        + f" (median {statistics.median(pairs):.3f})"
    )
    print(f"trace written: {trace_size / 1e6:.1f} MB")
    if ns.fault:
        # Each round's proxies ran back to back: a ratio per round, and their median.
        cpu = [f / w for f, w in zip(costs[FAULTED], costs["mitmdump+addon"], strict=True)]
        rate = [w / f for f, w in zip(rates[FAULTED], rates["mitmdump+addon"], strict=True)]
        print(
            f"--fault {' --fault '.join(map(repr, ns.fault))}: mitmdump CPU per request,"
            f" faulted / addon, median {statistics.median(cpu):.3f} (rounds "
            + ", ".join(f"{r:.3f}" for r in cpu)
            + f"); rate addon / faulted median {statistics.median(rate):.3f}"
        )
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    print(f"ratio {ratio:.3f} ({verdict} the target of {TARGET_RATIO})")
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
