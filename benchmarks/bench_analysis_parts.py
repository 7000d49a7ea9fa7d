"""Where the stdio analysis process spends its time, per call of ``bench_stdio_relay.py``.

The workload of ``bench_stdio_relay.py`` (the handshake, then ``tools/call``
requests of 1 KiB and their 1 KiB results, 64 a read) is fed in this process
to a ``TraceRecorder``, as the analysis process's worker feeds it, with parts
switched off in turn:

``full``
    what the analysis process does (framing, redaction, the session and its
    rules, the trace lines written to a temporary file);
``no redaction``, ``no trace writing``, ``neither``
    the same without those parts;
``frames only``
    what a live path that records exactly and leaves the rules to a lane
    behind it would do: split lines, redact, write frame records.

The variants run alternated, ``--repeat`` times; medians of CPU time per call
(a request and its response) are printed, and each against ``full``. Without
the observation channel (decoding what the relay sent), so the absolute
figures are below the analysis process's own (``bench_stdio_relay.py`` prints
those as "CPU us/msg analysis").

Usage::

    python benchmarks/bench_analysis_parts.py [--calls 10000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stdio_relay import (
    ECHO_RESULT,
    INIT_RESULT,
    TOOLS_RESULT,
    message_line,
    request_line,
    response_line,
)

from mcpsniff.capture.recorder import TraceRecorder
from mcpsniff.core.framing import LineFramer
from mcpsniff.core.model import C2S, S2C, FrameRecord
from mcpsniff.core.redact import redact_frame
from mcpsniff.trace.writer import TraceWriter

INIT_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


def reads(calls: int) -> Iterator[tuple[str, bytes]]:
    """The relay's reads: the handshake, then 64 requests and 64 responses at a time."""
    yield C2S, message_line(1, "initialize", INIT_PARAMS)
    yield S2C, response_line(1, INIT_RESULT)
    yield C2S, message_line(0, "notifications/initialized")
    yield C2S, message_line(2, "tools/list")
    yield S2C, response_line(2, TOOLS_RESULT)
    first = 10
    for _ in range(calls // 64):
        yield C2S, b"".join(request_line(first + i) for i in range(64))
        yield S2C, b"".join(response_line(first + i, ECHO_RESULT) for i in range(64))
        first += 64


def recorded(data: list[tuple[str, bytes]], redact: bool = True, write: bool = True) -> None:
    """The analysis process's work on ``data`` (parts off as asked)."""
    with tempfile.TemporaryFile() as f:
        writer = TraceWriter(f)
        recorder = TraceRecorder(writer if write else None, "stdio", redact=redact, autoflush=False)
        t = 1.0
        for direction, chunk in data:
            recorder.feed("stdio", direction, chunk, t)
            t += 0.001
        recorder.close(t)
        writer.flush()


def frames_only(data: list[tuple[str, bytes]]) -> None:
    """Split lines, redact each, write frame records: no session, no rules."""
    with tempfile.TemporaryFile() as f:
        writer = TraceWriter(f)
        framers = {C2S: LineFramer(), S2C: LineFramer()}
        seq = 0
        t = 1.0
        for direction, chunk in data:
            out = []
            for line in framers[direction].feed(chunk):
                seq += 1
                raw, _ = redact_frame(line)
                out.append(FrameRecord(seq, t, "stdio", direction, "stdio", raw))
            writer.write_all(out)
            t += 0.001
        writer.flush()


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    data = list(reads(args.calls))
    calls = args.calls // 64 * 64
    variants: dict[str, Callable[[], None]] = {
        "full": lambda: recorded(data),
        "no redaction": lambda: recorded(data, redact=False),
        "no trace writing": lambda: recorded(data, write=False),
        "neither": lambda: recorded(data, redact=False, write=False),
        "frames only": lambda: frames_only(data),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(max(1, args.repeat)):
        for name, variant in variants.items():
            started = time.process_time()
            variant()
            times[name].append(time.process_time() - started)
    full = statistics.median(times["full"])
    print(f"{calls:,} calls (a 1 KiB request and its 1 KiB result), medians of {args.repeat} runs")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(
            f"  {name:<18} {median / calls * 1e6:6.1f} us CPU per call  "
            f"{median / full:5.2f} of full  ({full / median:4.2f}x as fast)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
