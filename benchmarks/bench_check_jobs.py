"""Benchmark ``mcpsniff check --jobs``: several traces on every core vs one process.

Target (from the issue): on this machine's cores, checking 4 or more traces of
similar size with ``--jobs`` (default: the number of cores) is at least 1.7x as
fast as ``--jobs 1`` on 2 cores (for more cores the target scales: 0.85x the
number of cores).

For 1, 4 and 16 traces (``--traces``), the real CLI (``mcpsniff check --format
json``) runs with ``--jobs 1`` and with ``--jobs N``, alternated ``--repeat``
times, and the wall time of each is taken; the verdict per trace count is the
median of the per-pair ratios (jobs 1 time / jobs N time), because a pair runs
back to back and a noisy shared machine disturbs both alike. Every run's
output is compared byte for byte with the first ``--jobs 1`` run's: the output
must not depend on ``--jobs``.

The traces are ``gen_trace.py``'s (seed = the trace's number, so they differ
but are of similar size), cached in ``benchmarks/.cache/``.

Usage::

    python benchmarks/bench_check_jobs.py                       # 25,000 messages a trace
    python benchmarks/bench_check_jobs.py --messages 10000 --repeat 5 --traces 1 4 16

Exit status: 0 when every count of 4 or more traces meets the target and every
output is identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_check import core_version, mcpsniff_command
from gen_trace import cached_trace

from mcpsniff.check.many import default_jobs
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter

#: Speed-up wanted on 2 cores for 4 or more traces; per core above that, 0.85 each.
TARGET_ON_TWO = 1.7


def target(cores: int) -> float:
    """The speed-up wanted from ``cores`` cores."""
    return TARGET_ON_TWO if cores <= 2 else 0.85 * cores


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(traces: list[Path], jobs: int) -> tuple[float, float, str]:
    """Wall and CPU time of ``check --format json --jobs JOBS TRACES``; its output's digest.

    The CPU time covers the workers too (they are reaped before the command exits).
    """
    command = [*mcpsniff_command(), "check", "--format", "json", "--jobs", str(jobs)]
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run([*command, *map(str, traces)], capture_output=True, check=False)
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu
    if done.returncode not in (0, 1):
        sys.exit(f"check failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    digest = hashlib.sha256(done.stdout + b"\0" + done.stderr).hexdigest()
    return wall, cpu, digest


def sessions_trace(paths: list[Path]) -> Path:
    """One trace holding the sessions of ``paths``, renamed apart, their inputs interleaved.

    Cached beside them. Each session takes 16 inputs at a time in turn; the
    derived records are left out (``check`` skips them anyway).
    """
    out = paths[0].parent / f"sessions-{len(paths)}-{paths[0].name}"
    if out.exists():
        return out
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    writer = TraceWriter.create(partial, meta={"sessions": len(paths)}, created=1.0, overwrite=True)
    readers = [TraceReader(p) for p in paths]
    streams = {number: iter(r.inputs()) for number, r in enumerate(readers)}
    seq = 0
    while streams:
        for number, stream in list(streams.items()):
            chunk = list(itertools.islice(stream, 16))
            if not chunk:
                del streams[number]
            for record in chunk:
                seq += 1
                key = f"{record.session}-{number}"
                writer.write(dataclasses.replace(record, seq=seq, session=key))
    writer.close()
    for reader in readers:
        reader.close()
    os.replace(partial, out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=25_000, help="messages in each trace")
    parser.add_argument("--traces", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--repeat", type=int, default=3, help="alternated pairs per count")
    parser.add_argument("--jobs", type=int, default=default_jobs(), help="the parallel run's")
    parser.add_argument(
        "--sessions",
        type=int,
        default=4,
        help="also one trace of this many sessions (those of the first traces; 0: not)",
    )
    args = parser.parse_args(argv)
    # Both runs start as an installed package does, from compiled bytecode (pip
    # compiles it): a source tree whose bytecode is stale, run with
    # PYTHONDONTWRITEBYTECODE set, compiles its modules again in every run
    # (860M instructions before the first record, against 585M in all).
    import compileall

    import mcpsniff

    compileall.compile_dir(Path(mcpsniff.__file__).parent, quiet=1)
    paths = [
        cached_trace(args.messages, seed=number, quiet=True) for number in range(max(args.traces))
    ]
    size = sum(p.stat().st_size for p in paths[: max(args.traces)])
    print(
        f"mcpsniff {core_version()}, Python {sys.version.split()[0]}, {default_jobs()} core(s); "
        f"{args.messages:,} messages a trace ({size / max(args.traces) / 1e6:.1f} MB each), "
        f"--jobs {args.jobs} vs --jobs 1, {args.repeat} pair(s) each"
    )
    cases = [(f"{count:3d} trace(s)", paths[:count], count >= 4) for count in args.traces]
    if args.sessions > 1:
        mixed = sessions_trace(
            [cached_trace(args.messages, seed=n, quiet=True) for n in range(args.sessions)]
        )
        cases.append((f"1 trace of {args.sessions} sessions", [mixed], False))
    ok = True
    for name, traces, judged in cases:
        ratios: list[float] = []
        serial: list[float] = []
        parallel: list[float] = []
        # CPU seconds per wall second of the parallel runs: near 1 when the
        # shared machine had no idle core to give, whatever --jobs asked for.
        busy: list[float] = []
        loads: list[float] = []
        # CPU time of the parallel run / of the serial one: what the split costs
        # (forks, each worker reading the whole trace of a split by session).
        cpu_cost: list[float] = []
        reference = None
        identical = True
        for _ in range(max(1, args.repeat)):
            loads.append(os.getloadavg()[0])
            one, cpu_one, digest_one = run(traces, 1)
            many, cpu_many, digest_many = run(traces, args.jobs)
            busy.append(cpu_many / many)
            cpu_cost.append(cpu_many / cpu_one)
            reference = reference or digest_one
            identical = identical and digest_one == reference and digest_many == reference
            serial.append(one)
            parallel.append(many)
            ratios.append(one / many)
        speedup = statistics.median(ratios)
        wanted = target(args.jobs)
        verdict = ("PASS" if speedup >= wanted else "FAIL") if judged else "(not judged)"
        print(
            f"{name}: jobs 1 median {statistics.median(serial):6.2f} s, "
            f"jobs {args.jobs} median {statistics.median(parallel):6.2f} s; "
            f"speed-up median {speedup:.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)})"
            f"; output {'identical' if identical else 'DIFFERS'}; "
            f"target >= {wanted:.2f}x {verdict}"
        )
        print(
            f"      jobs {args.jobs} used {statistics.median(busy):.2f} core(s) (median CPU/wall), "
            f"{statistics.median(cpu_cost):.2f}x the CPU time of jobs 1; "
            f"load average before each pair: {', '.join(f'{x:.1f}' for x in loads)}"
        )
        ok = ok and identical and (not judged or speedup >= wanted)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
