"""What a client connection of the HTTP relay needs of the proxy it belongs to.

``http_wire.ClientSide`` and the fault code that extends it reach the proxy
(``mcpsniff.relay.http.HttpRelay``) only through ``Relay``, so that the
forwarding path imports no shell (docs/architecture.md, the layers).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING, Protocol

from mcpsniff.capture.remote_exchange import RemoteExchange, RemoteObserver
from mcpsniff.http1.events import RequestHead
from mcpsniff.intercept.http_gate import HttpGate

if TYPE_CHECKING:
    from mcpsniff.intercept.http_wire import ClientSide


class Relay(Protocol):
    """What a client connection needs of the proxy it belongs to."""

    connections: set[ClientSide]
    max_connections: int
    #: The connection that forwarded last (``relay/event_loop.py``'s busy poll).
    last_forwarder: ClientSide | None
    stopping: bool
    observer: RemoteObserver
    upstream_host: str
    upstream_port: int
    ssl_context: ssl.SSLContext | None
    hold_limit: int
    hold_seconds: float
    #: ``--guard enforce``: the gate every POST is held for (None: off).
    gate: HttpGate | None

    def make_room(self, newcomer: ClientSide) -> None: ...

    def forwarded(self, connection: ClientSide) -> None: ...

    def host_line(self, head: RequestHead) -> tuple[int, bytes] | None: ...

    def refused(self, client: str | None, kind: str, reason: str) -> None: ...

    def target(self, path: str) -> str: ...

    def rewrite_endpoint(self, exchange: RemoteExchange, held: bytes) -> bytes: ...
