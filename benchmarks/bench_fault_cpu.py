"""CPU per request of ``mcpsniff http --fault F`` vs ``mcpsniff http``, SSE and JSON answers.

Wall-clock ratios (``bench_http_relay.py --fault``) swing with the load of a shared
machine; the CPU a relay process spends per request moves far less. This script
starts the upstream of ``bench_http_relay.py`` and two ``mcpsniff http`` in front
of it (one with the faults of ``--fault``), then sends sequential ``tools/call``
POSTs of 1 KiB (one client per relay and format, blocks taking turns) and reads
each relay's own CPU time (``/proc/PID/task/*/schedstat``; its analysis process, which
does the same work in both, is left out) before and after each block.

Usage::

    python benchmarks/bench_fault_cpu.py --fault 'delay 1s when tool == "nothing-has-this-name"'
    python benchmarks/bench_fault_cpu.py --requests 3000 --block 100 --formats sse

It prints, per format, the relay's CPU microseconds per request of both and their
ratio (the faulted one over the plain one), and the median latency of each. A
relay busy-polls for a moment after each request, which counts in its CPU time;
``--no-busy-poll`` turns that off in both, so that their CPU is their work.

``--callgrind`` runs both relays under ``valgrind --tool=callgrind`` and counts the
instructions each executes for the measured requests (counters zeroed after the
warm-up, dumped after each block with ``callgrind_control``; both relays without
busy polling, whose spinning depends on timing): a figure the load of other
processes does not move, only slower (use a few hundred requests). It counts no
kernel work (system calls, segments sent): that is what the CPU times show.
Exit status 0 (information, no target).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_http_relay
from bench_http_relay import (
    MODES,
    Client,
    new_http,
    start_mcpsniff,
    start_upstream,
    stop,
    wait_idle,
)
from bench_stdio_relay import cpu_seconds

PLAIN, FAULTED = "mcpsniff", "mcpsniff --fault"


def instructions(pid: int, folder: Path) -> float:
    """Instructions a relay under callgrind executed since the last call (in millions)."""
    before = set(folder.glob(f"cg.{pid}*"))
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = [p for p in set(folder.glob(f"cg.{pid}*")) - before if p.stat().st_size]
        for dump in new:
            found = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
            if found:
                return int(found.group(1)) / 1e6
        time.sleep(0.1)
    raise RuntimeError(f"no callgrind dump from {pid}")


async def measure(
    ns: argparse.Namespace, urls: dict[str, str], pids: dict[str, int], folder: Path
) -> None:
    """Blocks of sequential calls per relay and format, taking turns; prints the figures."""
    cost = (lambda pid: instructions(pid, folder)) if ns.callgrind else cpu_seconds
    unit = ("thousand instructions", 1e3) if ns.callgrind else ("us CPU", 1e6)
    cpu: dict[tuple[str, str], float] = {}
    calls: dict[tuple[str, str], int] = {}
    latency: dict[tuple[str, str], list[float]] = {}
    async with new_http() as http:
        clients = {}
        for name, url in urls.items():
            for mode in ns.formats:
                client = Client(http, f"{url}/{mode}", mode)
                await client.open()
                await client.sequential(50)  # warm up
                clients[name, mode] = client
        for name in urls:
            cost(pids[name])  # zeroes callgrind's counters
        for key in clients:
            cpu[key], calls[key], latency[key] = 0.0, 0, []
        done = 0
        turn = 0
        while done < ns.requests:
            for mode in ns.formats:
                order = [PLAIN, FAULTED] if turn % 2 == 0 else [FAULTED, PLAIN]
                for name in order:
                    key = (name, mode)
                    if ns.callgrind:
                        latency[key] += await clients[key].sequential(ns.block)
                        cpu[key] += cost(pids[name])
                    else:
                        before = cost(pids[name])
                        latency[key] += await clients[key].sequential(ns.block)
                        cpu[key] += cost(pids[name]) - before
                    calls[key] += ns.block
            done += ns.block
            turn += 1
    for mode in ns.formats:
        per = {name: cpu[name, mode] / calls[name, mode] * unit[1] for name in (PLAIN, FAULTED)}
        p50 = {name: statistics.median(latency[name, mode]) for name in (PLAIN, FAULTED)}
        print(
            f"{mode}: relay per request {per[PLAIN]:.1f} plain, {per[FAULTED]:.1f} with --fault"
            f" ({unit[0]}): ratio {per[FAULTED] / per[PLAIN]:.3f}; latency p50"
            f" {p50[PLAIN]:.0f} / {p50[FAULTED]:.0f} us: ratio {p50[FAULTED] / p50[PLAIN]:.3f}"
            f" ({calls[PLAIN, mode]} requests each)"
        )


def main() -> int:
    """Run the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--fault", action="append", required=True, help="a fault (repeatable)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per relay and format")
    parser.add_argument("--block", type=int, default=100, help="requests before the next relay")
    parser.add_argument("--callgrind", action="store_true", help="count instructions")
    parser.add_argument(
        "--no-busy-poll", action="store_true", help="relays without busy polling (CPU = work)"
    )
    parser.add_argument("--keep", help="a folder to keep the logs, traces and dumps in")
    parser.add_argument(
        "--formats",
        type=lambda text: text.split(","),
        default=list(MODES),
        help="answer formats, of json,sse (default both)",
    )
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fault-cpu-") as name:
        folder = Path(ns.keep or name)
        folder.mkdir(parents=True, exist_ok=True)
        upstream, origin = start_upstream(folder)
        procs = [upstream]
        prefix = None
        if ns.callgrind or ns.no_busy_poll:
            # Busy polling spins for a while after each request: CPU (and instructions)
            # that count how long the request took, not what it cost.
            bench_http_relay.GUARD = ["--no-busy-poll"]
        if ns.callgrind:
            bench_http_relay.START_TIMEOUT = 600.0  # a start under valgrind is slow
            out = f"--callgrind-out-file={folder}/cg.%p"
            prefix = ["valgrind", "--tool=callgrind", out, sys.executable]
        try:
            plain, plain_port = start_mcpsniff(
                folder, origin, folder / "plain.jsonl", "plain", prefix=prefix
            )
            procs.append(plain)
            faulted, faulted_port = start_mcpsniff(
                folder, origin, folder / "faulted.jsonl", "faulted", prefix=prefix, faults=ns.fault
            )
            procs.append(faulted)
            urls = {
                PLAIN: f"http://127.0.0.1:{plain_port}",
                FAULTED: f"http://127.0.0.1:{faulted_port}",
            }
            pids = {PLAIN: plain.pid, FAULTED: faulted.pid}
            start = time.monotonic()
            asyncio.run(measure(ns, urls, pids, folder))
            for pid in pids.values():
                wait_idle(pid)
            print(f"({time.monotonic() - start:.1f} s)")
        finally:
            for proc in reversed(procs):
                stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
