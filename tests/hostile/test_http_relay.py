"""Hostile traffic through the HTTP relay: smuggling, floods, stalls, resets, lies.

Every case runs the real ``HttpRelay`` (recording in-process to a real trace
file) in front of real servers (h11 and aiohttp, see ``hostile_peers``), on
uvloop as ``mcpsniff http`` does, and asserts what docs/architecture.md, invariant 6
asks: the upstream never sees a request the trace lacks, the client never
gets another request's response, nothing hangs (every wait is bounded), no
task exception is left unretrieved, and ``mcpsniff check`` reads the trace.
Where a case is an attack on a lenient server, it is also sent directly, to
show that the attack is real.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mcpsniff.cli import main as cli_main
from mcpsniff.core.model import EventRecord, Record
from mcpsniff.relay.http import HttpOptions, HttpRelay, bind, parse_listen
from mcpsniff.trace.reader import TraceReader
from mcpsniff.trace.writer import TraceWriter
from tests.relay.hostile_peers import (
    BOUND,
    AiohttpUpstream,
    H11Upstream,
    LoopErrors,
    ScriptedUpstream,
    exchange_raw,
    read_head,
    reset,
    statuses,
)

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
    uvloop = None  # type: ignore[assignment]


def run(coro: Awaitable[Any]) -> Any:
    """Run on uvloop when installed (as the CLI does): its transports raise where asyncio's log."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 6 * BOUND)

    if uvloop is not None:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(bounded())
    return asyncio.run(bounded())


@dataclass
class Relayed:
    """What one relay run recorded."""

    records: list[Record]
    path: Path
    errors: list[str]

    def events(self, name: str) -> list[EventRecord]:
        return [r for r in self.records if isinstance(r, EventRecord) and r.event == name]

    def targets(self) -> list[str]:
        return [e.data["path"] for e in self.events("http-request")]

    def outcomes(self) -> list[str]:
        return [e.data["outcome"] for e in self.events("http-end")]

    def refused(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events("http-refused")]


async def through_relay(
    upstream_port: int,
    talk: Callable[[int], Awaitable[Any]],
    tmp_path: Path,
    **options: Any,
) -> tuple[Any, Relayed]:
    """Run ``talk(relay_port)`` through a relay to ``upstream_port``; its result and the trace."""
    errors = LoopErrors()
    errors.install()
    path = tmp_path / f"trace-{len(list(tmp_path.glob('trace-*')))}.jsonl"
    writer = TraceWriter.create(path)
    opts = HttpOptions(upstream=f"http://127.0.0.1:{upstream_port}/mcp", port=0, **options)
    relay = HttpRelay(opts, writer)
    await relay.start()
    try:
        result = await talk(relay.port or 0)
        await asyncio.sleep(0.05)
    finally:
        await relay.stop()  # ends the sessions and closes the writer
    gc.collect()
    await asyncio.sleep(0)
    with TraceReader(path) as reader:
        records = list(reader.records())
        assert reader.torn is None
    return result, Relayed(records, path, errors.problems())


def assert_trustworthy(relayed: Relayed, seen: list[Any]) -> None:
    """Every request the upstream saw is in the trace; no loop error; check reads the trace."""
    recorded = relayed.targets()
    for request in seen:
        assert request.target in recorded, (request, recorded)
    assert relayed.errors == []
    result = CliRunner().invoke(cli_main, ["check", str(relayed.path)])
    assert result.exit_code in (0, 1), result.output


# --------------------------------------------------------------------------- smuggling

HIDDEN = b"GET /hidden HTTP/1.1\r\nHost: h\r\n\r\n"
CHUNKED = b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"

SMUGGLING = {
    # The trailer section ends with bare LFs: h11 ends it there, and reads what
    # follows as a request of its own.
    "bare-lf-trailer": CHUNKED + b"\r\n0\r\nX: y\n\n" + HIDDEN,
    "bare-lf-empty-trailer": CHUNKED + b"\r\n0\r\n\n" + HIDDEN,
    "cl-te": b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HIDDEN,
    "te-cl": CHUNKED + b"Content-Length: 40\r\n\r\n0\r\n\r\n" + HIDDEN,
    "duplicate-cl": b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n"
    b"Content-Length: 33\r\n\r\n" + HIDDEN,
    "repeated-cl": b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n"
    b"Content-Length: 2\r\n\r\n{}" + HIDDEN,
    "obs-fold-te": b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
    b"0\r\n\r\n" + HIDDEN,
    "space-before-colon": b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n"
    b"0\r\n\r\n" + HIDDEN,
    "vt-in-te": b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\x0b\r\n\r\n"
    b"0\r\n\r\n" + HIDDEN,
    "nbsp-in-te": b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \xc2\xa0chunked\r\n\r\n"
    b"0\r\n\r\n" + HIDDEN,
    "chunked-twice": b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n"
    b"\r\n0\r\n\r\n" + HIDDEN,
    "chunk-size-overflow": CHUNKED + b"\r\n10000000000000001\r\nx\r\n0\r\n\r\n" + HIDDEN,
    "cr-in-chunk-ext": CHUNKED + b"\r\n1;a=\rb\r\nx\r\n0\r\n\r\n" + HIDDEN,
    "lf-chunk-line": CHUNKED + b"\r\n1\nx\r\n0\r\n\r\n" + HIDDEN,
    "nul-in-header": b"GET /mcp HTTP/1.1\r\nHost: h\r\nX-A: a\x00b\r\n\r\n" + HIDDEN,
    "cr-in-header": b"GET /mcp HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n" + HIDDEN,
    "bare-lf-head": b"GET /mcp HTTP/1.1\nHost: h\n\n" + HIDDEN,
    "te-in-http10": b"POST /mcp HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"0\r\n\r\n" + HIDDEN,
    "absolute-form": b"GET http://other.example/hidden HTTP/1.1\r\nHost: h\r\n\r\n",
    "connect": b"CONNECT other.example:443 HTTP/1.1\r\nHost: other.example:443\r\n\r\n",
    "tls-bytes": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 40,
    "huge-head": b"GET /mcp HTTP/1.1\r\nHost: h\r\nX-Big: " + b"a" * (400 << 10) + b"\r\n\r\n",
}


@pytest.mark.parametrize("server", ["h11", "aiohttp"])
@pytest.mark.parametrize("case", sorted(SMUGGLING))
def test_smuggling_never_passes_the_recorder(case: str, server: str, tmp_path: Path) -> None:
    attack = SMUGGLING[case]

    async def scenario() -> tuple[bytes, Relayed, list[Any]]:
        upstream = H11Upstream() if server == "h11" else AiohttpUpstream()
        await upstream.start()
        try:
            answer, relayed = await through_relay(
                upstream.port, lambda port: exchange_raw(port, attack), tmp_path
            )
        finally:
            await upstream.stop()
        return answer, relayed, upstream.seen

    answer, relayed, seen = run(scenario())
    assert_trustworthy(relayed, seen)
    assert not any(s.target.endswith("/hidden") for s in seen), seen
    # The client is answered (400) or the connection closed; never with another
    # request's response, and never with a response to the hidden request.
    assert b"/hidden" not in answer
    assert statuses(answer) in ([], [400]), answer[:300]
    # What was refused is in the trace: the request (when its head parsed) or a refusal.
    assert relayed.refused() or any(o.startswith("bad-request") for o in relayed.outcomes())


def test_the_bare_lf_trailer_attack_is_real_against_h11_directly() -> None:
    """Sent straight to h11, the hidden request is served: the relay must refuse it."""

    async def scenario() -> list[Any]:
        upstream = H11Upstream()
        await upstream.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", upstream.port)
        try:
            writer.write(SMUGGLING["bare-lf-trailer"])
            await asyncio.wait_for(reader.readuntil(b"/hidden"), BOUND)
        finally:
            writer.close()
            await upstream.stop()
        return upstream.seen

    seen = run(scenario())
    assert [s.target for s in seen] == ["/mcp", "/hidden"]


def test_after_the_attack_the_next_connection_is_served(tmp_path: Path) -> None:
    """A refusal closes one connection, and nothing desynchronizes the next one."""

    async def scenario() -> tuple[list[bytes], Relayed, list[Any]]:
        upstream = H11Upstream()
        await upstream.start()

        async def talk(port: int) -> list[bytes]:
            first = await exchange_raw(port, SMUGGLING["bare-lf-trailer"])
            second = await exchange_raw(
                port, b"GET /next HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
            )
            return [first, second]

        try:
            answers, relayed = await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()
        return answers, relayed, upstream.seen

    (first, second), relayed, seen = run(scenario())
    # The head went on before its trailer showed the attack: the connection is cut.
    assert statuses(first) in ([], [400])
    assert statuses(second) == [200] and second.endswith(b"/next")
    assert [s.target for s in seen] == ["/mcp", "/next"]  # the cut one, recorded
    assert_trustworthy(relayed, seen)


# --------------------------------------------------------------------------- upstream trouble


def test_an_unrequested_second_response_closes_that_upstream_connection(tmp_path: Path) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await read_head(reader)
            target = head.split(b" ")[1]
            one = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(target), target)
            writer.write(one + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nextra")
            await writer.drain()

    async def scenario() -> tuple[bytes, Relayed, int]:
        upstream = ScriptedUpstream(script)
        await upstream.start()
        request = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        last = b"GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"

        async def talk(port: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            first = await asyncio.wait_for(reader.readuntil(b"/a"), BOUND)
            await asyncio.sleep(0.1)  # the extra response arrives meanwhile
            writer.write(last)
            rest = await asyncio.wait_for(reader.read(), BOUND)
            writer.close()
            return first + rest

        try:
            answer, relayed = await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()
        return answer, relayed, upstream.connections

    answer, relayed, connections = run(scenario())
    assert statuses(answer) == [200, 200]
    assert answer.endswith(b"/b") and b"extra" not in answer
    assert connections == 2  # the spoiled connection was replaced
    assert [r["kind"] for r in relayed.refused()] == ["upstream-unrequested"] * 2
    assert relayed.errors == []


def test_an_upstream_that_resets_at_once_never_leaves_a_request_hanging(tmp_path: Path) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reset(writer)

    async def scenario() -> tuple[list[bytes], Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()
        request = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"

        async def talk(port: int) -> list[bytes]:
            return list(await asyncio.gather(*(exchange_raw(port, request) for _ in range(60))))

        try:
            answers, relayed = await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()
        return answers, relayed

    answers, relayed = run(scenario())
    # Each one ends in a response (502: nothing reached the server) or a closed connection.
    for answer in answers:
        assert statuses(answer) in ([], [502])
    assert len(relayed.outcomes()) == 60
    assert relayed.errors == []


def test_an_upstream_pointing_at_the_proxy_itself_is_refused_at_start() -> None:
    async def scenario() -> str:
        sock = bind("127.0.0.1", 0)
        port = sock.getsockname()[1]
        relay = HttpRelay(HttpOptions(upstream=f"http://localhost:{port}/mcp", port=port), None)
        with pytest.raises(ValueError) as raised:
            await relay.start(sock)
        return str(raised.value)

    assert "this proxy itself" in run(scenario())


def test_pipelined_requests_see_a_close_when_the_upstream_closes(tmp_path: Path) -> None:
    """No 502 a client would not retry: the connection closes, as a direct one would."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        await asyncio.sleep(0.1)  # the second request is in by now
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n/a")
        await writer.drain()

    async def scenario() -> tuple[bytes, Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()
        both = b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n"
        try:
            answer, relayed = await through_relay(
                upstream.port, lambda port: exchange_raw(port, both), tmp_path
            )
        finally:
            await upstream.stop()
        return answer, relayed

    answer, relayed = run(scenario())
    assert statuses(answer) == [200]
    assert answer.endswith(b"/a")
    outcomes = relayed.outcomes()
    assert outcomes[0] == "complete"
    assert outcomes[1].startswith("upstream-closed")
    assert relayed.errors == []


def test_http10_keep_alive_client_is_served_twice_on_one_connection(tmp_path: Path) -> None:
    async def scenario() -> tuple[bytes, Relayed, list[Any]]:
        upstream = AiohttpUpstream()
        await upstream.start()

        async def talk(port: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            received = b""
            for target in (b"/one", b"/two"):
                writer.write(b"GET %s HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" % target)
                received += await asyncio.wait_for(reader.readuntil(target), BOUND)
            writer.close()
            return received

        try:
            answer, relayed = await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()
        return answer, relayed, upstream.seen

    answer, relayed, seen = run(scenario())
    assert statuses(answer) == [200, 200]
    assert answer.count(b"Connection: keep-alive") == 2
    assert [s.target for s in seen] == ["/one", "/two"]
    assert_trustworthy(relayed, seen)


def test_an_unrequested_101_closes_the_client_connection(tmp_path: Path) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_head(reader)
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\nraw bytes")
        await writer.drain()
        await asyncio.sleep(2 * BOUND)  # and keeps the connection open

    async def scenario() -> tuple[bytes, Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()
        request = b"GET /mcp HTTP/1.1\r\nHost: h\r\n\r\n"
        try:
            answer, relayed = await through_relay(
                upstream.port, lambda port: exchange_raw(port, request), tmp_path
            )
        finally:
            await upstream.stop()
        return answer, relayed

    answer, relayed = run(scenario())
    assert b"raw bytes" not in answer
    assert relayed.outcomes() == ["upstream-error: unrequested 101 Switching Protocols"]


# --------------------------------------------------------------------------- clients


def test_a_client_that_disconnects_mid_body_is_recorded(tmp_path: Path) -> None:
    async def scenario() -> tuple[Relayed, list[Any]]:
        upstream = AiohttpUpstream()
        await upstream.start()

        async def talk(port: int) -> None:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n")
            writer.write(b"x" * 100_000)
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.close()

        try:
            _, relayed = await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()
        return relayed, upstream.seen

    relayed, seen = run(scenario())
    assert [s.target for s in seen] == ["/mcp"]
    assert relayed.targets() == ["/mcp"]
    (cut,) = relayed.events("http-request-cut")
    assert cut.data["body_bytes"] == 100_000
    assert relayed.outcomes() == ["client-disconnected mid-body"]
    assert relayed.errors == []


def test_a_slow_head_gets_408_and_is_recorded(tmp_path: Path) -> None:
    async def scenario() -> tuple[bytes, Relayed]:
        upstream = AiohttpUpstream()
        await upstream.start()

        async def talk(port: int) -> bytes:
            # Slowloris: a head that never ends, a byte now and then.
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /mcp HTTP/1.1\r\nHost: h\r\n")
            received = b""
            with contextlib.suppress(ConnectionError):
                for _ in range(200):
                    try:
                        received = await asyncio.wait_for(reader.read(65536), 0.05)
                        break
                    except TimeoutError:
                        writer.write(b"X")
                received += await asyncio.wait_for(reader.read(), BOUND)
            writer.close()
            return received

        try:
            answer, relayed = await through_relay(upstream.port, talk, tmp_path, head_timeout=0.5)
        finally:
            await upstream.stop()
        return answer, relayed

    answer, relayed = run(scenario())
    assert statuses(answer) == [408]
    assert [r["kind"] for r in relayed.refused()] == ["head-timeout"]


def test_idle_and_stalled_connections_are_closed(tmp_path: Path) -> None:
    async def scenario() -> tuple[bytes, bytes, Relayed]:
        upstream = AiohttpUpstream()
        await upstream.start()

        async def talk(port: int) -> tuple[bytes, bytes]:
            idle = await exchange_raw(port, b"GET /idle HTTP/1.1\r\nHost: h\r\n\r\n")
            stalled = await exchange_raw(
                port, b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"
            )
            return idle, stalled

        try:
            (idle, stalled), relayed = await through_relay(
                upstream.port, talk, tmp_path, idle_timeout=0.5
            )
        finally:
            await upstream.stop()
        return idle, stalled, relayed

    idle, stalled, relayed = run(scenario())
    assert statuses(idle) == [200]  # then closed once idle
    assert stalled == b""
    assert relayed.outcomes() == ["complete", "client-idle-timeout mid-body"]


def test_a_request_body_over_the_capture_limit_is_forwarded_and_recorded_as_a_gap(
    tmp_path: Path,
) -> None:
    size = 5 << 20

    async def scenario() -> tuple[bytes, Relayed, list[Any]]:
        upstream = AiohttpUpstream()
        await upstream.start()
        head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
        try:
            answer, relayed = await through_relay(
                upstream.port,
                lambda port: exchange_raw(port, head % size + b"[" * size),
                tmp_path,
                capture_limit=1 << 20,
            )
        finally:
            await upstream.stop()
        return answer, relayed, upstream.seen

    answer, relayed, seen = run(scenario())
    assert statuses(answer) == [200]
    assert [(s.target, s.body_bytes) for s in seen] == [("/mcp", size)]
    (gap,) = relayed.events("capture-gap")
    assert gap.data["lost_bytes"] == size and gap.data["direction"] == "c2s"
    (response,) = relayed.events("http-response")
    assert response.data["status"] == 200
    assert relayed.outcomes() == ["complete"]
    assert_trustworthy(relayed, seen)


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize("value", ["127.0.0.1:99999", "65536", "h:123456", "h:-1", "h:١٢"])
def test_invalid_ports_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        parse_listen(value)
    assert parse_listen("127.0.0.1:65535") == ("127.0.0.1", 65535)


@pytest.mark.parametrize(
    "value", ["[::1", "[::1]", "[nope]:80", "::1:80", "a b:80", "1.2.3.999:80", "[::1]:x", ""]
)
def test_malformed_listen_addresses_are_refused_in_one_line_before_anything_starts(
    value: str, tmp_path: Path
) -> None:
    """``[::1`` was split at its last colon into host ``[:`` and port 1."""
    with pytest.raises(ValueError, match="--listen"):
        parse_listen(value)
    trace = tmp_path / "t.jsonl"
    result = CliRunner().invoke(
        cli_main,
        ["http", "--upstream", "http://127.0.0.1:9/mcp", "--listen", value, "--trace", str(trace)],
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mcpsniff http: --listen"), result.output
    assert "Traceback" not in result.output
    assert not trace.exists()


def test_short_listen_forms_still_mean_loopback() -> None:
    assert parse_listen("7000") == ("127.0.0.1", 7000)
    assert parse_listen(":7000") == ("127.0.0.1", 7000)
    assert parse_listen(" [::1]:7000 ") == ("::1", 7000)
    assert parse_listen("localhost:0") == ("localhost", 0)


def test_a_port_in_use_fails_before_the_trace_exists(tmp_path: Path) -> None:
    taken = bind("127.0.0.1", 0)
    port = taken.getsockname()[1]
    trace = tmp_path / "t.jsonl"
    try:
        result = CliRunner().invoke(
            cli_main,
            [
                "http",
                "--upstream",
                "http://127.0.0.1:9/mcp",
                "--listen",
                f"127.0.0.1:{port}",
                "--trace",
                str(trace),
            ],
        )
    finally:
        taken.close()
    assert result.exit_code != 0
    assert "cannot listen" in result.output
    assert not trace.exists()  # so that a retry with the same --trace works


def test_localhost_listens_on_ipv4_which_every_client_tries() -> None:
    sock = bind("localhost", 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
    finally:
        sock.close()


# --------------------------------------------------------------------------- the command


def test_the_command_applies_its_timeouts_and_records_through_its_analysis_process(
    tmp_path: Path,
) -> None:
    """``mcpsniff http --head-timeout``: a slow head gets 408, in the trace the forked
    analysis process wrote (the refusal crossed the observation channel)."""
    import signal
    import subprocess
    import sys

    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "http", "--upstream", "http://127.0.0.1:9/mcp",
         "--listen", "127.0.0.1:0", "--trace", str(trace), "--head-timeout", "0.5"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        port = int(line.split()[2].rsplit(":", 1)[1].split("/")[0])

        async def slow() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /mcp HTTP/1.1\r\nHost: h\r\n")
            try:
                return await asyncio.wait_for(reader.read(), BOUND)
            finally:
                writer.close()

        answer = asyncio.run(slow())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(BOUND)
    assert statuses(answer) == [408]
    with TraceReader(trace) as reader:
        records = list(reader.records())
    refused = [r.data for r in records if isinstance(r, EventRecord) and r.event == "http-refused"]
    assert [r["kind"] for r in refused] == ["head-timeout"]


def test_the_command_exits_3_and_says_why_when_the_trace_is_incomplete(tmp_path: Path) -> None:
    """A trace the analysis process could not write in full (here: a file size limit)
    makes ``mcpsniff http`` exit 3 with a warning naming the reason, as ``stdio`` does."""
    import resource
    import signal
    import subprocess
    import sys

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "http", "--upstream", "http://127.0.0.1:9/mcp",
         "--listen", "127.0.0.1:0", "--trace", str(trace)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=small_files,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        port = int(line.split()[2].rsplit(":", 1)[1].split("/")[0])
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"%s"}}' % (b"a" * 20000)
        request = (
            b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )
        answer = asyncio.run(exchange_raw(port, request))
    finally:
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(BOUND)
    assert statuses(answer) == [502]  # nothing listens upstream
    errors = proc.stderr.read().decode()
    assert status == 3, errors
    assert "cannot write the trace" in errors and "File too large" in errors
    assert trace.stat().st_size == 4096


def test_a_connect_that_fails_unexpectedly_still_answers(tmp_path: Path) -> None:
    """Whatever opening the upstream connection raises is retrieved and answered (502)."""

    async def scenario() -> tuple[bytes, list[str]]:
        errors = LoopErrors()
        errors.install()
        relay = HttpRelay(HttpOptions(upstream="http://127.0.0.1:9/mcp", port=0), None)
        relay.upstream_port = 70000  # create_connection raises OverflowError, no OSError
        await relay.start()
        try:
            request = b"GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
            answer = await exchange_raw(relay.port or 0, request)
        finally:
            await relay.stop()
        gc.collect()
        await asyncio.sleep(0)
        return answer, errors.problems()

    answer, problems = run(scenario())
    assert statuses(answer) == [502]
    assert problems == []


def test_an_upstream_port_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="no valid URL"):
        HttpRelay(HttpOptions(upstream="http://127.0.0.1:99999/mcp", port=0), None)


def test_slow_heads_never_take_every_connection(tmp_path: Path) -> None:
    """Past the connection limit the oldest slow head goes (408), and a whole request is served."""

    async def scenario() -> tuple[bytes, bytes, Relayed]:
        upstream = AiohttpUpstream()
        await upstream.start()

        async def talk(port: int) -> tuple[bytes, bytes]:
            slow = []
            for _ in range(4):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(b"GET /mcp HTTP/1.1\r\nHost: h\r\n")
                await asyncio.sleep(0.05)
                slow.append((reader, writer))
            served = await exchange_raw(
                port, b"GET /whole HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
            )
            oldest = await asyncio.wait_for(slow[0][0].read(), BOUND)
            for _, writer in slow:
                writer.close()
            return oldest, served

        try:
            (oldest, served), relayed = await through_relay(
                upstream.port, talk, tmp_path, max_connections=4
            )
        finally:
            await upstream.stop()
        return oldest, served, relayed

    oldest, served, relayed = run(scenario())
    assert statuses(served) == [200] and served.endswith(b"/whole")
    assert statuses(oldest) == [408]
    assert [r["kind"] for r in relayed.refused()] == ["too-many-connections"]
