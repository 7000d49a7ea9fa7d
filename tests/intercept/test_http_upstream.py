"""intercept/http_upstream.py: the upstream connection hands its responses to its client side."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from mcpsniff.http1.events import Body, End, ResponseHead
from mcpsniff.intercept.http_upstream import UpstreamSide, connect
from tests.relay.playbook import Wire


class Client:
    """What an ``UpstreamSide`` calls on its client connection, kept."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.lost: list[tuple[list[Any], Exception | None]] = []
        self.paused: set[str] = set()

    def response_events(self, upstream: UpstreamSide, events: list[Any], eof: bool) -> None:
        self.events.extend(events)

    def upstream_lost(
        self, upstream: UpstreamSide, events: list[Any], exc: Exception | None
    ) -> None:
        self.lost.append((events, exc))

    def pause_reading(self, reason: str) -> None:
        self.paused.add(reason)

    def resume_reading(self, reason: str) -> None:
        self.paused.discard(reason)


def test_responses_are_framed_and_handed_on_until_detached() -> None:
    client = Client()
    side = UpstreamSide(client)  # type: ignore[arg-type]
    side.connection_made(Wire())  # type: ignore[arg-type]
    side.parser.expect("GET")
    side.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
    head, body, end = client.events
    assert type(head) is ResponseHead and head.status == 200
    assert type(body) is Body and body.payload == b"hi" and type(end) is End
    side.close()
    side.data_received(b"HTTP/1.1 200 OK\r\n\r\n")
    assert len(client.events) == 3  # let go of: nothing more reaches the client side


def test_flow_control_and_loss_reach_the_client_side() -> None:
    client = Client()
    wire = Wire()
    side = UpstreamSide(client)  # type: ignore[arg-type]
    side.connection_made(wire)  # type: ignore[arg-type]
    side.pause_writing()
    assert client.paused == {"upstream-full"}
    side.connection_lost(ConnectionResetError("reset"))
    assert client.paused == set()  # a lost connection holds nothing up
    assert side.detached and side.lost_reason == "reset"
    assert client.lost == [([], client.lost[0][1])]
    side.close(abort=True)
    assert wire.aborted


def test_connect_opens_a_real_connection_whose_responses_reach_the_client_side() -> None:
    async def main() -> list[Any]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = Client()
        upstream = await connect(client, "127.0.0.1", port, None)  # type: ignore[arg-type]
        assert upstream.transport is not None and not upstream.detached
        upstream.parser.expect("GET")
        upstream.transport.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in range(200):
            if len(client.events) >= 2:
                break
            await asyncio.sleep(0.01)
        upstream.close()
        server.close()
        await server.wait_closed()
        return client.events

    head, end = asyncio.run(main())
    assert type(head) is ResponseHead and head.status == 204 and type(end) is End


def test_connect_to_a_closed_port_raises_oserror() -> None:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(OSError):
        asyncio.run(connect(Client(), "127.0.0.1", port, None))  # type: ignore[arg-type]
