"""Start ``replay serve`` from a test suite: a Python API and a pytest fixture.

    from mcpsniff.replay.fixture import replay_server

    def test_my_client(replay_server):
        command = replay_server("tests/data/session.jsonl")            # stdio: a command
        url = replay_server("tests/data/session.jsonl", transport="http")  # HTTP: a URL

Enable the fixture with ``pytest_plugins = ["mcpsniff.replay.fixture"]`` in a
``conftest.py``. Outside pytest, ``ReplayServers`` does the same and stops
every server it started on ``close()``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

#: How long an HTTP replay may take to start listening.
START_TIMEOUT = 20.0
_URL = re.compile(r" at (http://\S+)")


def serve_command(
    trace: str | os.PathLike[str], *, session: str | None = None, match: str = "auto"
) -> list[str]:
    """The command that serves ``trace`` over stdio: give it to a client as its server."""
    argv = [sys.executable, "-m", "mcpsniff", "replay", "serve", "--match", match]
    if session is not None:
        argv += ["--session", session]
    return [*argv, str(trace)]


class ReplayServers:
    """Starts HTTP replays (stdio replays are started by the client) and stops them."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen[bytes]] = []

    def __call__(
        self,
        trace: str | os.PathLike[str],
        transport: str = "stdio",
        *,
        session: str | None = None,
        match: str = "auto",
    ) -> list[str] | str:
        """The command to spawn (stdio) or the URL to connect to (http)."""
        command = serve_command(trace, session=session, match=match)
        if transport == "stdio":
            return command
        if transport != "http":
            raise ValueError(f"transport must be 'stdio' or 'http', not {transport!r}")
        argv = [*command[:-1], "--http", "127.0.0.1:0", command[-1]]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._procs.append(proc)
        return self._url(proc)

    def _url(self, proc: subprocess.Popen[bytes]) -> str:
        assert proc.stderr is not None
        deadline = time.monotonic() + START_TIMEOUT
        seen: list[str] = []
        while time.monotonic() < deadline:
            line = proc.stderr.readline().decode("utf-8", "replace")
            if not line:
                break
            seen.append(line)
            match = _URL.search(line)
            if match:
                return match.group(1)
        proc.kill()
        raise RuntimeError("replay serve did not start: " + "".join(seen).strip())

    def close(self) -> None:
        """Stop every HTTP replay started here."""
        for proc in self._procs:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
        self._procs.clear()


@pytest.fixture
def replay_server() -> Iterator[ReplayServers]:
    """``replay_server(trace, transport="stdio"|"http")``: a command or a URL to test against."""
    servers = ReplayServers()
    try:
        yield servers
    finally:
        servers.close()


__all__ = ["ReplayServers", "replay_server", "serve_command"]
