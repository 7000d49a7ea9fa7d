"""Benchmark ``mcpsniff check`` against a bare ``orjson.loads`` loop over the same file.

Target (from the issue): on a 1,000,000-message trace (1 KiB payloads, 16
requests in flight) the check path runs at no less than 0.3x the speed of a
loop that reads the same file and calls ``orjson.loads`` on every line.

Both are measured in the same run, interleaved (baseline, read, check,
baseline, read, check, ...), and the best time of each is compared, so a noisy
shared machine shifts all sides alike. Speeds are over the same bytes, so the
ratio is ``baseline_time / check_time``. The times are CPU time of this
process (``time.process_time()``, user + system): every loop is
single-threaded and CPU-bound, and on a shared machine the wall clock also
counts the time other processes held the CPU, which swings the ratio by 20%
from one pair to the next. The best wall-clock times and their ratio are
printed too.

The real CLI (``mcpsniff check --format json`` in a subprocess, output to
/dev/null) is timed once as well, for realism; its number includes interpreter
start-up (its CPU time comes from the child's rusage). The middle loop
("read") is ``TraceReader.inputs()`` alone (reading and decoding the frame and
event records, no analysis): it shows how much of the check time is trace
reading and how much is the analyzer. The report names the schema fast path
(fastjsonschema): without it, validating every ``tools/call`` makes check
about four times slower.

Usage::

    python benchmarks/bench_check.py                      # 1,000,000 messages, 3 repeats
    python benchmarks/bench_check.py --messages 100000 --repeat 5
    python benchmarks/bench_check.py --messages 100000 --profile   # cProfile, no timing

Exit status: 0 when the ratio meets the target, 1 when it does not.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.metadata
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from mcpsniff.check.run import note_event
from mcpsniff.core.analyzer import Analyzer, replay_notable
from mcpsniff.core.model import SEVERITY_RANK, EventRecord, FindingRecord
from mcpsniff.terminal.render import finding_json
from mcpsniff.terminal.safe_output import json_line
from mcpsniff.trace.gaps import GapTally
from mcpsniff.trace.reader import TraceReader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_trace import cached_trace

TARGET_RATIO = 0.3
#: The sources ``mcpsniff check`` runs (relative to the repository root).
CHECK_PATH_SOURCES = (
    "mcpsniff/core",
    "mcpsniff/trace",
    "mcpsniff/check",
    "mcpsniff/cli/check.py",
    "mcpsniff/terminal/render.py",
)


def mcpsniff_command() -> list[str]:
    """How to start the installed ``mcpsniff`` CLI (the console script if there is one)."""
    script = Path(sys.executable).parent / "mcpsniff"
    if script.exists():
        return [str(script)]
    found = shutil.which("mcpsniff")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from mcpsniff.cli import main; sys.exit(main())"]


def core_version() -> str:
    """The git commit measured, ``+dirty`` when the check path's sources have edits."""
    repo = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", *CHECK_PATH_SOURCES],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


def trace_messages(path: Path) -> int:
    """The JSON-RPC message count the generator stored in the trace header."""
    with TraceReader(path) as reader:
        stored = reader.header.get("meta", {}).get("messages")
    if isinstance(stored, int):
        return stored
    # Not one of ours: count message records instead (a batch counts once).
    with open(path, "rb") as f:
        return sum(1 for line in f if line.startswith(b'{"type":"message"'))


# --------------------------------------------------------------------------- the two loops


def baseline(path: Path) -> int:
    """Read the file and parse every line with orjson: the speed of light. Returns lines."""
    lines = 0
    loads = orjson.loads
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            lines += 1
    return lines


def read_inputs(path: Path) -> int:
    """Only the trace reading ``check`` does (``TraceReader.inputs()``), no analysis."""
    count = 0
    with TraceReader(path) as reader:
        for _ in reader.inputs():
            count += 1
    return count


def check(path: Path, fail_on: str = "error") -> int:
    """What ``mcpsniff check --format json`` does, in-process. Returns the finding count.

    The loop of the ``check`` command in ``mcpsniff/check/run.py``, step for step:
    its collector settings (restored afterwards, so the other loops run with
    the defaults), the findings and events of ``replay_notable`` walked,
    analyzer errors and capture gaps noted, each finding written as a JSON
    line, every session counted.
    """
    threshold = SEVERITY_RANK[fail_on]
    failing = 0
    findings = 0
    sessions: set[str] = set()
    analyzer_errors: list[EventRecord] = []
    gaps = GapTally()
    collector = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    try:
        with open(os.devnull, "w") as out, TraceReader(path) as reader:
            analyzer = Analyzer()
            for record in replay_notable(reader.inputs(), analyzer):
                if not isinstance(record, FindingRecord):
                    if type(record) is EventRecord:
                        note_event(record, analyzer_errors, gaps)
                    continue
                if SEVERITY_RANK.get(record.severity, 0) >= threshold:
                    failing += 1
                out.write(json_line(finding_json(record)) + "\n")
                findings += 1
        sessions.update(analyzer.sessions)
    finally:
        gc.set_threshold(*collector)
        gc.unfreeze()
    return findings


def timed(fn: Callable[[Path], int], path: Path) -> tuple[float, float, int]:
    """CPU time and wall time of ``fn(path)``, and its result."""
    started_wall = time.perf_counter()
    started_cpu = time.process_time()
    result = fn(path)
    return time.process_time() - started_cpu, time.perf_counter() - started_wall, result


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(path: Path) -> tuple[float, float, int]:
    """CPU time, wall time and exit status of the real CLI, output discarded."""
    command = [*mcpsniff_command(), "check", "--format", "json", str(path)]
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - started
    return _children_cpu() - cpu_before, wall, done.returncode


def schema_fast_path() -> str:
    """Which fast schema validator is installed: check is ~4x slower without one."""
    try:
        import fastjsonschema  # noqa: F401 - only whether it imports
    except ImportError:
        return "MISSING: fastjsonschema is not installed, tools/call validation runs on jsonschema"
    return f"fastjsonschema {importlib.metadata.version('fastjsonschema')}"


# --------------------------------------------------------------------------- report


@dataclass
class Result:
    """The timings of one benchmark run."""

    path: Path
    size: int
    messages: int
    baseline: list[float]
    inputs: list[float]
    check: list[float]
    findings: int
    #: Wall-clock times of the same runs, for information.
    baseline_wall: list[float]
    inputs_wall: list[float]
    check_wall: list[float]
    cli_seconds: float | None = None
    cli_wall: float | None = None
    cli_status: int | None = None

    @property
    def ratio(self) -> float:
        """check speed / baseline speed, from the best CPU time of each."""
        return min(self.baseline) / min(self.check)

    def rate_line(self, name: str, seconds: float) -> str:
        """Throughput for one measured time."""
        mb_s = self.size / seconds / 1e6
        msg_s = self.messages / seconds
        return f"  {name:<24} {seconds:8.2f} s  {mb_s:9.1f} MB/s  {msg_s:12,.0f} messages/s"

    def report(self) -> str:
        """The human-readable report."""
        pair_ratios = [b / c for b, c in zip(self.baseline, self.check, strict=True)]
        lines = [
            f"mcpsniff: {core_version()}, Python {sys.version.split()[0]}, {schema_fast_path()}",
            f"trace: {self.path} ({self.size / 1e6:,.1f} MB, {self.messages:,} messages, "
            f"{self.findings:,} findings)",
            "CPU time (the verdict):",
            self.rate_line("baseline (best)", min(self.baseline)),
            self.rate_line("read inputs only (best)", min(self.inputs)),
            self.rate_line("check (best)", min(self.check)),
        ]
        if self.cli_seconds is not None:
            lines.append(self.rate_line("mcpsniff check (CLI)", self.cli_seconds))
            lines.append(f"  CLI exit status: {self.cli_status}")
        lines += [
            "  baseline runs: " + ", ".join(f"{t:.2f}" for t in self.baseline) + " s",
            "  inputs runs:   " + ", ".join(f"{t:.2f}" for t in self.inputs) + " s",
            "  check runs:    " + ", ".join(f"{t:.2f}" for t in self.check) + " s",
            f"  per-pair ratios: {', '.join(f'{r:.3f}' for r in pair_ratios)} "
            f"(median {statistics.median(pair_ratios):.3f})",
        ]
        lines.append(f"  read-only ratio: {min(self.baseline) / min(self.inputs):.3f}")
        if self.cli_seconds is not None:
            lines.append(
                f"  CLI ratio (incl. start-up): {min(self.baseline) / self.cli_seconds:.3f}"
            )
        wall = (min(self.baseline_wall), min(self.inputs_wall), min(self.check_wall))
        lines.append(
            "wall clock (information): best baseline {:.2f} s, read {:.2f} s, check {:.2f} s, "
            "ratio {:.3f}".format(*wall, wall[0] / wall[2])
        )
        if self.cli_wall is not None:
            lines.append(f"  CLI wall {self.cli_wall:.2f} s")
        verdict = "PASS" if self.ratio >= TARGET_RATIO else "FAIL"
        lines.append(
            f"ratio check/baseline speed: {self.ratio:.3f}  (target >= {TARGET_RATIO})  {verdict}"
        )
        return "\n".join(lines)


def benchmark(path: Path, repeat: int, cli: bool) -> Result:
    """Interleaved baseline / read-only / check runs, then the CLI once."""
    times: dict[str, list[float]] = {"baseline": [], "inputs": [], "check": []}
    walls: dict[str, list[float]] = {"baseline": [], "inputs": [], "check": []}
    loops = {"baseline": baseline, "inputs": read_inputs, "check": check}
    findings = 0
    for i in range(repeat):
        for name, loop in loops.items():
            seconds, wall, count = timed(loop, path)
            times[name].append(seconds)
            walls[name].append(wall)
            if name == "check":
                findings = count
            print(
                f"  [{i + 1}/{repeat}] {name:<8} {seconds:7.2f} s CPU, {wall:7.2f} s wall",
                file=sys.stderr,
                flush=True,
            )
    result = Result(
        path,
        path.stat().st_size,
        trace_messages(path),
        times["baseline"],
        times["inputs"],
        times["check"],
        findings,
        walls["baseline"],
        walls["inputs"],
        walls["check"],
    )
    if cli:
        result.cli_seconds, result.cli_wall, result.cli_status = run_cli(path)
    return result


def profile(path: Path, top: int = 15) -> None:
    """cProfile the in-process check path; print the top functions by own and cumulative time."""
    profiler = cProfile.Profile()
    profiler.enable()
    findings = check(path)
    profiler.disable()
    print(f"profile of check on {path} ({findings} findings)")
    for key, title in (("tottime", "own time"), ("cumulative", "cumulative time")):
        print(f"\n=== top {top} by {title} ===")
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.strip_dirs().sort_stats(key).print_stats(top)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="trace size in messages")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repeats of each loop")
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--payload", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", type=Path, help="use this trace instead of a generated one")
    parser.add_argument("--no-cli", action="store_true", help="skip the subprocess CLI run")
    parser.add_argument("--profile", action="store_true", help="profile the check path instead")
    args = parser.parse_args(argv)
    path = args.trace or cached_trace(args.messages, args.in_flight, args.payload, args.seed)
    if args.profile:
        profile(path)
        return 0
    result = benchmark(path, max(1, args.repeat), cli=not args.no_cli)
    print(result.report())
    return 0 if result.ratio >= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
