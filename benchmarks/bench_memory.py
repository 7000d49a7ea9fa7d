"""Benchmark the peak memory of ``mcpsniff check`` on a short and a 10x longer trace.

Target (from the issue): peak memory for 1,000,000 messages is at most 1.2x that
for 100,000 messages; the analyzer's memory must depend on the requests in
flight, not on the length of the trace.

Each measurement runs the real CLI in a fresh subprocess and reads that child's
peak resident set size from ``os.wait4`` (``ru_maxrss``, per child, not the
running maximum ``RUSAGE_CHILDREN`` would give). The verdict uses
``--format json``, which streams findings; ``--format text`` groups findings by
session in memory before printing, so its numbers are reported separately. The
interpreter floor (``mcpsniff --version``: Python plus every mcpsniff import)
is reported too, so growth above it can be read off.

Usage::

    python benchmarks/bench_memory.py                       # 100,000 vs 1,000,000 messages
    python benchmarks/bench_memory.py --small 10000 --large 100000

Exit status: 0 when the json-format ratio meets the target, 1 when it does not.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import core_version, mcpsniff_command
from gen_trace import cached_trace

TARGET_RATIO = 1.2


@dataclass
class Run:
    """One child process: its peak RSS, wall time and exit status."""

    maxrss_kib: int
    seconds: float
    status: int

    @property
    def mib(self) -> float:
        """Peak RSS in MiB."""
        return self.maxrss_kib / 1024.0


def measure(args: list[str]) -> Run:
    """Run ``mcpsniff ARGS`` with output discarded; the child's own peak RSS (Linux: KiB)."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [*mcpsniff_command(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
    return Run(usage.ru_maxrss, time.perf_counter() - started, child.returncode)


def median_run(args: list[str], repeat: int) -> Run:
    """The median-RSS run of ``repeat`` runs (peak RSS is nearly deterministic)."""
    runs = sorted((measure(args) for _ in range(repeat)), key=lambda r: r.maxrss_kib)
    return runs[len(runs) // 2]


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=100_000, help="messages in the short trace")
    parser.add_argument("--large", type=int, default=1_000_000, help="messages in the long trace")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement (median)")
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--payload", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-text", action="store_true", help="skip the --format text runs")
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)

    traces = {
        n: cached_trace(n, args.in_flight, args.payload, args.seed)
        for n in (args.small, args.large)
    }
    print(f"mcpsniff: {core_version()}, command: {' '.join(mcpsniff_command())}")
    floor = median_run(["--version"], repeat)
    print(f"interpreter floor (mcpsniff --version): {floor.mib:8.1f} MiB")
    formats = ["json"] if args.no_text else ["json", "text"]
    ratios: dict[str, float] = {}
    for fmt in formats:
        runs: dict[int, Run] = {}
        for n, path in traces.items():
            print(f"  measuring check --format {fmt} on {n:,} messages ...", file=sys.stderr)
            runs[n] = median_run(["check", "--format", fmt, str(path)], repeat)
        small, large = runs[args.small], runs[args.large]
        ratios[fmt] = large.maxrss_kib / small.maxrss_kib
        print(f"check --format {fmt}:")
        for n, run in runs.items():
            size = traces[n].stat().st_size / 1e6
            print(
                f"  {n:>10,} messages ({size:8,.1f} MB): peak RSS {run.mib:8.1f} MiB "
                f"(+{run.mib - floor.mib:6.1f} MiB over floor), {run.seconds:7.1f} s, "
                f"exit {run.status}"
            )
        growth_small = small.mib - floor.mib
        growth_large = large.mib - floor.mib
        growth = f"{growth_large / growth_small:.2f}x" if growth_small > 0.5 else "n/a"
        label = f"{args.large:,} / {args.small:,}"
        print(f"  ratio {label}: {ratios[fmt]:.3f} (above the floor: {growth})")
    verdict = "PASS" if ratios["json"] <= TARGET_RATIO else "FAIL"
    print(f"peak RSS ratio (--format json): {ratios['json']:.3f}  ", end="")
    print(f"(target <= {TARGET_RATIO})  {verdict}")
    return 0 if ratios["json"] <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
