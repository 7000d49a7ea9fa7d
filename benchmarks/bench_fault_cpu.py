"""CPU per request of ``mcpsniff http --fault F`` vs ``mcpsniff http``, SSE and JSON answers.

Wall-clock ratios (``bench_http_relay.py --fault``) swing with the load of a shared
machine; the CPU a relay process spends per request moves far less. This script
starts the upstream of ``bench_http_relay.py`` and two ``mcpsniff http`` in front
of it (one with the faults of ``--fault``), then sends sequential ``tools/call``
POSTs of 1 KiB (one client per relay and format, blocks taking turns) and reads
each relay's own CPU time (``/proc/PID/task/*/schedstat``) before and after each
block; and, without ``--callgrind``, its analysis process's, read once that process
is idle before and after the block (it does the same work in both: a ratio away from
1 is the load, or a path that costs it more).

Usage::

    python benchmarks/bench_fault_cpu.py --fault 'delay 1s when tool == "nothing-has-this-name"'
    python benchmarks/bench_fault_cpu.py --requests 3000 --block 100 --formats sse

It prints, per format, the relay's CPU microseconds per request of both and their
ratio (the faulted one over the plain one), and the median latency of each; then
the analysis processes' CPU per request and the ratio of relay and analysis together. A
relay busy-polls for a moment after each request, which counts in its CPU time;
``--no-busy-poll`` turns that off in both, so that their CPU is their work.

``--callgrind`` runs both relays under ``valgrind --tool=callgrind`` and counts the
instructions each executes for the measured requests (counters zeroed after the
warm-up, dumped after each block with ``callgrind_control``; both relays without
busy polling, whose spinning depends on timing): a figure the load of other
processes does not move, only slower (use a few hundred requests). It counts no
kernel work (system calls, segments sent): that is what the CPU times show.
``--clients N`` shares each block among N clients at once, each on a keep-alive
connection of its own with one request at a time: with 16, the concurrent path of
``bench_http_relay.py`` (one loop turn of the relay serves several connections;
under ``--callgrind``, how many depends on the load, which then moves the counts a
little). ``--stdio`` compares ``mcpsniff stdio --fault F`` with ``mcpsniff stdio`` instead
(the server of ``bench_stdio_relay.py``, one sequential 1 KiB ``tools/call`` line
at a time, blocks taking turns), with or without ``--callgrind``: the relay
process only, its analysis process left out as above.

``--addon`` compares mitmdump with the addon and ``mcpsniff_fault`` F with
mitmdump with the addon alone (``bench_mitmproxy_addon.py``'s upstream, one
sequential 1 KiB ``tools/call`` POST at a time), mitmdump's own process only.

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
import bench_stdio_relay
from bench_http_relay import (
    MODES,
    Client,
    new_http,
    start_mcpsniff,
    start_upstream,
    stop,
    wait_idle,
)
from bench_stdio_relay import analysis_pid, cpu_seconds

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


async def calls_of(group: list[Client], count: int) -> list[float]:
    """``count`` calls shared among ``group``'s clients, each one call at a time, all at
    once (one client: sequential calls); the latency of each in microseconds."""
    share, extra = divmod(count, len(group))
    runs = [client.sequential(share + (n < extra)) for n, client in enumerate(group)]
    return [t for times in await asyncio.gather(*runs) for t in times]


async def measure(
    ns: argparse.Namespace, urls: dict[str, str], pids: dict[str, int], folder: Path
) -> None:
    """Blocks of sequential calls per relay and format, taking turns; prints the figures."""
    cost = (lambda pid: instructions(pid, folder)) if ns.callgrind else cpu_seconds
    unit = ("thousand instructions", 1e3) if ns.callgrind else ("us CPU", 1e6)
    cpu: dict[tuple[str, str], float] = {}
    # The analysis process of each relay (CPU only: callgrind follows no fork).
    analysis = {} if ns.callgrind else {name: analysis_pid(pids[name]) for name in urls}
    side: dict[tuple[str, str], float] = {}
    calls: dict[tuple[str, str], int] = {}
    latency: dict[tuple[str, str], list[float]] = {}
    async with new_http() as http:
        clients: dict[tuple[str, str], list[Client]] = {}
        for name, url in urls.items():
            for mode in ns.formats:
                group = [Client(http, f"{url}/{mode}", mode) for _ in range(ns.clients)]
                await asyncio.gather(*(client.open() for client in group))
                await calls_of(group, 50 * ns.clients)  # warm up
                clients[name, mode] = group
        for name in urls:
            cost(pids[name])  # zeroes callgrind's counters
        for key in clients:
            cpu[key], calls[key], latency[key], side[key] = 0.0, 0, [], 0.0
        done = 0
        turn = 0
        while done < ns.requests:
            for mode in ns.formats:
                order = [PLAIN, FAULTED] if turn % 2 == 0 else [FAULTED, PLAIN]
                for name in order:
                    key = (name, mode)
                    if ns.callgrind:
                        latency[key] += await calls_of(clients[key], ns.block)
                        cpu[key] += cost(pids[name])
                    else:
                        fork = analysis.get(name, 0)
                        if fork:
                            # What the analysis process of the last block left to do is done.
                            wait_idle(fork)
                        before = cost(pids[name])
                        other = cost(fork) if fork else 0.0
                        latency[key] += await calls_of(clients[key], ns.block)
                        cpu[key] += cost(pids[name]) - before
                        if fork:
                            wait_idle(fork)
                            side[key] += cost(fork) - other
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
        if any(analysis.values()):
            more = {name: side[name, mode] / calls[name, mode] * 1e6 for name in (PLAIN, FAULTED)}
            print(
                f"{mode}: analysis process per request {more[PLAIN]:.1f} plain,"
                f" {more[FAULTED]:.1f} with --fault (us CPU): ratio"
                f" {more[FAULTED] / more[PLAIN]:.3f}; relay + analysis"
                f" {(per[FAULTED] + more[FAULTED]) / (per[PLAIN] + more[PLAIN]):.3f}"
            )


def measure_stdio(ns: argparse.Namespace, folder: Path) -> None:
    """Blocks of sequential calls through two ``mcpsniff stdio``; prints the figures."""
    prefix = [sys.executable]
    if ns.callgrind:
        out = f"--callgrind-out-file={folder}/cg.%p"
        prefix = ["valgrind", "--tool=callgrind", out, sys.executable]
    peers = {}
    for name, faults in ((PLAIN, []), (FAULTED, ns.fault)):
        label = "faulted" if faults else "plain"
        argv = [*prefix, "-m", "mcpsniff", "stdio", "--trace", str(folder / f"{label}.jsonl")]
        argv += [arg for spec in faults for arg in ("--fault", spec)]
        argv += ["--", *bench_stdio_relay.server_argv()]
        peers[name] = bench_stdio_relay.Peer.start(name, argv, folder / f"{label}.log")
    try:
        cost = (lambda pid: instructions(pid, folder)) if ns.callgrind else cpu_seconds
        unit = ("thousand instructions", 1e3) if ns.callgrind else ("us CPU", 1e6)
        for peer in peers.values():
            peer.handshake()
            peer.sequential(50)  # warm up
        for peer in peers.values():
            cost(peer.proc.pid)  # zeroes callgrind's counters
        cpu = dict.fromkeys(peers, 0.0)
        latency: dict[str, list[float]] = {name: [] for name in peers}
        done = turn = 0
        while done < ns.requests:
            order = [PLAIN, FAULTED] if turn % 2 == 0 else [FAULTED, PLAIN]
            for name in order:
                pid = peers[name].proc.pid
                before = 0.0 if ns.callgrind else cost(pid)
                latency[name] += peers[name].sequential(ns.block)
                cpu[name] += cost(pid) - before
            done += ns.block
            turn += 1
        per = {name: cpu[name] / done * unit[1] for name in peers}
        p50 = {name: statistics.median(latency[name]) for name in peers}
        print(
            f"stdio: relay per call {per[PLAIN]:.1f} plain, {per[FAULTED]:.1f} with --fault"
            f" ({unit[0]}): ratio {per[FAULTED] / per[PLAIN]:.3f}; latency p50"
            f" {p50[PLAIN]:.0f} / {p50[FAULTED]:.0f} us: ratio {p50[FAULTED] / p50[PLAIN]:.3f}"
            f" ({done} calls each)"
        )
    finally:
        for peer in peers.values():
            peer.close()


async def addon_blocks(
    ns: argparse.Namespace, urls: dict[str, str], pids: dict[str, int], folder: Path
) -> None:
    """Blocks of sequential calls through the two mitmdumps, taking turns; prints the figures."""
    import aiohttp
    import bench_mitmproxy_addon as addon

    cost = (lambda pid: instructions(pid, folder)) if ns.callgrind else cpu_seconds
    unit = ("thousand instructions", 1e3) if ns.callgrind else ("us CPU", 1e6)
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        clients = {name: addon.Client(http, url) for name, url in urls.items()}
        for client in clients.values():
            await client.open()
            await client.run(time.monotonic() + 1)  # warm up
        for pid in pids.values():
            cost(pid)  # zeroes callgrind's counters
        used = dict.fromkeys(urls, 0.0)
        calls = dict.fromkeys(urls, 0)
        turn = 0
        while min(calls.values()) < ns.requests:
            order = [PLAIN, FAULTED] if turn % 2 == 0 else [FAULTED, PLAIN]
            for name in order:
                before = 0.0 if ns.callgrind else cost(pids[name])
                for _ in range(ns.block):
                    clients[name].next_id += 1
                    await clients[name].send(addon.tools_call(clients[name].next_id))
                used[name] += cost(pids[name]) - before
                calls[name] += ns.block
            turn += 1
    per = {name: used[name] / calls[name] * unit[1] for name in urls}
    print(
        f"addon: mitmdump per request {per[PLAIN]:.1f} with the addon, {per[FAULTED]:.1f}"
        f" with mcpsniff_fault too ({unit[0]}): ratio {per[FAULTED] / per[PLAIN]:.3f}"
        f" ({calls[PLAIN]} requests each)"
    )


def measure_addon(ns: argparse.Namespace, folder: Path) -> None:
    """Start the upstream and two mitmdumps with the addon (one with the faults); measure."""
    import bench_mitmproxy_addon as addon

    prefix = None
    if ns.callgrind:
        addon.START_TIMEOUT = 600.0
        out = f"--callgrind-out-file={folder}/cg.%p"
        prefix = ["valgrind", "--tool=callgrind", out, sys.executable]
    port_file = folder / "upstream.port"
    argv = [sys.executable, addon.__file__, "--serve-upstream", str(port_file)]
    procs = [subprocess.Popen(argv, stdin=subprocess.DEVNULL)]
    try:
        addon.wait_for(lambda: port_file.exists() and port_file.read_text(), "upstream", procs[0])
        upstream = f"http://127.0.0.1:{port_file.read_text()}"
        urls, pids = {}, {}
        for name, faults in ((PLAIN, []), (FAULTED, ns.fault)):
            label = "faulted" if faults else "plain"
            proc, port, _ = addon.start_mitmdump(
                folder, label, upstream, True, faults=faults, prefix=prefix
            )
            procs.append(proc)
            urls[name], pids[name] = f"http://127.0.0.1:{port}/mcp", proc.pid
        asyncio.run(addon_blocks(ns, urls, pids, folder))
    finally:
        for proc in reversed(procs):
            addon.stop(proc)


def main() -> int:
    """Run the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--fault", action="append", required=True, help="a fault (repeatable)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per relay and format")
    parser.add_argument("--block", type=int, default=100, help="requests before the next relay")
    parser.add_argument("--callgrind", action="store_true", help="count instructions")
    parser.add_argument(
        "--clients",
        type=int,
        default=1,
        help="(http) clients sharing each block, all at once, on keep-alive connections of"
        " their own (bench_http_relay.py's concurrent path: 16)",
    )
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
    parser.add_argument("--stdio", action="store_true", help="mcpsniff stdio instead of http")
    parser.add_argument("--addon", action="store_true", help="the mitmproxy addon instead")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fault-cpu-") as name:
        folder = Path(ns.keep or name)
        folder.mkdir(parents=True, exist_ok=True)
        if ns.stdio or ns.addon:
            start = time.monotonic()
            (measure_stdio if ns.stdio else measure_addon)(ns, folder)
            print(f"({time.monotonic() - start:.1f} s)")
            return 0
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
