"""Benchmark ``mcpsniff stats`` against ``mcpsniff check`` on the same trace.

Target (from issue 16): ``stats`` reads a 1,000,000-message trace at the speed
of ``check`` or better, i.e. ``check_time / stats_time >= 1.0``.

Both run in-process over the same generated trace (``gen_trace.py``),
interleaved (check, stats, stats --filter, check, ...), and the best CPU time
of each is compared, so a noisy shared machine shifts both alike. ``stats``
is also timed with a filter (``mcp.method.name == tools/call and latency >
50ms``), which adds a first pass over the findings and a predicate per
message; that figure is reported, not held to the target.

Usage::

    python benchmarks/bench_stats.py                      # 1,000,000 messages, 3 repeats
    python benchmarks/bench_stats.py --messages 100000 --repeat 5

Exit status: 0 when the ratio meets the target, 1 when it does not.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import check, trace_messages
from gen_trace import cached_trace

from mcpsniff.filter import build_views, compile_filter, index_findings
from mcpsniff.filter.reading import LazyTraceRecords
from mcpsniff.stats.compute import compute
from mcpsniff.stats.render import stats_lines

TARGET_RATIO = 1.0
FILTER = "mcp.method.name == tools/call and latency > 50ms"


def stats(path: Path) -> int:
    """What ``mcpsniff stats`` does, in-process. Returns the message count it saw."""
    result = compute(build_views(LazyTraceRecords(path)))
    for _ in stats_lines(result, str(path)):
        pass
    return result.messages


def stats_filtered(path: Path) -> int:
    """``mcpsniff stats --filter FILTER``, in-process."""
    flt = compile_filter(FILTER)
    index = index_findings(LazyTraceRecords(path))
    result = compute(build_views(LazyTraceRecords(path), index), flt)
    for _ in stats_lines(result, str(path)):
        pass
    return result.messages


def timed(fn: Callable[[Path], int], path: Path) -> tuple[float, float]:
    started_wall = time.perf_counter()
    started_cpu = time.process_time()
    fn(path)
    return time.process_time() - started_cpu, time.perf_counter() - started_wall


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace", type=Path, help="use this trace instead of a generated one")
    args = parser.parse_args(argv)
    path = args.trace or cached_trace(args.messages, 16, 1024, 0)
    loops = {"check": check, "stats": stats, "stats --filter": stats_filtered}
    cpu: dict[str, list[float]] = {name: [] for name in loops}
    wall: dict[str, list[float]] = {name: [] for name in loops}
    for i in range(max(1, args.repeat)):
        for name, loop in loops.items():
            seconds, elapsed = timed(loop, path)
            cpu[name].append(seconds)
            wall[name].append(elapsed)
            print(
                f"  [{i + 1}/{args.repeat}] {name:<15} {seconds:7.2f} s CPU, {elapsed:7.2f} s wall",
                file=sys.stderr,
                flush=True,
            )
    best = {name: min(values) for name, values in cpu.items()}
    ratio = best["check"] / best["stats"]
    messages = trace_messages(path)
    print(f"trace: {path} ({messages:,} messages, {path.stat().st_size / 1e6:,.1f} MB)")
    for name in loops:
        rate = messages / best[name] if best[name] else float("inf")
        print(
            f"  {name:<15} best {best[name]:6.2f} s CPU ({min(wall[name]):6.2f} s wall), "
            f"{rate:,.0f} messages/s"
        )
    print(
        f"speed of stats vs check: {ratio:.2f}x (target >= {TARGET_RATIO}); "
        f"with --filter: {best['check'] / best['stats --filter']:.2f}x"
    )
    return 0 if ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
