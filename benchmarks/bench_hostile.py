"""Time and peak memory of ``report`` and ``ui`` on what a hostile peer can record.

Inputs (``gen_hostile.py``): one session holding a batch of N ``tools/call``
requests and a batch of N results (N = 1,000, 10,000, 100,000 by default),
and a trace of 200,000 one-ping sessions. For each:

* ``report``: ``mcpsniff report TRACE -o OUT`` as a user runs it; wall time,
  CPU time (user + system) and peak RSS of the process.
* ``ui``: a real ``mcpsniff ui`` on the trace; the time until its session list
  holds every row, then a filter (``method ~ "(.|.)*z"``), the stats, every
  row page and 100 message details of the session, each as the page asks for
  them; peak RSS (``VmHWM``) of the server at the end.

Goal (issue 26): linear in the trace, 100,000 elements under 10 s and 500 MB.
The machine is shared: CPU time is the steadier figure; compare rows within
one run. Usage::

    python benchmarks/bench_hostile.py                       # all sizes
    python benchmarks/bench_hostile.py --batches 1000 10000 --sessions 0
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_MEASURED = (
    "import resource, runpy, sys\n"
    "sys.argv = ['mcpsniff', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('mcpsniff', run_name='__main__')\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "else:\n"
    "    code = 0\n"
    "usage = resource.getrusage(resource.RUSAGE_SELF)\n"
    "status = open('/proc/self/status').read()\n"
    "peak = int(status.split('VmHWM:')[1].split()[0])\n"
    "print('measured', peak, usage.ru_utime + usage.ru_stime, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def generate(path: Path, what: str, size: int) -> Path:
    """Write an input with ``gen_hostile.py`` in a process of its own.

    Not in this process: Linux carries a parent's peak RSS into the
    ``ru_maxrss`` of the children it forks, so generating a 100,000-element
    batch here (0.9 GB) showed as every later report's peak.
    """
    script = Path(__file__).resolve().parent / "gen_hostile.py"
    subprocess.run([sys.executable, str(script), str(path), what, str(size)], check=True)
    return path


def report(trace: Path, out: Path) -> tuple[float, float, float]:
    """``mcpsniff report``: (wall s, CPU s, peak MB)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "report", str(trace), "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    match = re.search(r"measured (\d+) ([\d.]+)", done.stderr)
    if done.returncode != 0 or match is None:
        raise SystemExit(f"report failed: {done.stderr}")
    return wall, float(match.group(2)), int(match.group(1)) / 1024


def _get(url: str, token: str) -> bytes:
    request = urllib.request.Request(url, headers={"X-Mcpsniff-Token": token})
    with urllib.request.urlopen(request, timeout=600) as response:
        return response.read()


def _peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks


def ui(trace: Path, rows_expected: int, sessions: int) -> tuple[float, float, float, float]:
    """``mcpsniff ui``: (s until indexed, s for filter+stats+rows+details, CPU s, peak MB).

    Indexed: the session list counts ``sessions`` sessions and its first holds
    ``rows_expected`` rows.
    """
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "ui", str(trace), "--listen", "127.0.0.1:0"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        match = re.search(r"serving (http://\S+/)", proc.stderr.readline())
        if match is None:
            raise SystemExit("mcpsniff ui did not start")
        url = match.group(1)
        with urllib.request.urlopen(url, timeout=60) as response:
            token = response.headers["Set-Cookie"].split(";", 1)[0].split("=", 1)[1]
        while True:
            snapshot = json.loads(_get(url + "api/sessions", token))
            listed = snapshot["sessions"]
            if (
                listed
                and snapshot["total"] >= sessions
                and max(s["rows"] for s in listed) >= rows_expected
            ):
                break
            time.sleep(0.05)
        indexed = time.monotonic() - started
        started = time.monotonic()
        sid = urllib.parse.quote(snapshot["sessions"][0]["id"])
        q = urllib.parse.quote('method ~ "(.|.)*z"')
        _get(url + f"api/session/{sid}/filter?q={q}", token)
        _get(url + f"api/session/{sid}/stats", token)
        rows = snapshot["sessions"][0]["rows"]
        for start in range(0, rows, 5000):
            _get(url + f"api/session/{sid}/rows?from={start}", token)
        for n in range(0, rows, max(1, rows // 100)):
            _get(url + f"api/session/{sid}/message/{n}", token)
        queries = time.monotonic() - started
        return indexed, queries, _cpu_s(proc.pid), _peak_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, nargs="*", default=[1000, 10_000, 100_000])
    parser.add_argument("--sessions", type=int, default=200_000)
    parser.add_argument("--no-ui", action="store_true", help="only the report")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cases = [(f"batch of {n:,}", "--batch", n, 2 * n + 6, 1) for n in args.batches]
        if args.sessions:
            count = args.sessions
            # A trace of frames only: the UI lists its sessions (it does not analyze it).
            cases.append((f"{count:,} sessions", "--sessions", count, 0, count))
        print(f"{'input':<20} {'trace MB':>9} {'report s':>9} {'cpu s':>7} {'peak MB':>8}", end="")
        print(
            ""
            if args.no_ui
            else f" | {'ui index s':>10} {'queries s':>9} {'cpu s':>7} {'peak MB':>8}"
        )
        for name, make, size, rows, sessions in cases:
            trace = generate(Path(folder) / "t.jsonl", make, size)
            mb = trace.stat().st_size / 2**20
            wall, cpu, peak = report(trace, Path(folder) / "t.html")
            print(
                f"{name:<20} {mb:>9.1f} {wall:>9.1f} {cpu:>7.1f} {peak:>8.0f}", end="", flush=True
            )
            if args.no_ui:
                print()
            else:
                indexed, queries, ui_cpu, ui_peak = ui(trace, rows, sessions)
                print(f" | {indexed:>10.1f} {queries:>9.1f} {ui_cpu:>7.1f} {ui_peak:>8.0f}")
            trace.unlink()


if __name__ == "__main__":
    main()
