"""relay/http_wire.py: the forwarding path of one client connection.

The pure helpers are fed heads from the real parser; the connection logic runs
on real sockets on 127.0.0.1 (a scripted raw upstream, a raw client), so what is
asserted is the bytes each side got and what the trace paired with what.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcpsniff.http1.events import RequestHead, ResponseHead
from mcpsniff.http1.parser import RequestParser, ResponseParser
from mcpsniff.relay.http_wire import (
    bad_gateway,
    chunk,
    forwarded_head,
    keep_alive_line,
    refusal,
)
from tests.relay.hostile_peers import BOUND, ScriptedUpstream, read_head, statuses
from tests.relay.test_http_hostile import Relayed, run, through_relay


def request_head(raw: bytes) -> RequestHead:
    head = RequestParser().feed(raw)[0]
    assert isinstance(head, RequestHead)
    return head


def response_head(raw: bytes) -> ResponseHead:
    parser = ResponseParser()
    parser.expect("GET")
    head = parser.feed(raw)[0]
    assert isinstance(head, ResponseHead)
    return head


# --------------------------------------------------------------------------- pure helpers


def test_a_head_without_hop_by_hop_fields_is_forwarded_as_the_very_bytes_received() -> None:
    head = request_head(
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nx-odd:  spaced \r\nContent-Length: 0\r\n\r\n"
    )
    assert forwarded_head(head) is head.raw


def test_hop_by_hop_fields_and_those_connection_names_go_but_framing_stays() -> None:
    head = request_head(
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, X-Secret, Content-Length\r\n"
        b"Keep-Alive: timeout=5\r\nTE: trailers\r\nX-Secret: s\r\nProxy-Authorization: p\r\n"
        b"X-Kept: k\r\nContent-Length: 2\r\n\r\n"
    )
    assert forwarded_head(head) == (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nX-Kept: k\r\nContent-Length: 2\r\n\r\n"
    )
    response = response_head(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n"
        b"Upgrade: h2c\r\n\r\n"
    )
    # Transfer-Encoding is hop-by-hop but the body keeps the framing it came with.
    assert forwarded_head(response) == b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_the_host_line_is_swapped_in_place_with_or_without_dropped_fields() -> None:
    raw = b"GET /mcp HTTP/1.1\r\nX-A: 1\r\nHost: proxy:6280\r\nX-B: 2\r\n\r\n"
    head = request_head(raw)
    assert forwarded_head(head, (1, b"Host: upstream:3001")) == raw.replace(
        b"proxy:6280", b"upstream:3001"
    )
    head = request_head(raw.replace(b"X-B: 2", b"TE: trailers"))
    assert forwarded_head(head, (1, b"Host: u")) == (
        b"GET /mcp HTTP/1.1\r\nX-A: 1\r\nHost: u\r\n\r\n"
    )


def test_only_an_http_1_0_keep_alive_is_spoken_on_the_next_hop() -> None:
    ask = b"GET / HTTP/1.0\r\nHost: h\r\nConnection: Keep-Alive\r\n\r\n"
    assert keep_alive_line(request_head(ask)) == b"Connection: keep-alive\r\n"
    assert keep_alive_line(request_head(ask.replace(b"1.0", b"1.1"))) == b""
    assert keep_alive_line(request_head(b"GET / HTTP/1.0\r\n\r\n")) == b""


def test_the_relay_s_own_answers_are_framed_and_labelled() -> None:
    answer = refusal(408, "no request head within 30 s")
    head, body = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert b"Connection: close" in head and b"X-Mcpsniff: refused" in head
    assert b"Content-Length: %d" % len(body) in head and body.endswith(b"30 s\n")
    gateway = bad_gateway("http://u:1/mcp", "connection refused")
    head, body = gateway.split(b"\r\n\r\n", 1)
    assert statuses(gateway) == [502] and b"Content-Length: %d" % len(body) in head
    assert chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"


# --------------------------------------------------------------------------- on real sockets


def test_pipelined_responses_pair_with_their_requests_in_order(tmp_path: Path) -> None:
    """Three requests in one write; the upstream answers only once it has all three,
    each with its own status: the client gets them in order and the trace pairs
    each exchange's path with its own status (FIFO, RFC 9112 §9.3.2)."""

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads = [await read_head(reader) for _ in range(3)]
        for head in heads:
            target = head.split(b" ")[1]
            status = 200 + int(target[1:])
            writer.write(
                b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(target), target)
            )
        await writer.drain()
        await reader.read()

    async def scenario() -> tuple[bytes, Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()

        async def talk(port: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"".join(b"GET /%d HTTP/1.1\r\nHost: h\r\n\r\n" % i for i in range(3)))
            try:
                return await asyncio.wait_for(reader.readuntil(b"/2"), BOUND)
            finally:
                writer.close()

        try:
            return await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()

    answer, relayed = run(scenario())
    assert statuses(answer) == [200, 201, 202]
    assert answer.endswith(b"/0" + answer[answer.index(b"HTTP/1.1 201") :])
    paths = {e.data["exchange"]: e.data["path"] for e in relayed.events("http-request")}
    pairs = [(paths[e.data["exchange"]], e.data["status"]) for e in relayed.events("http-response")]
    assert pairs == [("/0", 200), ("/1", 201), ("/2", 202)]
    assert relayed.outcomes() == ["complete"] * 3
    assert relayed.errors == []


@pytest.mark.parametrize("split", [1, 7, None])
def test_what_the_upstream_receives_has_no_hop_by_hop_field_however_it_arrives(
    split: int | None, tmp_path: Path
) -> None:
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    received = bytearray()

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await read_head(reader))
        received.extend(await reader.readuntil(b"0\r\n\r\n"))
        writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
        await writer.drain()

    async def scenario() -> tuple[bytes, Relayed]:
        upstream = ScriptedUpstream(script)
        await upstream.start()

        async def talk(port: int) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            step = split or len(request)
            for at in range(0, len(request), step):
                writer.write(request[at : at + step])
                await writer.drain()
            try:
                return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BOUND)
            finally:
                writer.close()

        try:
            return await through_relay(upstream.port, talk, tmp_path)
        finally:
            await upstream.stop()

    answer, relayed = run(scenario())
    assert statuses(answer) == [204]
    assert b"Connection" not in answer  # the upstream's close is its own hop's business
    assert bytes(received) == (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
    )
    assert relayed.errors == []
