"""The HTTP relay's connection to the upstream server, one per client connection.

It frames what the upstream sends (``mcpsniff.http1``) and hands the events to
the client connection it belongs to (``http_wire.ClientSide``), which forwards
them; it only relays flow control and says when it was lost.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from mcpsniff.http1.parser import ResponseParser

if TYPE_CHECKING:
    import ssl

    from mcpsniff.intercept.http_wire import ClientSide

#: Seconds to wait for a connection to the upstream.
CONNECT_TIMEOUT = 15.0


class UpstreamSide(asyncio.Protocol):
    """The connection to the upstream server that one client connection uses."""

    def __init__(self, client: ClientSide) -> None:
        self.client = client
        self.parser = ResponseParser()
        self.transport: asyncio.Transport | None = None
        #: Set when the client side let go of it, or it was lost.
        self.detached = False
        #: Why it was lost before the client side took it (the connect race).
        self.lost_reason: str | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if not self.detached:
            self.client.response_events(self, self.parser.feed(data), eof=False)

    def eof_received(self) -> bool:
        return False  # close: a response delimited by the close has ended

    def connection_lost(self, exc: Exception | None) -> None:
        # A full write buffer to a connection that is gone holds up nothing.
        self.client.resume_reading("upstream-full")
        if self.detached:
            return
        self.detached = True
        if exc is not None:
            self.lost_reason = str(exc) or type(exc).__name__
        self.client.upstream_lost(self, self.parser.feed_eof(), exc)

    def pause_writing(self) -> None:
        if not self.detached:
            self.client.pause_reading("upstream-full")

    def resume_writing(self) -> None:
        self.client.resume_reading("upstream-full")

    def close(self, abort: bool = False) -> None:
        """Let go of the connection (abort: cut it, so the upstream's handler is cancelled)."""
        self.detached = True
        self.client.resume_reading("upstream-full")
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()


async def connect(
    client: ClientSide, host: str, port: int, ssl_context: ssl.SSLContext | None
) -> UpstreamSide:
    """Open ``client``'s connection to the upstream (TLS with a context).

    Raises what opening it raises: ``OSError``, ``TimeoutError`` after
    ``CONNECT_TIMEOUT``, ``ValueError`` for a host that cannot be encoded.
    """
    upstream = UpstreamSide(client)
    await asyncio.wait_for(
        asyncio.get_running_loop().create_connection(
            lambda: upstream,
            host,
            port,
            ssl=ssl_context,
            server_hostname=host if ssl_context else None,
        ),
        CONNECT_TIMEOUT,
    )
    return upstream
