"""Who may talk to ``mcpsniff ui``: Host, cross-site requests, the run's token; and no freeze.

Each attack runs against a real ``mcpsniff ui`` process over a real socket.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from mcpsniff.ui.guard import Guard, host_name, machine_names
from tests.filter.test_regex import LONG_NAME
from tests.support import method_trace
from tests.ui.support import REPO, TIMEOUT, page_token, ui_get, ui_server


def test_host_names_are_read_with_and_without_ports() -> None:
    assert host_name("LocalHost:6288") == "localhost"
    assert host_name("[::1]:6288") == "[::1]"
    assert host_name("::1") == "::1"
    assert host_name("evil.example") == "evil.example"


def test_a_loopback_listener_accepts_only_loopback_names() -> None:
    guard = Guard("127.0.0.1")
    assert guard.loopback
    assert guard.allowed_host("127.0.0.1:6288") and guard.allowed_host("localhost")
    assert not guard.allowed_host("192.0.2.7:6288")  # another address: not this listener
    assert not guard.allowed_host("evil.example:6288")
    assert not guard.allowed_host(None)


def test_a_wildcard_listener_still_checks_host() -> None:
    guard = Guard("0.0.0.0")
    assert not guard.loopback
    assert guard.allowed_host("192.0.2.7:6288")  # an IP literal cannot be rebound
    assert guard.allowed_host("[2001:db8::1]:6288")
    for name in machine_names():
        assert guard.allowed_host(f"{name}:6288")
    assert not guard.allowed_host("evil.example:6288")
    assert not guard.allowed_host("127.0.0.1.evil.example")


def test_cross_site_requests_are_named() -> None:
    guard = Guard("127.0.0.1")
    host = {"Host": "127.0.0.1:6288"}
    assert guard.cross_site(host) is None  # curl, a script: no browser labels
    assert guard.cross_site({**host, "Sec-Fetch-Site": "same-origin"}) is None
    assert guard.cross_site({**host, "Sec-Fetch-Site": "none"}) is None
    assert guard.cross_site({**host, "Sec-Fetch-Site": "cross-site"})
    assert guard.cross_site({**host, "Sec-Fetch-Site": "same-site"})  # another port
    assert guard.cross_site({**host, "Origin": "http://127.0.0.1:6288"}) is None
    assert guard.cross_site({**host, "Origin": "https://evil.example"})
    assert guard.cross_site({**host, "Origin": "null"})


def test_the_api_refuses_what_a_foreign_page_can_send(tmp_path: Path) -> None:
    method_trace(tmp_path, "ping")
    with ui_server(tmp_path) as url:
        token = page_token(url)
        assert len(token) >= 32
        status, _, body = ui_get(url + "api/sessions")
        assert status == 200 and json.loads(body)["total"] == 1
        sid = json.loads(body)["sessions"][0]["id"]
        attacks = [
            ({}, "nope"),  # no token (a foreign page has no cookie: SameSite=Strict)
            ({"Sec-Fetch-Site": "cross-site"}, None),
            ({"Sec-Fetch-Site": "same-site"}, None),
            ({"Origin": "https://evil.example"}, None),
        ]
        for headers, bad_token in attacks:
            for path in ("api/sessions", f"api/session/{sid}/filter?q=ping", "api/events"):
                status, _, body = ui_get(url + path, headers, token=bad_token)
                assert status == 403, (path, headers)
                assert b"mcpsniff ui:" in body
        # The page itself is served, to a link from anywhere, and sets the cookie.
        status, headers, page = ui_get(url, {"Sec-Fetch-Site": "cross-site"}, token="")
        assert status == 200 and b"<html" in page.lower()
        assert "SameSite=Strict" in headers["Set-Cookie"]
        # The page's own requests pass with the cookie alone.
        port = url.rsplit(":", 1)[1].strip("/")
        status, _, _ = ui_get(
            url + "api/sessions",
            {"Cookie": f"mcpsniff-ui-{port}={token}", "Sec-Fetch-Site": "same-origin"},
            token="",
        )
        assert status == 200


def _start_wildcard(tmp_path: Path) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "ui", str(tmp_path), "--listen", "0.0.0.0:0"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    warning = proc.stderr.readline()
    served = proc.stderr.readline()
    match = re.search(r"serving (http://\S+)", served)
    assert match, served
    return proc, warning, match.group(1)


def test_a_wildcard_listener_needs_the_token_and_checks_host(tmp_path: Path) -> None:
    method_trace(tmp_path, "ping")
    proc, warning, printed = _start_wildcard(tmp_path)
    try:
        assert "?token=" in warning and "not loopback" in warning
        parts = urllib.parse.urlsplit(printed)
        token = urllib.parse.parse_qs(parts.query)["token"][0]
        base = f"http://127.0.0.1:{parts.port}/"
        # DNS rebinding: a foreign name is refused even though the listener is a wildcard.
        assert ui_get(base + "api/sessions", {"Host": "evil.example"}, token=token)[0] == 421
        # Without the token neither the page nor the API answers.
        assert ui_get(base, token="")[0] == 403
        assert ui_get(base + "api/sessions", token="")[0] == 403
        assert ui_get(base + "api/sessions", token="x" * 43)[0] == 403
        # With it, both do; the machine's own address and names pass the Host check.
        status, headers, _ = ui_get(base + f"?token={token}", token="")
        assert status == 200 and token in headers["Set-Cookie"]
        for host in ("127.0.0.1", socket.gethostname()):
            status, _, body = ui_get(
                base + "api/sessions", {"Host": f"{host}:{parts.port}"}, token=token
            )
            assert status == 200, host
            assert json.loads(body)["total"] == 1
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert proc.returncode == 0


def test_a_backtracking_filter_does_not_freeze_the_server(tmp_path: Path) -> None:
    # A 90-character method: Python's re never finished "(.|.)*z" on it, held the
    # interpreter lock, and the server answered nothing more, not even SIGTERM.
    method_trace(tmp_path, LONG_NAME + "b" * 30)
    with ui_server(tmp_path) as url:
        sid = json.loads(ui_get(url + "api/sessions")[2])["sessions"][0]["id"]
        answers: list[int] = []

        def attack() -> None:
            q = urllib.parse.quote('method ~ "(.|.)*z" or method ~ "(a|aa)+$" or "x"')
            answers.append(ui_get(url + f"api/session/{sid}/filter?q={q}")[0])

        attackers = [threading.Thread(target=attack) for _ in range(4)]
        started = time.monotonic()
        for thread in attackers:
            thread.start()
        # The server keeps answering while the filters run.
        assert ui_get(url + "api/sessions")[0] == 200
        for thread in attackers:
            thread.join(TIMEOUT)
        assert answers == [200] * 4
        assert time.monotonic() - started < 15


def test_sigterm_stops_the_server_after_a_hostile_filter(tmp_path: Path) -> None:
    method_trace(tmp_path, LONG_NAME)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "ui", str(tmp_path), "--listen", "127.0.0.1:0"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = re.search(r"serving (http://\S+/)", proc.stderr.readline())
        assert url
        base = url.group(1)
        sid = json.loads(ui_get(base + "api/sessions")[2])["sessions"][0]["id"]
        q = urllib.parse.quote('method ~ "(.|.)*z"')
        assert ui_get(base + f"api/session/{sid}/filter?q={q}")[0] == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
