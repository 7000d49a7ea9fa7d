"""The HTTP relay's forwarding path: HTTP/1.1 bytes between two asyncio Protocols.

Each client connection is paired with one upstream connection of its own,
opened at its first request (and again after the upstream closed it).
Requests and responses are in order on a connection (RFC 9112 §9.3.2), so a
FIFO of exchanges pairs each response with its request. Messages are framed
by ``http1`` and forwarded with their own framing, as received, minus
hop-by-hop fields; bytes go to the other side first, and only then to the
observer (``remote_exchange.RemoteExchange``).

The connection code matches on the framer's events (``mcpsniff.http1.events``)
and keeps one ``RelayedExchange`` per request: the bytes side of an exchange
(what is held, what is forwarded), beside the ``RemoteExchange`` that notes
it for the analysis; its upstream connection is an ``UpstreamSide``
(``http_upstream``). What it needs of the proxy it belongs to is ``Relay``
(``relay_needs``; ``mcpsniff.relay.http.HttpRelay``), so that this module
imports no shell.

Why not aiohttp's server and client: a relay built from them (the benchmark's
"aiohttp relay") cannot get under 2x the direct latency; parsing every
message into objects and writing it out again costs more than moving bytes.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from mcpsniff.core.http.headers import client_address
from mcpsniff.http1.events import Body, End, Event, Malformed, RequestHead, ResponseHead
from mcpsniff.http1.fields import wants_close
from mcpsniff.http1.parser import RequestParser
from mcpsniff.intercept.http_messages import (
    LAST_CHUNK,
    bad_gateway,
    chunk,
    forwarded_head,
    is_event_stream,
    keep_alive_line,
    refusal,
)
from mcpsniff.intercept.http_upstream import UpstreamSide, connect
from mcpsniff.intercept.relay_needs import Relay
from mcpsniff.intercept.relayed_exchange import RelayedExchange


class ClientSide(asyncio.Protocol):
    """One client connection, relayed to an upstream connection of its own."""

    # Slots, not a ``__dict__``: CPython 3.11 specialises a slot load by the type
    # alone, whereas an instance dict may turn from inline values into a real dict
    # (``__class__`` assignment does that, ``http_faults``), after which every
    # specialised load of every connection's attributes misses and is redone.
    __slots__ = (
        "_paused",
        "closed",
        "connecting",
        "exchanges",
        "flush_then_close",
        "head_started",
        "holds",
        "incoming",
        "last_active",
        "last_request",
        "parser",
        "peer",
        "pending",
        "refused",
        "relay",
        "transport",
        "upstream",
        "writing_paused",
    )

    def __init__(self, relay: Relay) -> None:
        self.relay = relay
        self.parser = RequestParser()
        self.transport: asyncio.Transport | None = None
        self.peer: str | None = None
        self.exchanges: deque[RelayedExchange] = deque()
        self.incoming: RelayedExchange | None = None
        self.upstream: UpstreamSide | None = None
        self.connecting: asyncio.Task[None] | None = None
        #: Bytes for the upstream while its connection is being opened.
        self.pending: list[bytes] = []
        self._paused: set[str] = set()
        self.writing_paused = False
        #: No more requests are read (the client asked to close, or framing broke).
        self.last_request = False
        #: A request broke off mid-body: what was forwarded goes out before the close.
        self.flush_then_close = False
        self.closed = False
        #: The answer to a request that was refused, sent once earlier responses are out.
        self.refused: bytes | None = None
        #: Every request is held until its end (``RelayedExchange.wire``), whose
        #: ``_begin`` sends it on or not (``http_faults``; never the relay's own).
        self.holds = False
        now = time.monotonic()
        #: When the head being received began (None: no head underway). The
        #: first head is timed from the connection's opening.
        self.head_started: float | None = now
        #: When bytes last came from the client, or a response last ended.
        self.last_active = now

    # ------------------------------------------------------------------ client events

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        # Address and port: which of a host's clients (connections) sent a request.
        self.peer = client_address(peer)
        if len(self.relay.connections) >= self.relay.max_connections:
            self.relay.make_room(self)
        self.relay.connections.add(self)

    def data_received(self, data: bytes) -> None:
        if self.last_request or self.closed:
            return
        now = time.monotonic()
        self.last_active = now
        sent: list[bytes] = []
        # Where the bytes of the request underway go: ``sent``, or what holds them.
        incoming = self.incoming
        out = sent if incoming is None or incoming.wire is None else incoming.wire
        ended: list[RelayedExchange] = []
        for event in self.parser.feed(data):
            # Class patterns only (no keyword sub-patterns): each of those is an
            # attribute look-up the relay would pay on every piece of every body.
            match event:
                case Body():
                    incoming = self.incoming
                    assert incoming is not None  # a body follows its head
                    held = incoming.held_request
                    if held is None:
                        out.append(event.raw)
                    elif not held.add(event.raw, event.payload):
                        self._release(incoming, out)  # too long to judge: forwarded as it is
                    elif held.over_budget:
                        self._record_cut(incoming, "guard-budget: not forwarded", forwarded=False)
                        self.refuse(503, "mcpsniff guard: too many request bytes held to judge")
                        break
                    if event.payload and incoming.keep(event.payload):
                        self._stream_body(incoming)
                case RequestHead():
                    out = self._request_head(event, sent)
                case End():
                    exchange = self.incoming
                    assert exchange is not None
                    if exchange.held_request is None:
                        out.append(event.raw)
                    else:
                        exchange.held_request.add(event.raw, b"")
                        self._judged(exchange, out)
                    out = sent
                    exchange.request_done = True
                    self.incoming = None
                    ended.append(exchange)
                    head = exchange.head
                    if wants_close(head.version, head.headers, head.names):
                        # RFC 9112 §9.6: nothing after a request with "close" is read.
                        self.last_request = True
                        break
                case Malformed():
                    self._bad_request(event, out)
                    break
        if sent:  # empty when what came is held (a gate, ``--fault``)
            self._send_upstream(sent)
        for exchange in ended:
            self._begin(exchange)
        if ended:
            self._flush_answers()
            self.relay.forwarded(self)
        if self.parser.receiving_head:
            if self.head_started is None:
                self.head_started = now
        else:
            self.head_started = None

    def eof_received(self) -> bool:
        # The client closed its side: it is gone, as aiohttp's server took it too
        # (a client that only half-closes is rare, and its exchange is cut off).
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.relay.connections.discard(self)
        if self.relay.last_forwarder is self:
            self.relay.last_forwarder = None
        outcome = "proxy-stopped" if self.relay.stopping else "client-disconnected"
        pending = bool(self.exchanges)
        if self.incoming is not None:
            # Its head and part of its body went upstream: the trace says so.
            self._record_cut(self.incoming, f"{outcome} mid-body")
        for exchange in self.exchanges:
            self._finish(exchange, outcome, whole=False)
        self.exchanges.clear()
        if self.connecting is not None and not self.flush_then_close:
            self.connecting.cancel()
        if self.upstream is not None:
            # Cut, so that the upstream stops working on a request nobody waits for.
            self.upstream.close(abort=pending)
            self.upstream = None

    def pause_writing(self) -> None:
        self.writing_paused = True
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.resume_reading()

    def pause_reading(self, reason: str) -> None:
        """Stop reading from the client until ``resume_reading(reason)``."""
        if not self._paused and self.transport is not None and not self.closed:
            self.transport.pause_reading()
        self._paused.add(reason)

    def resume_reading(self, reason: str) -> None:
        self._paused.discard(reason)
        if not self._paused and self.transport is not None and not self.closed:
            self.transport.resume_reading()

    # ------------------------------------------------------------------ requests

    def _request_head(self, head: RequestHead, out: list[bytes]) -> list[bytes]:
        """Start an exchange; its head goes to ``out``, which its body follows (returned)."""
        exchange = RelayedExchange(head, time.time())
        self.incoming = exchange
        self.exchanges.append(exchange)
        if self.holds:
            out = exchange.wire = []
        forwarded = forwarded_head(head, self.relay.host_line(head))
        if head.version == "HTTP/1.0":
            extra = keep_alive_line(head)
            if extra:
                forwarded = forwarded[:-2] + extra + b"\r\n"
        gate = self.relay.gate
        if gate is not None:
            exchange.held_request = gate.hold(head, forwarded)
            if exchange.held_request is not None:
                return out  # judged at its end (``_judged``)
        self._sending(exchange)
        out.append(forwarded)
        return out

    def _sending(self, exchange: RelayedExchange) -> None:
        """The request's head goes upstream: its response is expected there."""
        exchange.sent = True
        if self.upstream is not None:
            self.upstream.parser.expect(exchange.head.method)
        elif self.connecting is None:
            self._connect()

    def _release(self, exchange: RelayedExchange, out: list[bytes]) -> None:
        """A held request goes upstream as it came (``--guard enforce`` let it pass)."""
        held = exchange.held_request
        assert held is not None
        exchange.held_request = None
        self._sending(exchange)
        out.append(held.forwarded())

    def _judged(self, exchange: RelayedExchange, out: list[bytes]) -> None:
        """A held request is whole: forwarded, or refused and answered in its turn."""
        held, gate = exchange.held_request, self.relay.gate
        assert held is not None and gate is not None
        verdict = gate.judge(exchange.head, held)
        if verdict.answer is None:
            exchange.expects = verdict.expects or None
            self._release(exchange, out)
            return
        exchange.held_request = None
        exchange.answer = verdict.answer

    def _flush_answers(self) -> None:
        """Write the guard's answers whose turn it is (every earlier response is out)."""
        gate = self.relay.gate
        flushed = False
        while self.exchanges and self.exchanges[0].answer is not None:
            exchange = self.exchanges[0]
            if exchange.remote is None or gate is None:
                return  # noted once its request is in (``_begin``)
            self.exchanges.popleft()
            answer = gate.answer(exchange.head, exchange.remote, exchange.answer)  # type: ignore[arg-type]
            exchange.answer = None
            self._send_client(answer)
            self._finish(exchange, "complete", whole=True)
            flushed = True
        if flushed:
            self._after_response(None)

    def _stream_body(self, exchange: RelayedExchange) -> None:
        """Send what is held of a big request body on to the observer, ahead of its end."""
        exchange.stream_body(self.relay.observer)

    def _record_cut(
        self, exchange: RelayedExchange, outcome: str, *, forwarded: bool = True
    ) -> None:
        """A request that ended before its end: recorded, with what was forwarded of it."""
        if self.incoming is exchange:
            self.incoming = None
        if exchange.held_request is not None:
            exchange.held_request.drop()  # judged never: nothing of it went upstream
            exchange.held_request = None
        if exchange in self.exchanges:
            self.exchanges.remove(exchange)
        self._begin(exchange)
        if forwarded and exchange.sent and exchange.remote is not None:
            # Its head and ``body_bytes`` of its body reached the upstream.
            exchange.remote.request_cut(exchange.body_bytes)
        self._finish(exchange, outcome, whole=False)

    def _send_upstream(self, out: list[bytes]) -> None:
        if not out:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None:
            if not upstream.detached:
                upstream.transport.write(data)
        elif self.connecting is not None:
            self.pending.append(data)
        # Otherwise the upstream is unreachable: the request is answered with 502.

    def _begin(self, exchange: RelayedExchange) -> None:
        """The request is in: the observer gets it (the bytes are on their way)."""
        exchange.remote = exchange.begin(self.relay.observer, self.peer)
        for kind, arg in exchange.deferred:
            self._observe(exchange, kind, arg)
        exchange.deferred = []
        if exchange.unreachable is not None:
            self._answer_unreachable(exchange)

    def _bad_request(self, bad: Malformed, out: list[bytes]) -> None:
        """A request whose framing cannot be trusted: forward what came before, record, close.

        A head with bad framing fields is not forwarded at all (RFC 9112 §6.3: a
        request whose body length cannot be determined gets 400 and a closed
        connection; the upstream never sees it). A body whose chunks break off has
        part of it upstream already: both connections are cut, so that the
        upstream sees an incomplete request rather than a complete one.
        """
        self.last_request = True
        self.head_started = None
        self._send_upstream(out)
        out.clear()
        partial = self.incoming
        exchange = partial
        if exchange is None and isinstance(bad.head, RequestHead):
            exchange = RelayedExchange(bad.head, time.time())
        if exchange is not None:
            self._record_cut(exchange, f"bad-request: {bad.reason}", forwarded=partial is not None)
        else:
            self.relay.refused(self.peer, "bad-request", bad.reason)
        if partial is None or not partial.sent:
            # Nothing of it went upstream: answered, as an origin server would
            # (RFC 9112 §6.3: 400, then close), once earlier responses are out.
            self.refuse(400, f"bad request: {bad.reason}")
            return
        # Closed, not aborted: what was forwarded still reaches the upstream,
        # which then sees the request end before its body did.
        self.flush_then_close = True
        self._close(abort=True)

    def refuse(self, status: int, reason: str) -> None:
        """Answer ``status`` and close, after the responses to earlier requests."""
        self.last_request = True
        self.refused = refusal(status, reason)
        if not self.exchanges:
            self._send_refusal()

    def _send_refusal(self) -> None:
        answer, self.refused = self.refused, None
        if answer is not None and self.transport is not None and not self.closed:
            self.transport.write(answer)
            self._close()

    def expire(self, now: float, head_timeout: float, idle_timeout: float) -> None:
        """Close the connection if it waited too long (the relay checks every connection).

        A head must arrive whole within ``head_timeout`` (else 408, recorded);
        between requests, or while a request body stalls, the client may stay
        silent for ``idle_timeout``. While a request waits for its response the
        upstream has the turn, and a quiet SSE stream is no idle connection.
        """
        if self.closed or self.transport is None:
            return
        started = self.head_started
        if started is not None and not self.last_request and now - started > head_timeout:
            received = not self.parser.idle
            if received:
                self.relay.refused(self.peer, "head-timeout", f"no whole head in {head_timeout}s")
            if self.exchanges or received:
                self.refuse(408, f"no whole request head within {head_timeout} seconds")
            else:
                self.close_if_idle()
            return
        if self.incoming is not None:
            if now - self.last_active > idle_timeout:
                self._record_cut(self.incoming, "client-idle-timeout mid-body")
                self.last_request = True
                self._cut_all("client-idle-timeout")
            return
        if not self.exchanges and now - self.last_active > idle_timeout:
            self.close_if_idle()

    # ------------------------------------------------------------------ the upstream

    def _connect(self) -> None:
        self.pause_reading("connecting")
        self.connecting = asyncio.get_running_loop().create_task(self._open())
        self.connecting.add_done_callback(self._opened)

    def _opened(self, task: asyncio.Task[None]) -> None:
        """Retrieve what ``_open`` raised, if anything: its requests are answered all the same."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        # No exception is left unretrieved, and no request waits for a connection
        # that will never come: they get the 502 an unreachable upstream gets.
        if self.connecting is task:
            self.connecting = None
        self.pending = []
        self._unreachable(f"cannot connect: {exc!r}")
        self.resume_reading("connecting")

    async def _open(self) -> None:
        relay = self.relay
        try:
            upstream = await connect(
                self, relay.upstream_host, relay.upstream_port, relay.ssl_context
            )
        except asyncio.CancelledError:
            raise
        except (OSError, TimeoutError, ValueError) as exc:
            self.connecting = None
            self.pending = []
            self._unreachable(str(exc) or type(exc).__name__)
            self.resume_reading("connecting")
            return
        self.connecting = None
        if self.closed:
            if (
                self.flush_then_close
                and self.pending
                and upstream.transport is not None
                and not upstream.detached
            ):
                upstream.transport.write(b"".join(self.pending))
            upstream.close()
            return
        if upstream.detached:
            # Accepted and closed (or reset) before anything was sent on it: as
            # good as unreachable, and nothing of the requests reached it.
            self.pending = []
            self._unreachable(upstream.lost_reason or "the server closed the connection at once")
            self.resume_reading("connecting")
            return
        self.upstream = upstream
        for exchange in self.exchanges:
            if exchange.sent:
                upstream.parser.expect(exchange.head.method)
        if self.pending:
            assert upstream.transport is not None
            upstream.transport.write(b"".join(self.pending))
            self.pending = []
        if self.writing_paused and upstream.transport is not None:
            upstream.transport.pause_reading()
        self.resume_reading("connecting")

    def _unreachable(self, reason: str) -> None:
        """Every request still without a response gets a 502, in order."""
        for exchange in self.exchanges:
            if exchange.sent:  # a held or refused request needs no upstream yet
                exchange.unreachable = reason
        while self.exchanges and self.exchanges[0].request_done:
            first = self.exchanges[0]
            if first.sent:
                self._answer_unreachable(first)
            else:
                self._flush_answers()
            if self.exchanges and self.exchanges[0] is first:
                break  # its request is not noted yet: answered from ``_begin``

    def _answer_unreachable(self, exchange: RelayedExchange) -> None:
        if self.exchanges and self.exchanges[0] is exchange and exchange.remote is not None:
            self.exchanges.popleft()
            target = self.relay.target(exchange.head.target)
            reason = exchange.unreachable or "unreachable"
            exchange.remote.unreachable(target, reason)
            exchange.finished = True
            self._send_client(bad_gateway(target, reason))
            self._after_response(exchange)

    def response_events(self, upstream: UpstreamSide, events: list[Event], eof: bool) -> None:
        """Forward what the upstream sent, then show it to the observers."""
        out: list[bytes] = []
        observe: list[tuple[RelayedExchange, str, Any]] = []
        drop = False
        ended = False
        for event in events:
            if not self.exchanges:
                # Bytes no request asked for (a second response, say): the
                # connection's framing is lost. Nothing of it reaches the client;
                # the connection is closed and a later request opens a new one.
                self._write(out)
                self._run(observe)
                self._unrequested(upstream, event)
                return
            exchange = self.exchanges[0]
            match event:
                case Body():  # the commonest first
                    if exchange.reader is not None:
                        exchange.reader.feed(event.payload)
                    if exchange.holding or exchange.rechunk:
                        self._write(out)
                        self._run(observe)
                        self._held_body(exchange, event.payload)
                        continue
                    out.append(event.raw)
                    if event.payload:
                        observe.append((exchange, "body", event.payload))
                case ResponseHead():
                    if event.status == 101:
                        # This relay forwards no Upgrade, so no 101 was asked for: what
                        # follows it is no HTTP, and no trace could frame it.
                        self._write(out)
                        self._run(observe)
                        self._upstream_broke(
                            upstream, "upstream-error: unrequested 101 Switching Protocols"
                        )
                        return
                    forwarded = forwarded_head(event)
                    if exchange.head.version == "HTTP/1.0" and keep_alive_line(exchange.head):
                        # The client persists only if told so; the relay may keep the
                        # connection open when the upstream's response does not close it.
                        if not wants_close(event.version, event.headers, event.names):
                            forwarded = forwarded[:-2] + b"Connection: keep-alive\r\n\r\n"
                    out.append(forwarded)
                    if event.interim:
                        continue  # 100 Continue and the like: forwarded, the final one follows
                    exchange.response_started = True
                    if exchange.expects and self.relay.gate is not None:
                        exchange.reader = self.relay.gate.reader(
                            exchange.head, event, exchange.expects
                        )
                    exchange.upstream_closes = wants_close(
                        event.version, event.headers, event.names
                    )
                    if exchange.head.method == "GET" and is_event_stream(event):
                        # Maybe a legacy stream whose endpoint is to be rewritten: the
                        # observer must see the head now, to tell.
                        self._write(out)
                        self._run(observe)
                        self._observe(exchange, "response", event)
                        self._start_holding(exchange, event)
                    else:
                        observe.append((exchange, "response", event))
                case End():
                    ended = True
                    self.exchanges.popleft()
                    if exchange.holding or exchange.rechunk:
                        self._write(out)
                        self._run(observe)
                        self._held_end(exchange)
                    else:
                        out.append(event.raw)
                    observe.append((exchange, "end", "complete"))
                    if eof:
                        # A body delimited by the close: the client learns its end the same way.
                        self.last_request = True
                    elif exchange.upstream_closes:
                        drop = True
                    if self.exchanges and self.exchanges[0].answer is not None:
                        # The guard's answer is next: out before any later response.
                        self._write(out)
                        self._run(observe)
                case Malformed():
                    self._write(out)
                    self._run(observe)
                    self._upstream_broke(upstream, f"upstream-error: {event.reason}")
                    return
        self._write(out)
        self._run(observe)
        if ended:
            self.relay.forwarded(self)
        if drop and self.upstream is upstream:
            # RFC 9112 §9.6: the server closes after a response with "close"; a
            # later request opens a new connection.
            self.upstream = None
            upstream.close()
            if self.exchanges:
                self._upstream_closed("the server closed the connection")

    def _unrequested(self, upstream: UpstreamSide, event: Event) -> None:
        """The upstream sent what no request asked for: close that connection, record why."""
        reason = event.reason if isinstance(event, Malformed) else "a response without a request"
        self.relay.refused(self.peer, "upstream-unrequested", reason)
        if self.upstream is upstream:
            self.upstream = None
        upstream.close(abort=True)

    def _upstream_closed(self, reason: str) -> None:
        """The upstream closed with forwarded requests unanswered: so does the client's connection.

        A direct connection would look the same (and a client may retry an
        idempotent request on a new one); a 502 would say the server failed.
        """
        if self.incoming is not None:
            self._record_cut(self.incoming, f"upstream-closed mid-body: {reason}")
        for exchange in self.exchanges:
            self._finish(exchange, f"upstream-closed: {reason}", whole=False)
        self.exchanges.clear()
        self.last_request = True
        if self.transport is not None and not self.closed:
            self.transport.close()

    def _write(self, out: list[bytes]) -> None:
        if out:
            self._send_client(out[0] if len(out) == 1 else b"".join(out))
            out.clear()

    def _run(self, observe: list[tuple[RelayedExchange, str, Any]]) -> None:
        for exchange, kind, arg in observe:
            self._observe(exchange, kind, arg)
            if kind == "end":
                self._after_response(exchange)
        observe.clear()

    def _observe(self, exchange: RelayedExchange, kind: str, arg: Any) -> None:
        remote = exchange.remote
        if remote is None:
            exchange.deferred.append((kind, arg))
            return
        if kind == "body":
            remote.body_chunk(arg)
        elif kind == "response":
            remote.response(arg.status, arg.headers)
        elif kind == "end":
            self._finish(exchange, arg, whole=True)

    def _finish(self, exchange: RelayedExchange, outcome: str, *, whole: bool) -> None:
        if exchange.reader is not None:
            exchange.reader.end(whole)  # --guard enforce: the gate learns from the reply
            exchange.reader = None
        if exchange.finished:
            return
        if exchange.remote is None:
            if exchange.request_done or exchange.deferred:
                exchange.deferred.append(("end", outcome))
            return
        exchange.finished = True
        exchange.remote.finish(outcome, whole=whole)

    def _after_response(self, exchange: RelayedExchange | None) -> None:
        """A response is out: the guard's answers next in turn go, then what has to close does."""
        if self.closed or self.transport is None:
            return
        if self.exchanges and self.exchanges[0].answer is not None:
            self._flush_answers()
            return
        self.last_active = time.monotonic()
        if self.refused is not None and not self.exchanges:
            self._send_refusal()
            return
        closing = self.last_request or self.relay.stopping
        if closing and not self.exchanges:
            self._close()

    # ------------------------------------------------------------------ legacy endpoint

    def _start_holding(self, exchange: RelayedExchange, head: ResponseHead) -> None:
        remote = exchange.remote
        if remote is None or not remote.endpoint_editable:
            return
        if exchange.hold_stream(head):
            # Held no longer than this either: a stream that opens with comments
            # (keep-alives) for a long time must not look dead to its client.
            loop = asyncio.get_running_loop()
            loop.call_later(self.relay.hold_seconds, self._release_held, exchange)

    def _held_body(self, exchange: RelayedExchange, payload: bytes) -> None:
        """A piece of a held (or re-chunked) stream: as ``_relay_body`` did it."""
        remote = exchange.remote
        assert remote is not None
        if not exchange.holding:
            if payload:
                self._send_client(chunk(payload))
                remote.body_chunk(payload)
            return
        exchange.held += payload
        remote.body_chunk(payload)  # decides the session at the first event
        if remote.waiting_for_first_event and len(exchange.held) < self.relay.hold_limit:
            return
        self._release_held(exchange)

    def _release_held(self, exchange: RelayedExchange) -> None:
        """The first event came, or the hold limit (bytes or time) was reached: send on."""
        if not exchange.holding or exchange.finished or self.closed:
            return
        remote = exchange.remote
        assert remote is not None
        held = exchange.let_go()
        if remote.waiting_for_first_event:
            # No event within the hold limit (comments only): not held any longer.
            remote.no_first_event()
        held = self.relay.rewrite_endpoint(remote, held)
        if exchange.chunked:
            exchange.rechunk = True
            held = chunk(held) if held else b""
        self._send_client(held)

    def _held_end(self, exchange: RelayedExchange) -> None:
        held = exchange.let_go()
        if exchange.chunked:
            self._send_client((chunk(held) if held else b"") + LAST_CHUNK)
        elif held:
            self._send_client(held)

    def _send_client(self, data: bytes) -> None:
        if data and self.transport is not None and not self.closed:
            self.transport.write(data)

    # ------------------------------------------------------------------ upstream trouble

    def upstream_lost(
        self, upstream: UpstreamSide, events: list[Event], exc: Exception | None
    ) -> None:
        """The upstream connection closed (or broke)."""
        if upstream is not self.upstream:
            return
        self.response_events(upstream, events, eof=True)
        if self.upstream is not upstream:
            return  # response_events dealt with it
        self.upstream = None
        if self.exchanges:
            reason = str(exc) if exc else "the server closed the connection"
            if self.exchanges[0].response_started:
                self._upstream_broke(upstream, f"upstream-error: {reason}")
            else:
                self._upstream_closed(reason)
        elif self.last_request and self.transport is not None:
            self.transport.close()

    def _upstream_broke(self, upstream: UpstreamSide, outcome: str) -> None:
        """The upstream broke a response off: so does the client's connection."""
        if self.upstream is upstream:
            self.upstream = None
        upstream.close(abort=True)
        first = True
        for exchange in self.exchanges:
            self._finish(exchange, outcome, whole=first)
            first = False
        self.exchanges.clear()
        # Ending the client's response normally would pass a cut-off body for a
        # whole one: the client must see it cut off too.
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def cut_off(self) -> None:
        """The proxy stops: open exchanges end here, their clients see them cut off."""
        self._cut_all("proxy-stopped")

    def _cut_all(self, outcome: str) -> None:
        """Every open exchange ends with ``outcome``, cut off, and so do both connections."""
        for exchange in self.exchanges:
            self._finish(exchange, outcome, whole=False)
        self.exchanges.clear()
        self._close(abort=True, cut_upstream=True)

    def close_if_idle(self) -> bool:
        """Close a connection with no exchange in flight; whether it was idle."""
        if self.exchanges or self.incoming is not None or not self.parser.idle:
            return False
        self._close()
        return True

    def _close(self, *, abort: bool = False, cut_upstream: bool = False) -> None:
        """Let go of the upstream connection and close the client's (abort: cut it).

        ``cut_upstream`` cuts the upstream connection too, so that the
        upstream's handler is cancelled.
        """
        if self.upstream is not None:
            self.upstream.close(abort=cut_upstream)
            self.upstream = None
        if self.transport is not None and not self.closed:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
