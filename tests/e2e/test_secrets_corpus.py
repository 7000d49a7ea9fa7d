"""The secrets corpus through the real relays: no secret reaches the trace or ``show``.

``secrets_corpus.py`` places more than 60 unique secrets in JSON members,
values under innocent names, JSON inside strings, error messages and data,
the server's command line, its stderr, HTTP request and response headers,
query parameters, the upstream URL's userinfo and a plain-text error body.
Each test records real traffic through ``mcpsniff stdio`` or ``mcpsniff http``
(subprocesses, real pipes and sockets), checks that the peers did receive the
secrets (forwarding is untouched), and that none of them is in the trace or in
the output of ``show`` and ``check``, while every look-alike is still there.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import orjson

from tests.e2e import secrets_corpus as corpus

REPO = Path(__file__).resolve().parents[2]
PEERS = str(Path(__file__).resolve().parent / "peers" / "secret_peers.py")
MCPSNIFF = [sys.executable, "-m", "mcpsniff"]
TIMEOUT = 60
LOOPBACK = ("--listen", "127.0.0.1:0")

STDIO_PLACEMENTS = {
    where
    for where in corpus.SECRETS
    if where.split()[0] in ("member", "value", "nested", "text", "error", "argv", "stderr")
}
HTTP_PLACEMENTS = {
    where
    for where in corpus.SECRETS
    if where.split()[0] in ("member", "value", "nested", "text", "header", "response", "query")
    or where in ("upstream userinfo", "http error body api_key=")
}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCPSNIFF, *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO
    )


def _frames_meta(trace: Path) -> list[dict[str, object]]:
    lines = trace.read_bytes().splitlines()[1:]
    return [
        obj.get("meta") or {}
        for obj in (orjson.loads(line) for line in lines)
        if obj["type"] == "frame"
    ]


def _assert_nothing_leaks(trace: Path, placements: set[str]) -> None:
    text = trace.read_text()
    assert corpus.leaked(text) == [], "secrets recorded in the trace"
    for lookalike in corpus.LOOKALIKES:
        assert lookalike in text, f"look-alike redacted: {lookalike!r}"
    show = _run("show", str(trace))
    assert show.returncode == 0, show.stderr
    assert corpus.leaked(show.stdout + show.stderr) == []
    check = _run("check", str(trace), "--fail-on", "info")
    assert corpus.leaked(check.stdout + check.stderr) == []
    assert "Traceback" not in check.stderr


def test_the_corpus_has_at_least_60_placements() -> None:
    assert len(STDIO_PLACEMENTS) >= 60
    assert len(HTTP_PLACEMENTS) >= 60
    assert len(set(corpus.SECRETS.values())) == len(corpus.SECRETS)


def test_no_secret_survives_the_stdio_relay(tmp_path: Path) -> None:
    trace = tmp_path / "stdio.jsonl"
    requests = b"".join(orjson.dumps(corpus.tool_call(i)) + b"\n" for i in (1, 2))
    server = [sys.executable, PEERS, "stdio-server", *corpus.ARGV]
    proc = subprocess.run(
        [*MCPSNIFF, "stdio", "--show", "--trace", str(trace), "--", *server],
        input=requests,
        capture_output=True,
        timeout=TIMEOUT,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    # The client received the secrets as sent: redaction touches the trace only.
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert replies == [corpus.tool_result(1), corpus.tool_error(2)]
    _assert_nothing_leaks(trace, STDIO_PLACEMENTS)
    redacted = [meta.get("redacted") for meta in _frames_meta(trace)]
    # Requests: 23 members each; result: 19 values (3 in one URL) + 5 nested; error: 2.
    assert redacted == [23, 23, 24, 2]
    text = trace.read_text()
    # The places were recorded, with their secrets replaced (not dropped).
    assert '"--api-key","[REDACTED]","--token=[REDACTED]"' in text
    assert "debug: password=[REDACTED]" in text
    assert "env AWS_SECRET_ACCESS_KEY=[REDACTED]" in text


def test_no_secret_survives_the_http_relay(tmp_path: Path) -> None:
    trace = tmp_path / "http.jsonl"
    upstream = subprocess.Popen(
        [sys.executable, PEERS, "http-upstream"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    proxy = None
    try:
        assert upstream.stdout is not None
        port = int(upstream.stdout.readline())
        upstream_url = f"http://svc:{corpus.UPSTREAM_PASSWORD}@127.0.0.1:{port}/mcp"
        proxy = subprocess.Popen(
            [*MCPSNIFF, "http", "--upstream", upstream_url, "--trace", str(trace), *LOOPBACK],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proxy.stderr is not None
        announced = proxy.stderr.readline()
        assert announced.startswith("mcpsniff: proxying "), announced
        base = announced.split()[2]
        url = base + "?" + urllib.parse.urlencode(corpus.QUERY)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        headers.update(corpus.REQUEST_HEADERS)
        body = orjson.dumps(corpus.tool_call(1))
        with urllib.request.urlopen(
            urllib.request.Request(url, body, headers), timeout=TIMEOUT
        ) as response:
            assert json.loads(response.read()) == corpus.tool_result(1)
            assert (
                response.headers["X-Upstream-Secret"]
                == corpus.SECRETS["response header X-Upstream-Secret"]
            )
        fail = orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "fail"})
        try:
            urllib.request.urlopen(urllib.request.Request(url, fail, headers), timeout=TIMEOUT)
        except urllib.error.HTTPError as exc:
            assert exc.code == 401
            assert exc.read().decode() == corpus.ERROR_BODY
        else:
            raise AssertionError("the upstream's 401 did not come through")
    finally:
        if proxy is not None:
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(TIMEOUT)
        upstream.kill()
        upstream.wait(TIMEOUT)
    assert proxy.returncode == 0
    _assert_nothing_leaks(trace, HTTP_PLACEMENTS)
    text = trace.read_text()
    assert '["X-Upstream-Secret","[REDACTED]"]' in text
    assert '["X-Forwarded-Authorization","[REDACTED]"]' in text
    assert "key=[REDACTED]&code=[REDACTED]&sig=[REDACTED]&access_token=[REDACTED]" in text
    assert "401 unauthorized: api_key=[REDACTED]" in text
    header = orjson.loads(trace.read_bytes().splitlines()[0])
    assert header["meta"]["upstream"] == f"http://svc:[REDACTED]@127.0.0.1:{port}/mcp"
