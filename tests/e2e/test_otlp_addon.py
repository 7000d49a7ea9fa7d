"""The mitmproxy addon's ``mcpsniff_otlp`` option: real mitmdump, server-everything, SDK client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.sdk_peers import client_result
from tests.export.collector import Collector, start_collector
from tests.mitm.support import (
    EVERYTHING_JS,
    SDK2_PYTHON,
    Everything,
    Mitmdump,
    require_peers,
    sdk_client,
)

pytest.importorskip("opentelemetry.sdk", reason='needs the otel extra: pip install ".[otel]"')


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    running = start_collector(tmp_path_factory.mktemp("rotel-addon"))
    yield running
    running.stop()


def test_addon_exports_live_spans(collector: Collector, tmp_path: Path) -> None:
    require_peers(EVERYTHING_JS, SDK2_PYTHON, node=True)
    server = Everything("streamableHttp", tmp_path / "server.log")
    try:
        proxy = Mitmdump(
            tmp_path,
            mode=f"reverse:{server.url('/')}",
            trace=tmp_path / "addon.jsonl",
            options={"mcpsniff_otlp": collector.http_url},
        ).started()
        try:
            client_result(sdk_client(proxy.url("/mcp"), "streamable-http"), "through mitmdump")
        finally:
            trace = proxy.finish()
    finally:
        server.stop()
    assert any(m.method == "tools/call" for m in trace.messages)
    echo = collector.wait(
        lambda spans: [
            s
            for s in spans
            if s["name"] == "tools/call echo" and s["attributes"].get("network.transport") == "tcp"
        ],
        2,
    )
    kinds = sorted(s["kind"] for s in echo)
    assert kinds == ["SPAN_KIND_CLIENT", "SPAN_KIND_SERVER"]
    client = next(s for s in echo if s["kind"] == "SPAN_KIND_CLIENT")
    server_span = next(s for s in echo if s["kind"] == "SPAN_KIND_SERVER")
    assert server_span["parent_id"] == client["span_id"]
    assert client["attributes"]["gen_ai.tool.name"] == "echo"
    # No single upstream in an addon trace: the host each request went to.
    assert client["attributes"]["server.address"] == "127.0.0.1"
    assert isinstance(client["attributes"]["server.port"], int)
    assert "OTLP" not in proxy.output
