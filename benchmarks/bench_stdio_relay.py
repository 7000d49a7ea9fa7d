"""Benchmark the stdio relay: ``mcpsniff stdio`` vs a direct pipe and a bare byte relay.

Targets (from the issue), ratios against baselines measured in the same run:

* pipelined throughput (64 requests in flight) through ``mcpsniff stdio`` is at
  least 0.8x that through a pure asyncio byte relay;
* the sequential round-trip p50 through ``mcpsniff stdio`` is at most 1.25x that
  through the byte relay;
* one 50 MB frame (a single JSON line) passes through ``mcpsniff stdio`` intact,
  in each direction, and the mcpsniff process's peak RSS stays under 300 MB.

Three configurations run side by side, each a long-lived process whose stdin and
stdout this script drives:

``direct``
    the server itself (a minimal NDJSON MCP server, this script's ``--serve`` mode);
``byte relay``
    this script's ``--byte-relay`` mode: spawns the server and copies stdin to the
    child's stdin and the child's stdout to stdout with asyncio, 64 KiB reads, no
    parsing: the floor for any Python relay;
``mcpsniff``
    ``mcpsniff stdio --trace T -- SERVER``, recording and analysis on, default
    redaction on. mcpsniff is two processes: the relay, which forwards, and the
    analysis process it forks at start (same command line), which analyzes and
    writes the trace from copies the relay passes it through a pipe.

Each one first gets the MCP handshake (``initialize``, ``notifications/initialized``,
``tools/list`` with a schema for the ``echo`` tool, so the analyzer validates the
arguments of every call). The workload is ``tools/call`` requests of exactly 1 KiB
(one NDJSON line); the server answers each at once with a result of about 1 KiB.
A "message" below is one such call: a request and its response.

* **pipelined**: ``--count`` calls with 64 in flight. Whenever responses arrive the
  client sends as many new requests, in one ``write``. Rate = calls / wall time.
  The response bytes are counted and compared with the exact expected total. Then
  the benchmark waits until relay and analysis process are both asleep: mcpsniff
  forwards first and analyzes after, so its analysis may still be busy (its
  "catch-up"). The verdict uses the rate the client saw; the *sustained* rate,
  calls / (wall time + catch-up), is printed beside it: it is what a burst longer
  than the analysis backlog (256 MiB) would get before capture gaps appear.
* **sequential**: ``--sequential`` calls one at a time per configuration, the three
  taking turns every ``--block`` calls (a pipe ping-pong is very sensitive to what
  else the two cores are doing at that moment); the round trip of each (write the
  request, read until the response line is complete) is timed.

Rounds rotate the order of the three configurations, so drift of the shared
machine hits all of them alike. The pipelined verdict is the median of the
per-round ratios (mcpsniff against the byte relay measured in the same round: a
best round would flatter whichever configuration was least disturbed), the
sustained verdict the median sustained rate (until the trace is complete) against
the byte relay's median rate, and the latency verdict the p50 of all sequential
round trips of all rounds; best rates and per-round p50s are printed too. CPU
time per message of the relay, the analysis process, the server and the client
comes from
``/proc/PID/task/*/schedstat`` (nanoseconds).

``--lanes 2`` runs ``mcpsniff stdio --lanes 2`` (docs/stdio.md): the analysis
process records the frames and a process it forks (the derived lane, found as
its child) analyzes them behind it. The sustained rate then counts until the
relay and the recording lane are quiet, every frame recorded (the verdict);
the derived lane's catch-up after the burst, its sustained rate (calls / (wall
time + its catch-up)) and its CPU per call are printed beside it, and the
"analysis" CPU column is the recording lane's alone.

Afterwards the mcpsniff trace is checked: one frame record per line sent and
received, and no ``capture-gap`` (the relay may drop recording, never forwarding,
when its analyzer falls 256 MiB behind).

The 50 MB frames use fresh processes: a ``tools/call`` whose arguments hold 50 MB
(the server answers with the SHA-256 of the line it read, compared with the
client's), and a call whose result holds 50 MB (the client hashes what it read and
compares it with the line the server writes). mcpsniff's peak RSS is the largest
of: the sum of the relay's and the analysis process's current RSS, polled together
from ``/proc/PID/status`` every millisecond; each one's ``VmHWM``; and ``ru_maxrss``
from ``os.wait4`` (which also covers the children the relay reaped; the server reads
and writes big lines in 1 MiB pieces, so it stays small). The byte relay's and an
idle mcpsniff's (handshake and one small call) are printed for comparison.

Usage::

    python benchmarks/bench_stdio_relay.py
    python benchmarks/bench_stdio_relay.py --rounds 6 --count 40000 --sequential 2000 --block 50
    python benchmarks/bench_stdio_relay.py --profile py-spy      # or cprofile; no verdict
    python benchmarks/bench_stdio_relay.py --profile py-spy --profile-what big-c2s
    python benchmarks/bench_stdio_relay.py --profile py-spy-gil --profile-process analysis

``--profile`` runs only ``mcpsniff stdio`` under a profiler, with the rounds' traffic
or (``--profile-what``) one 50 MB frame, and prints its top functions. py-spy
(``pip install py-spy``) samples wall-clock time with little overhead; ``py-spy-gil``
keeps only samples holding the GIL (Python CPU time, without system calls); cProfile
is deterministic but slows the relay down several times.

Exit status: 0 when every target is met, 1 when one is missed or a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import pstats
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

REPO = Path(__file__).resolve().parents[1]
PROTOCOL = "2025-11-25"
CHUNK = 1 << 16
WINDOW = 64
REQUEST_SIZE = 1024
TARGET_THROUGHPUT = 0.8
#: Sustained rate (measured until the trace is complete) against the byte relay.
TARGET_SUSTAINED = 0.5
TARGET_LATENCY = 1.25
RSS_LIMIT_MB = 300
BIG_FRAME = 50_000_000
#: The server reads lines longer than this in pieces (see ``serve``).
LINE_LIMIT = 1 << 20
#: Seconds after which the whole benchmark gives up (a hung relay must not hang it).
DEADLINE = 900
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: The ``--profile`` choices that use py-spy (``-gil``: only samples holding the GIL).
PYSPY = ("py-spy", "py-spy-gil")

# --------------------------------------------------------------------------- wire format


def request_line(request_id: int) -> bytes:
    """A ``tools/call`` request of exactly ``REQUEST_SIZE`` bytes, newline included."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",' % request_id
    head += b'"arguments":{"message":"'
    tail = b'"}}}\n'
    return head + b"x" * (REQUEST_SIZE - len(head) - len(tail)) + tail


def message_line(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    """Any request (or, with ``request_id`` 0, a notification) as one NDJSON line."""
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id:
        message["id"] = request_id
    message["method"] = method
    if params is not None:
        message["params"] = params
    return orjson.dumps(message) + b"\n"


ECHO_RESULT = orjson.dumps({"content": [{"type": "text", "text": "y" * 960}]})
INIT_RESULT = orjson.dumps(
    {
        "protocolVersion": PROTOCOL,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "bench-stdio-server", "version": "0"},
    }
)
TOOLS_RESULT = orjson.dumps(
    {
        "tools": [
            {
                "name": "echo",
                "description": "Answers every call with 1 KiB of text.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"message": {"type": "string"}},
                    "required": ["message"],
                },
            },
            {
                "name": "hash",
                "description": "Answers with the SHA-256 of the request line it read.",
                "inputSchema": {"type": "object", "properties": {"data": {"type": "string"}}},
            },
            {
                "name": "big",
                "description": "Answers with a text of the requested size.",
                "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}},
            },
        ]
    }
)
_RESPONSE_HEAD = b'{"jsonrpc":"2.0","id":'
_RESPONSE_MID = b',"result":'
_RESPONSE_END = b"}\n"


def response_line(request_id: Any, result: bytes) -> bytes:
    """The server's answer to ``request_id`` with an already encoded ``result``."""
    return _RESPONSE_HEAD + orjson.dumps(request_id) + _RESPONSE_MID + result + _RESPONSE_END


def echo_response_size(request_id: int) -> int:
    """Length of the server's answer to ``request_line(request_id)``."""
    fixed = len(_RESPONSE_HEAD) + len(_RESPONSE_MID) + len(ECHO_RESULT) + len(_RESPONSE_END)
    return fixed + len(str(request_id))


def big_result(size: int) -> bytes:
    """The result of the ``big`` tool: a text of ``size`` bytes, as encoded bytes."""
    return b'{"content":[{"type":"text","text":"' + b"z" * size + b'"}]}'


# --------------------------------------------------------------------------- the server


def serve() -> int:
    """The stdio MCP server: answers every request line at once, one flush per answer.

    Lines longer than ``LINE_LIMIT`` (the 50 MB frames) are hashed piece by piece and
    big results are written piece by piece, so that the server's own memory stays
    small: ``os.wait4`` reports the peak RSS of a relay *or of any child it reaped*.
    """
    stdin = sys.stdin.buffer
    out = sys.stdout.buffer
    while line := stdin.readline(LINE_LIMIT):
        if not line.endswith(b"\n"):
            answer_long_line(line, stdin, out)
            continue
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification
        method = message.get("method")
        if method == "initialize":
            result = INIT_RESULT
        elif method == "tools/list":
            result = TOOLS_RESULT
        elif method == "tools/call":
            params = message.get("params") or {}
            name = params.get("name")
            if name == "big":
                write_big_result(message["id"], int(params["arguments"]["bytes"]), out)
                continue
            result = ECHO_RESULT
        else:
            result = b"{}"
        out.write(response_line(message["id"], result))
        out.flush()
    return 0


def answer_long_line(first: bytes, stdin: IO[bytes], out: IO[bytes]) -> None:
    """Read the rest of a long request line, answering with the SHA-256 of all of it."""
    digest = hashlib.sha256(first)
    piece = first
    while not piece.endswith(b"\n"):
        piece = stdin.readline(LINE_LIMIT)
        if not piece:
            return
        digest.update(piece.removesuffix(b"\n"))
    found = re.search(rb'"id":(\d+)', first[:256])
    if found is None:
        return
    result = orjson.dumps({"content": [{"type": "text", "text": digest.hexdigest()}]})
    out.write(response_line(int(found.group(1)), result))
    out.flush()


def write_big_result(request_id: Any, size: int, out: IO[bytes]) -> None:
    """Write the answer ``response_line(request_id, big_result(size))`` in 1 MiB pieces."""
    head, tail = response_line(request_id, big_result(0)).split(b'text":"', 1)
    out.write(head + b'text":"')
    piece = b"z" * LINE_LIMIT
    for start in range(0, size, LINE_LIMIT):
        out.write(piece[: min(LINE_LIMIT, size - start)])
    out.write(tail)
    out.flush()


# --------------------------------------------------------------------------- the byte relay


async def byte_relay(argv: list[str]) -> int:
    """Spawn ``argv`` and copy bytes both ways with asyncio, 64 KiB reads, no parsing."""
    loop = asyncio.get_running_loop()
    child = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    reader = asyncio.StreamReader(limit=CHUNK)
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    stdout = os.fdopen(os.dup(1), "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stdout)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    to_child = child.stdin

    async def upstream() -> None:
        while chunk := await reader.read(CHUNK):
            to_child.write(chunk)
            await to_child.drain()
        to_child.close()

    up = asyncio.create_task(upstream())
    while chunk := await child.stdout.read(CHUNK):
        writer.write(chunk)
        await writer.drain()
    while transport.get_write_buffer_size():
        await asyncio.sleep(0.001)
    up.cancel()
    with contextlib.suppress(asyncio.CancelledError, OSError):
        await up
    return await child.wait()


# --------------------------------------------------------------------------- processes


def cpu_seconds(pid: int) -> float:
    """CPU time all threads of a process have used so far, in seconds (Linux /proc).

    ``/proc/PID/task/*/schedstat`` counts nanoseconds; ``/proc/PID/stat`` (the
    fallback) counts clock ticks of 10 ms, too coarse for runs of a fraction of a second.
    """
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                total += int(Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[0])
    except OSError:
        return 0.0
    if total:
        return total / 1e9
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def cmdline(pid: int) -> bytes:
    """The command line of ``pid`` (b"" when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def analysis_pid(relay: int, wait: float = 5.0) -> int:
    """The analysis process ``mcpsniff stdio`` forks: the child with the relay's own command line.

    Waits up to ``wait`` seconds for it to appear (the relay forks it at start-up).
    """
    deadline = time.monotonic() + wait
    while True:
        own = cmdline(relay)
        for pid in children(relay):
            if own and cmdline(pid) == own:
                return pid
        if time.monotonic() > deadline:
            return 0
        time.sleep(0.005)


def client_cpu() -> float:
    """CPU time this process (the client) has used so far."""
    return cpu_seconds(os.getpid())


#: ``--fault`` specifications given to the mcpsniff configuration (docs/faults.md):
#: a fault that matches nothing measures what the fault carrier costs.
FAULTS: list[str] = []


#: ``--guard enforce`` options given to the mcpsniff configuration (docs/guard.md).
GUARD: list[str] = []
#: ``--lanes N`` given to the mcpsniff configuration (empty: its default).
LANES: list[str] = []
#: What ``--guard-enforce`` adds: a pattern no tool matches, so every call is judged and passes.
GUARD_ENFORCE = ["--guard", "enforce", "--forbid-tool", "never_*"]


def server_argv() -> list[str]:
    """The command that runs the benchmark's stdio server."""
    return [sys.executable, str(Path(__file__).resolve()), "--serve"]


def config_argv(name: str, trace: Path) -> list[str]:
    """The command line of one configuration."""
    if name == "direct":
        return server_argv()
    if name == "byte relay":
        return [sys.executable, str(Path(__file__).resolve()), "--byte-relay", *server_argv()]
    mcpsniff = Path(sys.executable).with_name("mcpsniff")
    faults = [arg for spec in FAULTS for arg in ("--fault", spec)]
    return [
        str(mcpsniff),
        "stdio",
        "--trace",
        str(trace),
        *faults,
        *GUARD,
        *LANES,
        "--",
        *server_argv(),
    ]


@dataclass
class Peer:
    """One configuration under test: a process whose stdin and stdout reach the server."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    next_id: int = 0
    sent_lines: int = 0
    received_lines: int = 0
    buffer: bytearray = field(default_factory=bytearray)

    @classmethod
    def start(cls, name: str, argv: list[str], log: Path) -> Peer:
        """Spawn ``argv`` with pipes on stdin and stdout, stderr to ``log``."""
        with log.open("ab") as err:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd=REPO
            )
        return cls(name, proc, log)

    @property
    def w(self) -> int:
        assert self.proc.stdin is not None
        return self.proc.stdin.fileno()

    @property
    def r(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    @property
    def server_pid(self) -> int:
        """The pid of the server process itself."""
        if self.name == "direct":
            return self.proc.pid
        own = cmdline(self.proc.pid)
        # mcpsniff's analysis process has the relay's command line, "--serve" included.
        kids = [p for p in children(self.proc.pid) if b"--serve" in cmdline(p) != own]
        return kids[0] if kids else 0

    @property
    def analysis_pid(self) -> int:
        """The pid of mcpsniff's analysis process (0 for the other configurations)."""
        return analysis_pid(self.proc.pid) if self.name == "mcpsniff" else 0

    @property
    def derived_pid(self) -> int:
        """The pid of the derived lane (``--lanes 2``): the analysis process's child; else 0."""
        analysis = self.analysis_pid
        return analysis_pid(analysis, wait=0.0) if analysis else 0

    def write(self, data: bytes, lines: int = 1) -> None:
        """Write all of ``data`` (blocking)."""
        view = memoryview(data)
        while view:
            view = view[os.write(self.w, view) :]
        self.sent_lines += lines

    def read_line(self) -> bytes:
        """The next complete line from the peer."""
        while True:
            cut = self.buffer.find(b"\n")
            if cut >= 0:
                line = bytes(self.buffer[: cut + 1])
                del self.buffer[: cut + 1]
                self.received_lines += 1
                return line
            chunk = os.read(self.r, CHUNK)
            if not chunk:
                raise EOFError(f"{self.name}: the relay closed its stdout")
            self.buffer += chunk

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request, its response decoded."""
        self.next_id += 1
        self.write(message_line(self.next_id, method, params))
        response = orjson.loads(self.read_line())
        if response.get("id") != self.next_id or "result" not in response:
            raise RuntimeError(f"{self.name}: unexpected response {response!r:.200}")
        result: dict[str, Any] = response["result"]
        return result

    def handshake(self) -> None:
        """initialize, notifications/initialized, tools/list."""
        self.call(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "bench-stdio", "version": "0"},
            },
        )
        self.write(message_line(0, "notifications/initialized"))
        self.call("tools/list")

    def pipelined(self, count: int, window: int = WINDOW) -> float:
        """Send ``count`` echo calls with ``window`` in flight; return the seconds taken."""
        assert not self.buffer
        first = self.next_id + 1
        last = self.next_id + count
        expected = sum(echo_response_size(i) for i in range(first, last + 1))
        os.set_blocking(self.w, False)
        poller = select.poll()
        poller.register(self.r, select.POLLIN)
        watching_w = False
        pending = bytearray()
        to_send = first
        lines = 0
        got = 0
        tail = b""
        start = time.perf_counter()
        try:
            while lines < count:
                room = window - (to_send - first - lines)
                if room > 0 and to_send <= last:
                    n = min(room, last - to_send + 1)
                    pending += b"".join(map(request_line, range(to_send, to_send + n)))
                    to_send += n
                if pending:
                    with contextlib.suppress(BlockingIOError):
                        del pending[: os.write(self.w, pending)]
                if bool(pending) != watching_w:
                    watching_w = bool(pending)
                    if watching_w:
                        poller.register(self.w, select.POLLOUT)
                    else:
                        poller.unregister(self.w)
                for fd, _ in poller.poll():
                    if fd != self.r:
                        continue
                    chunk = os.read(self.r, CHUNK)
                    if not chunk:
                        raise EOFError(f"{self.name}: the relay closed its stdout")
                    lines += chunk.count(b"\n")
                    got += len(chunk)
                    tail = chunk
        finally:
            os.set_blocking(self.w, True)
        elapsed = time.perf_counter() - start
        self.next_id = last
        self.sent_lines += count
        self.received_lines += count
        if got != expected or lines != count:
            raise RuntimeError(f"{self.name}: got {got} bytes in {lines} lines, not {expected}")
        if b'"id":%d,' % last not in tail[-(len(ECHO_RESULT) + 64) :]:
            raise RuntimeError(f"{self.name}: the last response is not the answer to id {last}")
        return elapsed

    def sequential(self, count: int) -> list[float]:
        """``count`` echo calls one at a time; the round trip of each in microseconds."""
        times: list[float] = []
        clock = time.perf_counter_ns
        for _ in range(count):
            self.next_id += 1
            request = request_line(self.next_id)
            size = echo_response_size(self.next_id)
            t0 = clock()
            os.write(self.w, request)
            got = os.read(self.r, CHUNK)
            while len(got) < size:
                more = os.read(self.r, CHUNK)
                if not more:
                    raise EOFError(f"{self.name}: the relay closed its stdout")
                got += more
            times.append((clock() - t0) / 1000)
            if len(got) != size or not got.endswith(b"}\n"):
                raise RuntimeError(f"{self.name}: bad response {got[:100]!r}")
        self.sent_lines += count
        self.received_lines += count
        return times

    def close(self, timeout: float = 30) -> int | None:
        """Close the peer's stdin (the server exits on EOF) and reap it."""
        kids = children(self.proc.pid)
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            for pid in [*kids, self.proc.pid]:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.wait(10)
            return None
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def log_tail(self) -> str:
        """The last lines the peer wrote on stderr."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-10:])
        except OSError:
            return ""


# --------------------------------------------------------------------------- rounds


@dataclass
class Results:
    """Everything measured for one configuration: one entry per round, and all latencies."""

    rates: list[float] = field(default_factory=list)
    #: Calls per second counting until the relay had also finished analyzing them.
    sustained: list[float] = field(default_factory=list)
    relay_cpu_us: list[float] = field(default_factory=list)
    #: mcpsniff's analysis process (it runs beside the relay, on the other core).
    analysis_cpu_us: list[float] = field(default_factory=list)
    #: ``--lanes 2``: the derived lane's CPU per call, its catch-up after the
    #: recording lane was quiet, and calls per second until it was quiet too.
    derived_cpu_us: list[float] = field(default_factory=list)
    derived_catch_up: list[float] = field(default_factory=list)
    derived_sustained: list[float] = field(default_factory=list)
    server_cpu_us: list[float] = field(default_factory=list)
    client_cpu_us: list[float] = field(default_factory=list)
    p50s: list[float] = field(default_factory=list)
    seq_relay_cpu_us: list[float] = field(default_factory=list)
    #: Every sequential round trip of every round, in microseconds.
    times: list[float] = field(default_factory=list)


def relay_pid(peer: Peer) -> int:
    """The pid of the relay process (0 for the direct configuration)."""
    return peer.proc.pid if peer.name != "direct" else 0


def process_state(pid: int) -> str:
    """The one-letter scheduler state of ``pid`` (R running or runnable, S sleeping, ...).

    Of its busiest thread: the analysis process works in one of two threads
    (``mcpsniff/capture/priority.py``) while the other sleeps, and a thread
    waiting for a CPU is runnable (R) even when the scheduler starves it.
    """
    states = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, IndexError):
                stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
                states.append(stat.rsplit(")", 1)[1].split()[0])
    except OSError:
        return "X"
    for busy in "RD":
        if busy in states:
            return busy
    return states[0] if states else "X"


def wait_quiet(pids: list[int], interval: float = 0.01, limit: float = 120.0) -> float:
    """Wait until every one of ``pids`` is idle; the seconds they stayed busy after the call.

    Idle means asleep (not running, not waiting for a CPU) in two polls in a
    row with almost no CPU used in between. A low-priority analysis process
    that the scheduler starves is runnable, not asleep, so it is not taken
    for caught up.
    """
    start = last_busy = time.perf_counter()
    used = sum(cpu_seconds(pid) for pid in pids)
    quiet_polls = 0
    while time.perf_counter() - start < limit:
        time.sleep(interval)
        now = sum(cpu_seconds(pid) for pid in pids)
        asleep = all(process_state(pid) in "SX" for pid in pids)
        if asleep and now - used < interval * 0.1:
            quiet_polls += 1
            if quiet_polls >= 2:
                return last_busy - start
        else:
            quiet_polls = 0
            last_busy = time.perf_counter()
        used = now
    return last_busy - start


def pipelined_run(peer: Peer, results: Results, count: int) -> str:
    """One pipelined run, with CPU time per call; returns the line to print.

    mcpsniff forwards first and analyzes in its own process: that process may
    still be busy when the last response has reached the client. The time it
    stays busy afterwards is its catch-up; its CPU time per call includes it,
    and the sustained rate counts it in.
    """
    relay, server, analysis = relay_pid(peer), peer.server_pid, peer.analysis_pid
    derived = peer.derived_pid if analysis else 0
    before = (
        cpu_seconds(relay) if relay else 0.0,
        cpu_seconds(analysis) if analysis else 0.0,
        cpu_seconds(server),
        client_cpu(),
    )
    derived_before = cpu_seconds(derived) if derived else 0.0
    seconds = peer.pipelined(count)
    # With two lanes, the recording lane quiet is every frame recorded: the
    # verdict; the derived lane's catch-up is measured on from there.
    catch_up = wait_quiet([p for p in (relay, analysis) if p]) if relay else 0.0
    after = (
        cpu_seconds(relay) if relay else 0.0,
        cpu_seconds(analysis) if analysis else 0.0,
        cpu_seconds(server),
        client_cpu(),
    )
    derived_text = ""
    if derived:
        derived_catch_up = catch_up + wait_quiet([derived])
        derived_us = (cpu_seconds(derived) - derived_before) * 1e6 / count
        results.derived_cpu_us.append(derived_us)
        results.derived_catch_up.append(derived_catch_up)
        results.derived_sustained.append(count / (seconds + derived_catch_up))
        derived_text = (
            f"\n           {'':<11} derived lane: caught up {derived_catch_up * 1000:5.0f} ms"
            f" after the burst, {results.derived_sustained[-1]:8.0f} msg/s sustained,"
            f" CPU {derived_us:5.1f} us/msg"
        )
    rate = count / seconds
    relay_us, analysis_us, server_us, client_us = (
        (a - b) * 1e6 / count for a, b in zip(after, before, strict=True)
    )
    results.rates.append(rate)
    results.sustained.append(count / (seconds + catch_up))
    results.relay_cpu_us.append(relay_us)
    results.analysis_cpu_us.append(analysis_us)
    results.server_cpu_us.append(server_us)
    results.client_cpu_us.append(client_us)
    relay_text = f"{relay_us:5.1f}" if relay else "    -"
    analysis_text = f"{analysis_us:5.1f}" if analysis else "    -"
    return (
        f"pipelined  {peer.name:<11} {rate:8.0f} msg/s  (catch-up {catch_up * 1000:4.0f} ms)"
        f"   CPU us/msg: relay {relay_text}  analysis {analysis_text}"
        f"  server {server_us:5.1f}  client {client_us:5.1f}{derived_text}"
    )


def relay_and_analysis_cpu(peer: Peer) -> float:
    """CPU seconds used so far by the relay and (mcpsniff) its analysis process."""
    relay, analysis = relay_pid(peer), peer.analysis_pid
    return (cpu_seconds(relay) if relay else 0.0) + (cpu_seconds(analysis) if analysis else 0.0)


def sequential_runs(
    peers: list[Peer], results: dict[str, Results], count: int, block: int
) -> list[str]:
    """``count`` sequential calls per peer, interleaved in blocks; returns lines to print.

    Taking turns every ``block`` calls exposes all configurations to the same moments
    of the shared machine, which the round-trip time of a pipe ping-pong is very
    sensitive to.
    """
    samples: dict[str, list[float]] = {peer.name: [] for peer in peers}
    cpu = {peer.name: relay_and_analysis_cpu(peer) for peer in peers}
    for number, start in enumerate(range(0, count, block)):
        shift = number % len(peers)
        for peer in peers[shift:] + peers[:shift]:
            samples[peer.name] += peer.sequential(min(block, count - start))
    lines = []
    for peer in peers:
        times = sorted(samples[peer.name])
        r = results[peer.name]
        r.p50s.append(statistics.median(times))
        r.times += times
        used = relay_and_analysis_cpu(peer) - cpu[peer.name]
        r.seq_relay_cpu_us.append(used * 1e6 / count)
        relay_text = f"{r.seq_relay_cpu_us[-1]:5.1f}" if relay_pid(peer) else "    -"
        lines.append(
            f"sequential {peer.name:<11} p50 {r.p50s[-1]:6.0f} us  p99 {percentile(times, 99):6.0f}"
            f" us   CPU us/msg: relay {relay_text}"
        )
    return lines


def percentile(ordered: list[float], pct: float) -> float:
    """The ``pct`` percentile of an ascending list (nearest rank)."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


def check_trace(path: Path, peer: Peer) -> list[str]:
    """Problems with the trace mcpsniff wrote: missing frames, capture gaps."""
    frames = 0
    kinds: Counter[str] = Counter()
    with path.open("rb") as f:
        for line in f:
            if line.startswith(b'{"type":"frame"'):
                frames += 1
            elif line.startswith(b'{"type":"event"') and b'"capture-gap"' in line:
                kinds["capture-gap"] += 1
            elif line.startswith(b'{"type":"finding"'):
                kinds["finding"] += 1
    size = path.stat().st_size
    expected = peer.sent_lines + peer.received_lines
    print(
        f"trace: {size / 1e6:.1f} MB, {frames} frame records (expected {expected}), "
        f"{kinds['finding']} findings, {kinds['capture-gap']} capture gaps"
    )
    problems = []
    if frames != expected:
        problems.append(f"the trace has {frames} frame records, not {expected}")
    if kinds["capture-gap"]:
        problems.append(f"the trace has {kinds['capture-gap']} capture gaps")
    return problems


# --------------------------------------------------------------------------- 50 MB frames


@dataclass
class BigRun:
    """One fresh relay process that carried (at most) one big frame."""

    what: str
    intact: bool
    seconds: float
    #: The relay's own VmHWM, sampled from /proc until it exits.
    own_peak_mb: float
    #: The VmHWM of mcpsniff's analysis process (0 for the byte relay).
    analysis_peak_mb: float
    #: The largest sum of the processes' RSS seen at one moment (with ``--lanes 2``
    #: the derived lane's too).
    together_peak_mb: float
    #: ``--lanes 2``: the derived lane's VmHWM (0 otherwise).
    derived_peak_mb: float
    #: ``ru_maxrss`` from ``os.wait4``: the relay or any child it reaped, whichever is larger.
    wait4_peak_mb: float
    status: int

    @property
    def peak_mb(self) -> float:
        """The largest of the measurements."""
        return max(
            self.own_peak_mb,
            self.analysis_peak_mb,
            self.together_peak_mb,
            self.derived_peak_mb,
            self.wait4_peak_mb,
        )


class PeakSampler:
    """Polls processes' memory every millisecond until they exit.

    Per process it keeps the kernel's high-water mark (VmHWM, exact but per
    process); for all of them together, the largest sum of their current RSS
    (VmRSS) seen in one poll. The relay and its analysis process hold their
    peaks at different moments (the relay while the analysis lags behind,
    the analysis while it parses), so the sum of the two VmHWMs would count
    memory that never existed at once.
    """

    def __init__(self, pids: int | list[int]) -> None:
        self.pids = [pids] if isinstance(pids, int) else pids
        #: Each process's VmHWM.
        self.hwm_kib = {pid: 0 for pid in self.pids}
        self.together_kib = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        alive = set(self.pids)
        while alive and not self._done.is_set():
            total = 0
            for pid in list(alive):
                try:
                    text = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    alive.discard(pid)
                    continue
                hwm = re.search(r"^VmHWM:\s+(\d+) kB", text, re.MULTILINE)
                rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
                if hwm is None or rss is None:
                    alive.discard(pid)  # a zombie: its memory is gone
                    continue
                self.hwm_kib[pid] = max(self.hwm_kib[pid], int(hwm.group(1)))
                total += int(rss.group(1))
            self.together_kib = max(self.together_kib, total)
            time.sleep(0.001)

    @property
    def peak_kib(self) -> int:
        """The largest of every process's VmHWM and of the sampled sum."""
        return max([self.together_kib, *self.hwm_kib.values()])

    def stop(self) -> None:
        """Stop polling (after the processes were reaped)."""
        self._done.set()
        self._thread.join()


def read_big_line(peer: Peer, expected_size: int) -> tuple[str, int]:
    """Read one (big) line; its SHA-256 (without the newline) and its length."""
    digest = hashlib.sha256()
    size = 0
    while True:
        chunk = os.read(peer.r, 1 << 20)
        if not chunk:
            raise EOFError(f"{peer.name}: the relay closed its stdout")
        cut = chunk.find(b"\n")
        if cut >= 0:
            if cut != len(chunk) - 1:
                raise RuntimeError(f"{peer.name}: bytes after the big line")
            digest.update(chunk[:cut])
            return digest.hexdigest(), size + cut
        digest.update(chunk)
        size += len(chunk)
        if size > expected_size + 1024:
            raise RuntimeError(f"{peer.name}: the big line is longer than expected")


def big_exchange(peer: Peer, direction: str, size: int) -> bool:
    """Send (``c2s``) or fetch (``s2c``) one line of ``size`` bytes; whether it was intact.

    The line is built and hashed in 1 MiB pieces: a big client would make ``os.wait4``
    useless, as a process forked from it starts out with the client's resident set.
    """
    peer.next_id += 1
    if direction == "c2s":
        head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call",' % peer.next_id
        head += b'"params":{"name":"hash","arguments":{"data":"'
        tail = b'"}}}'
        filler = size - len(head) - len(tail)
        piece = b"a" * LINE_LIMIT
        digest = hashlib.sha256(head)
        peer.write(head, lines=0)
        for offset in range(0, filler, LINE_LIMIT):
            chunk = piece[: min(LINE_LIMIT, filler - offset)]
            digest.update(chunk)
            peer.write(chunk, lines=0)
        digest.update(tail)
        peer.write(tail + b"\n")
        response = orjson.loads(peer.read_line())
        return bool(response["result"]["content"][0]["text"] == digest.hexdigest())
    if direction == "s2c":
        head, tail = response_line(peer.next_id, big_result(0)).split(b'text":"', 1)
        head += b'text":"'
        filler = size - len(head) - len(tail) + 1  # the newline is not part of the frame
        piece = b"z" * LINE_LIMIT
        digest = hashlib.sha256(head)
        for offset in range(0, filler, LINE_LIMIT):
            digest.update(piece[: min(LINE_LIMIT, filler - offset)])
        digest.update(tail[:-1])
        params = {"name": "big", "arguments": {"bytes": filler}}
        peer.write(message_line(peer.next_id, "tools/call", params))
        got, length = read_big_line(peer, size)
        peer.received_lines += 1
        return got == digest.hexdigest() and length == size
    peer.next_id -= 1
    peer.call("tools/call", {"name": "echo", "arguments": {"message": "hello"}})
    return True


def big_frame(
    name: str, direction: str, size: int, folder: Path, profiler: str | None = None
) -> BigRun:
    """A fresh relay carries one frame of ``size`` bytes in ``direction`` (c2s, s2c, idle).

    With ``profiler`` (``py-spy`` or ``cprofile``) the relay runs under it, its profile
    in ``folder`` (``pyspy.txt`` or ``mcpsniff.prof``).
    """
    trace = folder / f"big-{name.replace(' ', '-')}-{direction}.jsonl"
    argv = config_argv(name, trace)
    if profiler == "cprofile":
        argv = cprofile_argv(argv, folder / "mcpsniff.prof")
    peer = Peer.start(name, argv, folder / f"big-{direction}.log")
    analysis = analysis_pid(peer.proc.pid) if name == "mcpsniff" else 0
    # ``--lanes 2``: the derived lane (the analysis process's child) holds memory too.
    derived = analysis_pid(analysis, wait=2.0) if analysis and "2" in LANES else 0
    sampler = PeakSampler([p for p in (peer.proc.pid, analysis, derived) if p])
    with contextlib.ExitStack() as stack:
        if profiler in PYSPY:
            stack.enter_context(
                pyspy(peer.proc.pid, folder / "pyspy.txt", profiler == "py-spy-gil")
            )
        start = time.perf_counter()
        try:
            peer.handshake()
            intact = big_exchange(peer, direction, size)
            seconds = time.perf_counter() - start
        finally:
            kids = children(peer.proc.pid)
            assert peer.proc.stdin is not None and peer.proc.stdout is not None
            peer.proc.stdin.close()
            _, raw_status, usage = os.wait4(peer.proc.pid, 0)
            sampler.stop()
            peer.proc.returncode = os.waitstatus_to_exitcode(raw_status)
            peer.proc.stdout.close()
            for pid in kids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
    if trace.exists():
        trace.unlink()
    return BigRun(
        f"{name}, {direction}",
        intact,
        seconds,
        sampler.hwm_kib[peer.proc.pid] / 1024,
        sampler.hwm_kib.get(analysis, 0) / 1024,
        sampler.together_kib / 1024,
        sampler.hwm_kib.get(derived, 0) / 1024 if derived else 0.0,
        usage.ru_maxrss / 1024,
        peer.proc.returncode,
    )


# --------------------------------------------------------------------------- profiling


def summarize_pyspy(raw: Path, top: int = 20) -> str:
    """Own and inclusive share of samples per function, from py-spy's ``--format raw``.

    The inclusive table lists only mcpsniff's own functions (the CLI aside) and
    aiohttp's: the frames below them (click, the event loop) are in every sample.
    """
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            if ("(mcpsniff/" in frame and "(mcpsniff/cli/" not in frame) or "(aiohttp/" in frame:
                inclusive[frame] += count
    if not total:
        return "py-spy recorded no samples"
    lines = [f"{total} samples"]
    for title, table in (("own time", own), ("inclusive time (mcpsniff, aiohttp)", inclusive)):
        lines.append(f"top {top} by {title}:")
        for frame, count in table.most_common(top):
            lines.append(f"  {100 * count / total:5.1f}%  {frame}")
    return "\n".join(lines)


def summarize_cprofile(path: Path, top: int = 20) -> str:
    """cProfile's top functions by own and by cumulative time."""
    out = []
    for key in ("tottime", "cumulative"):
        stream = _StringStream()
        stats = pstats.Stats(str(path), stream=stream)  # type: ignore[arg-type]
        stats.strip_dirs().sort_stats(key).print_stats(top)
        text = stream.text()
        start = text.find("   ncalls")
        out.append(f"top {top} by {key}:\n{text[start:].rstrip()}")
    return "\n".join(out)


class _StringStream:
    """A minimal text stream for ``pstats.Stats``."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)


@contextlib.contextmanager
def pyspy(pid: int, out: Path, gil: bool = False) -> Iterator[None]:
    """Sample ``pid`` with py-spy (raw format into ``out``) while the block runs.

    py-spy samples wall-clock time: a system call during which the process was
    preempted (common on 2 busy cores: writing to a pipe or socket wakes the peer)
    counts in full. With ``gil`` only samples of a thread holding the GIL count,
    which approximates the CPU time of the Python code without system calls.
    """
    tool = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    argv = [tool, "record", "--pid", str(pid), "--format", "raw", "--output", str(out)]
    argv += ["--rate", "400", "--nonblocking", "--function"]
    if gil:
        argv.append("--gil")
    with (out.with_suffix(".log")).open("wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    time.sleep(1.0)  # let it attach
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cprofile_argv(argv: list[str], out: Path) -> list[str]:
    """``mcpsniff ARGS`` run under cProfile, writing its statistics to ``out``."""
    return [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "mcpsniff", *argv[1:]]


def profile(kind: str, what: str, ns: argparse.Namespace, folder: Path) -> int:
    """Run a workload through mcpsniff only, under a profiler; print its top functions."""
    prof = folder / "mcpsniff.prof"
    raw = folder / "pyspy.txt"
    if what == "traffic":
        argv = config_argv("mcpsniff", folder / "profile.jsonl")
        if kind == "cprofile":
            argv = cprofile_argv(argv, prof)
        peer = Peer.start("mcpsniff", argv, folder / "profile.log")
        try:
            peer.handshake()
            target = peer.analysis_pid if ns.profile_process == "analysis" else peer.proc.pid
            sampling = pyspy(target, raw, kind == "py-spy-gil")
            with sampling if kind in PYSPY else contextlib.nullcontext():
                for _ in range(ns.rounds):
                    line = "profiled mcpsniff:"
                    if ns.count:
                        line += f" {ns.count / peer.pipelined(ns.count):8.0f} msg/s pipelined"
                    if ns.sequential:
                        times = peer.sequential(ns.sequential)
                        line += f" p50 {statistics.median(times):6.0f} us"
                    print(line, flush=True)
        finally:
            peer.close()
        title = f"{ns.rounds} x ({ns.count} pipelined + {ns.sequential} sequential)"
    else:
        direction = what.removeprefix("big-")
        run = big_frame("mcpsniff", direction, BIG_FRAME, folder, kind)
        print(f"profiled mcpsniff: {run}")
        title = f"one {BIG_FRAME} byte frame, {direction}"
    if kind in PYSPY:
        title += f", {ns.profile_process} process"
    print(f"mcpsniff stdio, {kind}, {title}")
    print(summarize_pyspy(raw) if kind in PYSPY else summarize_cprofile(prof))
    return 0


# --------------------------------------------------------------------------- main


def ratio_line(name: str, value: float, target: float, better: str) -> tuple[str, bool]:
    """A verdict line and whether ``value`` meets ``target`` (``better``: 'higher'/'lower')."""
    ok = value >= target if better == "higher" else value <= target
    sign = ">=" if better == "higher" else "<="
    return f"{name}: {value:.3f} ({'meets' if ok else 'MISSES'} {sign} {target})", ok


def bench(ns: argparse.Namespace, folder: Path) -> int:
    """The timed rounds, the trace check and the big frames; return the exit status."""
    names = ["direct", "byte relay", "mcpsniff"]
    trace = folder / "trace.jsonl"
    peers: dict[str, Peer] = {}
    failures: list[str] = []
    results = {name: Results() for name in names}
    try:
        for name in names:
            peers[name] = Peer.start(name, config_argv(name, trace), folder / f"{name}.log")
        for peer in peers.values():
            peer.handshake()
            peer.pipelined(min(ns.count, 5000))  # warm-up, not counted
            peer.sequential(min(ns.sequential, 200))
        print(
            f"{ns.rounds} rounds: {ns.count} pipelined calls ({WINDOW} in flight) and "
            f"{ns.sequential} sequential calls per configuration, 1 KiB tools/call requests, "
            f"~{echo_response_size(1000)} byte responses; CPU in us per message (call)",
            flush=True,
        )
        for number in range(ns.rounds):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                line = pipelined_run(peers[name], results[name], ns.count)
                print(f"round {number + 1}: {line}", flush=True)
            ordered = [peers[name] for name in names[shift:] + names[:shift]]
            for line in sequential_runs(ordered, results, ns.sequential, ns.block):
                print(f"round {number + 1}: {line}", flush=True)
    except Exception:
        for peer in peers.values():
            if peer.proc.poll() is not None:
                print(f"{peer.name} exited {peer.proc.returncode}:\n{peer.log_tail()}")
        raise
    finally:
        statuses = {name: peer.close() for name, peer in peers.items()}
    for name, status in statuses.items():
        if status != 0:
            failures.append(f"{name} exited with status {status}")
    failures += check_trace(trace, peers["mcpsniff"])
    trace.unlink()

    med = statistics.median
    print()
    print(
        "            pipelined msg/s   CPU us/msg, pipelined           | sequential RTT (us)"
        "      relay+analysis"
    )
    print(
        "            best    median    relay analysis server  client  | p50  rounds' p50    p99"
        "  CPU us/msg"
    )
    for name in names:
        r = results[name]
        times = sorted(r.times)
        relay = f"{med(r.relay_cpu_us):5.1f}" if name != "direct" else "    -"
        analysis = f"{med(r.analysis_cpu_us):8.1f}" if name == "mcpsniff" else "       -"
        seq_relay = f"{med(r.seq_relay_cpu_us):5.1f}" if name != "direct" else "    -"
        spread = f"{min(r.p50s):.0f}-{max(r.p50s):.0f}"
        server, client = med(r.server_cpu_us), med(r.client_cpu_us)
        print(
            f"{name:<11} {max(r.rates):6.0f} {med(r.rates):8.0f}    {relay} {analysis}"
            f" {server:6.1f}"
            f" {client:7.1f}  | {med(times):4.0f} {spread:>11} {percentile(times, 99):6.0f}"
            f"   {seq_relay}"
        )
    sniff, relay, direct = results["mcpsniff"], results["byte relay"], results["direct"]
    per_round_rate = [a / b for a, b in zip(sniff.rates, relay.rates, strict=True)]
    per_round_p50 = [a / b for a, b in zip(sniff.p50s, relay.p50s, strict=True)]
    print(
        f"per-round mcpsniff/byte relay throughput: {', '.join(f'{x:.2f}' for x in per_round_rate)}"
    )
    print(
        f"per-round mcpsniff/byte relay p50:        {', '.join(f'{x:.2f}' for x in per_round_p50)}"
    )
    print(
        f"byte relay vs direct: throughput {max(relay.rates) / max(direct.rates):.2f}x, "
        f"p50 {med(relay.times) / med(direct.times):.2f}x"
    )
    print(
        f"mcpsniff sustained (until its analysis caught up): best {max(sniff.sustained):.0f},"
        f" median {med(sniff.sustained):.0f} msg/s, "
        f"{max(sniff.sustained) / max(relay.rates):.2f}x the byte relay"
        " (a longer burst than the backlog limit holds is forwarded at the first rate"
        " and recorded with capture gaps)"
    )
    if sniff.derived_sustained:
        # Two lanes: the sustained rate above counts until every frame was
        # recorded; the verdicts (messages, findings) came later, here.
        print(
            f"mcpsniff derived lane (the rules' verdicts): caught up "
            f"{', '.join(f'{x * 1000:.0f}' for x in sniff.derived_catch_up)} ms after the bursts;"
            f" sustained until then: median {med(sniff.derived_sustained):.0f} msg/s, "
            f"{med(sniff.derived_sustained) / med(relay.rates):.2f}x the byte relay (medians);"
            f" CPU per call: recording lane {med(sniff.analysis_cpu_us):.1f} us,"
            f" derived lane {med(sniff.derived_cpu_us):.1f} us"
        )
    throughput = med(per_round_rate)
    sustained = med(sniff.sustained) / med(relay.rates)
    latency = med(sniff.times) / med(relay.times)

    print()
    print(f"50 MB frames ({BIG_FRAME} bytes, one line each), fresh process per run:")
    big_ok = True
    runs = [
        big_frame("mcpsniff", "idle", 0, folder),
        big_frame("byte relay", "c2s", BIG_FRAME, folder),
        big_frame("byte relay", "s2c", BIG_FRAME, folder),
        big_frame("mcpsniff", "c2s", BIG_FRAME, folder),
        big_frame("mcpsniff", "s2c", BIG_FRAME, folder),
    ]
    for run in runs:
        print(
            f"  {run.what:<20} {'intact' if run.intact else 'CORRUPTED':<9}"
            f" {run.seconds:6.2f} s  peak RSS {run.together_peak_mb:6.1f} MB together"
            f" (VmHWM relay {run.own_peak_mb:5.1f}, analysis {run.analysis_peak_mb:5.1f}"
            + (f", derived lane {run.derived_peak_mb:5.1f}" if run.derived_peak_mb else "")
            + ";"
            f" wait4 {run.wait4_peak_mb:5.1f})  exit {run.status}"
        )
        if not run.intact or run.status != 0:
            failures.append(f"{run.what}: intact={run.intact}, exit status {run.status}")
        if run.what.startswith("mcpsniff") and run.peak_mb >= RSS_LIMIT_MB:
            big_ok = False
    peak = max(r.peak_mb for r in runs if r.what.startswith("mcpsniff"))

    print()
    verdicts = [
        ratio_line(
            "pipelined throughput mcpsniff / byte relay (median of rounds)",
            throughput,
            TARGET_THROUGHPUT,
            "higher",
        ),
        ratio_line(
            "sustained rate mcpsniff / byte relay (medians)",
            sustained,
            TARGET_SUSTAINED,
            "higher",
        ),
        ratio_line("sequential p50 mcpsniff / byte relay", latency, TARGET_LATENCY, "lower"),
        (
            f"peak RSS of mcpsniff with a 50 MB frame: {peak:.1f} MB "
            f"({'meets' if big_ok else 'MISSES'} < {RSS_LIMIT_MB} MB)",
            big_ok,
        ),
    ]
    for text, _ in verdicts:
        print(text)
    for problem in failures:
        print(f"FAILED CHECK: {problem}")
    return 0 if all(ok for _, ok in verdicts) and not failures else 1


def _on_deadline(signum: int, frame: Any) -> None:
    raise TimeoutError(f"the benchmark did not finish within {DEADLINE} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds per configuration")
    parser.add_argument("--count", type=int, default=40000, help="pipelined calls per round")
    parser.add_argument("--sequential", type=int, default=2000, help="sequential calls per round")
    parser.add_argument(
        "--block", type=int, default=50, help="sequential calls before the next configuration"
    )
    parser.add_argument(
        "--profile", choices=[*PYSPY, "cprofile"], help="profile mcpsniff only; no verdict"
    )
    parser.add_argument(
        "--profile-what",
        choices=["traffic", "big-c2s", "big-s2c"],
        default="traffic",
        help="what --profile runs: the rounds' traffic or one 50 MB frame",
    )
    parser.add_argument(
        "--profile-process",
        choices=["relay", "analysis"],
        default="relay",
        help="which process py-spy samples with --profile (traffic only)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="run mcpsniff with this --fault (repeatable), e.g. 'drop when method == none'",
    )
    parser.add_argument(
        "--guard-enforce",
        action="store_true",
        help="run mcpsniff with --guard enforce --forbid-tool 'never_*' (every call judged)",
    )
    parser.add_argument(
        "--lanes",
        type=int,
        choices=[1, 2],
        help="run mcpsniff with --lanes N (2: the verdict counts until every frame is recorded,"
        " the derived lane's catch-up is printed beside it)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--byte-relay", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if min(ns.rounds, ns.block) < 1 or min(ns.count, ns.sequential) < (0 if ns.profile else 1):
        parser.error("--rounds, --count, --sequential and --block must be positive")
    FAULTS.extend(ns.fault)
    if ns.guard_enforce:
        GUARD.extend(GUARD_ENFORCE)
    if ns.lanes is not None:
        LANES.extend(["--lanes", str(ns.lanes)])
    if ns.serve:
        return serve()
    if ns.byte_relay:
        return asyncio.run(byte_relay(ns.byte_relay))
    signal.signal(signal.SIGALRM, _on_deadline)
    signal.alarm(DEADLINE)
    with tempfile.TemporaryDirectory(prefix="bench-stdio-") as tmp:
        if ns.profile:
            return profile(ns.profile, ns.profile_what, ns, Path(tmp))
        return bench(ns, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
