"""The HTTP relay is transparent: arbitrary bodies, framed and cut up arbitrarily, pass unchanged.

Property test (hypothesis): a raw client sends a POST whose body is framed by
Content-Length or chunked (with random chunk sizes) and written in random
pieces; a raw upstream answers the same way. Everything runs in one event loop
with the real ``HttpRelay`` (recording in-process): the upstream must receive
exactly the client's bytes, and the client exactly the upstream's.

Also here, with the same in-process relay: a session-less GET stream held for
its first event goes on once its hold limit (bytes or time) is reached,
undecided no longer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpsniff.core.model import EventRecord, Record
from mcpsniff.relay.http import HttpOptions, HttpRelay

TIMEOUT = 10.0


@dataclass
class Message:
    """One message's bytes and the pieces it is written in."""

    data: bytes
    pieces: list[bytes]


def frame(head: bytes, body: bytes, chunks: list[int] | None) -> bytes:
    """``head`` (without its empty line) plus ``body``, framed by length or as chunks."""
    if chunks is None:
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    out = [head + b"Transfer-Encoding: chunked\r\n\r\n"]
    at = 0
    for size in chunks:
        if at >= len(body):
            break
        out.append(b"%x\r\n%s\r\n" % (len(body[at : at + size]), body[at : at + size]))
        at += size
    if at < len(body):
        out.append(b"%x\r\n%s\r\n" % (len(body) - at, body[at:]))
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def cut(data: bytes, sizes: list[int]) -> list[bytes]:
    pieces = []
    at = 0
    for size in sizes:
        if at >= len(data):
            break
        pieces.append(data[at : at + size])
        at += size
    if at < len(data):
        pieces.append(data[at:])
    return pieces


@st.composite
def messages(draw: st.DrawFn, head: bytes) -> Message:
    kind = draw(st.sampled_from(["random", "json", "big"]))
    if kind == "big":
        body = draw(st.binary(min_size=1, max_size=64)) * draw(st.integers(1, 20000))
    elif kind == "json":
        body = b'{"jsonrpc":"2.0","id":1,"result":{"x":"%s"}}' % draw(st.binary(max_size=200))
    else:
        body = draw(st.binary(max_size=2000))
    chunked = draw(st.booleans())
    chunks = draw(st.lists(st.integers(1, 70000), min_size=1, max_size=8)) if chunked else None
    data = frame(head, body, chunks)
    sizes = draw(st.lists(st.integers(1, 5000), max_size=12))
    return Message(data, cut(data, sizes))


async def write_pieces(writer: asyncio.StreamWriter, pieces: list[bytes]) -> None:
    for piece in pieces:
        writer.write(piece)
        await writer.drain()
        await asyncio.sleep(0.001)  # let the relay read this piece on its own


async def read_exactly(reader: asyncio.StreamReader, size: int) -> bytes:
    return await asyncio.wait_for(reader.readexactly(size), TIMEOUT)


async def through_relay(request: Message, response: Message) -> tuple[bytes, bytes]:
    received_request: list[bytes] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received_request.append(await read_exactly(reader, len(request.data)))
        await write_pieces(writer, response.pieces)
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    relay = HttpRelay(HttpOptions(upstream=f"http://127.0.0.1:{port}/mcp", port=0), None)
    await relay.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
        await write_pieces(writer, request.pieces)
        received_response = await read_exactly(reader, len(response.data))
        writer.close()
    finally:
        await relay.stop()
        server.close()
    return received_request[0], received_response


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    messages(b"POST /mcp?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"),
    messages(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"),
)
def test_bodies_and_chunkings_pass_byte_identical(request: Message, response: Message) -> None:
    got_request, got_response = asyncio.run(through_relay(request, response))
    assert got_request == request.data
    assert got_response == response.data


# --------------------------------------------------------------------------- bad framing


async def bad_request(request: bytes) -> tuple[bytes, bytes, list[str]]:
    """Send ``request``; what the upstream got, what the client got, the http-end outcomes."""
    received = bytearray()
    records: list[Record] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while chunk := await reader.read(65536):
            received.extend(chunk)
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    options = HttpOptions(upstream=f"http://127.0.0.1:{port}/mcp", port=0)
    relay = HttpRelay(options, None, show=records.append)
    await relay.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
        writer.write(request)
        answer = await asyncio.wait_for(reader.read(), TIMEOUT)  # until the relay closes
        writer.close()
        await asyncio.sleep(0.05)
    finally:
        await relay.stop()
        server.close()
    outcomes = [
        r.data["outcome"] for r in records if isinstance(r, EventRecord) and r.event == "http-end"
    ]
    return bytes(received), answer, outcomes


def test_request_with_both_framings_is_not_forwarded() -> None:
    """RFC 9112 §6.3: Transfer-Encoding with Content-Length is how requests are smuggled."""
    request = (
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    )
    received, answer, outcomes = asyncio.run(bad_request(request))
    # Not forwarded, answered 400 (RFC 9112 §6.3) and closed.
    assert received == b""
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert b"\r\nConnection: close\r\n" in answer
    assert outcomes == ["bad-request: both Transfer-Encoding and Content-Length"]


def test_broken_chunks_cut_the_request_off() -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    received, answer, outcomes = asyncio.run(bad_request(head + b"5\r\nabcde\r\nZZ\r\n"))
    # What came before the bad chunk was forwarded; then the upstream saw the close.
    assert received == head + b"5\r\nabcde\r\n"
    assert answer == b""
    assert outcomes == ["bad-request: invalid chunk-size line"]


# --------------------------------------------------------------------------- legacy endpoint


def dechunk(data: bytes) -> bytes:
    """The payload of a chunked body (RFC 9112 §7.1), up to its last chunk."""
    out = bytearray()
    while True:
        line, _, data = data.partition(b"\r\n")
        size = int(line, 16)
        if not size:
            return bytes(out)
        out += data[:size]
        data = data[size + 2 :]


async def stream_with_late_endpoint(
    hold_limit: int, padding_size: int, hold_seconds: float = 30.0
) -> tuple[bytes, list[Record], int]:
    """A session-less GET stream: a padding comment, then an endpoint.

    The upstream sends the endpoint only once the client has the padding, so a
    relay still holding the stream deadlocks (and the test times out): the
    padding must go on because it passed ``hold_limit`` bytes, or because it
    was held ``hold_seconds``.
    Returns the body the client got (dechunked), the records, and the upstream port.
    """
    records: list[Record] = []
    got_padding = asyncio.Event()
    padding = b": " + b"p" * padding_size + b"\n\n"

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(padding), padding)
        )
        await writer.drain()
        await asyncio.wait_for(got_padding.wait(), TIMEOUT)
        event = b"event: endpoint\ndata: http://127.0.0.1:%d/messages?sessionId=s1\n\n" % port
        writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    relay = HttpRelay(
        HttpOptions(upstream=f"http://127.0.0.1:{port}/sse", port=0), None, show=records.append
    )
    relay.hold_limit = hold_limit
    relay.hold_seconds = hold_seconds
    await relay.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.port)
        writer.write(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        received = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        while b"p" * padding_size not in received:
            received += await asyncio.wait_for(reader.read(65536), TIMEOUT)
        got_padding.set()
        while not received.endswith(b"0\r\n\r\n"):
            received += await asyncio.wait_for(reader.read(65536), TIMEOUT)
        writer.close()
    finally:
        await relay.stop()
        server.close()
    return dechunk(received.partition(b"\r\n\r\n")[2]), records, port


@pytest.mark.parametrize(
    ("hold_limit", "padding_size", "hold_seconds"),
    [(1024, 1124, 30.0), (1 << 20, 10, 0.2)],
    ids=["bytes", "time"],
)
def test_a_stream_held_past_its_limit_goes_on_and_its_late_endpoint_is_not_rewritten(
    hold_limit: int, padding_size: int, hold_seconds: float
) -> None:
    body, records, port = asyncio.run(
        stream_with_late_endpoint(hold_limit, padding_size, hold_seconds)
    )
    endpoint = b"http://127.0.0.1:%d/messages?sessionId=s1" % port
    # Forwarded as the upstream sent it: the endpoint came too late to be rewritten.
    assert body.endswith(b"event: endpoint\ndata: " + endpoint + b"\n\n")
    events = [r for r in records if isinstance(r, EventRecord)]
    assert "endpoint-rewrite" not in [e.event for e in events]
    sse = [
        (e.data.get("event"), e.data.get("comment_only", False))
        for e in events
        if e.event == "sse-event"
    ]
    assert sse == [(None, True), ("endpoint", False)]
    # No event within the limit: a Streamable HTTP GET stream (in the session-less group);
    # the late endpoint names the legacy session that what follows on it belongs to.
    (request,) = [e for e in events if e.event == "http-request"]
    assert request.data["transport"] == "streamable"
    assert [(e.event, e.session) for e in events if e.event != "session-end"] == [
        ("http-request", "http"),
        ("http-response", "http"),
        ("sse-event", "http"),
        ("sse-event", "http"),
        ("http-end", "sse-s1"),
    ]
