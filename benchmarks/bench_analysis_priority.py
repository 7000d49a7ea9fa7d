"""How long the stdio analysis takes to catch up after a burst, on a machine that is busy.

The workload of ``bench_stdio_relay.py`` (1 KiB ``tools/call`` requests and
their 1 KiB results, 64 a read) waits in a real pipe, as a relay's backlog
would after a burst: the relay is quiet, and the analysis process must finish
the trace. Meanwhile ``--hogs`` processes (default: one per core) spin at
normal priority, as a build or a browser would. A forked ``Worker`` reads the
pipe into a real trace:

``whole process lowered``
    the analysis process as it was: the whole process at ``SCHED_IDLE`` and
    nice 10, which it cannot undo;
``two threads by turns``
    ``mcpsniff/capture/priority.py``: the low thread only while the relay
    forwards (the ``ForwardingClock`` says it has been quiet, so the main
    thread works, at normal priority).

Printed per variant: the wall time until the trace was complete (median of
``--repeat``), the CPU time the worker used, and the share of a core it got.
Only the ratio means anything; an absolute figure depends on everything else
the machine runs.

Usage::

    python benchmarks/bench_analysis_priority.py [--calls 4000] [--hogs 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analysis_parts import reads

from mcpsniff.capture.analysis_process import ANALYSIS_NICENESS
from mcpsniff.capture.channel import big_pipe
from mcpsniff.capture.priority import Baton, ForwardingClock, lower_priority
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.worker import Worker
from mcpsniff.core.observation_codec import encode_bytes, encode_stream_data
from mcpsniff.core.observations import CaptureEnd
from mcpsniff.core.stdio_adapter import StdioAdapter
from mcpsniff.trace.writer import TraceWriter

#: Seconds a variant may take before it is stopped (its time is then a lower bound).
LIMIT = 60.0


def spin() -> None:  # pragma: no cover - runs in a hog process
    """Use a core until killed."""
    while True:
        pass


def analyze(read_fd: int, trace: Path, baton: bool) -> None:  # pragma: no cover - a child
    """The analysis process: a worker reading ``read_fd`` into ``trace``."""
    if baton:
        clock = ForwardingClock()  # never ticked: the relay is quiet
        turns = Baton(clock.forwarding, lambda: lower_priority(ANALYSIS_NICENESS, True))
    else:
        lower_priority(ANALYSIS_NICENESS, True)
        turns = None
    writer = TraceWriter.create(trace)
    recorder = TraceRecorder(writer, "stdio", autoflush=False)
    adapter = StdioAdapter(recorder)
    Worker(recorder, adapter.apply, baton=turns).run(read_fd)


def run(data: bytes, baton: bool) -> tuple[float, float]:
    """Wall seconds until the worker ended, and its CPU seconds."""
    read_fd, write_fd = big_pipe()
    writer = os.fork()
    if writer == 0:  # pragma: no cover - the relay's backlog, handed over as the pipe drains
        os.close(read_fd)
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(data)
        os._exit(0)
    os.close(write_fd)
    with tempfile.TemporaryDirectory(prefix="bench-priority-") as folder:
        started = time.perf_counter()
        worker = os.fork()
        if worker == 0:  # pragma: no cover - the analysis process
            status = 1
            try:
                analyze(read_fd, Path(folder) / "trace.jsonl", baton)
                status = 0
            finally:
                os._exit(status)
        os.close(read_fd)
        deadline = started + LIMIT
        while True:
            pid, status, usage = os.wait4(worker, os.WNOHANG)
            if pid or time.perf_counter() > deadline:
                break
            time.sleep(0.005)
        wall = time.perf_counter() - started
        if not pid:
            os.kill(worker, signal.SIGKILL)
            _, status, usage = os.wait4(worker, 0)
        os.kill(writer, signal.SIGKILL)
        os.waitpid(writer, 0)
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    t = 1.0
    pieces = []
    for direction, chunk in reads(args.calls):
        pieces.append(encode_stream_data(direction, t, chunk) + chunk)
        t += 0.001
    data = b"".join(pieces) + encode_bytes(CaptureEnd(t))
    hogs = []
    for _ in range(args.hogs):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - a hog
            spin()
        hogs.append(pid)
    variants = {"whole process lowered": False, "two threads by turns": True}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    try:
        for _ in range(max(1, args.repeat)):
            for name, baton in variants.items():
                results[name].append(run(data, baton))
    finally:
        for pid in hogs:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    load = os.getloadavg()[0]
    print(
        f"{args.calls // 64 * 64:,} calls waiting in a pipe, {args.hogs} spinning processes,"
        f" load average {load:.1f}, medians of {args.repeat} (wall time capped at {LIMIT:.0f} s)"
    )
    walls = {}
    for name, runs in results.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        walls[name] = wall
        print(
            f"  {name:<22} trace complete after {wall:6.2f} s wall,"
            f" {cpu:5.2f} s CPU ({cpu / wall:4.0%} of a core)"
        )
    lowered, turns = walls.values()
    print(
        f"two threads by turns vs whole process lowered: caught up {lowered / turns:.1f}x as fast"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
