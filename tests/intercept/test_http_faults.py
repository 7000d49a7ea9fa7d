"""``mcpsniff http --fault``, end to end: the official SDK clients over Streamable HTTP
against server-everything and the SDK 2.x server, through a relay that misbehaves on purpose;
and the pieces of ``intercept/http_faults.py`` on their own.

Each end-to-end test runs a real client (``tests/e2e/peers/fault_client.py --url``)
against ``mcpsniff http --fault ...`` in front of a real server, then reads what
the client saw, the trace the relay wrote, and what ``check`` makes of it: every
fault is recorded, the client sees exactly the misbehaviour asked for, and no
peer is blamed for what mcpsniff did. Without the peers (``scripts/setup-peers.sh``)
those tests skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mcpsniff.core.model import EventRecord, FrameRecord, Record
from mcpsniff.faults.engine import FaultEngine
from mcpsniff.faults.spec import parse_faults
from mcpsniff.http1.events import Body, End, Malformed, ResponseHead
from mcpsniff.http1.parser import RequestParser, ResponseParser
from mcpsniff.intercept.http_faults import (
    FaultedClientSide,
    HookedClientSide,
    faulted_factory,
)
from mcpsniff.intercept.http_upstream import UpstreamSide
from mcpsniff.relay.http import HttpOptions, HttpRelay
from mcpsniff.trace.reader import TraceReader
from tests.e2e.test_http_peers import Server, stop_process
from tests.relay.playbook import PlaybookRelay, Wire

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / ".peers"
SDK1_PYTHON = PEERS / "sdk1" / "bin" / "python"
SDK2_PYTHON = PEERS / "sdk2" / "bin" / "python"
FAULT_CLIENT = REPO / "tests" / "e2e" / "peers" / "fault_client.py"
SDK2_HTTP_SERVER = REPO / "tests" / "e2e" / "peers" / "sdk2_http_server.py"
EVERYTHING_JS = (
    PEERS / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
) / "index.js"
RUN_TIMEOUT = 90
START_TIMEOUT = 30
ECHO = 'tool == "echo"'


# --------------------------------------------------------------------------- peers


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """server-everything over Streamable HTTP (sessions, resumable streams): its URL."""
    if not EVERYTHING_JS.exists() or shutil.which("node") is None:
        pytest.skip("server-everything or node missing (scripts/setup-peers.sh)")
    log = tmp_path_factory.mktemp("everything") / "server.log"
    server = Server(["node", str(EVERYTHING_JS), "streamableHttp"], {"PORT": "{port}"}, log)
    try:
        yield server.url("/mcp")
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sdk2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The SDK 2.x server over Streamable HTTP (2026-07-28: one POST per request)."""
    if not SDK2_PYTHON.exists():
        pytest.skip("the SDK 2.x venv is missing (scripts/setup-peers.sh)")
    log = tmp_path_factory.mktemp("sdk2") / "server.log"
    server = Server([str(SDK2_PYTHON), str(SDK2_HTTP_SERVER), "{port}"], {}, log)
    try:
        yield server.url("/mcp")
    finally:
        server.stop()


@dataclass
class Run:
    """What one client run through a faulty relay produced."""

    client: dict[str, Any]
    records: list[Record]
    check: list[dict[str, Any]]
    summary: str

    @property
    def faults(self) -> list[EventRecord]:
        return [r for r in self.records if isinstance(r, EventRecord) and r.event == "fault"]

    def outcomes(self) -> list[str]:
        return [call["outcome"] for call in self.client["calls"]]

    def rules(self) -> list[str]:
        return [finding["rule"] for finding in self.check]

    def frames(self, direction: str) -> list[dict[str, Any]]:
        out = []
        for record in self.records:
            if isinstance(record, FrameRecord) and record.direction == direction:
                try:
                    out.append(json.loads(record.raw))
                except ValueError:
                    out.append({"unparseable": record.raw[:60]})
        return out


def run(
    upstream: str,
    faults: list[str],
    tmp_path: Path,
    *,
    client: Path = SDK1_PYTHON,
    calls: int = 3,
    timeout: float = 3.0,
    name: str = "trace.jsonl",
) -> Run:
    """Run the client through ``mcpsniff http`` with ``faults``; the outcome and the trace."""
    if not client.exists():
        pytest.skip(f"{client} missing (scripts/setup-peers.sh)")
    trace = tmp_path / name
    command = [sys.executable, "-m", "mcpsniff", "http", "--upstream", upstream]
    command += ["--listen", "127.0.0.1:0", "--trace", str(trace)]
    for spec in faults:
        command += ["--fault", spec]
    err_path = trace.with_suffix(".stderr")
    with err_path.open("wb") as err:
        relay = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        proc = client_run(client, _announced(relay, err_path), calls, timeout)
    finally:
        assert stop_process(relay, signal.SIGINT) == 0, err_path.read_text(errors="replace")
    return judged(proc, trace)


def client_run(
    client: Path, url: str, calls: int, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """``fault_client.py --url URL``, to its end."""
    argv = [str(client), str(FAULT_CLIENT), "--url", url, "--calls", str(calls)]
    return subprocess.run(
        [*argv, "--timeout", str(timeout)], capture_output=True, timeout=RUN_TIMEOUT, cwd=REPO
    )


def judged(proc: subprocess.CompletedProcess[bytes], trace: Path) -> Run:
    """The client's report, the trace, and what ``check`` makes of it."""
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-3000:]
    report = json.loads(proc.stdout.splitlines()[-1])
    with TraceReader(trace) as reader:
        records = list(reader.records())
        assert reader.torn is None
    assert not [r for r in records if isinstance(r, EventRecord) and r.event == "analyzer-error"]
    mcpsniff = [sys.executable, "-m", "mcpsniff", "check"]
    check = subprocess.run(
        [*mcpsniff, "--format", "json", "--fail-on", "info", str(trace)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    findings = [json.loads(line) for line in check.stdout.decode().splitlines() if line.strip()]
    summary = subprocess.run(
        [*mcpsniff, "--faults-summary", str(trace)],
        capture_output=True,
        timeout=RUN_TIMEOUT,
        cwd=REPO,
    )
    return Run(report, records, findings, summary.stdout.decode())


def _announced(relay: subprocess.Popen[bytes], err_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for line in err_path.read_text(errors="replace").splitlines():
            if line.startswith("mcpsniff: proxying "):
                return line.split()[2]
        if relay.poll() is not None:
            pytest.fail(f"mcpsniff http exited {relay.returncode}: {err_path.read_text()}")
        time.sleep(0.05)
    pytest.fail("mcpsniff http did not announce its URL")


def _latencies_ms(records: list[Record], method: str) -> list[float]:
    """Per request of ``method``: ms from its frame to its answer's frame, in the trace."""
    asked: dict[Any, float] = {}
    out = []
    for record in records:
        if not isinstance(record, FrameRecord):
            continue
        try:
            value = json.loads(record.raw)
        except ValueError:
            continue
        if record.direction == "c2s" and value.get("method") == method:
            asked[value.get("id")] = record.t
        elif record.direction == "s2c" and "method" not in value and value.get("id") in asked:
            out.append(round((record.t - asked.pop(value["id"])) * 1000, 1))
    return out


def _ids(frames: list[dict[str, Any]], method: str | None = None) -> list[Any]:
    return [f.get("id") for f in frames if method is None or f.get("method") == method]


# --------------------------------------------------------------------------- each action


def test_delay_holds_each_matching_answer_300_to_400_ms(everything: str, tmp_path: Path) -> None:
    # The first call warms the client up and is not delayed.
    spec = f"delay 300ms when {ECHO} and direction == s2c after 1"
    result = run(everything, [spec], tmp_path, calls=6)
    assert result.outcomes() == ["ok"] * 6
    # Each answer was held 300-400 ms, as the relay measured it between its arrival
    # from the server and its delivery to the client.
    held = [f.data["held_ms"] for f in result.faults]
    assert all(300 <= ms <= 400 for ms in held), held
    # The trace: 300 ms and the server's time between each request and its answer,
    # the first one not held. No upper bound here: the server's own time grows
    # without limit on a loaded machine; the hold itself is bounded above.
    latencies = _latencies_ms(result.records, "tools/call")
    assert len(latencies) == 6 and latencies[0] < 300, latencies
    assert all(ms >= 300 for ms in latencies[1:]), latencies
    # The client saw the hold too (its own times add its HTTP round trip).
    assert all(call["ms"] >= 300 for call in result.client["calls"][1:])
    assert [f.data["action"] for f in result.faults] == ["delay"] * 5
    assert all(f.data["delay_ms"] == 300 and f.data["transport"] == "http" for f in result.faults)
    assert result.rules() == []


def test_an_injected_error_reaches_the_client_and_the_server_never_sees_the_call(
    everything: str, tmp_path: Path
) -> None:
    result = run(everything, [f'error -32603 "backend down" when {ECHO}'], tmp_path)
    assert result.outcomes() == ["error"] * 3
    assert {call["code"] for call in result.client["calls"]} == {-32603}
    assert {call["message"] for call in result.client["calls"]} == {"backend down"}
    # Recorded as sent and as answered, each marked (not delivered to the server).
    assert [f.data["delivered"] for f in result.faults] == [False] * 3
    assert [f.data["marks"] for f in result.faults] == [{"c2s": 1, "s2c": 1}] * 3
    errors = [f for f in result.frames("s2c") if f.get("error", {}).get("code") == -32603]
    assert len(errors) == 3
    assert result.rules() == []


def test_tool_error_answers_with_is_error(everything: str, tmp_path: Path) -> None:
    result = run(everything, [f'tool-error "quota exceeded" when {ECHO} times 1'], tmp_path)
    assert result.outcomes() == ["tool-error", "ok", "ok"]
    assert result.client["calls"][0]["text"] == "quota exceeded"
    assert result.rules() == []


def test_status_404_expires_the_session_and_the_sdk1_client_goes_on_with_it(
    everything: str, tmp_path: Path
) -> None:
    result = run(everything, [f"status 404 when {ECHO} times 1"], tmp_path)
    assert result.outcomes()[0] == "error"
    (fault,) = result.faults
    assert fault.data["code"] == 404 and fault.data["session_id"] is True
    # The SDK 1.x client keeps the expired session id instead of initializing again:
    # judged as a reaction to mcpsniff's 404, not reported twice.
    assert result.rules() == ["RESIL-SESSION-REUSED"]
    assert "reaction: the client went on with the expired session" in result.summary


def test_status_503_is_answered_with_retry_after(tmp_path: Path) -> None:
    status, head, _ = _one_exchange(["status 503 when method == tools/call"], _CALL)
    assert status == 503
    assert head["retry-after"] == "1" and head["x-mcpsniff"] == "fault"


def test_a_dropped_request_times_out(everything: str, tmp_path: Path) -> None:
    result = run(everything, [f"drop when {ECHO} and direction == c2s times 1"], tmp_path)
    assert result.outcomes() == ["timeout", "ok", "ok"]
    (fault,) = result.faults
    assert fault.data["delivered"] is False and fault.data["kind"] == "request"
    # The request is in the trace all the same; the server is not blamed for no answer.
    assert "JR-RESP-REQUIRED" not in result.rules()
    assert set(result.rules()) <= {"RESIL-DROP-HANG"}


def test_a_dropped_answer_comes_again_on_the_resumed_stream(
    everything: str, tmp_path: Path
) -> None:
    result = run(everything, [f"drop when {ECHO} and direction == s2c times 1"], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    # The SDK client resumed with Last-Event-ID and server-everything redelivered it.
    assert _ids(result.frames("s2c")).count(result.faults[0].data["id"]) == 2
    assert result.rules() == []
    assert "coped: the answer came again" in result.summary


def test_a_duplicated_answer_is_ignored_by_the_client(everything: str, tmp_path: Path) -> None:
    result = run(everything, [f"duplicate when {ECHO} and direction == s2c times 1"], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    ident = result.faults[0].data["id"]
    assert _ids(result.frames("s2c")).count(ident) == 2
    assert result.rules() == []


def test_a_duplicated_request_reaches_the_server_twice(everything: str, tmp_path: Path) -> None:
    result = run(everything, [f"duplicate when {ECHO} and direction == c2s times 1"], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    ident = result.faults[0].data["id"]
    # Both copies are recorded, and each answer the server gave (server-everything
    # routes answers by request id, so it answers the second copy, or not, by a race);
    # only the first reached the client.
    assert _ids(result.frames("c2s"), "tools/call").count(ident) == 2
    assert _ids(result.frames("s2c")).count(ident) in (1, 2)
    assert result.rules() == []
    assert "MSG-ID-REUSE" in result.summary  # withheld, named


def test_a_truncated_request_gets_a_parse_error(everything: str, tmp_path: Path) -> None:
    spec = f"corrupt truncate when {ECHO} and direction == c2s times 1"
    result = run(everything, [spec], tmp_path)
    (fault,) = result.faults
    assert fault.data["corruption"] == "truncate"
    assert fault.data["original_len"] > 0 and "original_sha256" in fault.data  # redacted
    assert result.rules() == []
    assert "coped: the server answered -32700" in result.summary


@pytest.mark.parametrize("kind", ["pretty", "split", "trailing-comma"])
def test_a_damaged_answer_is_not_held_against_the_server(
    everything: str, tmp_path: Path, kind: str
) -> None:
    spec = f"corrupt {kind} when {ECHO} and direction == s2c times 1"
    result = run(everything, [spec], tmp_path, timeout=2.0)
    assert [f.data["corruption"] for f in result.faults] == [kind]
    # pretty and split still parse; a trailing comma does not, and the call times out.
    expected = "ok" if kind != "trailing-comma" else "timeout"
    assert result.outcomes()[0] == expected
    assert result.outcomes()[1:] == ["ok", "ok"]
    assert [r for r in result.rules() if not r.startswith("RESIL-")] == []


def test_a_cut_stream_is_resumed(everything: str, tmp_path: Path) -> None:
    spec = f"disconnect when {ECHO} and direction == s2c times 1"
    result = run(everything, [spec], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    assert result.faults[0].data["delivered"] is False
    assert result.rules() == []
    assert "coped: the answer came again" in result.summary


def test_a_request_cut_mid_body_cuts_the_client_off(everything: str, tmp_path: Path) -> None:
    spec = f"disconnect when {ECHO} and direction == c2s times 1"
    result = run(everything, [spec], tmp_path)
    # The SDK 1.x client gives up on the whole session when its POST is cut.
    assert result.client.get("crashed") or result.outcomes()[0] != "ok"
    assert [f.data["action"] for f in result.faults] == ["disconnect"]
    assert "JR-RESP-REQUIRED" not in result.rules()


def test_prob_with_a_seed_gives_the_same_faults_twice(everything: str, tmp_path: Path) -> None:
    spec = f"error -32000 flaky when {ECHO} prob 0.5 seed 11"
    first = run(everything, [spec], tmp_path, calls=8, name="a.jsonl")
    second = run(everything, [spec], tmp_path, calls=8, name="b.jsonl")
    assert first.outcomes() == second.outcomes()
    assert "ok" in first.outcomes() and "error" in first.outcomes()
    assert [f.data["count"] for f in first.faults] == [f.data["count"] for f in second.faults]
    assert all(f.data["seed"] == 11 for f in first.faults)


def test_a_fault_that_matches_nothing_changes_nothing(everything: str, tmp_path: Path) -> None:
    result = run(everything, ['delay 2s when tool == "nothing-has-this-name"'], tmp_path)
    assert result.outcomes() == ["ok"] * 3
    assert result.faults == []
    assert result.rules() == []


def test_the_2026_sdk_pair_over_http(sdk2_server: str, tmp_path: Path) -> None:
    # 2026-07-28: no session, one POST per request; the fault works the same.
    spec = f'tool-error "injected" when {ECHO} after 1 times 1'
    result = run(sdk2_server, [spec], tmp_path, client=SDK2_PYTHON)
    assert result.outcomes() == ["ok", "tool-error", "ok"]
    assert [f.data["action"] for f in result.faults] == ["tool-error"]
    assert result.rules() == []


def test_kill_and_reorder_are_refused_on_http() -> None:
    for spec, word in (("kill", "no server process"), ("reorder", "its own message")):
        argv = [sys.executable, "-m", "mcpsniff", "http", "--upstream", "http://127.0.0.1:9/mcp"]
        proc = subprocess.run(
            [*argv, "--fault", spec],
            capture_output=True,
            timeout=RUN_TIMEOUT,
            cwd=REPO,
        )
        assert proc.returncode == 2
        assert "needs a stdio relay" in proc.stderr.decode() and word in proc.stderr.decode()


# --------------------------------------------------------------------------- in process

_CALL = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}'


def _one_exchange(faults: list[str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` through an in-process relay to an upstream that answers JSON."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        answer = b'{"jsonrpc":"2.0","id":3,"result":{}}'
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer)
        )

    head, _, payload = _relayed(faults, body, answer)
    fields = {name.lower(): value for name, value in head.headers}
    return head.status, fields, payload


@contextlib.asynccontextmanager
async def _relay_before(
    faults: list[str], upstream: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]
) -> AsyncIterator[int]:
    """An in-process relay with ``faults`` in front of the server ``upstream`` runs
    for each connection: the relay's port."""
    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    options = HttpOptions(
        upstream=f"http://127.0.0.1:{port}/mcp",
        port=0,
        busy_poll=False,
        faults=parse_faults(faults),
    )
    relay = HttpRelay(options, None)
    await relay.start()
    try:
        yield relay.port
    finally:
        await relay.stop()
        server.close()


def _relayed(
    faults: list[str], body: bytes, answer: Callable[[asyncio.StreamWriter], Awaitable[None]]
) -> tuple[ResponseHead, bytes, bytes]:
    """POST ``body`` through an in-process relay with ``faults`` to an upstream whose
    response ``answer`` writes; the head the client got, its raw body (framing
    included) and its payload."""

    async def main() -> tuple[ResponseHead, bytes, bytes]:
        async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(65536)
            await answer(writer)
            await writer.drain()
            writer.close()

        async with _relay_before(faults, upstream) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
            parser = ResponseParser()
            parser.expect("POST")
            head: Any = None
            raw = payload = b""
            done = False
            while not done:
                data = await asyncio.wait_for(reader.read(65536), 5)
                events = parser.feed(data) if data else parser.feed_eof()
                for event in events:
                    assert not isinstance(event, Malformed), event.reason
                    if isinstance(event, ResponseHead):
                        head = event
                    elif isinstance(event, Body):
                        raw += event.raw
                        payload += event.payload
                    elif isinstance(event, End):
                        raw += event.raw
                        done = True
                if not data:
                    break
            writer.close()
        return head, raw, payload

    return asyncio.run(main())


def test_a_json_answer_is_damaged_and_sent_chunked() -> None:
    status, head, payload = _one_exchange(
        ["corrupt truncate when method == tools/call and direction == s2c"], _CALL
    )
    whole = b'{"jsonrpc":"2.0","id":3,"result":{}}'
    assert status == 200
    assert head["transfer-encoding"] == "chunked" and "content-length" not in head
    assert payload == whole[: len(whole) // 2]


def test_a_json_answer_passes_unchanged_when_nothing_matches() -> None:
    status, head, payload = _one_exchange(["drop when method == ping"], _CALL)
    assert status == 200
    # Its framing too: no fault could match it, so the relay left it alone.
    assert head["content-length"] == "36" and "transfer-encoding" not in head
    assert payload == b'{"jsonrpc":"2.0","id":3,"result":{}}'


def test_an_error_answer_is_json_rpc_with_the_request_id() -> None:
    status, head, payload = _one_exchange(['error -32001 "nope" when method == tools/call'], _CALL)
    assert status == 200 and head["content-type"] == "application/json"
    assert json.loads(payload) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32001, "message": "nope"},
    }


# --------------------------------------------------------------------------- no sockets

_ANSWER = b'{"jsonrpc":"2.0","id":3,"result":{}}'
_JSON_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
    % (len(_ANSWER), _ANSWER)
)


def _post(body: bytes, *fields: bytes) -> bytes:
    lines = b"".join(field + b"\r\n" for field in fields)
    return b"POST /mcp HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s" % (
        lines,
        len(body),
        body,
    )


def _faulted_connection(*specs: str) -> tuple[FaultedClientSide, Wire, Wire, UpstreamSide]:
    """A ``FaultedClientSide`` with transports that keep what is written to them."""
    relay = PlaybookRelay()
    client_wire, upstream_wire = Wire(), Wire()
    connection = faulted_factory(relay, parse_faults(list(specs)), verbatim=False)()
    assert isinstance(connection, FaultedClientSide)
    connection.connection_made(client_wire)  # type: ignore[arg-type]
    upstream = UpstreamSide(connection)
    upstream.connection_made(upstream_wire)  # type: ignore[arg-type]
    connection.upstream = upstream
    return connection, client_wire, upstream_wire, upstream


def test_a_compressed_request_holding_the_name_is_not_judged() -> None:
    # The byte search finds the name, but a compressed body is never judged: it
    # goes upstream as it came, and the server's answer comes back.
    connection, client, upstream_wire, upstream = _faulted_connection(
        'error -32001 "nope" when method == tools/call'
    )
    request = _post(_CALL, b"Content-Encoding: gzip")
    connection.data_received(request)
    assert upstream_wire.take() == request
    upstream.data_received(_JSON_RESPONSE)
    assert client.take() == _JSON_RESPONSE


def test_a_connection_has_no_dict_before_during_or_after_a_fault() -> None:
    # A connection's class changes while a fault is under way: with an instance
    # dict, CPython 3.11 would turn its inline values into a real dict for good,
    # and every specialised attribute load of the connection code would then miss
    # on one connection or the other (issue 29's runs at 1.06-1.075x).
    connection, client, upstream_wire, upstream = _faulted_connection(
        'error -32001 "nope" when method == tools/call'
    )
    assert not hasattr(connection, "__dict__")
    connection.data_received(_post(_CALL))
    assert b'"code":-32001' in client.take()  # answered in the server's place
    assert type(connection) is HookedClientSide and not hasattr(connection, "__dict__")
    ping = b'{"jsonrpc":"2.0","id":4,"method":"ping"}'
    connection.data_received(_post(ping))
    assert upstream_wire.take() == _post(ping)
    upstream.data_received(_JSON_RESPONSE)
    # Judged whole (the engine still has the answered tools/call in flight), so
    # sent chunked: the same answer.
    assert client.take().endswith(b"%x\r\n%s\r\n0\r\n\r\n" % (len(_ANSWER), _ANSWER))
    assert type(connection) is FaultedClientSide and not hasattr(connection, "__dict__")


# --------------------------------------------------------------------------- pieces


def test_a_body_too_big_to_judge_is_forwarded_as_it_came() -> None:
    # Over 256 KiB: streamed on unjudged, never held whole (the fault would answer it).
    big = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"pad":"'
    big += b"x" * (300 << 10) + b'"}}'
    status, _, payload = _one_exchange(["error -32000 when direction == c2s"], big)
    assert status == 200
    assert payload == b'{"jsonrpc":"2.0","id":3,"result":{}}'


def test_a_body_that_is_not_json_is_forwarded_unjudged() -> None:
    status, _, payload = _one_exchange(["error -32000 when method == tools/call"], b"\xff{")
    assert status == 200 and payload == b'{"jsonrpc":"2.0","id":3,"result":{}}'


# --------------------------------------------------------------------------- SSE, in process

_SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)
_LOG = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}'
_RESULT = b'{"jsonrpc":"2.0","id":3,"result":{"content":[]}}'


def _event(data: bytes) -> bytes:
    return b"event: message\ndata: " + data + b"\n\n"


def _chunk(data: bytes, ext: bytes = b";src=up") -> bytes:
    # A chunk extension the relay never writes: it shows whose framing reached the client.
    return b"%X%s\r\n%s\r\n" % (len(data), ext, data)


def _sse_exchange(faults: list[str], writes: list[bytes]) -> tuple[bytes, bytes]:
    """POST a ``tools/call`` of ``echo`` through an in-process relay to an upstream that
    answers with the chunked SSE body ``writes`` (each written on its own, a pause
    between them, so that each comes to the relay as a read of its own); the raw body
    the client got (framing included) and its payload."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(_SSE_HEAD)
        for piece in writes:
            await writer.drain()
            await asyncio.sleep(0.03)
            writer.write(piece)
        writer.write(b"0\r\n\r\n")

    head, raw, payload = _relayed(faults, _CALL, answer)
    assert head.status == 200 and head.names.count("transfer-encoding") == 1
    return raw, payload


NO_MATCH = 'drop when method == "nothing/has-this-name"'
DROP_LOG = 'drop when method == "notifications/message"'


def test_sse_events_no_fault_can_match_go_on_as_the_upstream_framed_them() -> None:
    events = [_event(_LOG % b"one"), _event(_LOG % b"two") + _event(_RESULT)]
    writes = [_chunk(e) for e in events]
    raw, payload = _sse_exchange([NO_MATCH], writes)
    # Byte for byte, the upstream's chunk extensions included: nothing was re-chunked.
    assert raw == b"".join(writes) + b"0\r\n\r\n"
    assert payload == b"".join(events)


def test_an_sse_event_a_fault_matches_is_judged_and_the_rest_pass_untouched() -> None:
    keep = _event(_LOG.replace(b"notifications/message", b"notifications/progress") % b"p")
    writes = [_chunk(keep), _chunk(_event(_LOG % b"dropped")), _chunk(_event(_RESULT))]
    raw, payload = _sse_exchange([DROP_LOG], writes)
    assert payload == keep + _event(_RESULT)
    # The first and last pieces went on in the upstream's own framing, the judged one not.
    assert raw.startswith(writes[0]) and raw.endswith(writes[2] + b"0\r\n\r\n")
    assert b"dropped" not in raw


@pytest.mark.parametrize(
    "cut",
    [
        # In the literal itself, in the chunk framing, between data lines, in an event's end.
        b'"notifications/mes',
        b'"notifications/message"',
        b"event: mess",
        b'message"}\n',
    ],
)
def test_a_matching_event_split_across_chunks_and_reads_is_still_judged(cut: bytes) -> None:
    dropped = (
        b'event: message\ndata: {"jsonrpc":"2.0",\ndata: "method":"notifications/message"}\n\n'
    )
    at = dropped.index(cut) + len(cut)
    writes = [
        _chunk(_event(b'{"jsonrpc":"2.0","method":"notifications/progress"}')),
        _chunk(dropped[:at]),
        _chunk(dropped[at:]) + _chunk(_event(_RESULT)),
    ]
    raw, payload = _sse_exchange([DROP_LOG], writes)
    assert payload == _event(b'{"jsonrpc":"2.0","method":"notifications/progress"}') + _event(
        _RESULT
    )
    assert raw.startswith(writes[0])


def test_a_chunk_cut_in_its_framing_is_judged_whole() -> None:
    # The upstream's chunk arrives in three reads: its size line, half its data, the rest.
    whole = _chunk(_event(_LOG % b"x"))
    writes = [whole[:4], whole[4:40], whole[40:], _chunk(_event(_RESULT))]
    raw, payload = _sse_exchange([DROP_LOG], writes)
    assert payload == _event(_RESULT)
    assert raw.endswith(writes[3] + b"0\r\n\r\n")  # whole again: as it came


@pytest.mark.parametrize("crlf", [1, 2])
@pytest.mark.parametrize("dropped", [True, False])
def test_a_read_ending_before_a_chunks_crlf_never_mixes_framings(crlf: int, dropped: bool) -> None:
    # The first read holds whole events but not the CRLF that closes their chunk:
    # what follows must not be put in a chunk of the relay's before the upstream's
    # chunk is closed, nor in the upstream's framing after one of the relay's.
    first = _chunk(_event(b'{"jsonrpc":"2.0","method":"notifications/progress"}'))
    then = _event(_LOG % b"x") if dropped else _event(b'{"jsonrpc":"2.0","method":"ping"}')
    writes = [first[:-crlf], first[-crlf:] + _chunk(then) + _chunk(_event(_RESULT))]
    _, payload = _sse_exchange([DROP_LOG], writes)
    expected = _event(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
    assert payload == expected + (b"" if dropped else then) + _event(_RESULT)


@pytest.mark.parametrize(
    "spelled",
    [b"notifications/m\\u0065ssage", b"notifications\\/message", b"\\u006eotifications/message"],
)
def test_an_escaped_name_that_decodes_to_the_literal_is_judged(spelled: bytes) -> None:
    escaped = _event(_LOG.replace(b"notifications/message", spelled) % b"x")
    _, payload = _sse_exchange([DROP_LOG], [_chunk(escaped), _chunk(_event(_RESULT))])
    assert payload == _event(_RESULT)


def test_an_answer_to_a_matching_request_is_judged_in_an_sse_stream() -> None:
    events = [_event(_LOG % b"log"), _event(_RESULT)]
    _, payload = _sse_exchange(
        ['corrupt truncate when tool == "echo" and direction == s2c'],
        [_chunk(e) for e in events],
    )
    # The log is no answer; the answer to the echo call is cut in half.
    data = _RESULT[: len(_RESULT) // 2]
    assert payload == events[0] + b"event: message\ndata: " + data + b"\n\n"


# --------------------------------------------------------------------------- pipelining


def _call(ident: int, tool: str) -> bytes:
    body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s"}}' % (
        ident,
        tool.encode(),
    )
    return (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )


def _result(ident: int) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{"content":[],"n":%d}}' % (ident, ident)


@dataclass
class Pipelined:
    """What a client that pipelined its requests got, and what the upstream got."""

    #: (status, payload) of each whole response, in the order they came.
    responses: list[tuple[int, bytes]]
    #: The request bodies the upstream read, in order.
    upstream_got: list[bytes]
    #: The connection was closed (or cut) before every response came.
    closed: bool
    #: Seconds from the requests to each response's end.
    times: list[float]


def _answering(
    answer_of: Callable[[bytes], bytes], got: list[bytes], *, apart: bool | str = False
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """An upstream that notes each request body in ``got`` and answers every request of
    a read at once, all answers (``answer_of`` each body) in one write; ``apart``: each
    answer's head written first, on its own, and the rest a moment later; ``"end"``:
    each chunked answer's last chunk written a moment after the rest."""

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parser = RequestParser()
        body = b""
        while data := await reader.read(65536):
            answers = b""
            for event in parser.feed(data):
                if isinstance(event, Body):
                    body += event.payload
                elif isinstance(event, End):
                    got.append(body)
                    answer = answer_of(body)
                    if apart == "end" and answer.endswith(b"\r\n0\r\n\r\n"):
                        writer.write(answers + answer[:-5])
                        await writer.drain()
                        await asyncio.sleep(0.02)
                        answer, answers = answer[-5:], b""
                    elif apart is True:
                        head, _, rest = answer.partition(b"\r\n\r\n")
                        writer.write(answers + head + b"\r\n\r\n")
                        await writer.drain()
                        await asyncio.sleep(0.02)
                        answer, answers = rest, b""
                    answers += answer
                    body = b""
            writer.write(answers)
        writer.close()

    return upstream


async def _post_all(
    port: int, batches: list[list[bytes]], wait: float
) -> tuple[list[tuple[int, bytes]], list[float], bool]:
    """POST each batch of bodies pipelined in one write, the next once all its answers
    came: each (status, payload), when each ended, and whether the connection closed
    (or was cut) first."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    parser = ResponseParser()
    responses: list[tuple[int, bytes]] = []
    times: list[float] = []
    start = time.monotonic()
    status, payload = 0, b""
    try:
        for batch in batches:
            writer.write(
                b"".join(
                    b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                    for body in batch
                )
            )
            for _ in batch:
                parser.expect("POST")
            wanted = len(responses) + len(batch)
            while len(responses) < wanted:
                try:
                    data = await asyncio.wait_for(reader.read(65536), wait)
                except TimeoutError:
                    return responses, times, False
                except ConnectionError:
                    data = b""
                for event in parser.feed(data) if data else parser.feed_eof():
                    # Only a cut connection may leave a response unfinished.
                    assert data == b"" or not isinstance(event, Malformed), event
                    if isinstance(event, ResponseHead):
                        status, payload = event.status, b""
                    elif isinstance(event, Body):
                        payload += event.payload
                    elif isinstance(event, End):
                        responses.append((status, payload))
                        times.append(time.monotonic() - start)
                if not data:
                    return responses, times, True
    finally:
        writer.close()
    return responses, times, False


def _pipelined(
    faults: list[str], calls: list[tuple[int, str]], *, sse: bool = False, wait: float = 3.0
) -> Pipelined:
    """Write ``calls`` (id, tool) as pipelined POSTs in one write to an in-process relay
    with ``faults``, in front of an upstream that answers every request it has read at
    once, all answers in one write (JSON, or a chunked SSE event each)."""
    got: list[bytes] = []

    def answer_of(body: bytes) -> bytes:
        ident = json.loads(body)["id"]
        if sse:
            data = b"event: message\ndata: " + _result(ident) + b"\n\n"
            return _SSE_HEAD + _chunk(data, b"") + b"0\r\n\r\n"
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(_result(ident)), _result(ident))
        )

    async def main() -> Pipelined:
        async with _relay_before(faults, _answering(answer_of, got)) as port:
            bodies = [_call(ident, tool).split(b"\r\n\r\n", 1)[1] for ident, tool in calls]
            responses, times, closed = await _post_all(port, [bodies], wait)
        return Pipelined(responses, list(got), closed, times)

    return asyncio.run(main())


def _answer_ids(responses: list[tuple[int, bytes]]) -> list[Any]:
    out = []
    for _, payload in responses:
        text = payload.split(b"data: ", 1)[-1] if payload.startswith(b"event:") else payload
        out.append(json.loads(text).get("id"))
    return out


THREE = [(1, "slow"), (2, "echo"), (3, "echo")]


@pytest.mark.parametrize("sse", [False, True])
def test_a_delayed_answer_keeps_the_pipelined_answers_after_it_behind_it(sse: bool) -> None:
    # The upstream answers all three at once: the first is held, the others wait behind it.
    run = _pipelined(['delay 300ms when tool == "slow" and direction == s2c'], THREE, sse=sse)
    assert [status for status, _ in run.responses] == [200, 200, 200]
    assert _answer_ids(run.responses) == [1, 2, 3]
    assert run.times[0] >= 0.29 and run.times[1] >= run.times[0]
    assert [json.loads(body)["id"] for body in run.upstream_got] == [1, 2, 3]


def test_a_delayed_request_keeps_the_pipelined_requests_after_it_behind_it() -> None:
    run = _pipelined(['delay 300ms when tool == "slow" and direction == c2s'], THREE)
    # The upstream read them in the order they were sent, the first 300 ms late.
    assert [json.loads(body)["id"] for body in run.upstream_got] == [1, 2, 3]
    assert _answer_ids(run.responses) == [1, 2, 3] and run.times[0] >= 0.29


def test_a_shorter_delay_behind_a_longer_one_waits_for_it() -> None:
    faults = ['delay 400ms when tool == "slow"', 'delay 50ms when tool == "quick"']
    run = _pipelined(faults, [(1, "slow"), (2, "quick"), (3, "echo")])
    assert [json.loads(body)["id"] for body in run.upstream_got] == [1, 2, 3]
    assert _answer_ids(run.responses) == [1, 2, 3] and run.times[0] >= 0.39


@pytest.mark.parametrize(
    ("spec", "status"),
    [('error -32000 "no" when tool == "fail"', 200), ('status 503 when tool == "fail"', 503)],
)
def test_an_answer_in_the_servers_place_waits_for_a_held_answer_before_it(
    spec: str, status: int
) -> None:
    faults = ['delay 300ms when tool == "slow" and direction == s2c', spec]
    run = _pipelined(faults, [(1, "slow"), (2, "fail"), (3, "echo")])
    assert [s for s, _ in run.responses] == [200, status, 200]
    assert _answer_ids(run.responses[:1]) == [1] and _answer_ids(run.responses[2:]) == [3]
    if status == 200:
        assert json.loads(run.responses[1][1])["error"]["message"] == "no"
    # The server never saw the call mcpsniff answered.
    assert [json.loads(body)["id"] for body in run.upstream_got] == [1, 3]


@pytest.mark.parametrize("sse", [False, True])
def test_an_answer_in_the_servers_place_between_two_answers_read_at_once(sse: bool) -> None:
    # The answers to 1 and 3 come in one read: mcpsniff's answer to 2 goes between them.
    calls = [(1, "echo"), (2, "fail"), (3, "echo")]
    run = _pipelined(['error -32000 when tool == "fail"'], calls, sse=sse)
    assert _answer_ids(run.responses) == [1, 2, 3]
    assert "error" in json.loads(run.responses[1][1])


def test_a_disconnect_after_a_held_answer_cuts_before_any_later_answer() -> None:
    faults = ['disconnect when tool == "slow" and direction == s2c']
    run = _pipelined(faults, THREE, wait=2.0)
    # Half of the first answer, then the cut: nothing of the second or third.
    assert run.closed and run.responses == []


def test_a_dropped_request_lets_no_later_answer_pass_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("mcpsniff.intercept.http_faults.DROP_HOLD", 0.4)
    run = _pipelined(['drop when tool == "slow" and direction == c2s'], THREE, wait=2.0)
    # Answers 2 and 3 came from the upstream, but never before one to 1: the cut first.
    assert run.closed and run.responses == []
    assert [json.loads(body)["id"] for body in run.upstream_got] == [2, 3]


def test_a_request_split_in_pieces_reaches_the_upstream_before_the_next() -> None:
    run = _pipelined(['corrupt split when tool == "slow"'], THREE)
    assert [json.loads(body)["id"] for body in run.upstream_got] == [1, 2, 3]
    assert _answer_ids(run.responses) == [1, 2, 3]


# --------------------------------------------------------------------------- fast path, exact

_NOTE = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"n"}}'
#: A server asking the client, and a hostile server sending what only a client sends.
_ASK = b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}'
_WRONG_WAY = b'{"jsonrpc":"2.0","id":"s2","method":"tools/call","params":{"name":"echo"}}'


def _answer_of(body: bytes, sse: bool) -> bytes:
    """The upstream's whole response to one request body (JSON, or SSE events)."""
    message = json.loads(body)
    if "id" not in message:
        return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    ident = json.dumps(message["id"]).encode()
    tool = (message.get("params") or {}).get("name", "")
    if tool == "bad":
        last = b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}' % ident
    elif tool == "fail":
        last = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[],"isError":true}}' % ident
    else:
        last = b'{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}' % ident
    if not sse:
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(last), last)
        )
    events = [_NOTE, _ASK, _WRONG_WAY, last] if tool == "stream" else [last]
    chunks = b"".join(_chunk(b"event: message\ndata: " + e + b"\n\n", b"") for e in events)
    return _SSE_HEAD + chunks + b"0\r\n\r\n"


#: What the client sends: requests of several kinds and tools, a notification, a
#: response to the server, a name spelt with an escape.
_TRAFFIC = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}',
    b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"stream"}}',
    b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fail"}}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"bad"}}',
    b'{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant"}}',
    b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"\\u0065cho"}}',
    b'{"jsonrpc":"2.0","id":7,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo"}}',
]


def _through(
    faults: list[str], *, sse: bool, pipelined: bool, every: bool, apart: bool | str = False
) -> tuple[list[tuple[int, bytes]], list[bytes], list[dict[str, Any]]]:
    """``_TRAFFIC`` through an in-process relay with ``faults``: the (status, payload)
    of each response, the bodies the upstream read, and the fault records. ``every``:
    no fast path, every message read and every response taken over at its head.
    ``apart``: the upstream writes each response's head on its own (``"end"``: each
    chunked response's last chunk)."""
    import mcpsniff.intercept.http_faults as module

    records: list[dict[str, Any]] = []
    got: list[bytes] = []

    class Recorded(module.ExchangeFaults):
        def __init__(self, faults: list[Any], *, verbatim: bool = False) -> None:
            super().__init__(faults, verbatim=verbatim)
            if every:
                self.engine.needles = None
                self.engine.watched = frozenset({"c2s", "s2c"})

        def tell(self, sink: Any, number: int, injection: Any, marks: Any, **extra: Any) -> None:
            record = dict(extra, marks=marks, fault=injection.index, count=injection.count)
            record.pop("held_ms", None)
            records.append(record)
            super().tell(sink, number, injection, marks, **extra)

    def answer_of(body: bytes) -> bytes:
        try:
            return _answer_of(body, sse)
        except ValueError:
            return b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"

    async def main() -> list[tuple[int, bytes]]:
        original = module.ExchangeFaults
        module.ExchangeFaults = Recorded  # type: ignore[misc]
        module.FaultedClientSide.screens = not every
        try:
            async with _relay_before(faults, _answering(answer_of, got, apart=apart)) as port:
                module.ExchangeFaults = original  # type: ignore[misc]
                batches = [_TRAFFIC] if pipelined else [[body] for body in _TRAFFIC]
                responses, _, _ = await _post_all(port, batches, 1.0)
        finally:
            module.ExchangeFaults = original  # type: ignore[misc]
            module.FaultedClientSide.screens = True
        return responses

    responses = asyncio.run(main())
    return responses, got, records


#: Faults over the filter language's fields, alone and combined; each matches something
#: of ``_TRAFFIC`` (or, the last ones, nothing).
_DIFFERENTIAL = [
    'corrupt truncate when tool == "echo"',
    'drop when tool == "echo" and direction == s2c times 1 after 1',
    "error -32000 when method == tools/list",
    'tool-error "x" when tool == "fail"',
    "status 503 when method == ping",
    "corrupt pretty when method == sampling/createMessage",
    'corrupt banner when method == tools/call and direction == s2c and tool == "echo"',
    "corrupt trailing-comma when method == notifications/message",
    "drop when method == notifications/progress",
    'delay 10ms when tool == "stream" or method == ping',
    "corrupt truncate when kind == response and direction == c2s",
    "corrupt truncate when kind == request and direction == s2c",
    "corrupt invalid-utf8 when error.code == -32601",
    "corrupt truncate when error.type == tool_error",
    "corrupt truncate when id == 3 and direction == s2c",
    "corrupt truncate when direction == c2s and seq > 4",
    'corrupt truncate when not tool == "echo" and kind == request',
    'corrupt truncate when "assistant"',
    'corrupt truncate when id == "s1"',
    "duplicate when kind == notification and direction == s2c",
    'corrupt truncate when tool == "echo" or tool == "stream" prob 0.5 seed 3',
    'delay 10ms when tool == "nothing-has-this-name"',
    "drop when method == nothing/here and direction == c2s",
]


@pytest.mark.parametrize("spec", _DIFFERENTIAL)
@pytest.mark.parametrize(
    ("sse", "pipelined", "apart"),
    [
        (False, False, False),
        (True, False, False),
        (True, True, False),
        (True, False, True),
        (False, False, True),
        (True, False, "end"),
        (True, True, "end"),
    ],
)
def test_the_fast_paths_deliver_and_record_what_reading_everything_does(
    spec: str, sse: bool, pipelined: bool, apart: bool | str
) -> None:
    # ``apart``: each head comes alone, so the fast path screens an SSE stream piece by
    # piece, and has a JSON head wait for its body, where the reference takes both
    # over at their heads; ``"end"``: a stream's head comes with its first piece, and
    # its end alone.
    fast = _through([spec], sse=sse, pipelined=pipelined, every=False, apart=apart)
    slow = _through([spec], sse=sse, pipelined=pipelined, every=True, apart=apart)
    assert fast[0] == slow[0]  # what the client got
    assert fast[1] == slow[1]  # what the upstream got
    assert fast[2] == slow[2]  # what the trace says mcpsniff did
    if sse:
        # Each fault that can match something did (the rest must match nothing).
        assert bool(fast[2]) == ("nothing" not in spec)


# --------------------------------------------------------------------------- the path taken

_PROGRESS = _event(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
_LOGGED = _event(_LOG % b"x")


def _head_alone(
    specs: list[str], answer: list[bytes], *, settle: float = 0.0
) -> tuple[FaultedClientSide, bytes, list[tuple[str, int, bool]]]:
    """A ``tools/call`` of ``echo`` through a ``FaultedClientSide`` with ``specs``, whose
    response comes as reads of ``answer`` (the first, its head alone): what the
    client got, and after each read the connection's class, the responses taken over
    so far and whether the client's connection was cut."""

    async def main() -> tuple[FaultedClientSide, bytes, list[tuple[str, int, bool]]]:
        connection, client, upstream_wire, upstream = _faulted_connection(*specs)
        steps = []
        connection.data_received(_post(_CALL))
        assert upstream_wire.take() == _post(_CALL)
        for read in answer:
            upstream.data_received(read)
            steps.append((type(connection).__name__, connection.faults.taken_over, client.aborted))
            await asyncio.sleep(settle)
        return connection, client.take(), steps

    return asyncio.run(main())


_SSE_ANSWER = [_SSE_HEAD, _chunk(_PROGRESS), _chunk(_event(_RESULT)), b"0\r\n\r\n"]


@pytest.mark.parametrize(
    "spec",
    [
        'delay 1s when tool == "nothing-has-this-name"',
        NO_MATCH,
        'corrupt truncate when tool == "nothing-has-this-name" and direction == s2c',
        "disconnect when method == nothing/here and direction == c2s",
    ],
)
def test_an_sse_answer_whose_head_comes_alone_is_never_taken_over_when_nothing_matches(
    spec: str,
) -> None:
    connection, got, steps = _head_alone([spec], _SSE_ANSWER)
    # The head, then each read as it came (the upstream's framing too), and at no
    # point a fault under way on the connection.
    assert got == b"".join(_SSE_ANSWER)
    assert steps == [("FaultedClientSide", 0, False)] * 4
    assert not connection.exchanges and connection.faults.engine._seq == 0


@pytest.mark.parametrize("cut", [0, 1, 20])
def test_a_json_answer_whose_head_comes_alone_waits_for_its_body_and_passes_as_it_came(
    cut: int,
) -> None:
    # Its head alone (and maybe part of its body), then the rest: the head waits for
    # the whole body, which the byte search clears: the answer goes on as it came.
    head, _, body = _JSON_RESPONSE.partition(b"\r\n\r\n")
    reads = [head + b"\r\n\r\n" + body[:cut], body[cut:]]
    connection, got, steps = _head_alone([NO_MATCH], reads)
    assert got == _JSON_RESPONSE
    assert steps == [("FaultedClientSide", 0, False)] * 2
    assert not connection.exchanges and connection.faults.engine._seq == 0


def test_a_json_answer_waiting_for_its_body_is_recorded_when_the_client_leaves() -> None:
    connection, client, _, upstream = _faulted_connection(NO_MATCH)
    connection.data_received(_post(_CALL))
    head = _JSON_RESPONSE.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"
    upstream.data_received(head + _ANSWER[:10])
    assert client.take() == b""  # waits for the rest of its body
    connection.connection_lost(None)
    # As a response taken over at its head would be: its head, no body judged yet.
    seen = connection.relay.observations  # type: ignore[attr-defined]
    kinds = [(type(o).__name__, getattr(o, "status", None)) for o in seen]
    assert kinds[-2:] == [("ResponseBegin", 200), ("ExchangeEnd", None)]
    assert seen[-1].outcome == "client-disconnected"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("action", "cut"),
    [("corrupt truncate", False), ("delay 20ms", False), ("drop", True), ("disconnect", True)],
)
def test_a_matching_json_answer_whose_head_came_alone_is_judged(action: str, cut: bool) -> None:
    head, _, body = _JSON_RESPONSE.partition(b"\r\n\r\n")
    connection, got, steps = _head_alone(
        [f"{action} when id == 3 and direction == s2c"],
        [head + b"\r\n\r\n", body[:5], body[5:]],
        settle=0.05,
    )
    expected = {"corrupt truncate": _ANSWER[: len(_ANSWER) // 2], "delay 20ms": _ANSWER}
    assert _payload(got) == expected.get(action, b"" if action == "drop" else _ANSWER[:18])
    assert steps[-1][1:] == (1, cut)
    assert connection.faults.engine._seq == 1


def test_a_request_no_fault_can_match_is_neither_read_nor_held() -> None:
    connection, client, upstream_wire, upstream = _faulted_connection(
        'error -32001 "nope" when tool == "nothing-has-this-name"'
    )
    connection.data_received(_post(_CALL))
    assert upstream_wire.take() == _post(_CALL)
    upstream.data_received(_JSON_RESPONSE)
    assert client.take() == _JSON_RESPONSE
    assert type(connection) is FaultedClientSide and connection.faults.engine._seq == 0
    assert connection.faults.taken_over == 0


def _payload(raw: bytes) -> bytes:
    """The body the client could read of ``raw`` (a response, maybe cut off)."""
    parser = ResponseParser()
    parser.expect("POST")
    return b"".join(e.payload for e in parser.feed(raw) if isinstance(e, Body))


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("drop", _PROGRESS + _event(_RESULT)),
        (
            "corrupt truncate",
            _PROGRESS
            + b"event: message\ndata: "
            + (_LOG % b"x")[: len(_LOG % b"x") // 2]
            + b"\n\n"
            + _event(_RESULT),
        ),
        ("duplicate", _PROGRESS + _LOGGED * 2 + _event(_RESULT)),
        ("delay 20ms", _PROGRESS + _LOGGED + _event(_RESULT)),
        ("disconnect", _PROGRESS + _LOGGED[: len(_LOGGED) // 2]),
    ],
)
def test_a_matching_event_is_judged_in_a_stream_whose_head_came_alone(
    action: str, expected: bytes
) -> None:
    answer = [_SSE_HEAD, _chunk(_PROGRESS), _chunk(_LOGGED), _chunk(_event(_RESULT)), b"0\r\n\r\n"]
    connection, got, steps = _head_alone(
        [f'{action} when method == "notifications/message"'], answer, settle=0.05
    )
    assert _payload(got) == expected
    # Forwarded as it came up to the event a fault matches; taken over there.
    assert got.startswith(_SSE_HEAD + _chunk(_PROGRESS))
    assert steps[:2] == [("FaultedClientSide", 0, False)] * 2
    assert steps[2][1] == 1
    cut = action == "disconnect"
    assert steps[-1] == (("HookedClientSide" if cut else "FaultedClientSide"), 1, cut)
    assert connection.faults.engine._seq == 1  # the one event read


@pytest.mark.parametrize(
    ("spec", "status", "body"),
    [
        ("status 503 when tool == echo", 503, b"mcpsniff: injected HTTP 503\n"),
        (
            'error -32001 "nope" when tool == echo',
            200,
            b'{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"nope"}}',
        ),
    ],
)
def test_an_answer_in_the_servers_place_still_fires_beside_screened_streams(
    spec: str, status: int, body: bytes
) -> None:
    connection, client, upstream_wire, upstream = _faulted_connection(spec)
    ping = b'{"jsonrpc":"2.0","id":4,"method":"ping"}'
    connection.data_received(_post(ping))
    upstream.data_received(_SSE_HEAD)
    assert type(connection) is FaultedClientSide and connection.faults.taken_over == 0
    connection.data_received(_post(_CALL))  # answered once the stream before it ended
    assert upstream_wire.take() == _post(ping)
    upstream.data_received(_chunk(_event(_RESULT)) + b"0\r\n\r\n")
    parser = ResponseParser()
    parser.expect("POST")
    parser.expect("POST")
    events = parser.feed(client.take())
    heads = [e.status for e in events if isinstance(e, ResponseHead)]
    bodies = b"".join(e.payload for e in events if isinstance(e, Body))
    assert heads == [200, status]
    assert bodies == _event(_RESULT) + body
    # The call the fault answered is in flight for the engine (its id could be
    # answered on any stream): the stream was taken over at its event, to be read.
    assert connection.faults.taken_over == 1 and not connection.exchanges


@pytest.mark.parametrize(
    "head",
    [
        _SSE_HEAD.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"),
        _SSE_HEAD.replace(b"200 OK", b"201 Created"),
        _SSE_HEAD.replace(b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip, chunked"),
    ],
)
def test_a_stream_fault_never_judges_passes_unread_even_where_a_fault_would_match(
    head: bytes,
) -> None:
    # Screened like any stream; at the event a fault matches it proves to be no
    # response --fault judges (compressed, not 200, a coding of its own): unread.
    answer = [head, _chunk(_PROGRESS), _chunk(_LOGGED), b"0\r\n\r\n"]
    connection, got, steps = _head_alone([DROP_LOG], answer)
    assert got == b"".join(answer)
    assert steps == [("FaultedClientSide", 0, False)] * 4
    assert connection.faults.engine._seq == 0


# --------------------------------------------------------------------------- the inline search

_NOTHING = 'delay 1s when tool == "nothing-has-this-name"'


def _asked_of_could_match(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The blocks ``FaultEngine.could_match`` is asked about from now on (it still answers)."""
    asked: list[bytes] = []
    real = FaultEngine.could_match

    def counted(engine: FaultEngine, block: bytes, direction: str) -> bool:
        asked.append(block)
        return real(engine, block, direction)

    monkeypatch.setattr(FaultEngine, "could_match", counted)
    return asked


def _exchanges_through(connection: Any, upstream: Any, upstream_wire: Wire, client: Wire) -> None:
    """A JSON answer, then an SSE one, each in one read: each as it came."""
    for answer in ([_JSON_RESPONSE], [_SSE_HEAD + _chunk(_event(_RESULT)) + b"0\r\n\r\n"]):
        connection.data_received(_post(_CALL))
        assert upstream_wire.take() == _post(_CALL)
        for read in answer:
            upstream.data_received(read)
        assert client.take() == b"".join(answer)
    assert type(connection) is FaultedClientSide and connection.faults.taken_over == 0


def test_what_the_inline_search_clears_passes_without_asking_could_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One needle, no backslash, nothing in flight: ``_begin`` and ``response_events``
    # (a whole response in one read, the commonest) decide without a call.
    connection, client, upstream_wire, upstream = _faulted_connection(_NOTHING)
    asked = _asked_of_could_match(monkeypatch)
    _exchanges_through(connection, upstream, upstream_wire, client)
    assert asked == []


_BACKSLASHED = _CALL.replace(b'"echo"', b'"ec\\nho"')


@pytest.mark.parametrize(
    ("specs", "call", "expected"),
    [
        # More than one name to search for: could_match searches for each, both ways.
        ([_NOTHING, 'delay 1s when tool == "nor-this-one"'], _CALL, [_CALL, _ANSWER]),
        # A backslash that spells no name (``\n``): could_match looks further.
        ([_NOTHING], _BACKSLASHED, [_BACKSLASHED]),
    ],
)
def test_what_the_inline_search_cannot_clear_is_asked_of_could_match(
    monkeypatch: pytest.MonkeyPatch, specs: list[str], call: bytes, expected: list[bytes]
) -> None:
    connection, client, upstream_wire, upstream = _faulted_connection(*specs)
    asked = _asked_of_could_match(monkeypatch)
    connection.data_received(_post(call))
    assert upstream_wire.take() == _post(call)
    upstream.data_received(_JSON_RESPONSE)
    assert client.take() == _JSON_RESPONSE
    assert asked == expected
    assert connection.faults.engine._seq == 0 and connection.faults.taken_over == 0


def test_an_answer_to_a_request_a_fault_named_is_asked_of_could_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The request names the tool (read, no fault fires: its filter wants s2c); its
    # answer holds no name, but answers a request in flight: the engine judges it.
    connection, client, upstream_wire, upstream = _faulted_connection(
        'corrupt truncate when tool == "echo" and direction == s2c'
    )
    asked = _asked_of_could_match(monkeypatch)
    connection.data_received(_post(_CALL))
    assert upstream_wire.take() == _post(_CALL)
    upstream.data_received(_JSON_RESPONSE)
    assert asked[0] == _CALL and asked[-1] == _ANSWER  # (judging asks again)
    assert _payload(client.take()) == _ANSWER[: len(_ANSWER) // 2]
    assert connection.faults.taken_over == 1


@pytest.mark.parametrize(
    ("spec", "held"), [(_NOTHING, True), ("drop when direction == s2c", False)]
)
def test_a_request_is_held_to_its_end_only_where_a_fault_may_judge_requests(
    spec: str, held: bool
) -> None:
    connection, _, upstream_wire, _ = _faulted_connection(spec)
    assert connection.holds is held
    request = _post(_CALL)
    head_length = request.index(b"\r\n\r\n") + 4
    connection.data_received(request[:head_length])
    assert upstream_wire.take() == (b"" if held else request[:head_length])
    connection.data_received(request[head_length:])
    # Held: the whole request once its end came.
    assert upstream_wire.take() == (request if held else request[head_length:])


def test_a_held_request_whose_upstream_proved_unreachable_meanwhile_is_answered_502() -> None:
    # ``_begin`` notes a cleared request inline, but not one with something to do
    # beside: here, the 502 ``_unreachable`` marked it for while its body came.
    connection, client, _, _ = _faulted_connection(_NOTHING)
    request = _post(_CALL)
    head_length = request.index(b"\r\n\r\n") + 4
    connection.data_received(request[:head_length])
    connection.exchanges[0].unreachable = "connection refused"
    connection.data_received(request[head_length:])
    assert client.take().startswith(b"HTTP/1.1 502 ")
    assert not connection.exchanges


@pytest.mark.parametrize(
    "reads",
    [
        [_SSE_HEAD + _chunk(_event(_RESULT)), b"0\r\n\r\n"],
        [_SSE_HEAD, _chunk(_event(_RESULT)), b"0\r\n\r\n"],
    ],
    ids=["head-and-piece-then-end", "each-alone"],
)
def test_a_stream_read_in_pieces_no_fault_can_match_never_goes_through_prepare(
    monkeypatch: pytest.MonkeyPatch, reads: list[bytes]
) -> None:
    # What the upstream of bench_http_relay.py's concurrent clients sends a loaded
    # relay: head, event and last chunk, read in two or three reads. ``_alone`` passes
    # each as the relay's own would, without ``_prepare``'s loop.
    connection, client, upstream_wire, upstream = _faulted_connection(_NOTHING)
    monkeypatch.setattr(FaultedClientSide, "_prepare", lambda *_: pytest.fail("_prepare"))
    connection.data_received(_post(_CALL))
    assert upstream_wire.take() == _post(_CALL)
    for read in reads:
        upstream.data_received(read)
    assert client.take() == b"".join(reads)
    assert not connection.exchanges and type(connection) is FaultedClientSide
    assert connection.faults.taken_over == 0
