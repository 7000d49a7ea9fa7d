"""The mitmproxy addon with real MCP peers: the official SDK client and server-everything.

``mitmdump -s addons/mcpsniff.py`` runs as a real process in each mode users run
it in: a reverse proxy in front of server-everything (Streamable HTTP and the
legacy HTTP+SSE transport), where its trace must equal what ``mcpsniff http``
records for the same client plan; a regular HTTP proxy the client is configured
to use; and a regular proxy intercepting HTTPS with its own CA, in front of an
SDK server with a certificate the test made. A legacy SSE stream must flow
through mitmdump with the addon, and hang without it (mitmproxy buffers whole
bodies unless something streams them).

The peers (``.peers/``) are built by ``scripts/setup-peers.sh``; without them
these tests skip.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mitmproxy import io as mitmio

from tests.e2e.sdk_peers import client_result
from tests.mitm.support import (
    EVERYTHING_JS,
    HERE_PEERS,
    SDK2_PYTHON,
    Background,
    Everything,
    Mitmdump,
    Relay,
    Trace,
    assert_check_agrees,
    free_port,
    legacy_session,
    proxy_env,
    require_peers,
    sdk_client,
    wait_for_port,
)
from tests.mitm.upstreams import PAGE, Upstream, make_certificates

STREAMABLE = "streamable-http"
SSE = "sse"
PLAN = [
    "echo",
    "get-sum",
    "get-structured-content",
    "trigger-long-running-operation",
    "toggle-simulated-logging",
    "toggle-simulated-logging",
]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def assert_plan_ran(result: dict[str, Any]) -> None:
    """The SDK client ran its whole plan (a session that completed)."""
    assert "error" not in result
    assert [c["tool"] for c in result["tool_calls"]] == PLAN
    echo = result["tool_calls"][0]["result"]["content"][0]["text"]
    assert echo == "Echo: hello from mcpsniff e2e"
    assert result["progress_count"] == 3
    assert result["resource_reads"] and result["prompt_gets"]


def assert_every_request_answered_once(trace: Trace) -> None:
    requests = [m for m in trace.messages if m.kind == "request"]
    replies = [m for m in trace.messages if m.kind in ("response", "error")]
    for request in requests:
        answers = [r for r in replies if r.answers == request.frame]
        assert len(answers) == 1, f"{request.method} id={request.id}"
    assert all(r.answers is not None for r in replies)


def session_shapes(trace: Trace, host: str | None) -> list[str]:
    """The trace's sessions with server-made ids blanked; the host prefix checked, then cut."""
    shapes = []
    for session in sorted({m.session for m in trace.messages}):
        if host is not None:
            prefix, _, session = session.partition(" ")
            assert prefix == host
        shapes.append(UUID.sub("<uuid>", session))
    return sorted(shapes)


# --------------------------------------------------------------------------- reverse mode


@dataclass
class Comparison:
    transport: str
    server: Everything
    direct: dict[str, Any]
    addon_result: dict[str, Any]
    relay_result: dict[str, Any]
    addon: Trace
    relay: Trace


@pytest.fixture(scope="module", params=[STREAMABLE, SSE])
def comparison(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Comparison]:
    """The SDK client's plan direct, through mitmdump + addon and through mcpsniff http."""
    require_peers(SDK2_PYTHON, EVERYTHING_JS, node=True)
    transport: str = request.param
    mode, path = ("streamableHttp", "/mcp") if transport == STREAMABLE else ("sse", "/sse")
    folder = tmp_path_factory.mktemp(f"reverse-{transport}")
    server = Everything(mode, folder / "server.log")
    try:
        mitm = Mitmdump(
            folder, mode=f"reverse:{server.url('/')}", trace=folder / "addon.jsonl"
        ).started()
        relay = Relay(server.url(path), folder / "relay.jsonl")
        try:
            # All three at once: they share nothing but the server.
            clients = {
                "direct": sdk_client(server.url(path), transport),
                "mitmdump": sdk_client(mitm.url(path), transport),
                "mcpsniff http": sdk_client(relay.url, transport),
            }
            results = {label: client_result(proc, label) for label, proc in clients.items()}
        finally:
            addon = mitm.finish()
            relayed = relay.finish()
        yield Comparison(
            transport,
            server,
            results["direct"],
            results["mitmdump"],
            results["mcpsniff http"],
            addon,
            relayed,
        )
    finally:
        server.stop()


def test_reverse_mode_session_completes(comparison: Comparison) -> None:
    assert_plan_ran(comparison.direct)
    # mitmdump and the addon change nothing the client sees
    assert comparison.addon_result == comparison.direct
    assert comparison.relay_result == comparison.direct


def test_reverse_mode_trace_equals_mcpsniff_http(comparison: Comparison) -> None:
    addon, relay = comparison.addon, comparison.relay
    assert len(addon.messages) >= 40
    if comparison.transport == SSE:
        # One event stream carries every server message, in the server's order, and the
        # client's messages come on POSTs, in the client's order. How the two interleave
        # in a trace is a race between two connections (a POST and an event the server
        # sends meanwhile), not a property of the shell: it made this test fail about
        # once in eight. So each direction's order must be equal, and the whole as a set.
        for direction in ("c2s", "s2c"):
            assert [m for m in addon.summary() if m[0] == direction] == [
                m for m in relay.summary() if m[0] == direction
            ]
        assert Counter(addon.summary()) == Counter(relay.summary())
    else:
        # The standalone GET stream runs beside the POSTs; the rest is in lockstep.
        assert addon.summary_without_get_streams() == relay.summary_without_get_streams()
        assert Counter(addon.summary()) == Counter(relay.summary())
    assert addon.rules() == relay.rules()
    assert addon.event_counts() == relay.event_counts()
    assert_every_request_answered_once(addon)
    # The same sessions, the addon's prefixed with the server's host.
    host = f"127.0.0.1:{comparison.server.port}"
    assert session_shapes(addon, host) == session_shapes(relay, None)
    assert {e.data["host"] for e in addon.events("http-request")} == {host}
    if comparison.transport == SSE:
        assert session_shapes(relay, None) == ["sse-<uuid>"]
        transports = {e.data["transport"] for e in addon.events("http-request")}
        assert transports == {"legacy-sse"}


def test_reverse_mode_check_finds_the_same(comparison: Comparison) -> None:
    from_addon = assert_check_agrees(comparison.addon)
    from_relay = assert_check_agrees(comparison.relay)
    assert [f["rule"] for f in from_addon] == [f["rule"] for f in from_relay]
    # server-everything is conforming: nothing at error level either way
    assert [f for f in from_addon if f["severity"] == "error"] == []


# --------------------------------------------------------------------------- regular mode


@dataclass
class Regular:
    server: Everything
    upstream: Upstream
    result: dict[str, Any]
    page: bytes
    non_mcp_post: bytes
    trace: Trace
    log: str


async def _plain_traffic(proxy: str, upstream: Upstream) -> tuple[bytes, bytes]:
    """A GET of an HTML page and a JSON POST that is not JSON-RPC, through the proxy."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        async with http.get(upstream.url("/page.html"), proxy=proxy) as response:
            assert response.status == 200
            page = await response.read()
        async with http.post(
            upstream.url("/mcp"), json={"hello": "non-mcp post"}, proxy=proxy
        ) as r:
            assert r.status == 202
            body = await r.read()
    return page, body


@pytest.fixture(scope="module")
def regular(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Regular]:
    require_peers(SDK2_PYTHON, EVERYTHING_JS, node=True)
    folder = tmp_path_factory.mktemp("regular")
    server = Everything("streamableHttp", folder / "server.log")
    try:
        with Upstream() as upstream:
            mitm = Mitmdump(folder, trace=folder / "addon.jsonl").started()
            try:
                env = proxy_env(mitm.proxy_url)
                result = client_result(sdk_client(server.url("/mcp"), STREAMABLE, env), "proxy")
                page, body = asyncio.run(_plain_traffic(mitm.proxy_url, upstream))
            finally:
                trace = mitm.finish()
            yield Regular(server, upstream, result, page, body, trace, mitm.output)
    finally:
        server.stop()


def test_regular_proxy_mode_records_the_whole_session(regular: Regular) -> None:
    assert_plan_ran(regular.result)
    trace = regular.trace
    host = f"127.0.0.1:{regular.server.port}"
    # the client's requests really went through mitmdump: it logged them, the addon saw them
    assert f"POST http://{host}/mcp" in regular.log
    assert {e.data["host"] for e in trace.events("http-request")} == {host}
    methods = [m.method for m in trace.messages if m.kind == "request"]
    assert methods[:3] == ["server/discover", "initialize", "logging/setLevel"]
    assert methods.count("tools/call") == len(PLAN)
    assert len(trace.with_method("notifications/progress")) == 3
    assert_every_request_answered_once(trace)
    assert session_shapes(trace, host) == ["<uuid>", "stateless"]
    assert [f for f in trace.findings if f.severity == "error"] == []
    assert_check_agrees(trace)


def test_non_mcp_traffic_passes_untouched_and_unrecorded(regular: Regular) -> None:
    assert regular.page == PAGE
    assert regular.non_mcp_post == b""
    upstream = regular.upstream
    # the upstream got both requests (through the proxy) ...
    assert [(m, p) for m, p, _ in upstream.seen] == [("GET", "/page.html"), ("POST", "/mcp")]
    assert f"GET http://127.0.0.1:{upstream.port}/page.html" in regular.log
    # ... and the trace holds nothing about them: no session, frame or event
    host = f"127.0.0.1:{upstream.port}"
    sessions = {getattr(r, "session", "") for r in regular.trace.records}
    assert [s for s in sessions if s.startswith(host)] == []
    assert [e for e in regular.trace.events() if e.data.get("host") == host] == []
    assert [f for f in regular.trace.frames if b"non-mcp" in f.raw] == []


# --------------------------------------------------------------------------- HTTPS


def test_https_intercepted_with_mitmproxys_ca(tmp_path: Path) -> None:
    require_peers(SDK2_PYTHON)
    certs = make_certificates(tmp_path / "certs")
    port = free_port()
    server = Background(
        [
            str(SDK2_PYTHON),
            str(HERE_PEERS / "sdk2_tls_server.py"),
            str(port),
            str(certs.cert),
            str(certs.key),
        ],
        tmp_path / "server.log",
    )
    try:
        wait_for_port(port, server.proc, server.log)
        flows = tmp_path / "flows.mitm"
        # mitmdump trusts the test CA for the upstream; the client trusts only
        # mitmproxy's own CA (made in the temporary confdir), so the session can
        # complete only if mitmdump intercepted the TLS.
        mitm = Mitmdump(
            tmp_path,
            trace=tmp_path / "addon.jsonl",
            options={"ssl_verify_upstream_trusted_ca": str(certs.ca)},
            extra=["-w", str(flows)],
        ).started()
        try:
            url = f"https://127.0.0.1:{port}/mcp"
            env = proxy_env(mitm.proxy_url, ca=mitm.ca_cert)
            result = client_result(sdk_client(url, STREAMABLE, env), "https through mitmdump")
        finally:
            trace = mitm.finish()
    finally:
        server.stop()
    assert "error" not in result
    assert result["protocol_version"] == "2026-07-28"
    assert [c["tool"] for c in result["tool_calls"]] == PLAN
    assert result["progress_count"] == 3
    # recorded in full: decrypted by mitmproxy, seen by the addon
    host = f"127.0.0.1:{port}"
    assert session_shapes(trace, host) == ["stateless"]
    requests = [m for m in trace.messages if m.kind == "request"]
    assert requests[0].method == "server/discover"
    assert [m.method for m in requests].count("tools/call") == len(PLAN)
    assert_every_request_answered_once(trace)
    assert [f for f in trace.findings if f.severity == "error"] == []
    assert_check_agrees(trace)
    with flows.open("rb") as handle:
        saved = [f for f in mitmio.FlowReader(handle).stream()]
    assert saved and {f.request.scheme for f in saved} == {"https"}  # type: ignore[attr-defined]
    assert len(saved) == len(trace.events("http-request"))


# --------------------------------------------------------------------------- legacy SSE


@pytest.fixture(scope="module")
def everything_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Everything]:
    require_peers(EVERYTHING_JS, node=True)
    folder = tmp_path_factory.mktemp("everything-sse")
    server = Everything("sse", folder / "server.log")
    try:
        yield server
    finally:
        server.stop()


def test_legacy_sse_streams_through_the_addon(everything_sse: Everything, tmp_path: Path) -> None:
    mitm = Mitmdump(
        tmp_path, mode=f"reverse:{everything_sse.url('/')}", trace=tmp_path / "addon.jsonl"
    ).started()
    try:
        answers = asyncio.run(asyncio.wait_for(legacy_session(mitm.url("")), 20))
    finally:
        trace = mitm.finish()
    assert [a["data"]["id"] for a in answers] == [1, 2]
    assert answers[0]["data"]["result"]["serverInfo"]["name"]
    assert answers[1]["data"]["result"] == {}
    summary = [
        (m.direction, m.kind, m.method, m.id, m.answers is not None)
        for m in trace.messages
        if m.kind != "notification" or m.direction == "c2s"  # the server's may come any time
    ]
    assert summary == [
        ("c2s", "request", "initialize", 1, False),
        ("s2c", "response", None, 1, True),
        ("c2s", "notification", "notifications/initialized", None, False),
        ("c2s", "request", "ping", 2, False),
        ("s2c", "response", None, 2, True),
    ]
    (session,) = {m.session for m in trace.messages}
    assert re.fullmatch(rf"127\.0\.0\.1:{everything_sse.port} sse-{UUID.pattern}", session)
    assert trace.findings == []


def test_legacy_sse_hangs_through_mitmdump_without_the_addon(
    everything_sse: Everything, tmp_path: Path
) -> None:
    """Without the addon's streaming, mitmproxy waits for the end of a body that never ends."""
    mitm = Mitmdump(tmp_path, mode=f"reverse:{everything_sse.url('/')}", addon=False).started()
    try:
        with pytest.raises(TimeoutError):
            asyncio.run(legacy_session(mitm.url("")))
        assert mitm.proc.poll() is None
    finally:
        mitm.stop()
    # the server did answer: mitmdump held the stream back, buffering it
    assert "Streaming response" not in mitm.output
