"""Benchmark live OTLP export: ``mcpsniff stdio --otlp`` vs ``mcpsniff stdio`` in one run.

Target (issue 18): live export costs the relay's forwarding rate nothing
measurable. Both configurations run the same workload through the same stdio
server (``bench_stdio_relay.py --serve``); the only difference is
``--otlp URL``, pointing at a real collector (rotel, from the test extra) that
prints what it receives to a file, so the spans really travel.

* **pipelined**: ``--count`` ``tools/call`` requests of 1 KiB with 64 in flight;
  rate = calls / wall time as the client saw it. Rounds alternate the two
  configurations; the verdict compares the best round of each (the least
  disturbed on a shared machine). Ratio = with ``--otlp`` / without; target >= 0.9.
  On this 2-core machine the client, the server, the relay, its analysis
  process and the collector share the cores; the sink's worker keeps to a CPU
  budget (``otlp_sink.CPU_BUDGET``) and drops (and counts) what does not fit, so
  under this flood the collector gets a sample.
* **sequential**: ``--sequential`` calls one at a time, round-trip p50 of each
  configuration, reported as a ratio (with / without; lower is better).

After the runs the spans the collector received are counted (rotel's ``basic``
debug log): the benchmark fails if none arrived, so it cannot pass with an
export that silently did nothing.

    python benchmarks/bench_otlp.py [--count 20000] [--rounds 3] [--sequential 2000]
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_stdio_relay import (  # noqa: E402
    PROTOCOL,
    WINDOW,
    echo_response_size,
    message_line,
    request_line,
    server_argv,
)
from tests.export.collector import received_span_count, start_collector  # noqa: E402

TARGET = 0.9


class Peer:
    """``mcpsniff stdio [--otlp URL] --trace T -- SERVER``, driven over its stdin/stdout."""

    def __init__(self, trace: Path, otlp: str | None) -> None:
        command = [sys.executable, "-m", "mcpsniff", "stdio", "--trace", str(trace)]
        if otlp:
            command += ["--otlp", otlp]
        self.proc = subprocess.Popen(
            [*command, "--", *server_argv()],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin.fileno()
        self.stdout = self.proc.stdout.fileno()
        self.buffer = b""
        self.next_id = 10
        init = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "b"}}
        self.call_line(message_line(1, "initialize", init))
        os.write(self.stdin, message_line(0, "notifications/initialized"))
        self.call_line(message_line(2, "tools/list"))

    def read_lines(self, count: int) -> None:
        """Read until ``count`` more lines have arrived."""
        while count:
            if b"\n" not in self.buffer:
                chunk = os.read(self.stdout, 1 << 16)
                if not chunk:
                    raise RuntimeError("the relay closed its stdout")
                self.buffer += chunk
            while count and b"\n" in self.buffer:
                _, self.buffer = self.buffer.split(b"\n", 1)
                count -= 1

    def call_line(self, line: bytes) -> None:
        os.write(self.stdin, line)
        self.read_lines(1)

    def pipelined(self, count: int) -> float:
        """Calls per second with ``WINDOW`` in flight."""
        start = time.perf_counter()
        sent = answered = 0
        pending = b""
        while answered < count:
            room = min(WINDOW - (sent - answered), count - sent)
            if room > 0:
                batch = b"".join(request_line(self.next_id + i) for i in range(room))
                self.next_id += room
                sent += room
                pending += batch
            if pending:
                _, writable, _ = select.select([], [self.stdin], [], 0)
                if writable:
                    written = os.write(self.stdin, pending[: 1 << 16])
                    pending = pending[written:]
            readable, _, _ = select.select([self.stdout], [], [], 0.001 if pending else 1)
            if readable:
                chunk = os.read(self.stdout, 1 << 16)
                if not chunk:
                    raise RuntimeError("the relay closed its stdout")
                self.buffer += chunk
                lines = self.buffer.count(b"\n")
                answered += lines
                self.buffer = self.buffer[self.buffer.rfind(b"\n") + 1 :]
        return count / (time.perf_counter() - start)

    def sequential(self, count: int) -> list[float]:
        """Round trips of ``count`` calls one at a time, in microseconds."""
        times: list[float] = []
        for _ in range(count):
            line = request_line(self.next_id)
            self.next_id += 1
            start = time.perf_counter()
            self.call_line(line)
            times.append((time.perf_counter() - start) * 1e6)
        return times

    def close(self) -> str:
        _, err = self.proc.communicate(timeout=120)
        return err.decode(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sequential", type=int, default=2_000)
    args = parser.parse_args()
    assert echo_response_size(1) > 0
    folder = Path(tempfile.mkdtemp(prefix="bench-otlp-"))
    collector = start_collector(folder, verbosity="basic")
    rates: dict[str, list[float]] = {"plain": [], "otlp": []}
    rtts: dict[str, list[float]] = {"plain": [], "otlp": []}
    calls_exported = 0
    try:
        for round_number in range(args.rounds):
            order = ["plain", "otlp"] if round_number % 2 == 0 else ["otlp", "plain"]
            for name in order:
                trace = folder / f"{name}-{round_number}.jsonl"
                peer = Peer(trace, collector.http_url if name == "otlp" else None)
                rates[name].append(peer.pipelined(args.count))
                rtts[name].extend(peer.sequential(args.sequential // args.rounds))
                stderr = peer.close()
                if name == "otlp":
                    calls_exported += args.count + args.sequential // args.rounds + 2
                if "warning" in stderr:
                    print(f"[{name}] {stderr.strip()}")
                print(f"round {round_number} {name:<5} {rates[name][-1]:>9.0f} calls/s")
        time.sleep(2)
        received = received_span_count(collector.text())
    finally:
        collector.stop()
    best = {name: max(values) for name, values in rates.items()}
    p50 = {name: statistics.median(values) for name, values in rtts.items()}
    ratio = best["otlp"] / best["plain"]
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(
        f"pipelined median: plain {medians['plain']:.0f}/s, --otlp {medians['otlp']:.0f}/s, "
        f"ratio {medians['otlp'] / medians['plain']:.3f} (reported; the verdict uses the best)"
    )
    print(f"pipelined best: plain {best['plain']:.0f}/s, --otlp {best['otlp']:.0f}/s")
    print(f"pipelined ratio (--otlp / plain): {ratio:.3f}  (target >= {TARGET})")
    print(
        f"sequential p50: plain {p50['plain']:.0f} us, --otlp {p50['otlp']:.0f} us; "
        f"ratio {p50['otlp'] / p50['plain']:.3f}"
    )
    print(
        f"collector received {received} spans (2 per operation) for {calls_exported} "
        "calls and notifications sent with --otlp; the rest were dropped and counted"
    )
    ok = ratio >= TARGET and received > 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
