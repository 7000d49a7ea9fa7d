"""Processes and trace helpers for the mitmproxy addon tests.

Everything runs for real: ``mitmdump`` (from the venv running the tests) with
``addons/mcpsniff.py``, ``mcpsniff http``, the npm server-everything and the
official SDK client from ``.peers/`` (built by ``scripts/setup-peers.sh``), all
on 127.0.0.1. Each process is stopped by its own pid; every wait has a deadline,
so a hang fails the test instead of stalling the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mcpsniff.core.model import EventRecord, FindingRecord, FrameRecord, MessageRecord, Record
from mcpsniff.terminal.render import finding_json
from mcpsniff.trace.reader import TraceReader

REPO = Path(__file__).resolve().parents[2]
ADDON = REPO / "addons" / "mcpsniff.py"
PEERS = REPO / ".peers"
SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
EVERYTHING_JS = (
    PEERS / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
) / "index.js"
SDK_CLIENT = REPO / "tests" / "e2e" / "peers" / "sdk_client.py"
E2E_PEERS = REPO / "tests" / "e2e" / "peers"
HERE_PEERS = Path(__file__).resolve().parent / "peers"
#: A script that sets options once mitmdump runs (``MCPSNIFF_TEST_LATE_OPTIONS``).
LATE_OPTIONS = HERE_PEERS / "late_options.py"

START_TIMEOUT = 30.0
RUN_TIMEOUT = 60.0


def mitmdump_path() -> Path:
    """The ``mitmdump`` of the Python running the tests (mitmproxy is a test dependency)."""
    candidate = Path(sys.executable).with_name("mitmdump")
    if candidate.exists():
        return candidate
    found = shutil.which("mitmdump")
    if found is None:
        pytest.fail("mitmdump is not installed: pip install -e '.[test]' (mitmproxy>=11,<12)")
    return Path(found)


def missing_peers(*paths: Path, node: bool = False) -> str | None:
    """Why the real peers cannot run, or None."""
    for path in paths:
        if not path.exists():
            return f"{path.relative_to(REPO)} is missing; run scripts/setup-peers.sh"
    if node and shutil.which("node") is None:
        return "node is not on PATH"
    return None


def require_peers(*paths: Path, node: bool = False) -> None:
    reason = missing_peers(*paths, node=node)
    if reason is not None:
        pytest.skip(f"end-to-end peers not installed ({reason})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    """Signal ``proc`` by its pid, wait, kill it if it does not stop; its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            return proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(10)


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"nothing listens on 127.0.0.1:{port}:\n{log.read_text(errors='replace')}")


class Background:
    """A process whose output goes to a log file."""

    def __init__(
        self, argv: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path = REPO
    ) -> None:
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    @property
    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = START_TIMEOUT) -> re.Match[str]:
        """The first match of ``pattern`` in the output; fails if the process ends first."""
        regex = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = regex.search(self.output)
            if match:
                return match
            if self.proc.poll() is not None:
                match = regex.search(self.output)
                if match:
                    return match
                pytest.fail(f"exited {self.proc.returncode} before {pattern!r}:\n{self.output}")
            time.sleep(0.05)
        pytest.fail(f"no {pattern!r} within {timeout} s:\n{self.output}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        return stop_process(self.proc, sig)


class Everything(Background):
    """The npm server-everything (``streamableHttp`` or ``sse``) on a free port."""

    def __init__(self, mode: str, log: Path) -> None:
        self.port = free_port()
        super().__init__(["node", str(EVERYTHING_JS), mode], log, env={"PORT": str(self.port)})
        wait_for_port(self.port, self.proc, log)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


class Mitmdump(Background):
    """``mitmdump`` on 127.0.0.1 (a port the kernel picks), in its own confdir.

    ``addon=True`` loads ``addons/mcpsniff.py`` with ``mcpsniff_trace=trace``.
    """

    def __init__(
        self,
        folder: Path,
        *,
        mode: str = "regular",
        addon: bool = True,
        trace: Path | None = None,
        options: dict[str, str] | None = None,
        extra: list[str] | None = None,
        name: str = "mitmdump",
        python: list[str] | None = None,
        env: dict[str, str] | None = None,
        cwd: Path = REPO,
    ) -> None:
        self.confdir = folder / f"{name}-conf"
        self.trace = trace
        argv = [*(python or [str(mitmdump_path())]), "--mode", mode]
        argv += ["--listen-host", "127.0.0.1", "-p", "0", "--set", f"confdir={self.confdir}"]
        if addon:
            argv += ["-s", str(ADDON)]
        if trace is not None:
            argv += ["--set", f"mcpsniff_trace={trace}"]
        for key, value in (options or {}).items():
            argv += ["--set", f"{key}={value}"]
        argv += extra or []
        super().__init__(argv, folder / f"{name}.log", env=env, cwd=cwd)
        self.port = 0

    def started(self) -> Mitmdump:
        """Wait until it listens; its port."""
        match = self.wait_for(r"listening at 127\.0\.0\.1:(\d+)")
        self.port = int(match.group(1))
        return self

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """A URL on the reverse proxy."""
        return f"http://127.0.0.1:{self.port}{path}"

    @property
    def ca_cert(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    def finish(self) -> Trace:
        """Ctrl-C, which closes the trace; the whole trace, which must not be torn."""
        code = self.stop(signal.SIGINT)
        assert code == 0, self.output
        assert "Traceback" not in self.output, self.output
        assert self.trace is not None
        return read_trace(self.trace)


class Relay(Background):
    """``mcpsniff http --upstream URL --listen 127.0.0.1:0 --trace PATH``."""

    def __init__(self, upstream: str, trace: Path) -> None:
        self.trace = trace
        argv = [sys.executable, "-m", "mcpsniff", "http", "--upstream", upstream]
        argv += ["--listen", "127.0.0.1:0", "--trace", str(trace)]
        super().__init__(argv, trace.with_suffix(".log"))
        self.url = self.wait_for(r"^mcpsniff: proxying (\S+)").group(1)

    def finish(self) -> Trace:
        code = self.stop(signal.SIGINT)
        assert code == 0, self.output
        return read_trace(self.trace)


# --------------------------------------------------------------------------- clients


def sdk_client(url: str, transport: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """The official SDK 2.x client (``tests/e2e/peers/sdk_client.py``) running its plan."""
    return subprocess.Popen(
        [str(SDK2_PYTHON), str(SDK_CLIENT), "--url", url, "--transport", transport],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


#: How long the legacy client waits for each event before calling it a hang.
SSE_PATIENCE = 3.0


async def legacy_session(base: str, stream_path: str = "/sse") -> list[dict[str, Any]]:
    """A hand-made legacy HTTP+SSE client: the endpoint event, then initialize and ping.

    Raises TimeoutError when the stream's first event does not come in SSE_PATIENCE s.
    """
    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with aiohttp.ClientSession(timeout=timeout) as http:

        async def stream() -> aiohttp.ClientResponse:
            return await http.get(base + stream_path, headers={"Accept": "text/event-stream"})

        response = await asyncio.wait_for(stream(), SSE_PATIENCE)
        try:
            events = _events(response)
            endpoint = await asyncio.wait_for(anext(events), SSE_PATIENCE)
            assert endpoint["event"] == "endpoint"
            target = base + endpoint["data"]
            answers = []
            for number, (method, params) in enumerate(
                [
                    (
                        "initialize",
                        {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {},
                            "clientInfo": {"name": "legacy-test", "version": "0"},
                        },
                    ),
                    ("ping", {}),
                ],
                start=1,
            ):
                message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
                async with http.post(target, json=message) as posted:
                    assert posted.status == 202
                answer = await asyncio.wait_for(anext(events), SSE_PATIENCE)
                while answer["data"].get("id") != number:  # a notification on the way
                    answer = await asyncio.wait_for(anext(events), SSE_PATIENCE)
                answers.append(answer)
                if method == "initialize":
                    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                    async with http.post(target, json=note) as posted:
                        assert posted.status == 202
            return answers
        finally:
            response.close()


async def _events(response: aiohttp.ClientResponse) -> Any:
    """SSE events (``event`` and joined ``data``) as they arrive."""
    block: dict[str, Any] = {"event": "message", "data": []}
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if block["data"]:
                data = "\n".join(block["data"])
                yield {
                    "event": block["event"],
                    "data": data if block["event"] == "endpoint" else json.loads(data),
                }
            block = {"event": "message", "data": []}
        elif line.startswith("event:"):
            block["event"] = line[6:].strip()
        elif line.startswith("data:"):
            block["data"].append(line[5:].lstrip())


def proxy_env(proxy: str, ca: Path | None = None) -> dict[str, str]:
    """Environment that sends an httpx client's requests, loopback included, through ``proxy``."""
    env = {"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy}
    # httpx honours NO_PROXY; an inherited one could exempt 127.0.0.1 from the proxy.
    env |= {"NO_PROXY": "", "no_proxy": "", "ALL_PROXY": "", "all_proxy": ""}
    if ca is not None:
        env["SSL_CERT_FILE"] = str(ca)
    return env


# --------------------------------------------------------------------------- traces


@dataclass
class Trace:
    path: Path
    records: list[Record]

    @property
    def messages(self) -> list[MessageRecord]:
        return [r for r in self.records if isinstance(r, MessageRecord)]

    @property
    def frames(self) -> list[FrameRecord]:
        return [r for r in self.records if isinstance(r, FrameRecord)]

    @property
    def findings(self) -> list[FindingRecord]:
        return [r for r in self.records if isinstance(r, FindingRecord)]

    def events(self, name: str | None = None) -> list[EventRecord]:
        return [
            r
            for r in self.records
            if isinstance(r, EventRecord) and (name is None or r.event == name)
        ]

    def with_method(self, method: str) -> list[MessageRecord]:
        return [m for m in self.messages if m.method == method]

    def rules(self) -> list[str]:
        return sorted(f.rule for f in self.findings)

    def frame(self, seq: int) -> FrameRecord:
        return next(f for f in self.frames if f.seq == seq)

    def exchange_of(self, message: MessageRecord) -> int:
        return int((self.frame(message.frame).meta or {})["exchange"])

    def http_method(self, exchange: int) -> str:
        event = next(e for e in self.events("http-request") if e.data["exchange"] == exchange)
        return str(event.data["method"])

    def summary(self) -> list[tuple[str, str, str | None, Any, bool]]:
        """(direction, kind, method, id, paired?) of every message, in trace order."""
        return [(m.direction, m.kind, m.method, m.id, m.answers is not None) for m in self.messages]

    def summary_without_get_streams(self) -> list[tuple[str, str, str | None, Any, bool]]:
        """:meth:`summary` less the messages of GET streams.

        A standalone GET stream runs beside the POSTs, so where its messages fall
        between theirs is a race between two connections, not a property of the shell.
        """
        return [
            (m.direction, m.kind, m.method, m.id, m.answers is not None)
            for m in self.messages
            if self.http_method(self.exchange_of(m)) != "GET"
        ]

    def event_counts(self) -> Counter[str]:
        return Counter(e.event for e in self.events())


def read_trace(path: Path) -> Trace:
    with TraceReader(path) as reader:
        records = list(reader.records())
        assert reader.torn is None
    errors = [r for r in records if isinstance(r, EventRecord) and r.event == "analyzer-error"]
    assert errors == [], errors
    return Trace(path, records)


def check_json(trace: Path) -> tuple[int, list[dict[str, Any]]]:
    """``mcpsniff check --format json TRACE``: its exit status and its findings."""
    proc = subprocess.run(
        [sys.executable, "-m", "mcpsniff", "check", "--format", "json", str(trace)],
        cwd=REPO,
        capture_output=True,
        timeout=RUN_TIMEOUT,
    )
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def assert_check_agrees(trace: Trace) -> list[dict[str, Any]]:
    """``mcpsniff check`` on the trace finds exactly what was found live; those findings."""
    code, checked = check_json(trace.path)
    assert checked == [finding_json(f) for f in trace.findings]
    assert code == (1 if any(f.severity == "error" for f in trace.findings) else 0)
    return checked


# --------------------------------------------------------------------------- MCP over HTTP

ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "addon-test", "version": "0"},
    },
}
CLIENT_TIMEOUT = aiohttp.ClientTimeout(total=15)


async def post(
    url: str, body: bytes | dict[str, Any], session: str | None = None, proxy: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` (JSON unless bytes) on ``session``; the status, headers and whole body."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    if session is not None:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-11-25"
    async with (
        aiohttp.ClientSession(timeout=CLIENT_TIMEOUT) as http,
        http.post(url, data=data, headers=headers, proxy=proxy) as response,
    ):
        return response.status, dict(response.headers), await response.read()
