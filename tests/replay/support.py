"""Shared helpers for the replay tests: the real peers, recording sessions, running commands."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / ".peers"
SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
EVERYTHING_JS = (
    PEERS / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
) / "index.js"
E2E_PEERS = REPO / "tests" / "e2e" / "peers"
SDK_CLIENT = E2E_PEERS / "sdk_client.py"
SDK2_SERVER = E2E_PEERS / "sdk2_server.py"
CHANGED_SERVER = Path(__file__).resolve().parent / "peers" / "changed_server.py"
MCPSNIFF = [sys.executable, "-m", "mcpsniff"]
#: Any one command of these tests; a hang fails the test instead of the suite.
TIMEOUT = 60

EVERYTHING = ["node", str(EVERYTHING_JS), "stdio"]
SDK2 = [str(SDK2_PYTHON), str(SDK2_SERVER)]


def need(*paths: Path) -> None:
    """Skip, saying why, when the real peers have not been set up."""
    missing = [p for p in paths if not p.exists()]
    if missing:
        pytest.skip(
            f"real MCP peers missing ({missing[0]}); run scripts/setup-peers.sh to build .peers/"
        )


@dataclass
class Run:
    """A finished command: exit status and output."""

    code: int
    out: str
    err: str


def run(argv: list[str], timeout: float = TIMEOUT) -> Run:
    """Run a command to the end, in the repository, with a timeout."""
    proc = subprocess.run(
        argv,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def sdk_client(server: list[str] | None = None, url: str | None = None) -> dict[str, Any]:
    """Run the SDK 2.x scripted client against a stdio command or a URL; its JSON results."""
    argv = [str(SDK2_PYTHON), str(SDK_CLIENT)]
    argv += ["--url", url] if url else ["--", *(server or [])]
    result = run(argv)
    assert result.code == 0, f"SDK client failed ({result.code}):\n{result.out}\n{result.err}"
    return json.loads(result.out)


@dataclass
class Recording:
    """A real session recorded through ``mcpsniff stdio``, and what its client saw."""

    trace: Path
    results: dict[str, Any]


def record_stdio(trace: Path, server: list[str]) -> Recording:
    """Record the SDK client's scripted session with ``server`` through the stdio relay."""
    results = sdk_client([*MCPSNIFF, "stdio", "--trace", str(trace), "--", *server])
    assert trace.exists()
    return Recording(trace, results)


def free_port() -> int:
    """A TCP port nobody listens on right now, on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """Wait until something accepts connections on ``port``; fail if ``proc`` dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args!r} exited {proc.returncode} before listening")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listened on port {port} within {timeout} s")


@contextlib.contextmanager
def background(argv: list[str], port: int, env: dict[str, str] | None = None) -> Iterator[None]:
    """Run a listening process for the duration of a block, then stop it."""
    proc = subprocess.Popen(
        argv,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_for_port(port, proc)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def everything_http(port: int) -> contextlib.AbstractContextManager[None]:
    """server-everything over Streamable HTTP on ``port`` (endpoint /mcp)."""
    return background(["node", str(EVERYTHING_JS), "streamableHttp"], port, {"PORT": str(port)})


def recorded_answers(trace: Path) -> int:
    """How many client requests the recording shows answered, from its own message records.

    Counted from what the recorder wrote (``answers`` on server-to-client
    responses), not from replay's pairing, so a drive's count is checked
    against an independent number.
    """
    from mcpsniff.core.model import MessageRecord
    from mcpsniff.trace.reader import TraceReader

    with TraceReader(trace) as reader:
        return sum(
            1
            for r in reader.records()
            if isinstance(r, MessageRecord)
            and r.direction == "s2c"
            and r.kind in ("response", "error")
            and r.answers is not None
            and r.note != "duplicate-response"
        )


def all_match(count: int) -> str:
    """The verdict of a drive that compared ``count`` responses and found them all the same."""
    return f"all {count} recorded response(s) compared; all match the recording"


SDK2_HTTP_SERVER = E2E_PEERS / "sdk2_http_server.py"
REPLAY_PEERS = Path(__file__).resolve().parent / "peers"
CHANGED_HTTP_SERVER = REPLAY_PEERS / "changed_http_server.py"
VARIANT_CLIENT = REPLAY_PEERS / "variant_client.py"
EXITS_AFTER_FIRST = REPLAY_PEERS / "exits_after_first.py"
INSPECTOR_JS = (
    PEERS / "node" / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / "build"
) / "cli.js"


def sdk2_http(
    port: int, script: Path = SDK2_HTTP_SERVER
) -> contextlib.AbstractContextManager[None]:
    """The SDK 2.x server (or a variant of it) over Streamable HTTP on ``port``."""
    return background([str(SDK2_PYTHON), str(script), str(port)], port)


@dataclass
class MultiRecording:
    """Several SDK clients recorded at once through ``mcpsniff http``, and what each saw."""

    trace: Path
    results: list[dict[str, Any]]


def record_http_clients(
    trace: Path, clients: int, server: Callable[[int], contextlib.AbstractContextManager[None]]
) -> MultiRecording:
    """Record ``clients`` concurrent SDK 2.x clients through ``mcpsniff http`` to ``server``."""
    upstream, relay = free_port(), free_port()
    relay_argv = [
        *MCPSNIFF,
        "http",
        "--upstream",
        f"http://127.0.0.1:{upstream}/mcp",
        "--listen",
        f"127.0.0.1:{relay}",
        "--trace",
        str(trace),
    ]
    url = f"http://127.0.0.1:{relay}/mcp"
    with server(upstream), background(relay_argv, relay), ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda _: sdk_client(url=url), range(clients)))
    return MultiRecording(trace, results)


def answered_per_client(results: dict[str, Any]) -> int:
    """How many requests the scripted SDK client had answered, from what it printed.

    One ``server/discover`` probe (answered with an error by a handshake-era
    server), ``initialize`` and ``logging/setLevel`` in the handshake era, then
    the listings, calls, reads and gets it reports.
    """
    handshake = results["negotiation"] == "initialize"
    return (
        1
        + (1 if handshake else 0)
        + (1 if "set_logging_level" in results else 0)
        + 1
        + len(results["tool_calls"])
        + 2
        + len(results["resource_reads"])
        + 1
        + len(results["prompt_gets"])
    )
