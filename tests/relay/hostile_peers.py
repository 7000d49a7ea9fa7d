"""Peers for the hostile-traffic tests: real HTTP servers and a raw client, all in one loop.

* :class:`H11Upstream`: an origin server on h11 (lenient where h11 is: it
  ends a trailer section at a bare-LF empty line).
* :class:`AiohttpUpstream`: an origin server on aiohttp (llhttp, strict).
* :class:`ScriptedUpstream`: a raw server that answers every connection with
  a script of its own (bytes to send, when to close or reset).

Each server answers a request with its target as the body, so that a client
can tell whose response it got, and records every request it saw (method,
target, body length) in ``seen``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import h11
from aiohttp import web

#: Longest any one exchange of a hostile test may take before it counts as hung.
BOUND = 10.0


@dataclass
class Seen:
    """A request as an upstream server saw it."""

    method: str
    target: str
    body_bytes: int


@dataclass
class H11Upstream:
    """An h11 origin server; answers each request with its target."""

    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        current: Seen | None = None
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    conn.receive_data(data)
                    if not data and conn.their_state is not h11.SEND_BODY:
                        break
                    continue
                if isinstance(event, h11.Request):
                    current = Seen(event.method.decode(), event.target.decode("latin-1"), 0)
                    self.seen.append(current)
                elif isinstance(event, h11.Data) and current is not None:
                    current.body_bytes += len(event.data)
                elif isinstance(event, h11.EndOfMessage) and current is not None:
                    body = current.target.encode("latin-1")
                    headers = [("Content-Length", str(len(body)))]
                    writer.write(conn.send(h11.Response(status_code=200, headers=headers)))
                    writer.write(conn.send(h11.Data(data=body)))
                    writer.write(conn.send(h11.EndOfMessage()))
                    await writer.drain()
                    current = None
                    if conn.our_state is h11.MUST_CLOSE:
                        break
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    break
        except h11.RemoteProtocolError:
            with contextlib.suppress(Exception):
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        except (ConnectionError, h11.LocalProtocolError):
            pass
        finally:
            writer.close()


@dataclass
class AiohttpUpstream:
    """An aiohttp origin server; answers each request with its target."""

    seen: list[Seen] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    async def start(self) -> None:
        async def handler(request: web.Request) -> web.Response:
            seen = Seen(request.method, request.raw_path, 0)
            self.seen.append(seen)
            async for data in request.content.iter_any():
                seen.body_bytes += len(data)
            return web.Response(body=request.raw_path.encode("latin-1"))

        app = web.Application(client_max_size=1 << 40)
        app.router.add_route("*", "/{tail:.*}", handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class ScriptedUpstream:
    """A raw server: every connection runs ``script(reader, writer)``."""

    script: Script
    port: int = 0
    connections: int = 0
    _server: asyncio.Server | None = None

    async def start(self) -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.script(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()

        self._server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST instead of FIN (SO_LINGER 0), as a crashing server's kernel does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def read_head(reader: asyncio.StreamReader) -> bytes:
    """One request head (up to its empty line)."""
    return await reader.readuntil(b"\r\n\r\n")


async def exchange_raw(port: int, data: bytes, *, pause: float = 0.0) -> bytes:
    """Send ``data``; everything received until the other side closes (bounded by BOUND)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        if pause:
            await asyncio.sleep(pause)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        received = bytearray()
        async with asyncio.timeout(BOUND):
            while True:
                try:
                    chunk = await reader.read(65536)
                except ConnectionError:
                    break
                if not chunk:
                    break
                received += chunk
        return bytes(received)
    finally:
        writer.close()


def statuses(data: bytes) -> list[int]:
    """The status codes of the responses in ``data`` (found by their status lines)."""
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]


class LoopErrors:
    """Collects what the event loop's exception handler gets (unretrieved task errors)."""

    def __init__(self) -> None:
        self.contexts: list[dict[str, Any]] = []

    def install(self) -> None:
        asyncio.get_running_loop().set_exception_handler(
            lambda _loop, context: self.contexts.append(context)
        )

    def problems(self) -> list[str]:
        return [
            f"{c.get('message')}: {c.get('exception')!r}"
            for c in self.contexts
            if c.get("exception") is not None or "never retrieved" in str(c.get("message"))
        ]
