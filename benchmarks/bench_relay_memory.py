"""Peak memory of ``mcpsniff http`` (relay plus analysis process) under big bodies and floods.

Target (issue 12): memory is bounded by configuration, not by the traffic: the
peak RSS of the relay plus its analysis process stays flat (under about 300
MB) whatever the body size or the stream length, and what is not analyzed is
accounted for in the trace (``capture-gap``).

Scenarios, each against a fresh ``mcpsniff http`` in front of an aiohttp
upstream in a process of its own:

* ``post``: ``--concurrent`` POSTs of ``--body`` MB each at once (the client
  streams them; the upstream reads and discards them).
* ``sse``: one GET event stream of ``--stream`` MB of small events, read as
  fast as the client can.

The relay's and its children's RSS is sampled from ``/proc`` every 20 ms; the
ratio reported is the peak with the big size over the peak with a size 4x
smaller, measured in the same run (flat: about 1.0).

Usage::

    python benchmarks/bench_relay_memory.py                    # 400 MB bodies, 1 GB stream
    python benchmarks/bench_relay_memory.py --body 100 --stream 256

Exit status: 0 when every peak is under ``--limit`` MB, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parents[1]
MIB = 1 << 20

UPSTREAM = r"""
import sys
from aiohttp import web

MESSAGE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}'
EVENT = b"data: " + MESSAGE % (b"x" * 900) + b"\n\n"

async def sink(request):
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
    return web.json_response({"jsonrpc": "2.0", "id": 1, "result": {"received": size}})

async def flood(request):
    total = int(request.query["bytes"])
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    block = EVENT * 64
    sent = 0
    while sent < total:
        await response.write(block)
        sent += len(block)
    await response.write_eof()
    return response

app = web.Application(client_max_size=1 << 40)
app.router.add_post("/mcp", sink)
app.router.add_get("/mcp", flood)
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tree_rss(pid: int) -> int:
    """RSS in bytes of ``pid`` and its children (the forked analysis process)."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class Sampler(threading.Thread):
    """Samples the relay tree's RSS until stopped; keeps the peak."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, tree_rss(self.pid))
            time.sleep(0.02)


async def body(size: int) -> AsyncIterator[bytes]:
    yield b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"b":"'
    chunk = b"a" * MIB
    left = size
    while left > 0:
        piece = chunk if left >= MIB else chunk[:left]
        left -= len(piece)
        yield piece
    yield b'"}}}'


async def post_scenario(url: str, size: int, concurrent: int) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http:

        async def one() -> None:
            async with http.post(
                url, data=body(size), headers={"Content-Type": "application/json"}
            ) as response:
                await response.read()
                assert response.status == 200, response.status

        await asyncio.gather(*(one() for _ in range(concurrent)))


async def sse_scenario(url: str, size: int) -> None:
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http,
        http.get(f"{url}?bytes={size}", headers={"Accept": "text/event-stream"}) as response,
    ):
        async for _ in response.content.iter_any():
            pass


def run_relay(upstream_port: int, scenario: str, size: int, concurrent: int) -> tuple[int, dict]:
    """One relay run: the peak RSS of its process tree and what the trace says it lost."""
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "t.jsonl"
        relay = subprocess.Popen(
            [sys.executable, "-m", "mcpsniff", "http", "--upstream",
             f"http://127.0.0.1:{upstream_port}/mcp", "--listen", f"127.0.0.1:{port}",
             "--trace", str(trace)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert relay.stderr is not None
        relay.stderr.readline()  # the announcement: listening
        sampler = Sampler(relay.pid)
        sampler.start()
        url = f"http://127.0.0.1:{port}/mcp"
        if scenario == "post":
            asyncio.run(post_scenario(url, size, concurrent))
        else:
            asyncio.run(sse_scenario(url, size))
        relay.send_signal(signal.SIGINT)
        relay.wait(600)
        sampler.running = False
        sampler.join()
        lost: dict[str, int] = {
            "exchanges": 0,
            "exchange_gap_bytes": 0,
            "relay_gaps": 0,
            "relay_lost_bytes": 0,
        }
        with trace.open("rb") as f:
            for line in f:
                record = json.loads(line)
                event = record.get("event")
                data = record.get("data", {})
                if event == "http-end":
                    lost["exchanges"] += 1
                elif event == "capture-gap" and "exchange" in data:
                    lost["exchange_gap_bytes"] += data.get("lost_bytes", 0)
                elif event == "capture-gap":
                    lost["relay_gaps"] += 1
                    lost["relay_lost_bytes"] += data.get("lost_bytes", 0)
        return sampler.peak, lost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--body", type=int, default=400, help="MB per POST body")
    parser.add_argument("--concurrent", type=int, default=3)
    parser.add_argument("--stream", type=int, default=1024, help="MB of SSE events")
    parser.add_argument("--limit", type=int, default=300, help="MB the peak must stay under")
    args = parser.parse_args()
    upstream_port = free_port()
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM, str(upstream_port)])
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", upstream_port), 0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        ok = True
        for scenario, size in (("post", args.body * MIB), ("sse", args.stream * MIB)):
            peaks = []
            for run_size in (size // 4, size):
                peak, lost = run_relay(upstream_port, scenario, run_size, args.concurrent)
                peaks.append(peak)
                what = (
                    f"{args.concurrent} x {run_size // MIB} MB POST"
                    if scenario == "post"
                    else f"{run_size // MIB} MB SSE stream"
                )
                print(f"{what:>24}: peak RSS relay+analysis {peak / MIB:7.1f} MiB; trace: {lost}")
                ok = ok and peak < args.limit * MIB
            print(f"{scenario}: peak ratio (4x the traffic) = {peaks[1] / peaks[0]:.2f}")
        return 0 if ok else 1
    finally:
        upstream.send_signal(signal.SIGINT)
        upstream.wait(30)


if __name__ == "__main__":
    sys.exit(main())
