"""A Playbook for the HTTP relay's connection logic: events in, bytes and observations out.

In the manner of mitmproxy's ``tutils.Playbook``, no socket is opened: a
``ClientSide`` and its ``UpstreamSide`` get transports that only keep what is
written to them, and a ``Relay`` whose observer keeps every observation. A test
says what the client and the upstream send (or that they close), and asserts
on the bytes each side was sent and on what the analysis would be told.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcpsniff.capture.remote_exchange import RemoteExchange, RemoteObserver
from mcpsniff.core.observations import Observation
from mcpsniff.http1.events import RequestHead
from mcpsniff.intercept.http_gate import HttpGate
from mcpsniff.intercept.http_upstream import UpstreamSide
from mcpsniff.intercept.http_wire import ClientSide

UPSTREAM = "http://up:80"
PROXY = "http://proxy:6280"


class Wire:
    """A transport that keeps what is written to it (and whether it was closed)."""

    def __init__(self, peer: tuple[str, int] = ("127.0.0.1", 50000)) -> None:
        self.written = bytearray()
        self.closed = False
        self.aborted = False
        self.reading = True
        self.peer = peer

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.written += data

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.peer if name == "peername" else default

    def take(self) -> bytes:
        """What was written since the last take."""
        data = bytes(self.written)
        self.written.clear()
        return data


@dataclass
class PlaybookRelay:
    """The ``Relay`` a connection belongs to, with no listening socket."""

    observations: list[Observation] = field(default_factory=list)
    refusals: list[tuple[str | None, str, str]] = field(default_factory=list)
    connections: set[ClientSide] = field(default_factory=set)
    max_connections: int = 100
    last_forwarder: ClientSide | None = None
    stopping: bool = False
    upstream_host: str = "up"
    upstream_port: int = 80
    ssl_context: None = None
    hold_limit: int = 1 << 20
    hold_seconds: float = 1.0
    gate: HttpGate | None = None
    observer: RemoteObserver = field(init=False)

    def __post_init__(self) -> None:
        self.observer = RemoteObserver(self.observations.append, "/mcp")

    def make_room(self, newcomer: ClientSide) -> None:
        raise AssertionError("no room needed in a playbook")

    def forwarded(self, connection: ClientSide) -> None:
        self.last_forwarder = connection

    def host_line(self, head: RequestHead) -> tuple[int, bytes] | None:
        return None

    def refused(self, client: str | None, kind: str, reason: str) -> None:
        self.refusals.append((client, kind, reason))

    def target(self, path: str) -> str:
        return UPSTREAM + path

    def rewrite_endpoint(self, exchange: RemoteExchange, held: bytes) -> bytes:
        endpoint = exchange.endpoint
        if endpoint is None or not endpoint.startswith(UPSTREAM):
            return held
        rewritten = PROXY + endpoint[len(UPSTREAM) :]
        exchange.endpoint_rewritten(endpoint, rewritten)
        return held.replace(endpoint.encode(), rewritten.encode(), 1)


class Playbook:
    """One client connection and its upstream connection, driven by hand."""

    def __init__(self) -> None:
        self.relay = PlaybookRelay()
        self.client_wire = Wire()
        self.upstream_wire = Wire()
        self.client = ClientSide(self.relay)
        self.client.connection_made(self.client_wire)  # type: ignore[arg-type]
        # The upstream connection is open already: no connect, no socket.
        self.upstream = UpstreamSide(self.client)
        self.upstream.connection_made(self.upstream_wire)  # type: ignore[arg-type]
        self.client.upstream = self.upstream

    def client_sends(self, data: bytes) -> Playbook:
        self.client.data_received(data)
        return self

    def upstream_sends(self, data: bytes) -> Playbook:
        self.upstream.data_received(data)
        return self

    def upstream_closes(self, exc: Exception | None = None) -> Playbook:
        self.upstream.connection_lost(exc)
        return self

    def client_closes(self) -> Playbook:
        self.client.connection_lost(None)
        return self

    def to_upstream(self) -> bytes:
        return self.upstream_wire.take()

    def to_client(self) -> bytes:
        return self.client_wire.take()

    def observed(self) -> list[tuple[Any, ...]]:
        """The observations since the last call, as (kind, exchange, the telling fields)."""
        out = [_brief(o) for o in self.relay.observations]
        self.relay.observations.clear()
        return out


def _brief(o: Any) -> tuple[Any, ...]:
    kind = type(o).__name__
    if kind == "RequestBegin":
        return (kind, o.exchange, o.method, o.path, o.body)
    if kind == "ResponseBegin":
        return (kind, o.exchange, o.status)
    if kind == "ResponseBody":
        return (kind, o.exchange, o.body)
    if kind == "ExchangeEnd":
        return (kind, o.exchange, o.outcome, o.whole)
    if kind == "EndpointRewritten":
        return (kind, o.exchange, o.old, o.new)
    if kind == "RequestCut":
        return (kind, o.exchange, o.body_bytes)
    if kind == "Unreachable":
        return (kind, o.exchange, o.url, o.reason)
    return (kind, getattr(o, "exchange", None))
