"""The stdio analysis worker's CPU time per call, through a real pipe into a real trace.

The workload of ``bench_stdio_relay.py`` (the handshake, then 1 KiB
``tools/call`` requests and their 1 KiB results, 64 a read) is written by a
forked process into a real pipe, as the relay's channel writes it, and read by
a ``Worker`` in this process (the stdio adapter, the recorder, the trace
writer, the collector set as in a forked analysis process) writing a real
trace file. The writer keeps the pipe full, then pauses
before ending the capture, as a burst would.

Printed: the CPU time per call this process used until the trace held every
frame, and until it was done (every verdict written too). CPU time, not wall
time: on a shared machine the analysis process works at ``SCHED_IDLE`` while
the relay forwards, and its wall time is the other processes' as much as its
own (``bench_stdio_relay.py`` measures that). It is the figure behind the
sustained rate (CPU time still rises by a tenth or so when other processes
share the caches; callgrind counts are steadier).

Usage::

    python benchmarks/bench_analysis_worker.py [--calls 40000] [--repeat 3]
    python benchmarks/bench_analysis_worker.py --profile     # cProfile of one run
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analysis_parts import reads

from mcpsniff.capture.channel import big_pipe
from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.capture.worker import COLLECT_RARELY, Worker
from mcpsniff.core.observation_codec import encode_bytes, encode_stream_data
from mcpsniff.core.observations import CaptureEnd
from mcpsniff.core.stdio_adapter import StdioAdapter
from mcpsniff.trace.writer import TraceWriter

#: Seconds the writer waits after the burst before it ends the capture.
PAUSE = 0.2


def run(
    data: list[tuple[str, bytes]], profile: cProfile.Profile | None = None
) -> tuple[float, float]:
    """CPU seconds until every frame was recorded, and until the worker ended."""
    expected = sum(chunk.count(b"\n") for _, chunk in data)
    r, w = big_pipe()
    pid = os.fork()
    if pid == 0:  # the relay's part: the channel's frames, as fast as the pipe takes them
        os.close(r)
        t = 1.0
        for direction, chunk in data:
            os.write(w, encode_stream_data(direction, t, chunk) + chunk)
            t += 0.001
        time.sleep(PAUSE)
        os.write(w, encode_bytes(CaptureEnd(t)))
        os._exit(0)
    os.close(w)
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as folder:
        writer = TraceWriter.create(Path(folder) / "trace.jsonl")
        recorder = TraceRecorder(writer, "stdio", autoflush=False)
        counter = recorder.analyzer.counter
        adapter = StdioAdapter(recorder)
        recorded: list[float] = []
        start = time.process_time()

        def apply(observation: object) -> None:
            adapter.apply(observation)
            if not recorded and counter.value >= expected:
                recorded.append(time.process_time() - start)

        if profile is not None:
            profile.enable()
        Worker(recorder, apply).run(r)
        if profile is not None:
            profile.disable()
        done = time.process_time() - start
    os.close(r)
    os.waitpid(pid, 0)
    return (recorded[0] if recorded else done), done


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile one run, print the top")
    args = parser.parse_args(argv)
    data = list(reads(args.calls))
    # The collector as a forked analysis process sets it (``fork_analysis``).
    gc.freeze()
    gc.set_threshold(*COLLECT_RARELY)
    calls = args.calls // 64 * 64
    if args.profile:
        profile = cProfile.Profile()
        run(data, profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(40)
        return 0
    runs = [run(data) for _ in range(max(1, args.repeat))]
    recorded = statistics.median(r for r, _ in runs) / calls * 1e6
    done = statistics.median(d for _, d in runs) / calls * 1e6
    print(f"{calls:,} calls through a pipe into a trace, medians of {args.repeat} runs")
    print(
        f"  every frame recorded after {recorded:5.1f} us CPU per call,"
        f" every verdict after {done:5.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
