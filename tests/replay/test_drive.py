"""``replay drive --url`` on traces of concurrent clients, recorded through ``mcpsniff http``.

Two and three SDK 2.x clients at once against server-everything (a session
each, with its own ``Mcp-Session-Id``, every client counting ids from the same
start), and two at once against the SDK 2.x server (2026-07-28: one stateless
group in which both clients send the same ids). Every recorded response must
be compared, under the request it answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpsniff.core.model import FrameRecord, MessageRecord
from mcpsniff.trace.reader import TraceReader
from tests.replay.support import (
    CHANGED_HTTP_SERVER,
    EVERYTHING_JS,
    MCPSNIFF,
    SDK2_HTTP_SERVER,
    SDK2_PYTHON,
    MultiRecording,
    all_match,
    answered_per_client,
    everything_http,
    free_port,
    need,
    record_http_clients,
    recorded_answers,
    run,
    sdk2_http,
)


@pytest.fixture(scope="module", params=[2, 3], ids=["two-clients", "three-clients"])
def everything_clients(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> MultiRecording:
    need(SDK2_PYTHON, EVERYTHING_JS)
    trace = tmp_path_factory.mktemp("multi") / f"everything-{request.param}.jsonl"
    return record_http_clients(trace, request.param, everything_http)


@pytest.fixture(scope="module")
def modern_clients(tmp_path_factory: pytest.TempPathFactory) -> MultiRecording:
    need(SDK2_PYTHON, SDK2_HTTP_SERVER)
    trace = tmp_path_factory.mktemp("multi") / "modern-2.jsonl"
    return record_http_clients(trace, 2, sdk2_http)


def drive(trace: Path, url: str, *extra: str) -> tuple[int, list[str], str]:
    result = run([*MCPSNIFF, "replay", "drive", str(trace), "--url", url, *extra])
    return result.code, result.out.splitlines(), result.err


def test_every_session_is_driven_as_its_own_and_every_response_compared(
    everything_clients: MultiRecording, tmp_path: Path
) -> None:
    clients = len(everything_clients.results)
    expected = sum(answered_per_client(r) for r in everything_clients.results)
    # The recorder's own pairing agrees with what the clients saw answered.
    assert recorded_answers(everything_clients.trace) == expected
    own = tmp_path / "driven.jsonl"
    port = free_port()
    with everything_http(port):
        code, out, err = drive(
            everything_clients.trace, f"http://127.0.0.1:{port}/mcp", "--trace", str(own)
        )
    assert (code, out) == (0, [all_match(expected)]), "\n".join(out) + err
    # Each recorded session had its own handshake with the fresh server.
    frames = [r for r in TraceReader(own).records() if isinstance(r, FrameRecord)]
    initialized = {f.session for f in frames if f.direction == "c2s" and b'"initialize"' in f.raw}
    assert len(initialized) == clients


def test_two_stateless_clients_with_the_same_ids_match_a_fresh_server(
    modern_clients: MultiRecording,
) -> None:
    expected = sum(answered_per_client(r) for r in modern_clients.results)
    assert recorded_answers(modern_clients.trace) == expected
    port = free_port()
    with sdk2_http(port):
        code, out, err = drive(modern_clients.trace, f"http://127.0.0.1:{port}/mcp")
    assert (code, out) == (0, [all_match(expected)]), "\n".join(out) + err
    # The own trace keeps the two clients apart: their equal ids are no finding.
    assert "error finding" not in err


def test_a_changed_tool_is_reported_under_each_request_that_called_it(
    modern_clients: MultiRecording,
) -> None:
    with TraceReader(modern_clients.trace) as reader:
        records = list(reader.records())
    calls = {
        r.frame
        for r in records
        if isinstance(r, MessageRecord)
        and r.kind == "request"
        and r.method == "tools/call"
        and r.target == "get-structured-content"
    }
    assert len(calls) == 2
    port = free_port()
    with sdk2_http(port, CHANGED_HTTP_SERVER):
        code, out, err = drive(modern_clients.trace, f"http://127.0.0.1:{port}/mcp")
    assert code == 1, "\n".join(out) + err
    heads = [line for line in out if not line.startswith(" ")]
    total = recorded_answers(modern_clients.trace)
    assert (
        heads[-1]
        == f"{total} of {total} recorded response(s) compared, 2 differ, {total - 2} match"
    )
    seqs = set()
    for head in heads[:-1]:
        start = "tools/call tool 'get-structured-content' (request id 5, trace seq "
        assert head.startswith(start) and head.endswith("): 2 difference(s)"), head
        seqs.add(int(head[len(start) :].split(")")[0]))
        block = out[out.index(head) + 1 : out.index(head) + 7]
        assert block[3:] == [
            "  $.result.structuredContent.humidity",
            "    recorded: 82.0",
            "    live:     50.0",
        ]
    # Each diff is under the request that got it: the two recorded calls, once each.
    assert seqs == calls
