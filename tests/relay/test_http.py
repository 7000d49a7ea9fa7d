"""``mcpsniff http``: the recording reverse proxy, end to end over real sockets.

Every test runs ``python -m mcpsniff http`` as a real subprocess in front of
the aiohttp upstream of ``http_upstreams.py`` (a background thread of this
process, on 127.0.0.1), talks to it with a real HTTP client, then stops it and
reads the trace it wrote. Where a test can, it also runs
``mcpsniff check --format json`` on that trace and asserts that the offline
findings are exactly the ones the live proxy recorded.

Nothing is mocked and nothing is timed: every wait has a timeout so that a
proxy that buffers or hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import brotli  # type: ignore[import-untyped]
import click
import pytest
from yarl import URL

from mcpsniff.cli import main as cli_main
from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.core.protocol import META_CLIENT_CAPS, META_CLIENT_INFO, META_VERSION
from mcpsniff.relay.http import DEFAULT_HOST, DEFAULT_PORT, HttpOptions, is_loopback, parse_listen
from mcpsniff.terminal.render import finding_json
from mcpsniff.trace.reader import TraceReader
from tests.relay.http_upstreams import (
    ECHO_HEADER,
    REFUSED_TOKEN,
    SET_COOKIE,
    TRUNCATED_TAIL,
    BareServer,
    Upstream,
    big_sse_body,
)
from tests.relay.stdio_support import relay_env, wait_until

REPO = Path(__file__).resolve().parents[2]
#: Longest any one test's client conversation may take before it counts as hung.
TEST_TIMEOUT = 120.0
#: Longest one read from a socket may block.
READ_TIMEOUT = 30.0
#: Longest mcpsniff may take to start or to stop.
PROCESS_TIMEOUT = 30.0

ACCEPT_POST = "application/json, text/event-stream"
V_2025_03 = "2025-03-26"
V_2025_06 = "2025-06-18"
V_2025_11 = "2025-11-25"
V_2026_07 = "2026-07-28"
HOP_BY_HOP_SENT = ("keep-alive", "te", "trailer", "proxy-authorization", "proxy-connection")


# --------------------------------------------------------------------------- the processes


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    server.start()
    yield server
    server.stop()


@dataclass
class Trace:
    """What one mcpsniff run recorded."""

    path: Path
    records: list[Record]

    @property
    def raw(self) -> bytes:
        return self.path.read_bytes()

    @property
    def frames(self) -> list[FrameRecord]:
        return [r for r in self.records if isinstance(r, FrameRecord)]

    @property
    def messages(self) -> list[MessageRecord]:
        return [r for r in self.records if isinstance(r, MessageRecord)]

    @property
    def findings(self) -> list[FindingRecord]:
        return [r for r in self.records if isinstance(r, FindingRecord)]

    def events(self, name: str, session: str | None = None) -> list[EventRecord]:
        return [
            r
            for r in self.records
            if isinstance(r, EventRecord)
            and r.event == name
            and (session is None or r.session == session)
        ]

    def sessions(self) -> set[str]:
        """Sessions that carried HTTP traffic."""
        return {r.session for r in self.events("http-request")}

    def rules(self, session: str | None = None) -> list[str]:
        return [f.rule for f in self.findings if session is None or f.session == session]

    def frame(self, seq: int) -> FrameRecord:
        return next(f for f in self.frames if f.seq == seq)

    def payload(self, message: MessageRecord) -> Any:
        value = json.loads(self.frame(message.frame).raw)
        return value[message.index] if message.index is not None else value

    def exchange(self, number: int) -> list[EventRecord]:
        """The HTTP events of exchange ``number``, in order."""
        return [
            r
            for r in self.records
            if isinstance(r, EventRecord)
            and r.event.startswith(("http-", "sse-"))
            and r.data.get("exchange") == number
        ]

    def requests_to(self, path_prefix: str) -> list[EventRecord]:
        return [r for r in self.events("http-request") if r.data["path"].startswith(path_prefix)]


class Proxy:
    """One ``mcpsniff http`` subprocess."""

    def __init__(self, upstream_url: str, trace: Path, *args: str) -> None:
        self.trace_path = trace
        self.command = [
            sys.executable,
            "-m",
            "mcpsniff",
            "http",
            "--upstream",
            upstream_url,
            "--trace",
            str(trace),
            *args,
        ]
        if "--listen" not in args:
            self.command += ["--listen", "127.0.0.1:0"]
        self.proc = subprocess.Popen(
            self.command,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.stderr_lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        self.url = self._wait_for_announcement()
        self.origin = str(URL(self.url).origin())
        self.port = URL(self.url).port

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.stderr_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _wait_for_announcement(self) -> str:
        while True:
            try:
                line = self._lines.get(timeout=PROCESS_TIMEOUT)
            except queue.Empty:
                self.proc.kill()
                pytest.fail(f"mcpsniff http did not start: {self.stderr_lines}")
            if line is None:
                self.proc.wait(PROCESS_TIMEOUT)
                pytest.fail(f"mcpsniff http exited {self.proc.returncode}: {self.stderr_lines}")
            if line.startswith("mcpsniff: proxying "):
                return line.split()[2]

    @property
    def stderr(self) -> str:
        return "\n".join(self.stderr_lines)

    def stop(self) -> Trace:
        """SIGTERM, wait, and read the trace (which must not be torn)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(PROCESS_TIMEOUT)
            pytest.fail(f"mcpsniff http did not stop on SIGTERM: {self.stderr}")
        self._reader.join(PROCESS_TIMEOUT)
        assert code == 0, self.stderr
        # Nothing but mcpsniff's own lines: no tracebacks, no aiohttp log noise.
        assert [line for line in self.stderr_lines if not line.startswith("mcpsniff")] == []
        with TraceReader(self.trace_path) as reader:
            records = list(reader.records())
            assert reader.torn is None
        analyzer_errors = [
            r for r in records if isinstance(r, EventRecord) and r.event == "analyzer-error"
        ]
        assert analyzer_errors == []
        return Trace(self.trace_path, records)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(PROCESS_TIMEOUT)


ProxyFactory = Callable[..., Proxy]


@pytest.fixture
def start_proxy(tmp_path: Path) -> Iterator[ProxyFactory]:
    started: list[Proxy] = []

    def start(upstream_url: str, *args: str) -> Proxy:
        proxy = Proxy(upstream_url, tmp_path / f"trace-{len(started)}.jsonl", *args)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.kill()


def run(coro: Awaitable[Any], timeout: float = TEST_TIMEOUT) -> Any:
    """Run a client conversation; a hang fails with TimeoutError instead of hanging."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def client(**kwargs: Any) -> aiohttp.ClientSession:
    """An HTTP client that never decompresses (so bytes can be compared) and never hangs."""
    return aiohttp.ClientSession(
        auto_decompress=False,
        timeout=aiohttp.ClientTimeout(
            total=None, sock_connect=READ_TIMEOUT, sock_read=READ_TIMEOUT
        ),
        **kwargs,
    )


def check_findings(trace: Trace) -> list[dict[str, Any]]:
    """``mcpsniff check --format json`` on the trace; asserts it equals the live findings."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--format", "json", str(trace.path)],
        cwd=REPO,
        capture_output=True,
        timeout=PROCESS_TIMEOUT * 2,
    )
    checked = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    # The spec link is check's addition (the session's version is known there).
    assert all(c.pop("spec").startswith("https://") for c in checked)
    live = [{k: v for k, v in finding_json(f).items() if k != "spec"} for f in trace.findings]
    assert checked == live
    failing = any(f.severity == "error" for f in trace.findings)
    assert proc.returncode == (1 if failing else 0), proc.stderr.decode()
    return checked


def assert_paired(trace: Trace, session: str) -> list[MessageRecord]:
    """Every request of ``session`` has exactly one answer, and every answer a request."""
    messages = [m for m in trace.messages if m.session == session]
    requests = [m for m in messages if m.kind == "request"]
    answers = [m for m in messages if m.kind in ("response", "error")]
    assert requests, f"no requests in session {session}"
    for request in requests:
        matching = [
            a
            for a in answers
            if a.answers == request.frame
            and a.request_index == request.index
            and a.direction != request.direction
        ]
        assert len(matching) == 1, f"{request.method} id={request.id} (frame {request.frame})"
        if matching[0].note == "http-error-reply":
            # An HTTP error whose JSON-RPC error has no id answers the exchange's request.
            assert matching[0].id is None
        else:
            assert matching[0].id == request.id
    assert all(a.answers is not None for a in answers), [a for a in answers if a.answers is None]
    assert len(answers) == len(requests)
    return requests


# --------------------------------------------------------------------------- the client side


@dataclass
class Reply:
    """A whole HTTP response as the client received it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def header_names(self) -> set[str]:
        return {k.lower() for k, _ in self.headers}

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[dict[str, str]]:
        return parse_sse(self.body)

    def answer(self) -> Any:
        """The JSON-RPC answer in a JSON body or in the last event of an SSE body."""
        if self.header("Content-Type") == "text/event-stream":
            return json.loads(self.events()[-1]["data"])
        return self.json()


async def reply_of(response: aiohttp.ClientResponse) -> Reply:
    body = await response.read()
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers]
    return Reply(response.status, headers, body)


def parse_sse(body: bytes) -> list[dict[str, str]]:
    """Events of a whole LF-delimited SSE body; a cut-off last block is left out."""
    return [_sse_block(block) for block in body.split(b"\n\n")[:-1] if block.strip()]


def _sse_block(block: bytes) -> dict[str, str]:
    event: dict[str, str] = {}
    for line in block.decode().split("\n"):
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        event[name] = event[name] + "\n" + value if name == "data" and name in event else value
    return event


class SseStream:
    """Reads an SSE response event by event, as the events arrive."""

    def __init__(self, response: aiohttp.ClientResponse, *, gzipped: bool = False) -> None:
        self.response = response
        self.received = bytearray()
        self._buffer = b""
        # The client decodes a compressed stream itself (auto_decompress is off).
        self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None

    async def next(self) -> dict[str, str] | None:
        """The next whole event, or None at the end of the stream."""
        while b"\n\n" not in self._buffer:
            chunk = await self.response.content.readany()
            if not chunk:
                return None
            self.received += chunk
            self._buffer += chunk if self._decoder is None else self._decoder.decompress(chunk)
        block, self._buffer = self._buffer.split(b"\n\n", 1)
        return _sse_block(block)


class McpClient:
    """A minimal Streamable HTTP MCP client."""

    def __init__(self, http: aiohttp.ClientSession, url: str, version: str = V_2025_06) -> None:
        self.http = http
        self.url = url
        self.version = version
        self.sid: str | None = None
        self.initialized = False
        self.next_id = 1

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Accept": ACCEPT_POST, "Content-Type": "application/json"}
        if self.sid is not None:
            headers["Mcp-Session-Id"] = self.sid
        if self.initialized and self.version >= V_2025_06:
            headers["MCP-Protocol-Version"] = self.version
        headers.update(extra)
        return headers

    async def post(self, payload: Any, headers: dict[str, str] | None = None) -> Reply:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        async with self.http.post(self.url, data=data, headers=headers or self.headers()) as r:
            return await reply_of(r)

    def request_payload(self, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            message["params"] = params
        return message

    async def request(self, method: str, params: Any = None, **headers: str) -> Any:
        """Send a request; return its result (from a JSON or an SSE answer)."""
        message = self.request_payload(method, params)
        reply = await self.post(message, self.headers(**headers))
        assert reply.status == 200, reply
        if reply.header("Content-Type") == "text/event-stream":
            answers = [json.loads(e["data"]) for e in reply.events()]
            answer = next(a for a in answers if a.get("id") == message["id"])
        else:
            answer = reply.json()
        assert answer["id"] == message["id"]
        return answer.get("result", answer.get("error"))

    async def notify(self, method: str, params: Any = None) -> Reply:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return await self.post(message)

    async def initialize(self) -> Reply:
        params = {
            "protocolVersion": self.version,
            "capabilities": {},
            "clientInfo": {"name": "test-client", "version": "1.0"},
        }
        reply = await self.post(self.request_payload("initialize", params))
        assert reply.status == 200, reply
        self.sid = reply.header("Mcp-Session-Id")
        assert self.sid
        self.initialized = True
        notified = await self.notify("notifications/initialized")
        assert (notified.status, notified.body) == (202, b"")
        return reply


def raw_http(port: int, request: bytes) -> tuple[bytes, list[tuple[str, str]], bytes]:
    """Send exact request bytes; return the status line, header lines and body (by length)."""
    with socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {data!r}"
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status, *lines = head.split(b"\r\n")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1").strip())
            for k, _, v in (line.partition(b":") for line in lines)
        ]
        length = int(next(v for k, v in headers if k.lower() == "content-length"))
        while len(body) < length:
            chunk = sock.recv(65536)
            assert chunk, "connection closed mid-body"
            body += chunk
    return status, headers, body


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- listening


def test_listen_defaults_to_loopback() -> None:
    options = HttpOptions(upstream="http://127.0.0.1:1/mcp")
    assert options.host == DEFAULT_HOST == "127.0.0.1"
    assert is_loopback(options.host)
    assert options.redact is True
    assert parse_listen("7000") == ("127.0.0.1", 7000)
    assert parse_listen(":7000") == ("127.0.0.1", 7000)
    assert parse_listen("[::1]:7000") == ("::1", 7000)
    assert parse_listen("0.0.0.0:7000") == ("0.0.0.0", 7000)
    # and what the CLI passes when --listen is not given
    command = cli_main.commands["http"]
    assert isinstance(command, click.Command)
    listen = next(p for p in command.params if p.name == "listen")
    host, _port = parse_listen(str(listen.default))
    assert is_loopback(host)
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_listen("nonsense")


def test_defaults_port_trace_folder_and_show(upstream: Upstream, tmp_path: Path) -> None:
    """No --listen, no --trace: 127.0.0.1:6280 and a trace in the state folder; --show shows."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", DEFAULT_PORT))
        except OSError:
            pytest.skip(f"port {DEFAULT_PORT} is in use here")
    assert DEFAULT_PORT == 6280
    command = [sys.executable, "-m", "mcpsniff", "http", "--upstream", upstream.url("/json/mcp")]
    proc = subprocess.Popen(
        [*command, "--show"],
        cwd=REPO,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        announcement = proc.stderr.readline().decode()
        url = f"http://127.0.0.1:{DEFAULT_PORT}/json/mcp"
        assert announcement.startswith(f"mcpsniff: proxying {url} -> "), announcement
        path = Path(announcement.rsplit("recording to ", 1)[1].strip())
        assert path.parent == tmp_path / "mcpsniff" / "traces"

        async def talk() -> None:
            async with client() as http:
                mcp = McpClient(http, url)
                await mcp.initialize()
                await mcp.request("tools/list")

        run(talk())
        proc.send_signal(signal.SIGTERM)
        shown = proc.stderr.read().decode()
        assert proc.wait(PROCESS_TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(PROCESS_TIMEOUT)
    # The live timeline: each request and its answer, as they happened.
    for method in ("initialize", "notifications/initialized", "tools/list"):
        assert method in shown, shown
    assert "Traceback" not in shown
    assert path.stat().st_mode & 0o777 == 0o600
    with TraceReader(path) as reader:
        records = list(reader.records())
    methods = [r.method for r in records if isinstance(r, MessageRecord) and r.kind == "request"]
    assert methods == ["initialize", "tools/list"]


def test_non_loopback_listen_warns(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    # Only bind: no traffic goes to a non-loopback address.
    proxy = start_proxy(upstream.url("/json/mcp"), "--listen", "0.0.0.0:0")
    assert proxy.url.startswith("http://0.0.0.0:")
    warnings = [line for line in proxy.stderr_lines if "warning" in line]
    assert len(warnings) == 1
    assert "listening on 0.0.0.0, not loopback" in warnings[0]
    proxy.stop()


def test_loopback_listen_does_not_warn(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))
    trace = proxy.stop()
    assert [line for line in proxy.stderr_lines if "warning" in line] == []
    assert trace.sessions() == set()


def analysis_process(proxy: Proxy) -> int:
    """The pid of a proxy's analysis process (its forked child)."""
    children = [
        int(pid)
        for task in Path(f"/proc/{proxy.proc.pid}/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]
    assert len(children) == 1, children
    return children[0]


@pytest.mark.parametrize("show", [False, True])
def test_analysis_process_priority(
    start_proxy: ProxyFactory, upstream: Upstream, show: bool
) -> None:
    """Recording only, the analysis works on CPU nobody else wants while the proxy forwards;
    watched, at nice 10. That is its second thread: the main thread, which takes over once
    the proxy is quiet, stays at the proxy's priority (mcpsniff/capture/priority.py)."""
    proxy = start_proxy(upstream.url("/json/mcp"), *(["--show"] if show else []))
    analysis = analysis_process(proxy)
    expected = (os.SCHED_OTHER, 10) if show else (os.SCHED_IDLE, 10)
    base = os.getpriority(os.PRIO_PROCESS, proxy.proc.pid)
    deadline = time.monotonic() + 10
    while True:  # the second thread lowers itself when it starts: wait for it
        threads = {}
        for task in os.listdir(f"/proc/{analysis}/task"):
            tid = int(task)
            niceness = os.getpriority(os.PRIO_PROCESS, tid) - base
            threads[tid] = (os.sched_getscheduler(tid), niceness)
        if expected in threads.values() or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    proxy.stop()
    assert threads.pop(analysis) == (os.SCHED_OTHER, 0)
    assert list(threads.values()) == [expected]


def test_stopping_behind_an_analysis_process_says_what_it_waits_for(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """An analysis process behind the traffic delays the exit, and the user is told why."""
    proxy = start_proxy(upstream.url("/json/mcp"))

    async def talk() -> Reply:
        async with client() as http:
            return await McpClient(http, proxy.url).post(
                b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
            )

    assert run(talk()).status == 400  # the upstream's answer: a ping without a session
    analysis = analysis_process(proxy)
    os.kill(analysis, signal.SIGSTOP)  # as if it got no CPU at all
    try:
        proxy.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not any("waiting for the analysis process" in line for line in proxy.stderr_lines):
            assert time.monotonic() < deadline, proxy.stderr
            assert proxy.proc.poll() is None, proxy.stderr  # it must not leave the trace unfinished
            time.sleep(0.05)
    finally:
        os.kill(analysis, signal.SIGCONT)
    trace = proxy.stop()
    # once the analysis went on, the trace was finished: the exchange is in it, whole
    assert [(f.direction, f.transport) for f in trace.frames] == [("c2s", "http"), ("s2c", "http")]
    notices = [line for line in proxy.stderr_lines if "waiting for the analysis" in line]
    assert len(notices) == 1


# --------------------------------------------------------------------------- paths and URLs


def test_announces_the_url_to_use_and_keeps_paths(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/echo/base?tenant=7"))
    # Our origin plus the path (and query) of --upstream.
    assert proxy.url == f"http://127.0.0.1:{proxy.port}/echo/base?tenant=7"
    assert proxy.port != upstream.port
    paths = [
        "/echo/base?tenant=7",
        "/echo/other/x",
        "/echo/q?a=1&b=%2F&c=&d=x+y&e=%E2%9C%93",
        "/echo/en%20coded//double/slash/",
        "/echo",
    ]

    async def talk() -> list[Reply]:
        async with client() as http:
            replies = []
            for path in paths:
                target = URL(proxy.origin + path, encoded=True)
                async with http.get(target) as response:
                    replies.append(await reply_of(response))
            return replies

    replies = run(talk())
    for path, reply in zip(paths, replies, strict=True):
        assert reply.status == 200
        assert reply.json()["path_qs"] == path
    trace = proxy.stop()
    assert [e.data["path"] for e in trace.events("http-request")] == paths
    check_findings(trace)


# --------------------------------------------------------------------------- transparency


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE", "PUT", "PATCH"])
@pytest.mark.parametrize("status", [200, 201, 404, 418])
def test_methods_bodies_statuses_and_headers_pass(
    start_proxy: ProxyFactory, upstream: Upstream, method: str, status: int
) -> None:
    proxy = start_proxy(upstream.url("/echo/any"))
    body = b"" if method == "GET" else f"body of a {method}\x00\xff".encode("latin-1")
    path = f"/echo/{method.lower()}/{status}?status={status}"

    async def talk() -> Reply:
        async with (
            client() as http,
            http.request(
                method,
                URL(proxy.origin + path, encoded=True),
                data=body or None,
                headers={"X-Client-Custom": "from client", "Content-Type": "x/y"},
            ) as response,
        ):
            return await reply_of(response)

    reply = run(talk())
    assert reply.status == status
    echoed = reply.json()
    assert echoed["method"] == method
    assert echoed["path_qs"] == path
    assert (echoed["body_len"], echoed["body_sha256"]) == (len(body), sha256(body))
    seen = dict((k.lower(), v) for k, v in echoed["headers"])
    assert seen["x-client-custom"] == "from client"
    assert seen["content-type"] == "x/y"
    assert seen["host"] == f"127.0.0.1:{upstream.port}"  # named the proxy: the upstream's
    assert reply.header(ECHO_HEADER[0]) == ECHO_HEADER[1]
    assert reply.header("Content-Type") == "application/json; charset=utf-8"
    assert reply.header("Content-Length") == str(len(reply.body))
    trace = proxy.stop()
    (response_event,) = trace.events("http-response")
    assert response_event.data["status"] == status
    # No MCP traffic (not the MCP path, no JSON-RPC body): recorded, not analyzed.
    (request_event,) = trace.events("http-request")
    assert request_event.data["mcp"] is False
    assert trace.frames == []
    assert check_findings(trace) == []


def test_hop_by_hop_headers_are_dropped_both_ways(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/echo"))
    request = (
        b"GET /echo/hop?hop=1 HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\n"
        b"Keep-Alive: timeout=5\r\n"
        b"TE: trailers\r\n"
        b"Trailer: X-Checksum\r\n"
        b"Proxy-Authorization: Basic cHJveHk6c2VjcmV0\r\n"
        b"Proxy-Connection: keep-alive\r\n"
        b"X-End-To-End: kept\r\n"
        b"Connection: close\r\n"
        b"\r\n"
    )
    status, headers, body = raw_http(proxy.port or 0, request)
    assert status == b"HTTP/1.1 200 OK"
    seen = {k.lower(): v for k, v in json.loads(body)["headers"]}
    assert seen["x-end-to-end"] == "kept"
    assert seen["host"] == "127.0.0.1"
    assert not set(HOP_BY_HOP_SENT) & set(seen)
    assert seen.get("connection") != "close"
    names = {k.lower() for k, _ in headers}
    assert not {"keep-alive", "proxy-authenticate", "upgrade", "trailer"} & names
    assert dict((k.lower(), v) for k, v in headers)[ECHO_HEADER[0].lower()] == ECHO_HEADER[1]
    trace = proxy.stop()
    (request_event,) = trace.events("http-request")
    recorded = {k.lower() for k, _ in request_event.data["headers"]}
    assert not set(HOP_BY_HOP_SENT) & recorded
    assert "x-end-to-end" in recorded


def test_connection_listed_headers_are_dropped_both_ways(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """Headers that Connection names are hop-by-hop too (RFC 9110 §7.6.1)."""
    proxy = start_proxy(upstream.url("/echo"))
    request = (
        b"GET /echo/conn?connection=1 HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\n"
        b"Connection: X-Client-Hop, keep-alive\r\n"
        b"X-Client-Hop: for the proxy only\r\n"
        b"X-End-To-End: kept\r\n"
        b"\r\n"
    )
    _status, headers, body = raw_http(proxy.port or 0, request)
    seen = {k.lower() for k, _ in json.loads(body)["headers"]}
    assert "x-end-to-end" in seen
    assert "x-client-hop" not in seen
    names = {k.lower() for k, _ in headers}
    assert "x-upstream-hop" not in names
    assert ECHO_HEADER[0].lower() in names
    proxy.stop()


def test_repeated_headers_redirects_and_chunked_bodies_pass(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/echo"))
    body = b"a chunked request body"
    request = (
        b"POST /echo/r?twice=1&status=307&location=/elsewhere HTTP/1.1\r\n"
        b"Host: 127.0.0.1\r\n"
        b"X-Dup: one\r\n"
        b"X-Dup: two\r\n"
        b"Transfer-Encoding: chunked\r\n"
        b"\r\n"
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    )
    status, headers, reply = raw_http(proxy.port or 0, request)
    # The redirect is the client's to follow, not the proxy's.
    assert status == b"HTTP/1.1 307 Temporary Redirect"
    assert [v for k, v in headers if k == "Location"] == ["/elsewhere"]
    assert [v for k, v in headers if k == "X-Twice"] == ["first", "second"]
    echoed = json.loads(reply)
    assert [v for k, v in echoed["headers"] if k == "X-Dup"] == ["one", "two"]
    assert (echoed["body_len"], echoed["body_sha256"]) == (len(body), sha256(body))
    proxy.stop()


def test_no_headers_added_either_way(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    """The upstream gets the client's headers, the client the upstream's: nothing more."""
    bare = upstream.bare
    proxy = start_proxy(bare.origin + "/bare")
    before = len(bare.requests)
    request = b"GET /bare/x?y=1 HTTP/1.1\r\nHost: h.example:1\r\nX-A: 1\r\n\r\n"
    status, headers, body = raw_http(proxy.port or 0, request)
    assert status == BareServer.HEAD_LINES[0]
    # No Server, Date, Content-Type or anything else of the proxy's own.
    assert headers == [tuple(line.decode().split(": ", 1)) for line in BareServer.HEAD_LINES[1:]]
    assert body == BareServer.BODY
    assert bare.requests[before:] == [request]
    proxy.stop()


@pytest.mark.parametrize("keep_host", [False, True], ids=["default", "keep-host"])
def test_host_naming_the_proxy_becomes_the_upstreams_and_origin_passes(
    start_proxy: ProxyFactory, upstream: Upstream, keep_host: bool
) -> None:
    """What a direct client would send, except that a DNS-rebinding Host passes as it is."""
    proxy = start_proxy(upstream.url("/json/mcp"), *(["--keep-host"] if keep_host else []))
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": V_2025_06,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }

    async def talk() -> tuple[Reply, Reply, Reply]:
        async with client() as http:
            base = {"Accept": ACCEPT_POST, "Content-Type": "application/json"}
            async with http.post(
                proxy.url,
                json=init,
                headers={**base, "Origin": "http://evil.example", "Host": "evil.example"},
            ) as r:
                rebound = await reply_of(r)
            async with http.post(
                proxy.url, json=init, headers={**base, "Origin": "http://localhost:5173"}
            ) as r:
                allowed = await reply_of(r)
            by_name = {**base, "Host": f"LocalHost:{proxy.port}"}
            async with http.post(proxy.url, json=init, headers=by_name) as r:
                named = await reply_of(r)
            return rebound, allowed, named

    before = len(upstream.seen)
    rebound, allowed, named = run(talk())
    # DNS-rebinding protection still works through mcpsniff: the upstream says 403.
    assert rebound.status == 403
    assert rebound.body == b"Forbidden: origin http://evil.example is not allowed\n"
    assert allowed.status == named.status == 200
    assert allowed.json()["result"]["serverInfo"]["name"] == "upstream"
    seen = [(s.header("Host"), s.header("Origin")) for s in upstream.seen[before:]]
    if keep_host:
        assert seen == [
            ("evil.example", "http://evil.example"),
            (f"127.0.0.1:{proxy.port}", "http://localhost:5173"),
            (f"LocalHost:{proxy.port}", None),
        ]
    else:
        # Host named the proxy: the upstream gets its own name, as from a direct client.
        assert seen == [
            ("evil.example", "http://evil.example"),
            (f"127.0.0.1:{upstream.port}", "http://localhost:5173"),
            (f"127.0.0.1:{upstream.port}", None),
        ]
    trace = proxy.stop()
    statuses = [e.data["status"] for e in trace.events("http-response")]
    assert statuses == [403, 200, 200]
    # The trace keeps the client's Host, and its header says what the upstream got.
    hosts = [dict(e.data["headers"])["Host"] for e in trace.events("http-request")]
    assert hosts == ["evil.example", f"127.0.0.1:{proxy.port}", f"LocalHost:{proxy.port}"]
    header = json.loads(trace.raw.split(b"\n", 1)[0])
    assert header["meta"]["host_header"] == ("as sent" if keep_host else "upstream's")
    check_findings(trace)


def test_upstream_errors_pass_as_they_are(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/echo"))

    async def talk() -> Reply:
        async with client() as http, http.post(proxy.origin + "/echo/x?status=500") as r:
            return await reply_of(r)

    reply = run(talk())
    assert reply.status == 500
    assert reply.body == b"upstream exploded: stack trace here\n"
    assert reply.header("X-Failure") == "yes"
    assert reply.header("Content-Type") == "text/plain; charset=utf-8"
    assert reply.header("X-Mcpsniff") is None
    trace = proxy.stop()
    assert [e.data["status"] for e in trace.events("http-response")] == [500]
    # A plain-text error body is not a JSON-RPC frame; the trace keeps it as an event.
    assert [f for f in trace.frames if f.direction == "s2c"] == []
    (body,) = trace.events("http-error-body")
    assert body.data == {"exchange": 1, "excerpt": reply.body.decode()}
    check_findings(trace)


# --------------------------------------------------------------------------- compression


def test_gzip_response_forwarded_compressed_and_analyzed_decoded(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/gzip/mcp"))

    async def talk() -> tuple[McpClient, Reply]:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            init = await mcp.initialize()
            return mcp, init

    gzipped_before = len(upstream.gzipped)
    mcp, init = run(talk())
    assert init.header("Content-Encoding") == "gzip"
    # Byte for byte what the upstream sent, still compressed.
    assert upstream.gzipped[gzipped_before:] == [init.body]
    assert init.header("Content-Length") == str(len(init.body))
    decoded = json.loads(gzip.decompress(init.body))
    assert decoded["result"]["protocolVersion"] == V_2025_06
    trace = proxy.stop()
    assert trace.sessions() == {mcp.sid}
    (request,) = assert_paired(trace, mcp.sid or "")
    assert request.method == "initialize"
    answer = next(m for m in trace.messages if m.answers == request.frame)
    assert json.loads(trace.frame(answer.frame).raw) == decoded
    (response_event,) = [e for e in trace.events("http-response") if e.data["exchange"] == 1]
    assert ["Content-Encoding", "gzip"] in response_event.data["headers"]
    assert check_findings(trace) == []


def test_brotli_response_forwarded_compressed_and_analyzed_decoded(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/br/mcp"))

    async def talk() -> tuple[McpClient, Reply, Any]:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            init = await mcp.initialize()
            reply = await mcp.post(mcp.request_payload("tools/list"))
            return mcp, init, reply

    before = len(upstream.gzipped)
    mcp, init, tools = run(talk())
    assert [init.header("Content-Encoding"), tools.header("Content-Encoding")] == ["br", "br"]
    assert upstream.gzipped[before:] == [init.body, tools.body]  # forwarded as sent
    trace = proxy.stop()
    requests = assert_paired(trace, mcp.sid or "")
    assert [r.method for r in requests] == ["initialize", "tools/list"]
    answer = next(m for m in trace.messages if m.answers == requests[-1].frame)
    expected = json.loads(brotli.decompress(tools.body))
    assert json.loads(trace.frame(answer.frame).raw) == expected
    assert check_findings(trace) == []


def test_undecodable_response_is_recorded_not_parsed(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """A body whose coding mcpsniff cannot undo is no JR-PARSE, nor an unanswered request."""
    proxy = start_proxy(upstream.url("/zstd/mcp"))

    async def talk() -> tuple[McpClient, Reply]:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            await mcp.initialize()
            return mcp, await mcp.post(mcp.request_payload("tools/list"))

    before = len(upstream.gzipped)
    mcp, reply = run(talk())
    assert (reply.status, reply.header("Content-Encoding")) == (200, "zstd")
    assert mcp.sid is not None
    assert upstream.gzipped[before:][-1] == reply.body
    trace = proxy.stop()
    (event,) = trace.events("http-body-not-analyzed")
    assert event.data == {
        "exchange": 3,
        "dir": "s2c",
        "reason": "unsupported content-encoding 'zstd'",
    }
    answers = [f for f in trace.frames if f.direction == "s2c"]
    assert [(f.meta or {}).get("exchange") for f in answers] == [1]  # initialize's only
    assert check_findings(trace) == []


def test_gzip_request_body_forwarded_compressed(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """A compressed request body reaches the upstream as the client sent it."""
    bare = upstream.bare
    proxy = start_proxy(bare.origin + "/bare")
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    body = gzip.compress(json.dumps(message).encode(), mtime=0)
    head = (
        b"POST /bare/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\n"
        b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    before = len(bare.requests)
    status, _headers, _body = raw_http(proxy.port or 0, head + body)
    assert status == b"HTTP/1.1 200 OK"
    assert bare.requests[before:] == [head]
    assert bare.bodies[before:] == [body]
    trace = proxy.stop()
    (request_frame,) = [f for f in trace.frames if f.direction == "c2s"]
    assert json.loads(request_frame.raw) == message
    (request,) = [m for m in trace.messages if m.direction == "c2s"]
    assert request.method == "ping"


# --------------------------------------------------------------------------- Streamable HTTP


@pytest.mark.parametrize("flavor", ["json", "sse"])
def test_streamable_http_session(
    start_proxy: ProxyFactory, upstream: Upstream, flavor: str
) -> None:
    proxy = start_proxy(upstream.url(f"/{flavor}/mcp"))

    async def talk() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client() as http:
            mcp = McpClient(http, proxy.url, V_2025_11)
            init = await mcp.initialize()
            out["init"] = init
            out["sid"] = mcp.sid
            out["tools"] = await mcp.request("tools/list")
            out["call"] = await mcp.request(
                "tools/call", {"name": "echo", "arguments": {}, "_meta": {"progressToken": "p1"}}
            )
            # The GET listening stream: the server pings, the client answers with a POST.
            async with http.get(
                proxy.url, headers={**mcp.headers(), "Accept": "text/event-stream"}
            ) as response:
                out["get_status"] = response.status
                out["get_type"] = response.headers.get("Content-Type")
                stream = SseStream(response)
                ping = await stream.next()
                assert ping is not None
                out["ping"] = ping
                pong = {"jsonrpc": "2.0", "id": json.loads(ping["data"])["id"], "result": {}}
                out["pong"] = await mcp.post(pong)
                out["get_end"] = await stream.next()
            # Resuming a stream: Last-Event-ID reaches the server.
            headers = {**mcp.headers(), "Accept": "text/event-stream", "Last-Event-ID": ping["id"]}
            async with http.get(proxy.url, headers=headers) as response:
                stream = SseStream(response)
                ping2 = await stream.next()
                resumed = await stream.next()
                assert ping2 is not None and resumed is not None
                out["ping2"] = ping2
                out["resumed"] = resumed
                pong = {"jsonrpc": "2.0", "id": json.loads(ping2["data"])["id"], "result": {}}
                await mcp.post(pong)
                out["get2_end"] = await stream.next()
            async with http.delete(proxy.url, headers=mcp.headers()) as response:
                out["delete"] = await reply_of(response)
            out["after_delete"] = await mcp.post(mcp.request_payload("ping"))
        return out

    before = len(upstream.seen)
    out = run(talk())
    sid = out["sid"]
    assert sid in upstream.sessions
    assert upstream.sessions[sid].terminated
    # every request after initialize echoed the session id the server assigned
    seen = upstream.seen[before:]
    assert seen[0].header("Mcp-Session-Id") is None
    assert [s.header("Mcp-Session-Id") for s in seen[1:]] == [sid] * (len(seen) - 1)
    assert out["init"].answer()["result"]["protocolVersion"] == V_2025_11
    assert out["tools"]["tools"][0]["name"] == "echo"
    assert out["call"]["content"][0]["text"].startswith("called echo")
    assert (out["get_status"], out["get_type"]) == (200, "text/event-stream")
    assert json.loads(out["ping"]["data"])["method"] == "ping"
    assert (out["pong"].status, out["pong"].body) == (202, b"")
    assert out["get_end"] is None and out["get2_end"] is None
    assert (
        json.loads(out["resumed"]["data"])["params"]["data"] == f"resumed after {out['ping']['id']}"
    )
    resumed_get = [s for s in seen if s.header("Last-Event-ID") is not None]
    assert [s.header("Last-Event-ID") for s in resumed_get] == [out["ping"]["id"]]
    assert (out["delete"].status, out["delete"].body) == (200, b"")
    assert out["after_delete"].status == 404

    trace = proxy.stop()
    assert trace.sessions() == {sid}
    requests = assert_paired(trace, sid)
    assert [r.method for r in requests] == [
        "initialize",
        "tools/list",
        "tools/call",
        "ping",
        "ping",
        "ping",
    ]
    assert [r.direction for r in requests] == ["c2s", "c2s", "c2s", "s2c", "s2c", "c2s"]
    # The 404 for the terminated session pairs with the request it refused.
    last = requests[-1]
    refusal = next(m for m in trace.messages if m.answers == last.frame)
    assert (refusal.kind, refusal.error_code, refusal.note) == ("error", -32001, "http-error-reply")
    # SSE events are recorded with their ids, on the exchange that carried them.
    sse = [(e.data["exchange"], e.data.get("id")) for e in trace.events("sse-event")]
    gets = [e.data["exchange"] for e in trace.events("http-request") if e.data["method"] == "GET"]
    assert [i for x, i in sse if x in gets] == [
        out["ping"]["id"],
        out["ping2"]["id"],
        out["resumed"]["id"],
    ]
    # initialize, tools/list and tools/call (a progress notification and the result)
    assert len([i for x, i in sse if x not in gets]) == (4 if flavor == "sse" else 0)
    assert len({i for _, i in sse}) == len(sse)
    statuses = [e.data["status"] for e in trace.events("http-response")]
    assert statuses == [200, 202, 200, 200, 200, 202, 200, 202, 200, 404]
    outcomes = {e.data["outcome"] for e in trace.events("http-end")}
    assert outcomes == {"complete"}
    progress = [m for m in trace.messages if m.method == "notifications/progress"]
    assert len(progress) == (1 if flavor == "sse" else 0)
    assert check_findings(trace) == []


# A GET without a session id is also where the legacy endpoint event is looked for.
@pytest.mark.parametrize("method", ["POST", "GET"])
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
def test_sse_is_not_buffered_lockstep(
    start_proxy: ProxyFactory, upstream: Upstream, method: str, gzipped: bool
) -> None:
    """The upstream sends event i only after the client acked event i-1 on a side channel.

    A proxy that holds back any part of an event deadlocks here (and times out).
    """
    rounds = 5
    name = f"lockstep-{method}-{'gzip' if gzipped else 'plain'}"
    proxy = start_proxy(upstream.url("/lockstep"))
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    query = f"name={name}&rounds={rounds}" + ("&gzip=1" if gzipped else "")

    async def talk() -> list[dict[str, str]]:
        received = []
        async with (
            client() as http,
            http.request(
                method,
                f"{proxy.origin}/lockstep?{query}",
                data=json.dumps(ping).encode() if method == "POST" else None,
                headers={"Accept": ACCEPT_POST},
            ) as response,
        ):
            assert response.status == 200
            assert response.headers.get("Content-Encoding") == ("gzip" if gzipped else None)
            stream = SseStream(response, gzipped=gzipped)
            for i in range(rounds):
                event = await asyncio.wait_for(stream.next(), READ_TIMEOUT)
                assert event is not None
                assert event["id"] == f"{name}-{i}"
                received.append(event)
                # Side channel: straight to the upstream, not through the proxy.
                async with http.post(upstream.url(f"/_control/ack?name={name}-{i}")) as ack:
                    assert ack.status == 200
            assert await stream.next() is None
        return received

    received = run(talk())
    assert [json.loads(e["data"])["params"]["data"] for e in received] == [
        f"round {i}" for i in range(rounds)
    ]
    trace = proxy.stop()
    # The trace has the events, decoded when the stream was compressed.
    ids = [e.data.get("id") for e in trace.events("sse-event")]
    assert ids == [f"{name}-{i}" for i in range(rounds)]
    notes = [m for m in trace.messages if m.method == "notifications/message"]
    assert [trace.payload(m)["params"]["data"] for m in notes] == [
        f"round {i}" for i in range(rounds)
    ]
    assert [e.data["outcome"] for e in trace.events("http-end")] == ["complete"]


def test_idle_stream_has_no_total_timeout(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/idle"))

    async def talk() -> list[dict[str, str] | None]:
        async with client() as http, http.get(proxy.origin + "/idle?seconds=4") as response:
            stream = SseStream(response)
            return [await stream.next(), await stream.next(), await stream.next()]

    first, second, end = run(talk())
    assert first is not None and second is not None and end is None
    assert (first["id"], second["id"]) == ("idle-0", "idle-1")
    trace = proxy.stop()
    assert [e.data.get("id") for e in trace.events("sse-event")] == ["idle-0", "idle-1"]
    assert [e.data["outcome"] for e in trace.events("http-end")] == ["complete"]


# --------------------------------------------------------------------------- legacy HTTP+SSE


async def _legacy_conversation(
    http: aiohttp.ClientSession, stream_url: str, proxy: Proxy, upstream: Upstream
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with http.get(stream_url, headers={"Accept": "text/event-stream"}) as response:
        out["status"] = response.status
        stream = SseStream(response)
        first = await stream.next()
        assert first is not None
        while first.get("event") != "endpoint":
            out.setdefault("before_endpoint", []).append(first)
            first = await stream.next()
            assert first is not None
        out["endpoint"] = first["data"]
        post_url = str(URL(proxy.origin).join(URL(first["data"])))
        out["post_url"] = post_url
        sid = URL(post_url).query["sessionId"]
        out["sid"] = sid
        requests = [
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {},
                    "clientInfo": {"name": "legacy-client", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo"}},
        ]
        out["posts"] = []
        out["answers"] = []
        for message in requests:
            async with http.post(
                post_url, json=message, headers={"Content-Type": "application/json"}
            ) as r:
                out["posts"].append(await reply_of(r))
            if "id" in message:
                event = await stream.next()
                assert event is not None
                out["answers"].append(event)
        # Let the upstream end the stream.
        upstream.run(upstream.close_legacy(sid), READ_TIMEOUT)
        out["end"] = await stream.next()
        out["received"] = bytes(stream.received)
    return out


def test_legacy_relative_endpoint_passes_unchanged(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/legacy/sse"))

    async def talk() -> dict[str, Any]:
        async with client() as http:
            return await _legacy_conversation(http, proxy.url, proxy, upstream)

    out = run(talk())
    sid = out["sid"]
    assert out["endpoint"] == f"/legacy/message?sessionId={sid}"
    assert out["received"].startswith(f"event: endpoint\ndata: {out['endpoint']}\n\n".encode())
    assert [(p.status, p.body) for p in out["posts"]] == [(202, b"Accepted")] * 4
    assert [json.loads(a["data"])["id"] for a in out["answers"]] == [0, 1, 2]
    assert out["end"] is None
    trace = proxy.stop()
    session = f"sse-{sid}"
    assert trace.sessions() == {session}
    assert trace.events("endpoint-rewrite") == []
    assert {e.data["transport"] for e in trace.events("http-request")} == {"legacy-sse"}
    requests = assert_paired(trace, session)
    assert [r.method for r in requests] == ["initialize", "tools/list", "tools/call"]
    assert check_findings(trace) == []


@pytest.mark.parametrize("flavor", ["legacyabs", "legacypad"])
def test_legacy_absolute_endpoint_is_rewritten(
    start_proxy: ProxyFactory, upstream: Upstream, flavor: str
) -> None:
    # legacypad sends a comment before the endpoint event: a comment is no event.
    proxy = start_proxy(upstream.url(f"/{flavor}/sse"))

    async def talk() -> dict[str, Any]:
        async with client() as http:
            return await _legacy_conversation(http, proxy.url, proxy, upstream)

    before = len(upstream.seen)
    out = run(talk())
    sid = out["sid"]
    original = upstream.url(f"/{flavor}/message?sessionId={sid}")
    rewritten = f"{proxy.origin}/{flavor}/message?sessionId={sid}"
    # The client is sent to the proxy, so its POSTs are recorded too...
    assert out["endpoint"] == rewritten
    padding = b": " + b"-" * 2048 + b"\n\n" if flavor == "legacypad" else b""
    endpoint_event = f"event: endpoint\ndata: {rewritten}\n\n".encode()
    assert out["received"].startswith(padding + endpoint_event)
    # ...and they reached the upstream through it.
    posts = [s for s in upstream.seen[before:] if s.method == "POST"]
    assert len(posts) == 4
    # (Their Host named the proxy, so the upstream got its own name.)
    assert {s.header("Host") for s in posts} == {f"127.0.0.1:{upstream.port}"}
    assert [json.loads(a["data"])["id"] for a in out["answers"]] == [0, 1, 2]
    trace = proxy.stop()
    relayed = [e for e in trace.events("http-request") if e.data["method"] == "POST"]
    assert [dict(e.data["headers"])["Host"] for e in relayed] == [f"127.0.0.1:{proxy.port}"] * 4
    session = f"sse-{sid}"
    assert trace.sessions() == {session}
    (rewrite,) = trace.events("endpoint-rewrite")
    assert rewrite.session == session
    assert (rewrite.data["from"], rewrite.data["to"]) == (original, rewritten)
    assert assert_paired(trace, session)
    assert check_findings(trace) == []


def test_legacy_stream_without_endpoint_first(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/legacybad/sse"))

    async def talk() -> dict[str, Any]:
        async with client() as http:
            return await _legacy_conversation(http, proxy.url, proxy, upstream)

    out = run(talk())
    assert len(out["before_endpoint"]) == 1
    assert [json.loads(a["data"])["id"] for a in out["answers"]] == [0, 1, 2]
    trace = proxy.stop()
    session = f"sse-{out['sid']}"
    # Until its endpoint event the stream looked like a session-less Streamable
    # HTTP stream; from there on it is the legacy session the endpoint names.
    assert trace.sessions() == {"http", session}
    (finding,) = trace.findings
    assert (finding.rule, finding.session) == ("SSE-ENDPOINT-EVENT", "http")
    (endpoint_event,) = [e for e in trace.events("sse-event") if e.data.get("event") == "endpoint"]
    assert finding.seq == [endpoint_event.seq]
    # The requests POSTed to the endpoint still pair with the answers on the stream.
    requests = assert_paired(trace, session)
    assert [r.method for r in requests] == ["initialize", "tools/list", "tools/call"]
    assert [f["rule"] for f in check_findings(trace)] == ["SSE-ENDPOINT-EVENT"]


# --------------------------------------------------------------------------- sessions


def test_two_concurrent_sessions_are_two_trace_sessions(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/json+sse/mcp"))

    async def one_client(http: aiohttp.ClientSession, tag: str) -> str:
        mcp = McpClient(http, proxy.url)
        await mcp.initialize()
        for _ in range(5):
            await mcp.request("tools/call", {"name": "echo", "arguments": {"who": tag}})
            await mcp.request("ping")
        return mcp.sid or ""

    async def talk() -> list[str]:
        async with client() as first, client() as second:
            return list(await asyncio.gather(one_client(first, "a"), one_client(second, "b")))

    sids = run(talk())
    assert len(set(sids)) == 2
    trace = proxy.stop()
    assert trace.sessions() == set(sids)
    for sid in sids:
        requests = assert_paired(trace, sid)
        assert [r.method for r in requests] == ["initialize"] + ["tools/call", "ping"] * 5
        frames = {f.seq for f in trace.frames if f.session == sid}
        assert {r.frame for r in requests} <= frames
    assert check_findings(trace) == []


def stateless_call(
    request_id: int,
    name: str = "echo",
    *,
    method_header: str = "tools/call",
    name_header: str | None = None,
    version_header: str = V_2026_07,
    arguments: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 ``tools/call`` and its headers, which mirror the body unless told otherwise."""
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments or {},
            "_meta": {
                META_VERSION: V_2026_07,
                META_CLIENT_CAPS: {},
                META_CLIENT_INFO: {"name": "test-client", "version": "1.0"},
            },
        },
    }
    headers = {
        "Accept": ACCEPT_POST,
        "Content-Type": "application/json",
        "MCP-Protocol-Version": version_header,
        "Mcp-Method": method_header,
        "Mcp-Name": name if name_header is None else name_header,
    }
    return message, headers


def test_concurrent_stateless_clients_pair_their_own_requests(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """2026-07-28 has no sessions, and two clients both count their ids from 1."""
    proxy = start_proxy(upstream.url("/stateless+sse/mcp"))
    flag = f"go-{uuid.uuid4().hex}"

    async def talk() -> list[Any]:
        ids = []
        async with client() as first, client() as second:  # two connections
            a, b = McpClient(first, proxy.url, V_2026_07), McpClient(second, proxy.url, V_2026_07)
            message, headers = stateless_call(1, "wait", arguments={"flag": flag})
            data = json.dumps(message).encode()
            async with first.post(proxy.url, data=data, headers=headers) as response:
                stream = SseStream(response)
                assert await stream.next() == {"": "waiting"}  # a comment: a's id 1 is in flight
                # ... while b's id 1 comes and goes.
                reply = await b.post(*stateless_call(1))
                ids.append(json.loads(reply.events()[0]["data"])["id"])
                async with second.get(upstream.url(f"/_control/ack?name={flag}")) as ack:
                    assert ack.status == 200
                answer = await stream.next()
                assert answer is not None
                ids.append(json.loads(answer["data"])["id"])
            for n in (2, 3):
                for mcp in (a, b):
                    reply = await mcp.post(*stateless_call(n))
                    ids.append(json.loads(reply.events()[0]["data"])["id"])
        return ids

    assert run(talk()) == [1, 1, 2, 2, 3, 3]
    trace = proxy.stop()
    assert trace.sessions() == {"stateless"}
    requests = assert_paired(trace, "stateless")
    assert sorted(r.id for r in requests) == [1, 1, 2, 2, 3, 3]
    # (A pool may open another connection for a later request: two at least.)
    assert len({e.data["client"] for e in trace.events("http-request")}) >= 2
    # Every answer went to the request of its own exchange (its own client).
    exchange_of = {f.seq: (f.meta or {}).get("exchange") for f in trace.frames}
    for answer in [m for m in trace.messages if m.answers is not None]:
        assert exchange_of[answer.frame] == exchange_of[answer.answers]
    assert check_findings(trace) == []


def test_stateless_cancel_on_another_connection_reaches_its_request(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """An HTTP/1.1 client cancels on another connection: its request's is busy streaming."""
    proxy = start_proxy(upstream.url("/stateless+sse/mcp"))
    flag = f"go-{uuid.uuid4().hex}"

    async def talk() -> int:
        async with client() as first, client() as second:
            message, headers = stateless_call(1, "wait", arguments={"flag": flag})
            data = json.dumps(message).encode()
            async with first.post(proxy.url, data=data, headers=headers) as response:
                stream = SseStream(response)
                assert await stream.next() == {"": "waiting"}  # id 1 is in flight
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 1, "reason": "changed my mind"},
                }
                cancel_headers = {**headers, "Mcp-Method": "notifications/cancelled"}
                del cancel_headers["Mcp-Name"]
                cancelled = await McpClient(second, proxy.url).post(cancel, cancel_headers)
                assert cancelled.status == 202
                async with second.get(upstream.url(f"/_control/ack?name={flag}")) as ack:
                    assert ack.status == 200
                late = await stream.next()  # this server answers all the same
                assert late is not None
                return int(json.loads(late["data"])["id"])

    assert run(talk()) == 1
    trace = proxy.stop()
    clients = {e.data["client"] for e in trace.events("http-request")}
    assert len(clients) == 2
    (request,) = [m for m in trace.messages if m.kind == "request"]
    (answer,) = [m for m in trace.messages if m.answers == request.frame]
    assert answer.note == "late-after-cancel"
    # 2026-07-28 cancels a request by closing its stream; the notification is
    # still forwarded, and MOD-CANCEL says so at info, nothing more.
    assert [(f["rule"], f["severity"]) for f in check_findings(trace)] == [("MOD-CANCEL", "info")]


def test_stateless_headers_are_checked_against_the_body(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/stateless/mcp"))
    calls = [
        stateless_call(1),
        stateless_call(2, method_header="tools/list"),
        stateless_call(3, name_header="other"),
        stateless_call(4, version_header=V_2025_11),
    ]

    async def talk() -> None:
        async with client() as http:
            mcp = McpClient(http, proxy.url, V_2026_07)
            for message, headers in calls:
                assert (await mcp.post(message, headers)).status == 200

    run(talk())
    trace = proxy.stop()
    checked = check_findings(trace)
    frames = {f.seq: json.loads(f.raw)["id"] for f in trace.frames if f.direction == "c2s"}
    found = sorted(
        (frames[f.seq[0]], f.rule, f.data.get("header", f.data.get("blame")))
        for f in trace.findings
    )
    # The client's mismatches, and this upstream accepting each (it validates nothing).
    assert found == [
        (2, "MOD-HTTP-STD-HEADERS", "server"),
        (2, "MOD-HTTP-STD-HEADERS", "tools/list"),
        (3, "MOD-HTTP-STD-HEADERS", "other"),
        (3, "MOD-HTTP-STD-HEADERS", "server"),
        (4, "MOD-HTTP-PROTO-HEADER", V_2025_11),
        (4, "MOD-HTTP-PROTO-HEADER", "server"),
    ]
    assert len(checked) == 6


def test_request_without_the_assigned_session_id(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))

    async def talk() -> None:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            await mcp.initialize()
            headers = mcp.headers()
            del headers["Mcp-Session-Id"]
            reply = await mcp.post(mcp.request_payload("tools/list"), headers)
            assert reply.status == 400  # this upstream insists on its session id

    run(talk())
    trace = proxy.stop()
    (finding,) = [f for f in trace.findings if f.rule == "HTTP-SESSION-ECHO"]
    (request,) = [e for e in trace.events("http-request") if e.data["exchange"] == 3]
    assert "mcp-session-id" not in {k.lower() for k, _ in request.data["headers"]}
    assert finding.session == request.session == "http"
    assert request.seq in finding.seq
    assert "HTTP-SESSION-ECHO" in [f["rule"] for f in check_findings(trace)]


def test_other_paths_are_recorded_but_not_analyzed(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """OAuth metadata, a token endpoint, a health check: a reverse proxy forwards them too."""
    proxy = start_proxy(upstream.url("/json/mcp"))
    secret = "hunter2-client-secret"
    plain_paths = [
        "/echo/.well-known/oauth-protected-resource",
        "/echo/token",
        "/echo/health?status=500",
    ]

    async def talk() -> list[int]:
        async with client() as http:
            mcp = McpClient(http, proxy.url, V_2025_11)
            await mcp.initialize()
            await mcp.request("tools/list")
        statuses = []
        async with client() as http:  # a second client, discovering auth first
            # SDK clients send MCP-Protocol-Version with discovery requests too.
            discovery = {"MCP-Protocol-Version": V_2025_11, "Accept": "application/json"}
            async with http.get(proxy.origin + plain_paths[0], headers=discovery) as r:
                statuses.append(r.status)
            form = {"grant_type": "client_credentials", "client_secret": secret}
            async with http.post(proxy.origin + plain_paths[1], data=form) as r:
                statuses.append(r.status)
            async with http.get(proxy.origin + plain_paths[2]) as r:
                statuses.append(r.status)
        return statuses

    assert run(talk()) == [200, 200, 500]
    form_body = f"grant_type=client_credentials&client_secret={secret}"
    assert upstream.seen[-2].body_len == len(form_body)
    trace = proxy.stop()
    plain = [e for e in trace.events("http-request") if e.data.get("mcp") is False]
    assert [e.data["path"] for e in plain] == plain_paths
    assert {e.session for e in plain} == {"http"}
    numbers = {e.data["exchange"] for e in plain}
    assert not numbers & {(f.meta or {}).get("exchange") for f in trace.frames}
    assert secret.encode() not in trace.raw  # its body was never recorded
    (error,) = trace.events("http-error-body")
    assert error.data["exchange"] in numbers
    assert error.data["excerpt"] == "upstream exploded: stack trace here\n"
    assert len(trace.events("http-end")) == 6
    # No false HTTP-GET-REPLY, JR-* or HTTP-SESSION-ECHO: the MCP session is clean.
    assert check_findings(trace) == []
    (sid,) = trace.sessions() - {"http"}
    assert [r.method for r in assert_paired(trace, sid)] == ["initialize", "tools/list"]


def test_resumed_stream_may_repeat_event_ids(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    """HTTP-EVENT-ID-UNIQUE spares a stream resumed with Last-Event-ID (it replays)."""
    proxy = start_proxy(upstream.url("/sse+dupid/mcp"))

    async def listen(mcp: McpClient, headers: dict[str, str]) -> list[str]:
        ids = []
        async with mcp.http.get(proxy.url, headers=headers) as response:
            stream = SseStream(response)
            ping = await stream.next()
            assert ping is not None
            ids.append(ping["id"])
            if "Last-Event-ID" in headers:
                resumed = await stream.next()
                assert resumed is not None
                ids.append(resumed["id"])
            pong = {"jsonrpc": "2.0", "id": json.loads(ping["data"])["id"], "result": {}}
            assert (await mcp.post(pong)).status == 202
            assert await stream.next() is None
        return ids

    async def talk() -> list[str]:
        async with client() as http:
            mcp = McpClient(http, proxy.url, V_2025_11)
            await mcp.initialize()  # its answer's event id is "1"
            get = {**mcp.headers(), "Accept": "text/event-stream", "Last-Event-ID": "1"}
            return await listen(mcp, get)

    # The resumed stream's ping carries id "1" again ("dupid" counts per stream).
    assert run(talk()) == ["1", "2"]
    trace = proxy.stop()
    assert check_findings(trace) == []


# --------------------------------------------------------------------------- HTTP rules


@dataclass(frozen=True)
class RuleCase:
    """Traffic that shows ``rule``; ``scenario`` returns the offending exchange's number."""

    rule: str
    flavor: str
    scenario: Callable[[McpClient], Awaitable[int]]
    #: Every finding the trace must have, by rule: ``rule``'s and any others the
    #: traffic really shows; nothing else may appear.
    rules: tuple[str, ...]
    version: str = V_2025_06


async def _notification_answered_200(mcp: McpClient) -> int:
    init = await mcp.post(mcp.request_payload("initialize", _init_params(mcp.version)))
    mcp.sid = init.header("Mcp-Session-Id")
    mcp.initialized = True
    reply = await mcp.notify("notifications/initialized")
    assert (reply.status, reply.body) == (200, b"accepted\n")
    return 2


async def _post_without_accept(mcp: McpClient) -> int:
    payload = mcp.request_payload("initialize", _init_params(mcp.version))
    reply = await mcp.post(payload, {"Accept": "application/json"})
    assert reply.status == 200
    mcp.sid = reply.header("Mcp-Session-Id")
    mcp.initialized = True
    assert (await mcp.notify("notifications/initialized")).status == 202
    return 1


async def _get_answered_json(mcp: McpClient) -> int:
    await mcp.initialize()
    headers = {**mcp.headers(), "Accept": "text/event-stream"}
    async with mcp.http.get(mcp.url, headers=headers) as response:
        reply = await reply_of(response)
    assert (reply.status, reply.json()) == (200, {"status": "no stream here"})
    return 3


async def _request_without_version_header(mcp: McpClient) -> int:
    await mcp.initialize()
    headers = mcp.headers()
    del headers["MCP-Protocol-Version"]
    reply = await mcp.post(mcp.request_payload("tools/list"), headers)
    assert reply.status == 200
    return 3


async def _batch_in_2025_06(mcp: McpClient) -> int:
    await mcp.initialize()
    batch = [mcp.request_payload("ping"), mcp.request_payload("tools/list")]
    reply = await mcp.post(batch)
    assert [a["id"] for a in reply.json()] == [m["id"] for m in batch]
    return 3


async def _duplicate_event_ids(mcp: McpClient) -> int:
    await mcp.initialize()  # its SSE answer is event id "1"
    reply = await mcp.post(mcp.request_payload("tools/list"))
    assert [e["id"] for e in reply.events()] == ["1"]  # again
    return 3


async def _request_after_delete(mcp: McpClient) -> int:
    await mcp.initialize()
    async with mcp.http.delete(mcp.url, headers=mcp.headers()) as response:
        assert response.status == 200
    reply = await mcp.post(mcp.request_payload("ping"))
    assert reply.status == 200  # a terminated session must get 404
    return 4


def _init_params(version: str) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "test-client", "version": "1.0"},
    }


RULE_CASES = [
    # The 200 body "accepted\n" is itself not JSON: JR-PARSE on the server's frame.
    RuleCase("HTTP-202", "lax", _notification_answered_200, ("HTTP-202", "JR-PARSE")),
    RuleCase("HTTP-POST-ACCEPT", "json", _post_without_accept, ("HTTP-POST-ACCEPT",)),
    # The JSON body {"status": ...} is no JSON-RPC message either.
    RuleCase(
        "HTTP-GET-REPLY",
        "getjson",
        _get_answered_json,
        ("HTTP-GET-REPLY", "JR-TOPLEVEL", "JR-VERSION"),
    ),
    RuleCase("HTTP-PROTO-HEADER", "json", _request_without_version_header, ("HTTP-PROTO-HEADER",)),
    # The client's batch, and the server's batch answer; each also breaks the
    # transport's one-message bodies (reported as dependents of the batch finding).
    RuleCase(
        "MSG-BATCH-REMOVED",
        "json",
        _batch_in_2025_06,
        ("MSG-BATCH-REMOVED", "MSG-BATCH-REMOVED", "HTTP-POST-BODY", "HTTP-JSON-BODY"),
    ),
    RuleCase("HTTP-EVENT-ID-UNIQUE", "sse+dupid", _duplicate_event_ids, ("HTTP-EVENT-ID-UNIQUE",)),
    RuleCase("HTTP-SESSION-404", "noterm", _request_after_delete, ("HTTP-SESSION-404",)),
]


@pytest.mark.parametrize("case", RULE_CASES, ids=[c.rule for c in RULE_CASES])
def test_http_rules_from_live_traffic(
    start_proxy: ProxyFactory, upstream: Upstream, case: RuleCase
) -> None:
    proxy = start_proxy(upstream.url(f"/{case.flavor}/mcp"))

    async def talk() -> tuple[int, str | None]:
        async with client() as http:
            mcp = McpClient(http, proxy.url, case.version)
            return await case.scenario(mcp), mcp.sid

    exchange, sid = run(talk())
    trace = proxy.stop()
    assert trace.sessions() == {sid}
    checked = check_findings(trace)
    assert sorted(f["rule"] for f in checked) == sorted(case.rules)
    # The rule's findings point at the offending exchange's records.
    of_exchange = {r.seq for r in trace.exchange(exchange)} | {
        f.seq for f in trace.frames if (f.meta or {}).get("exchange") == exchange
    }
    findings = [f for f in trace.findings if f.rule == case.rule]
    assert findings
    for finding in findings:
        assert finding.session == sid
        assert finding.seq and set(finding.seq) <= of_exchange, finding


# --------------------------------------------------------------------------- faults


def test_unreachable_upstream_gets_502(start_proxy: ProxyFactory) -> None:
    target = f"http://127.0.0.1:{closed_port()}/mcp"
    proxy = start_proxy(target)
    payload = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    async def talk() -> list[Reply]:
        async with client() as http:
            async with http.post(proxy.url, json=payload, headers={"Accept": ACCEPT_POST}) as r:
                posted = await reply_of(r)
            async with http.get(proxy.url, headers={"Accept": "text/event-stream"}) as r:
                got = await reply_of(r)
            return [posted, got]

    for reply in run(talk()):
        assert reply.status == 502
        assert reply.header("X-Mcpsniff") == "upstream-unreachable"
        assert reply.header("Content-Type") == "text/plain; charset=utf-8"
        text = reply.body.decode()
        assert text.startswith(f"mcpsniff: the upstream server {target} is unreachable: ")
        assert text.endswith("\n")
    trace = proxy.stop()
    unreachable = trace.events("upstream-unreachable")
    assert [(e.data["exchange"], e.data["url"]) for e in unreachable] == [(1, target), (2, target)]
    assert all(e.data["error"] for e in unreachable)
    assert [e.data["outcome"] for e in trace.events("http-end")] == ["upstream-unreachable"] * 2
    (request_frame,) = trace.frames
    assert json.loads(request_frame.raw) == payload
    # The ping was never answered (by the server), and came before any initialize.
    assert sorted(f["rule"] for f in check_findings(trace)) == [
        "JR-RESP-REQUIRED",
        "LC-INIT-FIRST",
    ]


def test_upstream_dying_mid_stream_cuts_the_client_stream(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """A stream the server tore down must not reach the client as a clean end."""
    proxy = start_proxy(upstream.url("/abort"))

    async def talk() -> bytes:
        async with client() as http, http.get(proxy.url) as response:
            stream = SseStream(response)
            assert await stream.next() is not None
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.content.read()
            return bytes(stream.received)

    received = run(talk())
    assert received.startswith(b"id: a-1\n")
    trace = proxy.stop()
    (end,) = trace.events("http-end")
    assert end.data["outcome"].startswith("upstream-error")
    assert check_findings(trace) == []


def test_client_disconnect_cancels_the_upstream_request(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    name = "disconnect"
    proxy = start_proxy(upstream.url("/hang"))

    async def talk() -> dict[str, str] | None:
        async with client() as http:
            response = await http.get(f"{proxy.origin}/hang?name={name}")
            first = await SseStream(response).next()
            response.close()  # drop the connection mid-stream
            return first

    first = run(talk())
    assert first is not None and first["id"] == f"{name}-0"
    # The proxy closed its upstream connection: the upstream's handler was cancelled.
    upstream.wait_flag(f"{name}-ended")
    assert upstream.endings[name] == "cancelled"
    trace = proxy.stop()
    (end,) = trace.events("http-end")
    assert end.data["outcome"] == "client-disconnected"
    assert [e.data.get("id") for e in trace.events("sse-event")] == [f"{name}-0"]
    assert check_findings(trace) == []


def test_stopping_with_an_open_stream_ends_it(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """SIGTERM ends a proxy whose client holds a stream open, and records how it ended."""
    name = "shutdown"
    proxy = start_proxy(upstream.url("/hang"))

    async def open_stream() -> None:
        async with client() as http:
            response = await http.get(f"{proxy.origin}/hang?name={name}")
            assert await SseStream(response).next() is not None
            trace = await asyncio.to_thread(proxy.stop)
            assert [e.data["outcome"] for e in trace.events("http-end")] == ["proxy-stopped"]
            # The client sees its stream cut off (not a clean end the server never sent).
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.content.read()

    run(open_stream())
    upstream.wait_flag(f"{name}-ended")
    assert upstream.endings[name] == "cancelled"


# --------------------------------------------------------------------------- redaction

SECRETS = {
    "Authorization": "Bearer auth-secret-1111",
    "Cookie": "session=cookie-secret-2222",
    "X-API-Key": "xapikey-secret-3333",
    "X-Auth-Token": "xauthtoken-secret-8888",
    "Private-Token": "privatetoken-secret-9999",
}
PROXY_AUTHORIZATION = "Basic proxyauth-secret-4444"
ARGUMENTS = {
    "api_key": "arg-apikey-secret-5555",
    "password": "arg-password-secret-6666",
    "query": "visible-7777",
}
SECRET_MARKS = (
    "auth-secret-1111",
    "cookie-secret-2222",
    "xapikey-secret-3333",
    "arg-apikey-secret-5555",
    "arg-password-secret-6666",
    "set-cookie-secret-4242",
    "xauthtoken-secret-8888",
    "privatetoken-secret-9999",
    "query-secret-1212",
)


@pytest.mark.parametrize("redact", [True, False], ids=["default", "no-redact"])
def test_redaction(start_proxy: ProxyFactory, upstream: Upstream, redact: bool) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"), *([] if redact else ["--no-redact"]))

    async def talk() -> tuple[str | None, Reply]:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            await mcp.initialize()
            headers = mcp.headers(**SECRETS, **{"Proxy-Authorization": PROXY_AUTHORIZATION})
            result = await mcp.request(
                "tools/call", {"name": "echo", "arguments": ARGUMENTS}, **headers
            )
            assert result["content"][0]["text"].startswith("called echo")
            # (No secrets sent here: /echo reflects the headers it got in its body.)
            target = URL(proxy.origin + "/echo/x?cookie=1&api_key=query-secret-1212", encoded=True)
            async with http.get(target) as r:
                return mcp.sid, await reply_of(r)

    before = len(upstream.seen)
    sid, cookie_reply = run(talk())
    # Forwarded traffic is never touched.
    assert cookie_reply.header("Set-Cookie") == SET_COOKIE
    call = next(s for s in upstream.seen[before:] if b"tools/call" in s.body)
    for name, value in SECRETS.items():
        assert call.header(name) == value
    assert call.header("Proxy-Authorization") is None  # hop-by-hop: never forwarded
    assert upstream.seen[-1].path_qs == "/echo/x?cookie=1&api_key=query-secret-1212"
    assert json.loads(call.body)["params"]["arguments"] == ARGUMENTS
    trace = proxy.stop()
    raw = trace.raw.decode()
    assert "visible-7777" in raw
    assert "proxyauth-secret-4444" not in raw
    for mark in SECRET_MARKS:
        assert (mark in raw) is (not redact), mark
    assert trace.records and json.loads(raw.split("\n", 1)[0])["meta"]["redacted"] is redact
    if redact:
        (call_frame,) = [f for f in trace.frames if b"tools/call" in f.raw]
        arguments = json.loads(call_frame.raw)["params"]["arguments"]
        assert arguments == {**ARGUMENTS, "api_key": "[REDACTED]", "password": "[REDACTED]"}
        assert call_frame.meta is not None and call_frame.meta["redacted"] == 2
        (cookie_get,) = trace.requests_to("/echo/x")
        # "cookie" is a secret name too, as a header or a JSON member would be.
        assert cookie_get.data["path"] == "/echo/x?cookie=[REDACTED]&api_key=[REDACTED]"
    assert assert_paired(trace, sid or "")
    check_findings(trace)


def test_secret_in_the_upstream_url_is_redacted(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """``--upstream https://host/mcp?api_key=...``: the trace holds neither key nor copies."""
    proxy = start_proxy(upstream.url("/json/mcp?api_key=url-secret-5151"))

    async def talk() -> None:
        async with client() as http:
            await McpClient(http, proxy.url).initialize()

    run(talk())
    assert upstream.seen[-1].path_qs == "/json/mcp?api_key=url-secret-5151"  # forwarded as is
    trace = proxy.stop()
    assert b"url-secret-5151" not in trace.raw
    header = json.loads(trace.raw.split(b"\n", 1)[0])
    assert header["meta"]["upstream"].endswith("/json/mcp?api_key=[REDACTED]")
    paths = {e.data["path"] for e in trace.events("http-request")}
    assert paths == {"/json/mcp?api_key=[REDACTED]"}
    assert check_findings(trace) == []


def test_error_excerpt_is_redacted(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))

    async def talk() -> Reply:
        async with client() as http, http.get(proxy.origin + "/echo/x?status=401") as r:
            return await reply_of(r)

    reply = run(talk())
    assert reply.body == f"token refused: Bearer {REFUSED_TOKEN}\n".encode()  # as sent
    trace = proxy.stop()
    (error,) = trace.events("http-error-body")
    assert error.data["excerpt"] == "token refused: Bearer [REDACTED]\n"
    assert REFUSED_TOKEN.encode() not in trace.raw


# --------------------------------------------------------------------------- big bodies

BIG = 50 * 1024 * 1024


def test_50_mb_post_body_passes_intact(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))
    blob = (hashlib.sha256(b"blob").hexdigest() * (BIG // 64 + 1))[:BIG]

    async def talk() -> tuple[str | None, bytes, Reply]:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            await mcp.initialize()
            payload = mcp.request_payload("tools/call", {"name": "echo", "arguments": {"b": blob}})
            body = json.dumps(payload).encode()
            return mcp.sid, body, await mcp.post(body)

    sid, body, reply = run(talk())
    assert len(body) > BIG
    assert reply.status == 200
    text = reply.json()["result"]["content"][0]["text"]
    assert text == f"called echo; request body sha256 {sha256(body)}"
    seen = upstream.seen[-1]
    assert (seen.body_len, seen.body_sha256) == (len(body), sha256(body))
    trace = proxy.stop()
    (big_frame,) = [f for f in trace.frames if len(f.raw) > BIG]
    assert sha256(big_frame.raw) == sha256(body)
    assert assert_paired(trace, sid or "")[-1].method == "tools/call"


def test_50_mb_sse_event_passes_intact(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/bigsse"))
    expected = big_sse_body(BIG)

    async def talk() -> bytes:
        async with client() as http, http.get(f"{proxy.origin}/bigsse?size={BIG}") as r:
            assert r.status == 200
            return await r.read()

    received = run(talk())
    assert len(received) == len(expected)
    assert sha256(received) == sha256(expected)
    trace = proxy.stop()
    (event,) = trace.events("sse-event")
    assert event.data["id"] == "big-1" and "incomplete" not in event.data
    (frame,) = trace.frames
    assert frame.raw == expected[len("id: big-1\ndata: ") : -2]
    (message,) = trace.messages
    assert message.method == "notifications/message"


# --------------------------------------------------------------------------- bad input


def test_non_json_post_body(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))
    garbage = b"this is not json {"

    async def talk() -> Reply:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            return await mcp.post(garbage)

    reply = run(talk())
    # The upstream's own answer, unchanged.
    assert reply.status == 400
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse"},
    }
    assert reply.header("Server") is not None and reply.header("X-Mcpsniff") is None
    assert upstream.seen[-1].body == garbage
    trace = proxy.stop()
    (client_frame,) = [f for f in trace.frames if f.direction == "c2s"]
    assert client_frame.raw == garbage and client_frame.transport == "http"
    parse_errors = [f for f in trace.findings if f.rule == "JR-PARSE"]
    assert [f.seq for f in parse_errors] == [[client_frame.seq]]
    assert "in its body" in parse_errors[0].message
    assert parse_errors[0].data["sender"] == "client"
    assert not [r for r in trace.rules() if r.startswith("STDIO-")]
    assert [f["rule"] for f in check_findings(trace)] == ["JR-PARSE"]


def test_truncated_sse_event(start_proxy: ProxyFactory, upstream: Upstream) -> None:
    proxy = start_proxy(upstream.url("/truncated"))

    async def talk() -> bytes:
        async with client() as http, http.post(proxy.url, headers={"Accept": ACCEPT_POST}) as r:
            assert r.status == 200
            return await r.read()

    received = run(talk())
    assert received.endswith(b"\n\n" + TRUNCATED_TAIL)
    trace = proxy.stop()
    events = [(e.data.get("id"), e.data.get("incomplete")) for e in trace.events("sse-event")]
    assert events == [("t-1", None), ("t-2", True)]
    last = trace.frames[-1]
    assert last.raw == TRUNCATED_TAIL.split(b"data: ", 1)[1]
    (parse_error,) = [f for f in trace.findings if f.rule == "JR-PARSE"]
    assert parse_error.seq == [last.seq]
    assert parse_error.data["cause"] == "truncated"
    assert [e.data["outcome"] for e in trace.events("http-end")] == ["complete"]
    assert [f["rule"] for f in check_findings(trace)] == ["JR-PARSE"]


def test_invalid_session_id_gets_the_upstreams_404(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))

    async def talk() -> Reply:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            mcp.sid = "no-such-session"
            return await mcp.post(mcp.request_payload("tools/list"))

    reply = run(talk())
    assert reply.status == 404
    assert reply.json()["error"] == {"code": -32001, "message": "Session not found"}
    # The upstream got the client's session id, unchanged.
    assert upstream.seen[-1].header("Mcp-Session-Id") == "no-such-session"
    trace = proxy.stop()
    assert trace.sessions() == {"no-such-session"}
    (request,) = assert_paired(trace, "no-such-session")
    answer = next(m for m in trace.messages if m.answers == request.frame)
    assert (answer.error_code, answer.note) == (-32001, "http-error-reply")
    # Its only finding: in this session, nothing came before the request.
    assert [f["rule"] for f in check_findings(trace)] == ["LC-INIT-FIRST"]


def test_unsupported_method_gets_the_upstreams_error(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    proxy = start_proxy(upstream.url("/json/mcp"))

    async def talk() -> tuple[str | None, Any]:
        async with client() as http:
            mcp = McpClient(http, proxy.url)
            await mcp.initialize()
            return mcp.sid, await mcp.request("no/such-method", {})

    sid, error = run(talk())
    assert error == {"code": -32601, "message": "Method not found: no/such-method"}
    trace = proxy.stop()
    requests = assert_paired(trace, sid or "")
    assert [r.method for r in requests] == ["initialize", "no/such-method"]
    answer = next(m for m in trace.messages if m.answers == requests[-1].frame)
    assert (answer.kind, answer.error_code) == ("error", -32601)
    assert [f["rule"] for f in check_findings(trace)] == ["MSG-METHOD-UNKNOWN"]


# ------------------------------------------------------------ malformed addresses

# ``mcpsniff http`` as a new user types it: malformed addresses are usage errors.
#
# Each case runs the real command with a bounded wait: a relay that starts
# listening on an address it should have refused is killed and counts as a
# failure, never as a hang.


MCPSNIFF = [sys.executable, "-m", "mcpsniff"]


def _http(tmp_path: Path, *args: str) -> tuple[int | None, str, Path]:
    """Run ``mcpsniff http ARGS --trace T``; (exit status or None if still running, stderr, T)."""
    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [*MCPSNIFF, "http", *args, "--trace", str(trace)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=relay_env(),
    )
    try:
        _, err = proc.communicate(timeout=15)
        return proc.returncode, err, trace
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return None, err, trace


def test_listen_with_an_unclosed_bracket_is_a_usage_error(tmp_path: Path) -> None:
    status, err, _ = _http(tmp_path, "--listen", "[::1", "--upstream", "http://127.0.0.1:9/")
    assert status == 2
    assert "an IPv6 address goes inside [ ]" in err, err


def test_listen_with_an_unbracketed_ipv6_address_is_refused(tmp_path: Path) -> None:
    status, err, _ = _http(tmp_path, "--listen", "::1:0", "--upstream", "http://127.0.0.1:9/")
    assert status == 2, err
    assert "inside [ ]" in err, err


def test_upstream_with_a_broken_ipv6_literal_is_one_line_and_no_trace(tmp_path: Path) -> None:
    status, err, trace = _http(tmp_path, "--listen", "127.0.0.1:0", "--upstream", "http://[::1")
    assert status == 2, err
    assert "Traceback" not in err, err
    assert "--upstream" in err, err
    assert not trace.exists(), "a refused start must not leave a trace behind"


def test_listen_port_out_of_range_is_refused(tmp_path: Path) -> None:
    """The fixed case of issue 12 (99999 used to wrap to 34463), kept as a near-miss."""
    status, err, trace = _http(
        tmp_path, "--listen", "127.0.0.1:99999", "--upstream", "http://127.0.0.1:9/"
    )
    assert status == 2
    assert "99999 is no TCP port" in err
    assert not trace.exists()


# ------------------------------------------------------------ the analysis process dies

# ``mcpsniff http`` when its analysis process dies: clients unaffected, the trace honest.


PING = b'{"jsonrpc": "2.0", "id": %d, "method": "ping"}'


async def _post_all(url: str, count: int, first: int) -> list[int]:
    statuses = []
    async with aiohttp.ClientSession() as http:
        for i in range(first, first + count):
            async with http.post(
                url,
                data=PING % i,
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            ) as reply:
                await reply.read()
                statuses.append(reply.status)
    return statuses


def _killed_mid_run(proxy: Proxy) -> tuple[list[int], list[EventRecord]]:
    statuses = run(_post_all(proxy.url, 1, 0))
    deadline = time.monotonic() + 20
    while b'"http-response"' not in proxy.trace_path.read_bytes():
        assert time.monotonic() < deadline, "the first exchange never reached the trace"
        time.sleep(0.02)
    os.kill(analysis_process(proxy), signal.SIGKILL)
    statuses += run(_post_all(proxy.url, 20, 1))
    proxy.proc.send_signal(signal.SIGTERM)
    # 3: the trace is incomplete (mcpsniff http --help); the clients were all served.
    assert proxy.proc.wait(30) == 3, proxy.stderr
    with TraceReader(proxy.trace_path) as reader:
        events = [r for r in reader.records() if isinstance(r, EventRecord)]
    return statuses, events


def test_every_client_is_answered_after_the_analysis_dies(
    start_proxy: ProxyFactory,
    upstream: Upstream,
) -> None:
    proxy = start_proxy(upstream.url("/echo/mcp"))
    statuses, events = _killed_mid_run(proxy)
    assert statuses == [200] * 21
    assert any(e.event == "http-request" for e in events)


def test_a_dead_analysis_process_is_accounted_for_in_the_trace(
    start_proxy: ProxyFactory,
    upstream: Upstream,
) -> None:
    proxy = start_proxy(upstream.url("/echo/mcp"))
    _, events = _killed_mid_run(proxy)
    names = [e.event for e in events]
    assert "capture-gap" in names, names
    assert "session-end" in names or "relay-end" in names, names
    # Exactly the exchanges whose end the trace lacks are named, and the stderr says so.
    # (One gap once the relay saw the death, another for what came after.)
    ended = {e.data["exchange"] for e in events if e.event == "http-end"}
    gaps = [e for e in events if e.event == "capture-gap"]
    named = [n for g in gaps for first, last in g.data["exchanges"] for n in range(first, last + 1)]
    assert sorted(named) == sorted(set(range(1, 22)) - ended)
    assert sum(g.data["lost_exchanges"] for g in gaps) == len(named)
    assert all("SIGKILL" in g.data["reason"] for g in gaps)
    assert f"it lacks {len(named)} exchange(s)" in proxy.stderr
    assert names.count("session-end") == len(set(e.session for e in events))
    # ``check`` reads the completed trace and says what its verdict lacks.
    check = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", str(proxy.trace_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode in (0, 1) and "Traceback" not in check.stderr, check.stderr
    assert f"the trace lacks {len(named)} exchange(s)" in check.stderr


def test_http_a_refused_salvage_is_warned_once(
    start_proxy: ProxyFactory,
    upstream: Upstream,
    tmp_path: Path,
) -> None:
    """The salvage at the death and the one at the end meet the same refusal: said once."""
    proxy = start_proxy(upstream.url("/echo/mcp"))
    run(_post_all(proxy.url, 1, 0))
    wait_until(lambda: b'"http-response"' in proxy.trace_path.read_bytes(), "the first exchange")
    user = tmp_path / "notes.txt"
    user.write_bytes(b"precious\n")
    proxy.trace_path.rename(tmp_path / "moved.jsonl")
    proxy.trace_path.symlink_to(user)
    os.kill(analysis_process(proxy), signal.SIGKILL)
    run(_post_all(proxy.url, 20, 1))
    proxy.proc.send_signal(signal.SIGTERM)
    assert proxy.proc.wait(30) == 3, proxy.stderr
    assert user.read_bytes() == b"precious\n"
    refusals = [line for line in proxy.stderr.splitlines() if "the trace stays incomplete" in line]
    assert len(refusals) == 1, proxy.stderr
    assert "is no longer the trace this run wrote" in refusals[0]


def test_show_prints_concurrent_exchanges_in_time_order(
    start_proxy: ProxyFactory, upstream: Upstream
) -> None:
    """A slow exchange's request is shown before the requests sent while it waited."""
    proxy = start_proxy(upstream.url("/delay"), "--show")

    async def call(http: aiohttp.ClientSession, n: int, delay: float, after: float) -> None:
        await asyncio.sleep(after)
        body = {"jsonrpc": "2.0", "id": n, "method": f"m{n}", "params": {"delay": delay}}
        async with http.post(proxy.url, json=body) as response:
            assert response.status == 200
            await response.read()

    async def talk() -> None:
        # Three connections at once: m1 is answered last, m2 and m3 while it waits.
        async with client() as one, client() as two, client() as three:
            await asyncio.gather(
                call(one, 1, 0.6, 0.0), call(two, 2, 0.0, 0.15), call(three, 3, 0.1, 0.3)
            )

    run(talk())
    proxy.proc.send_signal(signal.SIGTERM)
    assert proxy.proc.wait(PROCESS_TIMEOUT) == 0
    proxy._reader.join(PROCESS_TIMEOUT)
    # The trace has them in the order the analysis finished each exchange: m1 last.
    with TraceReader(proxy.trace_path) as reader:
        records = list(reader.records())
    requests = [r for r in records if isinstance(r, MessageRecord) and r.kind == "request"]
    assert [r.method for r in requests] == ["m2", "m3", "m1"]
    shown = [line for line in proxy.stderr_lines if " request " in line or " result " in line]
    order = [
        line.split("id=")[1].split()[0] + (" req" if " request " in line else " res")
        for line in shown
    ]
    assert order == ["1 req", "2 req", "2 res", "3 req", "3 res", "1 res"], proxy.stderr
    stamps = [line.split()[0] for line in proxy.stderr_lines if line[:2].isdigit()]
    assert stamps == sorted(stamps), stamps
