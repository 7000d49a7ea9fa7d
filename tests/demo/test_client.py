"""The demo MCP client as a real process, fed canned server output."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson

from mcpsniff.demo.client import ClientOptions
from mcpsniff.demo.server import ServerOptions
from tests.demo.loopback import loopback_session


def _run_client(args: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mcpsniff.demo.client", *args],
        input=stdin,
        capture_output=True,
        timeout=30,
        check=False,
    )


def test_client_against_canned_answers() -> None:
    # The server's side of a session, prepared in advance: the client cannot
    # tell the difference, and must write exactly its side of that session.
    exchange = loopback_session()
    done = _run_client([], exchange.s2c)
    assert done.returncode == 0, done.stderr
    assert done.stdout == exchange.c2s
    assert done.stderr.decode().endswith(
        "demo client: 11 requests answered, 4 notifications (3 progress, 1 log), "
        "protocol 2025-11-25\n"
    )


def test_client_ids_are_increasing_integers() -> None:
    exchange = loopback_session()
    messages = [orjson.loads(line) for line in exchange.c2s.splitlines()]
    ids = [m["id"] for m in messages if "id" in m]
    assert ids == list(range(1, 12))
    assert messages[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_client_tolerates_banner_and_string_ids() -> None:
    exchange = loopback_session(ServerOptions(banner=True, string_ids=True))
    done = _run_client([], exchange.s2c)
    assert done.returncode == 0, done.stderr
    log = done.stderr.decode()
    assert "skipping a line that is not JSON: 'Loading model...'" in log
    assert "the server echoed id 1 as '1'; matching it anyway" in log


def test_skip_initialized() -> None:
    exchange = loopback_session(client_options=ClientOptions(skip_initialized=True))
    assert b"notifications/initialized" not in exchange.c2s
    done = _run_client(["--skip-initialized"], exchange.s2c)
    assert done.returncode == 0, done.stderr
    assert done.stdout == exchange.c2s


def test_error_response_fails_the_client() -> None:
    answer = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}\n'
    done = _run_client([], answer)
    assert done.returncode == 1
    assert done.stderr.decode().strip() == "demo client: error: initialize failed: -32603 boom"


def test_eof_before_answer_fails_the_client() -> None:
    done = _run_client([], b"")
    assert done.returncode == 1
    assert "the server closed the connection before answering initialize (id 1)" in (
        done.stderr.decode()
    )


def test_unsupported_version_fails_the_client() -> None:
    answer = (
        b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1999-01-01","capabilities":{},'
        b'"serverInfo":{"name":"old","version":"0"}}}\n'
    )
    done = _run_client([], answer)
    assert done.returncode == 1
    assert "server chose protocol version '1999-01-01'" in done.stderr.decode()


def test_timeout_fails_the_client() -> None:
    # stdin stays open (we hold the pipe's write end) but silent: the client
    # must give up on its own.
    read_fd, write_fd = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcpsniff.demo.client", "--timeout", "0.3"],
            stdin=read_fd,
            capture_output=True,
            timeout=30,
            check=False,
        )
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert done.returncode == 1
    assert orjson.loads(done.stdout)["method"] == "initialize"
    assert "timed out after 0.3 s waiting for the response to initialize (id 1)" in (
        done.stderr.decode()
    )
