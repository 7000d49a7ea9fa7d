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
    free_port,
    stop_process,
    wait_for_port,
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


def serve(port: int, calls: Path, tmp: Path, *description: str) -> subprocess.Popen[bytes]:
    """The server on ``port`` (the lock names the URL, so every run reuses one port)."""
    log = tmp / f"server-{len(description)}.log"
    argv = [str(SDK1_PYTHON), str(SERVER), str(port), str(calls), *description]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    wait_for_port(port, proc, log)
    return proc


def session(
    port: int, state: Path, tmp: Path, server: list[str], relay: list[str | Path], *tools: str
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """The client through ``mcpsniff http RELAY`` to the server (``SERVER``: its description):
    what the client got, the trace, and the calls the server ran."""
    calls = tmp / "calls"
    proc = serve(port, calls, tmp, *server)
    try:
        proxy = Proxy(f"http://127.0.0.1:{port}/mcp", tmp / "trace.jsonl", state, *relay)
        out = client(proxy.url, *tools)
        trace = proxy.stop()
    finally:
        stop_process(proc)
    ran = calls.read_text().split() if calls.exists() else []
    return out, trace, ran


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
    out, _, _ = session(port, tmp, tmp, [], [])
    assert out["tools"] == ["add", "delete_all"]
    lock = tmp / "mcpsniff.lock"
    done = mcpsniff("pin", tmp / "trace.jsonl", "-o", lock, state=tmp)
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
    enforce = ["--guard", "enforce", "--pins", lock, "--forbid-tool", "delete_*"]
    out, trace, ran = session(port, state, tmp_path, [], enforce, "add", "delete_all", "add")
    added, refused, again = out["calls"]
    assert added == {"tool": "add", "text": "5.0", "isError": False}
    assert again == added
    assert refused["code"] == REFUSED
    assert refused["error"] == (
        "mcpsniff guard refused 'delete_all': forbidden by --forbid-tool 'delete_*'"
    )
    assert ran == ["add", "add"]  # the server never saw delete_all
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
    no_blame(tmp_path / "trace.jsonl", state)


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
    enforce = ["--guard", "enforce", "--pins", lock]
    out, trace, ran = session(
        port, state, tmp_path, ["Adds two integers."], enforce, "add", "delete_all"
    )
    drifted, passed = out["calls"]
    assert drifted["code"] == REFUSED
    assert drifted["error"].startswith("mcpsniff guard refused 'add': its definition drifted")
    assert "-'numbers.' +'integers.'" in drifted["error"]
    assert passed == {"tool": "delete_all", "text": "deleted", "isError": False}
    assert ran == ["delete_all"]
    assert [e["data"]["tool"] for e in guarded(trace)] == ["add"]
    no_blame(tmp_path / "trace.jsonl", state)


def test_guard_off_stays_a_transparent_recorder(
    pinned: tuple[int, Path, Path], tmp_path: Path
) -> None:
    port, state, _ = pinned
    out, trace, ran = session(
        port, state, tmp_path, ["Adds two integers."], [], "add", "delete_all"
    )
    assert [c.get("text") for c in out["calls"]] == ["5.0", "deleted"]
    assert ran == ["add", "delete_all"]
    assert guarded(trace) == []


def test_enforce_needs_something_to_enforce(tmp_path: Path) -> None:
    done = mcpsniff(
        "http", "--upstream", "http://127.0.0.1:9/mcp", "--guard", "enforce", state=tmp_path
    )
    assert done.returncode == 2
    assert "--guard enforce needs --pins FILE or --forbid-tool GLOB" in done.stderr


SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
SDK2_SERVER = REPO / "tests" / "e2e" / "peers" / "sdk2_http_server.py"
SDK2_CLIENT = REPO / "tests" / "e2e" / "peers" / "guard_http_client_sdk2.py"


@pytest.mark.skipif(not SDK2_PYTHON.exists(), reason="no SDK 2.x venv in .peers/")
def test_a_stateless_2026_client_is_guarded_too(tmp_path: Path) -> None:
    """SDK 2.x negotiates 2026-07-28: no initialize, no Mcp-Session-Id; one gate serves
    every request, and the lock names the server by its URL alone, as the trace does."""
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(SDK2_PYTHON), str(SDK2_SERVER), str(port)],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )

    def through(trace: str, *options: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        proxy = Proxy(f"http://127.0.0.1:{port}/mcp", tmp_path / trace, tmp_path, *options)
        done = subprocess.run(
            [str(SDK2_PYTHON), str(SDK2_CLIENT), proxy.url, "echo", "get-sum"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        trace_records = proxy.stop()
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), trace_records

    try:
        wait_for_port(port, proc, log)
        approved, _ = through("approved.jsonl")
        assert approved["version"] == "2026-07-28"
        lock = tmp_path / "mcpsniff.lock"
        assert (
            mcpsniff("pin", tmp_path / "approved.jsonl", "-o", lock, state=tmp_path).returncode == 0
        )
        enforce = ["--guard", "enforce", "--pins", lock, "--forbid-tool", "get-*"]
        out, trace = through("enforced.jsonl", *enforce)
    finally:
        stop_process(proc)
    echo, summed = out["calls"]
    assert echo == approved["calls"][0] and echo["text"] == "Echo: guarded"  # pinned: passes
    assert summed["code"] == REFUSED
    assert "forbidden by --forbid-tool 'get-*'" in summed["error"]
    assert [e["data"]["tool"] for e in guarded(trace)] == ["get-sum"]
    no_blame(tmp_path / "enforced.jsonl", tmp_path)
