"""A real HTTP MCP session recorded through ``mcpsniff http``: server-everything + SDK client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.sdk_peers import SDK2_PYTHON, SDK_CLIENT, client_result

from .collector import free_port
from .support import ROOT

EVERYTHING_JS = (
    ROOT / ".peers" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything"
)
START_TIMEOUT = 30.0


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            return proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(5)


def _wait_for(
    predicate: Callable[[], bool], what: str, proc: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"{what} exited {proc.returncode}:\n{log.read_text(errors='replace')}")
        time.sleep(0.05)
    pytest.fail(f"{what} did not start:\n{log.read_text(errors='replace')}")


def record_http_session(folder: Path, *relay_args: str) -> tuple[Path, str]:
    """Run the SDK client against server-everything through ``mcpsniff http``.

    Returns the trace and mcpsniff's stderr. Skips when the peers are not installed.
    """
    index = EVERYTHING_JS / "dist" / "index.js"
    if not index.exists() or not SDK2_PYTHON.exists():
        pytest.skip("end-to-end peers not installed; run scripts/setup-peers.sh")
    port = free_port()
    server_log = folder / "server.log"
    with server_log.open("wb") as out:
        server = subprocess.Popen(
            ["node", str(index), "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:

        def listening() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return True
            except OSError:
                return False

        _wait_for(listening, "server-everything", server, server_log)
        trace = folder / "trace.jsonl"
        relay_log = folder / "relay.stderr"
        command = [sys.executable, "-m", "mcpsniff", "http", "--upstream"]
        command += [f"http://127.0.0.1:{port}/mcp", "--listen", "127.0.0.1:0"]
        command += ["--trace", str(trace), *relay_args]
        with relay_log.open("wb") as err:
            relay = subprocess.Popen(
                command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
            )
        try:
            url: list[str] = []

            def announced() -> bool:
                for line in relay_log.read_text(errors="replace").splitlines():
                    if line.startswith("mcpsniff: proxying "):
                        url.append(line.split()[2])
                        return True
                return False

            _wait_for(announced, "mcpsniff http", relay, relay_log)
            client = subprocess.Popen(
                [
                    str(SDK2_PYTHON),
                    str(SDK_CLIENT),
                    "--url",
                    url[0],
                    "--transport",
                    "streamable-http",
                ],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            client_result(client, "through mcpsniff")
        finally:
            code = _stop(relay, signal.SIGINT)
        assert code == 0, relay_log.read_text(errors="replace")
    finally:
        _stop(server)
    return trace, relay_log.read_text(errors="replace")
