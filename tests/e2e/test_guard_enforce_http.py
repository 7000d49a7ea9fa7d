"""``mcpsniff http --guard enforce`` in front of a real SDK server, driven by a real SDK client.

The server (``peers/guard_http_server.py``, FastMCP over Streamable HTTP) notes
every call it runs in a file: a call mcpsniff refused must never appear there.
The lock file is pinned from a recording of the same server through a plain
``mcpsniff http``, on the same port (the lock names a server by its URL).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.guard.enforce import REFUSED
from tests.e2e.guard_recording import env, mcpsniff
from tests.e2e.test_http_peers import (
    PEERS,
    REPO,
    RUN_TIMEOUT,
    START_TIMEOUT,
    Server,
    free_port,
    stop_process,
)

SDK1_PYTHON = PEERS / "sdk1" / "bin" / "python"
SERVER = REPO / "tests" / "e2e" / "peers" / "guard_http_server.py"
CLIENT = REPO / "tests" / "e2e" / "peers" / "guard_http_client.py"

pytestmark = pytest.mark.skipif(not SDK1_PYTHON.exists(), reason="no SDK 1.x venv in .peers/")


class Proxy:
    """``mcpsniff http`` with ``options`` in front of ``upstream``, recording to ``trace``."""

    def __init__(self, upstream: str, trace: Path, state: Path, *options: str | Path) -> None:
        self.trace = trace
        self.stderr_path = trace.with_suffix(".stderr")
        command = [sys.executable, "-m", "mcpsniff", "http", "--upstream", upstream]
        command += ["--listen", "127.0.0.1:0", "--trace", str(trace), *map(str, options)]
        with self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(
                command, cwd=REPO, env=env(state), stdin=subprocess.DEVNULL, stderr=err
            )
        deadline = time.monotonic() + START_TIMEOUT
        self.url = ""
        while not self.url:
            text = self.stderr_path.read_text(errors="replace")
            for line in text.splitlines():
                if line.startswith("mcpsniff: proxying "):
                    self.url = line.split()[2]
            if self.proc.poll() is not None or time.monotonic() > deadline:
                stop_process(self.proc, signal.SIGKILL)
                pytest.fail(f"mcpsniff http did not start:\n{text}")
            time.sleep(0.05)

    def stop(self) -> list[dict[str, Any]]:
        assert stop_process(self.proc, signal.SIGINT) == 0, self.stderr_path.read_text()
        return [json.loads(line) for line in self.trace.read_text().splitlines()]


def serve(port: int, calls: Path, tmp: Path, *description: str) -> Server:
    command = [str(SDK1_PYTHON), str(SERVER), "{port}", str(calls), *description]
    server = Server.__new__(Server)
    # Server picks a free port itself; the lock names the URL, so this one reuses ``port``.
    server.port, server.log = port, tmp / f"server-{port}-{len(description)}.log"
    from tests.e2e.test_http_peers import wait_for_port

    argv = [part.format(port=port) for part in command]
    with server.log.open("wb") as out:
        server.proc = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    wait_for_port(port, server.proc, server.log)
    return server


def client(url: str, *tools: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(SDK1_PYTHON), str(CLIENT), url, *tools],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, Path]]:
    """A port, a state folder and the lock file pinned from a session on that port."""
    tmp = tmp_path_factory.mktemp("guard-http")
    port = free_port()
    server = serve(port, tmp / "approved-calls", tmp)
    try:
        proxy = Proxy(server.url("/mcp"), tmp / "approved.jsonl", tmp)
        assert client(proxy.url)["tools"] == ["add", "delete_all"]
        proxy.stop()
    finally:
        server.stop()
    lock = tmp / "mcpsniff.lock"
    done = mcpsniff("pin", tmp / "approved.jsonl", "-o", lock, state=tmp)
    assert done.returncode == 0, done.stderr
    assert f"http:http://127.0.0.1:{port}/mcp [guarded]" in lock.read_text()
    yield port, tmp, lock


def guarded(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in trace if r.get("type") == "event" and r.get("event") == "guard-answered"]


def no_blame(trace: Path, state: Path) -> None:
    """``check`` on the trace: no error or warning finding, exit 0."""
    done = mcpsniff("check", trace, "--format", "json", state=state)
    findings = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [f for f in findings if f["severity"] in ("error", "warning")] == [], findings
    assert done.returncode == 0, done.stderr


def test_a_forbidden_tool_is_answered_by_mcpsniff_and_a_pinned_one_passes(
    pinned: tuple[int, Path, Path], tmp_path: Path
) -> None:
    port, state, lock = pinned
    calls = tmp_path / "calls"
    server = serve(port, calls, tmp_path)
    try:
        proxy = Proxy(
            server.url("/mcp"),
            tmp_path / "enforced.jsonl",
            state,
            "--guard",
            "enforce",
            "--pins",
            lock,
            "--forbid-tool",
            "delete_*",
        )
        out = client(proxy.url, "add", "delete_all", "add")
        trace = proxy.stop()
    finally:
        server.stop()
    added, refused, again = out["calls"]
    assert added == {"tool": "add", "text": "5.0", "isError": False}
    assert again == added
    assert refused["code"] == REFUSED
    assert refused["error"] == (
        "mcpsniff guard refused 'delete_all': forbidden by --forbid-tool 'delete_*'"
    )
    assert calls.read_text().split() == ["add", "add"]  # the server never saw delete_all
    (event,) = guarded(trace)
    assert event["data"]["tool"] == "delete_all" and event["data"]["id"] == refused_id(trace)
    answer = [
        r
        for r in trace
        if r.get("type") == "event"
        and r.get("event") == "http-response"
        and r["data"]["exchange"] == event["data"]["exchange"]
    ]
    (response,) = answer
    assert ["X-Mcpsniff", "guard-refused"] in response["data"]["headers"]
    no_blame(tmp_path / "enforced.jsonl", state)


def refused_id(trace: list[dict[str, Any]]) -> Any:
    """The id of the recorded tools/call to delete_all (recorded as the client sent it)."""
    for record in trace:
        if record.get("type") == "message" and record.get("target") == "delete_all":
            assert record["dir"] == "c2s" and record["method"] == "tools/call"
            return record["id"]
    raise AssertionError("no recorded call to delete_all")


def test_a_drifted_tool_is_answered_by_mcpsniff_with_the_diff(
    pinned: tuple[int, Path, Path], tmp_path: Path
) -> None:
    port, state, lock = pinned
    calls = tmp_path / "calls"
    server = serve(port, calls, tmp_path, "Adds two integers.")
    try:
        proxy = Proxy(
            server.url("/mcp"),
            tmp_path / "drift.jsonl",
            state,
            "--guard",
            "enforce",
            "--pins",
            lock,
        )
        out = client(proxy.url, "add", "delete_all")
        trace = proxy.stop()
    finally:
        server.stop()
    drifted, passed = out["calls"]
    assert drifted["code"] == REFUSED
    assert drifted["error"].startswith("mcpsniff guard refused 'add': its definition drifted")
    assert "-'numbers.' +'integers.'" in drifted["error"]
    assert passed == {"tool": "delete_all", "text": "deleted", "isError": False}
    assert calls.read_text().split() == ["delete_all"]
    assert [e["data"]["tool"] for e in guarded(trace)] == ["add"]
    no_blame(tmp_path / "drift.jsonl", state)


def test_guard_off_stays_a_transparent_recorder(
    pinned: tuple[int, Path, Path], tmp_path: Path
) -> None:
    port, state, _ = pinned
    calls = tmp_path / "calls"
    server = serve(port, calls, tmp_path, "Adds two integers.")
    try:
        proxy = Proxy(server.url("/mcp"), tmp_path / "plain.jsonl", state)
        out = client(proxy.url, "add", "delete_all")
        trace = proxy.stop()
    finally:
        server.stop()
    assert [c.get("text") for c in out["calls"]] == ["5.0", "deleted"]
    assert calls.read_text().split() == ["add", "delete_all"]
    assert guarded(trace) == []


def test_enforce_needs_something_to_enforce(tmp_path: Path) -> None:
    done = mcpsniff(
        "http", "--upstream", "http://127.0.0.1:9/mcp", "--guard", "enforce", state=tmp_path
    )
    assert done.returncode == 2
    assert "--guard enforce needs --pins FILE or --forbid-tool GLOB" in done.stderr
