"""``mcpsniff http --fault``: the HTTP relay's connections when faults are asked for.

Without ``--fault`` the relay's own ``ClientSide`` runs and nothing here is
imported: forwarding stays as it was. With one, each client connection is a
``FaultedClientSide``, which holds every request until its end (to keep
their order) and has the fault engine (``mcpsniff.faults.engine``) judge each
POST body, the one JSON-RPC message it carries; then the request is
forwarded, held, dropped, sent twice, damaged, cut off, or answered in the
server's place (``error``, ``tool-error``, ``status``). On the way back,
each SSE event of an MCP response (or a JSON body, whole) is judged the same
way by ``ResponseFaults`` and delivered, held, dropped, delivered twice,
damaged, or followed by a cut connection. The response of a judged
exchange is sent chunked (HTTP/1.1, RFC 9112 §7.1), since a fault may change
its length.

A response is taken over (``FaultedClientSide._divert``, counted in
``ExchangeFaults.taken_over``) only once a fault may apply to it, as the byte
search of ``FaultEngine.could_match`` tells: an SSE stream's head goes on as
it came and each read of it is screened, up to the first that may match; a
JSON response whose head comes before its whole body waits for that body
(``unfinished_json``), and one the search clears then passes as it came.

Every fault is told to the analysis as an ``ExchangeFault`` before the
frames it marks (``mcpsniff.faults.engine.fault_record``), so that the
trace says what mcpsniff did and ``check`` never blames a peer for it.
What the trace gets is what the receiving peer got; a message never
delivered is recorded all the same (marked, ``delivered: false``).

Bodies larger than ``response_faults.JUDGE_LIMIT``, compressed ones, HTTP/1.0 clients and
session-less GET streams (a legacy endpoint may be rewritten in them) pass
unjudged.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from mcpsniff.core.model import C2S, REQUEST, S2C
from mcpsniff.faults.damage import SPLIT_PAUSE, SPLIT_PIECES, corrupt
from mcpsniff.faults.engine import Injection, original_bytes
from mcpsniff.faults.http import (
    ExchangeFaults,
    response_bytes,
    server_answer,
)
from mcpsniff.faults.spec import (
    ANSWERS,
    CORRUPT,
    DELAY,
    DISCONNECT,
    DROP,
    DUPLICATE,
    Fault,
)
from mcpsniff.http1.events import Body, End, ResponseHead
from mcpsniff.intercept.fault_heads import answer_parts, chunked_head, silent_head, with_length
from mcpsniff.intercept.http_messages import is_event_stream
from mcpsniff.intercept.http_wire import ClientSide
from mcpsniff.intercept.relay_needs import Relay
from mcpsniff.intercept.relayed_exchange import Outgoing, RelayedExchange
from mcpsniff.intercept.response_faults import (
    WHOLE_EVENTS,
    ResponseFaults,
    call_after,
    json_may_wait,
    judged_response,
    may_match,
    since_ms,
    unfinished_json,
)

#: Seconds a dropped request's connection stays open, unanswered, before it is cut:
#: the client is to time out and cancel first (basic/lifecycle.mdx § Timeouts).
DROP_HOLD = 60.0


# The relay's own methods that the hot paths below call, as module globals: a
# specialised global load, where ``ClientSide._begin`` (an attribute of a class)
# is looked up generically each time in CPython 3.11, and ``super()`` makes an
# object per call.
_client_begin = ClientSide._begin
_client_response_events = ClientSide.response_events


class FaultedClientSide(ClientSide):
    """A client connection whose requests and responses go through the fault engine.

    While no fault is under way on it, only two of its methods stand between
    the relay's own: ``_begin`` (its requests, held by ``ClientSide`` while
    ``holds``, judged) and ``response_events`` (a whole response no fault can
    match, a byte search says so, passes as the relay's own would; so do the
    screened reads of an SSE stream and a JSON response that waited for its
    body). Both search inline (``FaultEngine.inline_search``). Once
    one is, it is a ``HookedClientSide`` until nothing is left to carry out.
    """

    # Slots like ``ClientSide``'s: ``__class__`` moves between this class and
    # ``HookedClientSide`` (same layout), which would otherwise turn the
    # connection's inline attribute values into a dict for good.
    __slots__ = (
        "_answers",
        "_backlog",
        "_c2s_asked",
        "_c2s_needle",
        "_drop_timer",
        "_engine",
        "_hooked",
        "_queue",
        "_s2c_asked",
        "_s2c_needle",
        "_unjudged",
        "_waiting",
        "faults",
    )

    #: SSE responses are screened piece by piece rather than taken over at their head
    #: (a switch for the tests that compare both ways).
    screens = True

    def __init__(self, relay: Relay, faults: ExchangeFaults) -> None:
        super().__init__(relay)
        self.faults = faults
        self._drop_timer: asyncio.TimerHandle | None = None
        #: Requests too big to judge, passed on as they come.
        self._unjudged: set[RelayedExchange] = set()
        watched = faults.engine.watched
        self._engine = faults.engine
        #: A fault is under way: this is a ``HookedClientSide`` (read per response, a
        #: flag costs less than ``__class__``).
        self._hooked = False
        #: Requests are held to be judged (a fault may apply to them, or their answers
        #: need their names): every one until its end (``ClientSide._request_head``),
        #: so that a held one never lets a later one pass it on the upstream
        #: connection (RFC 9112 §9.3.2).
        self.holds = C2S in watched
        #: Responses are read (a fault may apply to what the server sends).
        self._answers = S2C in watched
        #: ``could_match``'s byte search, inline in ``_begin`` and ``response_events``.
        self._c2s_needle, self._c2s_asked = faults.engine.inline_search(C2S)
        self._s2c_needle, self._s2c_asked = faults.engine.inline_search(S2C)
        #: Request bytes behind one whose sending waits (a delay, a split), in order.
        self._queue: deque[Outgoing] = deque()
        #: What the upstream sent behind a response still held, replayed in order
        #: once it is out (None: nothing held).
        self._backlog: list[Callable[[], None]] | None = None
        #: The events of a JSON response read so far, forwarded once its body is
        #: whole (``unfinished_json``); None: none waits.
        self._waiting: list[Any] | None = None

    # ------------------------------------------------------------------ requests

    def _stream_body(self, exchange: RelayedExchange) -> None:
        # Too big to judge: what is held goes on now, the rest as it comes.
        wire = exchange.wire
        if wire is not None:
            self._upstream(b"".join(wire))
            wire.clear()
            self._unjudged.add(exchange)
        super()._stream_body(exchange)

    def _begin(self, exchange: RelayedExchange) -> None:
        wire = exchange.wire
        if wire is None:
            _client_begin(self, exchange)
            return
        exchange.wire = None
        if not exchange.request_done:
            # Cut off before its end: nothing of it goes on.
            _client_begin(self, exchange)
            return
        injection = None
        if self._unjudged and exchange in self._unjudged:
            self._unjudged.discard(exchange)
        else:
            pieces = exchange.pieces
            body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            # The byte search first: most bodies hold no name a fault needs, and
            # then what kind of request carries them does not matter. Inline
            # (``FaultEngine.inline_search``); ``could_match`` when that cannot clear it.
            needle = self._c2s_needle
            if (
                body
                and (needle is None or body.partition(needle)[1] or 92 in body or self._c2s_asked)
                and self._engine.could_match(body, C2S)
            ):
                head = exchange.head
                if (
                    head.method == "POST"
                    and head.version == "HTTP/1.1"
                    and "content-encoding" not in head.names
                ):
                    injection = self.faults.judge(C2S, body)
        if injection is None:
            if self._queue:
                self._upstream(b"".join(wire))
            else:
                self._send_upstream(wire)
            if exchange.deferred or exchange.unreachable is not None:
                _client_begin(self, exchange)
            else:
                # ``ClientSide._begin`` with nothing deferred, inline (a call fewer).
                exchange.remote = exchange.begin(self.relay.observer, self.peer)
            return
        self._hook()
        try:
            self._request_fault(exchange, wire, injection)
        except (OSError, ValueError, TypeError) as exc:
            # A fault must never cost a message or the relay: forwarded as it came.
            if exchange.remote is not None:
                self.faults.tell(
                    self.relay.observer.sink,
                    exchange.remote.number,
                    injection,
                    {},
                    delivered=True,
                    failed=str(exc)[:200],
                )
        self._answer_front()

    def _upstream(self, data: bytes, *, ready: bool = True) -> Outgoing:
        """Request bytes for the upstream, behind any still waiting (RFC 9112 §9.3.2:
        answers come in request order, so requests must go in it)."""
        item = Outgoing(data, ready)
        if ready and not self._queue:
            self._send_upstream([data])
        else:
            self._queue.append(item)
        return item

    def _flush_queue(self) -> None:
        """Send the waiting request bytes whose turn came; read again once none wait."""
        queue = self._queue
        while queue and queue[0].ready:
            item = queue.popleft()
            if item.sent is not None:
                item.sent()
            self._send_upstream([item.data])
        if not queue:
            self.resume_reading("fault-delay")

    def _request_fault(
        self, exchange: RelayedExchange, wire: list[bytes], injection: Injection
    ) -> None:
        faults, observer = self.faults, self.relay.observer
        action = injection.fault.action
        kind = injection.message.kind
        body = b"".join(exchange.pieces)
        if action == CORRUPT:
            damaged = b"".join(corrupt(injection.fault.corruption, body, b""))
            exchange.pieces = [damaged]
            exchange.body_bytes = len(damaged)
        super()._begin(exchange)
        remote = exchange.remote
        assert remote is not None
        number = remote.number
        session = "mcp-session-id" in exchange.head.names

        def tell(marks: dict[str, int | str], *, delivered: bool, **extra: Any) -> None:
            faults.tell(
                observer.sink,
                number,
                injection,
                marks,
                delivered=delivered,
                session_id=session,
                **extra,
            )

        if action == DELAY:
            self.pause_reading("fault-delay")
            held = self._upstream(b"".join(wire), ready=False)
            arrived = time.monotonic()
            held.sent = lambda: self._delayed(exchange, injection, arrived)
            call_after(injection.delay_ms / 1000.0, self._ready, held)
            return
        if action == DROP:
            tell({C2S: 1}, delivered=False)
            if kind == REQUEST:
                # Lost on the way: no answer comes; nothing after it is read.
                self.last_request = True
                exchange.fault_answer = b""
            else:
                # A notification or response: the server would have answered 202.
                exchange.fault_answer = response_bytes(202, b"", b"text/plain")[0]
            return
        if action == DUPLICATE:
            tell({C2S: 2, S2C: 2}, delivered=True)
            self._upstream(b"".join(wire) * 2)
            shadow = RelayedExchange(exchange.head, time.time(), request_done=True, swallow=True)
            self.exchanges.insert(self.exchanges.index(exchange) + 1, shadow)
            if self.upstream is not None:
                self.upstream.parser.expect(exchange.head.method)
            shadow.remote = observer.begin(
                exchange.head.method,
                exchange.head.target,
                exchange.head.headers,
                body,
                client=self.peer,
            )
            return
        if action in ANSWERS:
            reply = server_answer(injection)
            content_type = reply.content_type.encode()
            exchange.fault_answer = response_bytes(reply.status, reply.body, content_type)[0]
            tell(reply.marks, delivered=False)
            return
        if action == CORRUPT:
            extra = original_bytes(body, verbatim=faults.verbatim)
            tell({C2S: 1}, delivered=True, **extra)
            head = with_length(wire[0], len(damaged))
            if injection.fault.corruption == "split":
                self._send_in_pieces(head, damaged)
            else:
                self._upstream(head + damaged)
            return
        if action == DISCONNECT:
            tell({C2S: 1}, delivered=False)
            data = b"".join(wire)
            self._upstream(data[: len(wire[0]) + len(body) // 2])
            self._finish(exchange, "fault: disconnect", whole=False)
            self.exchanges.remove(exchange)
            self.last_request = True
            if self.upstream is not None:
                self.upstream.close()
                self.upstream = None
            if self.transport is not None:
                self.transport.abort()
            return
        # kill (refused on HTTP), reorder: nothing an HTTP exchange can carry out.
        self._upstream(b"".join(wire))

    def _ready(self, held: Outgoing) -> None:
        """A delayed request (or a piece of a split one) may go, once those before it went."""
        if self.closed:
            if held.sent is not None:
                held.sent()
            return
        held.ready = True
        self._flush_queue()

    def _delayed(self, exchange: RelayedExchange, injection: Injection, arrived: float) -> None:
        remote = exchange.remote
        if remote is None:
            return
        if self.closed:
            self.faults.tell(
                self.relay.observer.sink,
                remote.number,
                injection,
                {C2S: 1},
                delivered=False,
                cut_short=True,
            )
            return
        self.faults.tell(
            self.relay.observer.sink,
            remote.number,
            injection,
            {},
            delivered=True,
            held_ms=since_ms(arrived),
        )

    def _send_in_pieces(self, head: bytes, body: bytes) -> None:
        size = max(1, -(-len(body) // SPLIT_PIECES))
        pieces = [head + body[:size]] + [body[i : i + size] for i in range(size, len(body), size)]
        loop = asyncio.get_running_loop()
        for number, piece in enumerate(pieces):
            if number:
                self.pause_reading("fault-delay")
                held = self._upstream(piece, ready=False)
                loop.call_later(number * SPLIT_PAUSE, self._ready, held)
            else:
                self._upstream(piece)

    def _answer_front(self) -> None:
        """Send mcpsniff's answers whose turn it is (earlier responses are out)."""
        if self._backlog is not None:
            return  # an earlier response is still held: they wait behind it
        while self.exchanges and self.exchanges[0].fault_answer is not None and not self.closed:
            exchange = self.exchanges[0]
            if not exchange.fault_answer:
                # A dropped request: nothing comes; the connection is cut after a while.
                # Nothing after it may be answered before it (RFC 9112 §9.3.2).
                self._block()
                if self._drop_timer is None and self.transport is not None:
                    loop = asyncio.get_running_loop()
                    self._drop_timer = loop.call_later(DROP_HOLD, self._cut_dropped)
                return
            self.exchanges.popleft()
            data = exchange.fault_answer
            if self.transport is not None:
                self.transport.write(data)
            remote = exchange.remote
            if remote is not None:
                status, fields, body = answer_parts(data)
                remote.response(status, fields)
                if body:
                    remote.body_chunk(body)
            self._finish(exchange, "complete", whole=True)
            super()._after_response(exchange)

    def _cut_dropped(self) -> None:
        if self.exchanges:
            self._finish(self.exchanges[0], "fault: dropped, connection closed", whole=False)
            self.exchanges.popleft()
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._drop_timer is not None:
            self._drop_timer.cancel()
        if self._waiting is not None:
            # For the trace: the response's head and body so far, as a taken-over
            # response's would be (nothing is written to a closed connection).
            self.closed = True
            self._let_wait_go()
        super().connection_lost(exc)

    def _cut_all(self, outcome: str) -> None:
        self._let_wait_go()
        super()._cut_all(outcome)

    def _let_wait_go(self) -> None:
        """A JSON response waiting for the rest of its body goes on as it is (taken over)."""
        if self._waiting is not None and self._backlog is None:
            self.response_events(self.upstream, [], True)

    # ------------------------------------------------------------------ responses

    def response_events(self, upstream: Any, events: list[Any], eof: bool) -> None:
        waiting = self._waiting
        if waiting is not None and self._backlog is None:
            self._waiting = None
            events = waiting + events
        if not self._hooked:
            # No fault under way, so nothing is held (``_block`` hooks) and no exchange
            # waits for mcpsniff's answer (``_begin`` hooks before it sets one; the hook
            # comes off only once none does).
            count = len(events)
            if count == 3:
                # The commonest: one whole response (head, one piece, end).
                head, body, end = events
                if (
                    type(body) is Body
                    and type(end) is End
                    and type(head) is ResponseHead
                    and head.status >= 200
                    and (
                        not (payload := body.payload)
                        or (
                            (needle := self._s2c_needle) is not None
                            and not payload.partition(needle)[1]
                            and 92 not in payload
                            and not self._s2c_asked
                        )
                        or not self._engine.could_match(payload, S2C)
                    )
                ):
                    _client_response_events(self, upstream, events, eof)
                    return
            elif count == 2:
                # A screened stream's piece the byte search clears, and its end; or
                # an event stream's head and first piece (``_alone``).
                first, end = events
                exchanges = self.exchanges
                if (
                    type(first) is Body
                    and type(end) is End
                    and exchanges
                    and exchanges[0].screened is not None
                    and (payload := first.payload).endswith(WHOLE_EVENTS)
                    and not self._engine.could_match(payload, S2C)
                ):
                    _client_response_events(self, upstream, events, eof)
                    return
                if type(first) is ResponseHead and self._alone(upstream, events, eof):
                    return
            elif count == 1 and self._alone(upstream, events, eof):
                return
        if self._backlog is not None:
            # An earlier response is held: HTTP/1.1 answers go out in request order
            # (RFC 9112 §9.3.2), so what comes behind it waits.
            self._backlog.append(partial(self.response_events, upstream, events, eof))
            return
        if self._answers and not eof and self._engine.needles is not None:
            at = unfinished_json(events, self.exchanges)
            if at >= 0:
                if at:
                    self.response_events(upstream, events[:at], eof)
                if self._backlog is not None:
                    self._backlog.append(partial(self.response_events, upstream, events[at:], eof))
                else:
                    self._waiting = events[at:]
                return
        split = self._prepare(upstream, events)
        if split < 0:
            super().response_events(upstream, events, eof)
        else:
            super().response_events(upstream, events[: split + 1], False)
        exchanges = self.exchanges
        if exchanges and exchanges[0].fault_answer is not None:
            self._answer_front()  # mcpsniff's answers whose turn came
        if split >= 0 and not self.closed:
            self.response_events(upstream, events[split + 1 :], eof)

    def _alone(self, upstream: Any, events: list[Any], eof: bool) -> bool:
        """Pass one event, or an event stream's head and first piece, as ``_prepare``
        would, without its loop; False: not done.

        A response's head alone (an event stream's goes on, screened; a JSON one's
        waits for its body), with the first piece of a stream, a screened stream's
        piece the byte search clears, or an end alone: what a server that flushes
        its head first and its last chunk apart sends, read by read. Only while no
        fault is under way (``_hooked``): nothing held, no answer of mcpsniff's due.
        """
        exchanges = self.exchanges
        if not exchanges:
            return False
        exchange = exchanges[0]
        event = events[0]
        kind = type(event)
        if kind is ResponseHead:
            if (
                eof
                or event.status < 200
                or exchange.swallow
                or not self._answers
                or not self.screens
            ):
                return False
            if not is_event_stream(event):
                # ``unfinished_json`` of one head.
                if (
                    len(events) > 1
                    or self._engine.needles is None
                    or not json_may_wait(exchange, event)
                ):
                    return False
                self._waiting = events
                return True
            if len(events) == 1:
                exchange.screened = event  # as ``_divert`` does
                _client_response_events(self, upstream, events, eof)
                return True
            screened, event = event, events[1]  # the stream's first piece, below
            kind = type(event)
        elif kind is End:
            _client_response_events(self, upstream, events, eof)
            return True
        else:
            screened = exchange.screened
        if (
            kind is Body
            and screened is not None
            and (upstream.parser.between_chunks or "transfer-encoding" not in screened.names)
            and (payload := event.payload).endswith(WHOLE_EVENTS)
            and not self._engine.could_match(payload, S2C)
        ):
            exchange.screened = screened  # as ``_divert`` does, for a head with its piece
            _client_response_events(self, upstream, events, eof)
            return True
        return False

    def _prepare(self, upstream: Any, events: list[Any]) -> int:
        """Take over the responses in ``events`` a fault may apply to; where to split them.

        A JSON response at its head (when its body is here, or too big to wait
        for); an SSE stream at the first of its reads the byte search cannot clear.

        Returns the place of the end of a response after which its connection may
        have to wait (a fault holds that response, or mcpsniff answers the next
        request), with events after it; -1 when none.
        """
        exchanges = self.exchanges
        count = len(exchanges)
        last = len(events) - 1
        index = 0
        for place, event in enumerate(events):
            kind = type(event)
            if kind is Body:
                if index < count:
                    exchange = exchanges[index]
                    faulted = exchange.faulted
                    if faulted is None and exchange.screened is None:
                        continue
                    # Whole chunks when the body's end follows, or when the parser
                    # stopped between two. ``rechunk`` holds for all of the
                    # exchange's pieces here: the parser gives one per feed.
                    framed = (
                        upstream.parser.between_chunks
                        if place == last
                        else (type(events[place + 1]) is End)
                    )
                    if faulted is None:
                        # A screened stream: every piece before this one went on as
                        # the upstream framed it, so this one may too, on the test
                        # ``ResponseFaults.passes`` makes of a piece with whole
                        # chunks before it. If not, the stream is taken over here.
                        head = exchange.screened
                        payload = event.payload
                        if (
                            (framed or "transfer-encoding" not in head.names)
                            and payload.endswith(WHOLE_EVENTS)
                            and not self._engine.could_match(payload, S2C)
                        ):
                            continue
                        faulted = self._take_over(exchange, head)
                        if faulted is None:
                            continue  # one --fault never judges: as the relay's own
                    if faulted.sse:
                        exchange.rechunk = not faulted.passes(event.payload, framed)
            elif kind is ResponseHead:
                if index < count and event.status >= 200:
                    exchange = exchanges[index]
                    if exchange.swallow or (
                        self._answers and may_match(self._engine, events, place)
                    ):
                        events[place] = self._divert(exchange, event)
            elif kind is End:
                if index < count and place < last:
                    exchange = exchanges[index]
                    if exchange.faulted is not None or (
                        index + 1 < count and exchanges[index + 1].fault_answer is not None
                    ):
                        return place
                index += 1
        return -1

    def _divert(self, exchange: RelayedExchange, head: ResponseHead) -> ResponseHead:
        """Take over the response of a judged exchange (or of a duplicate): its head as sent.

        An SSE response is screened instead (``screens``): its head is the same either
        way, and its pieces are searched as they come (``_prepare``), so it is taken
        over only at the first piece a fault may apply to, if any.
        """
        sse = is_event_stream(head)
        if exchange.swallow:
            self.faults.taken_over += 1
            self._hook()
            exchange.rechunk = True
            exchange.faulted = ResponseFaults(self, exchange, sse=sse, chunked=False, silent=True)
            return silent_head(head)
        if sse and self.screens:
            # The head goes on as it came whether or not the stream is taken over
            # later (``_take_over``: only one chunked or delimited by the close).
            exchange.screened = head
            return head
        if not judged_response(exchange.head, head, sse):
            return head
        # Every piece of a JSON body comes to _held_body; an SSE stream's pieces only
        # when they may have to be judged (``_prepare``, ``ResponseFaults.passes``).
        self.faults.taken_over += 1
        self._hook()
        exchange.rechunk = not sse
        has_length = "content-length" in head.names
        chunked = has_length or "transfer-encoding" in head.names  # chunked alone (judged)
        exchange.faulted = ResponseFaults(self, exchange, sse=sse, chunked=chunked)
        return chunked_head(head) if has_length else head

    def _take_over(self, exchange: RelayedExchange, head: ResponseHead) -> ResponseFaults | None:
        """Take over a screened SSE response from its current piece on (``_divert``);
        None when it is no response ``--fault`` judges: it goes on unread."""
        exchange.screened = None
        if not judged_response(exchange.head, head, True):
            return None
        self.faults.taken_over += 1
        self._hook()
        chunked = "transfer-encoding" in head.names  # chunked alone (``judged_response``)
        faulted = ResponseFaults(self, exchange, sse=True, chunked=chunked)
        exchange.faulted = faulted
        return faulted

    def _held_body(self, exchange: RelayedExchange, payload: bytes) -> None:
        faulted = exchange.faulted
        if faulted is None:
            super()._held_body(exchange, payload)
            return
        faulted.body(payload)

    def _held_end(self, exchange: RelayedExchange) -> None:
        faulted = exchange.faulted
        if faulted is None:
            super()._held_end(exchange)
            return
        faulted.end()

    def _hook(self) -> None:
        """A fault is under way on this connection: its ends and answers are watched."""
        self.__class__ = HookedClientSide
        self._hooked = True

    def _block(self) -> None:
        """Hold back what the upstream sends next (and stop reading it) until ``_unblock``."""
        if self._backlog is None:
            self._backlog = []
            self._hook()
            upstream = self.upstream
            if upstream is not None and upstream.transport is not None:
                upstream.transport.pause_reading()

    def _unblock(self) -> None:
        """The held response is out: mcpsniff's answers next in turn go, then what waited."""
        backlog = self._backlog
        if backlog is None:
            return
        self._backlog = None
        upstream = self.upstream
        if upstream is not None and upstream.transport is not None and not self.writing_paused:
            upstream.transport.resume_reading()
        self._answer_front()
        for place, step in enumerate(backlog):
            if self._backlog is not None:
                # Held again: the rest waits behind what came of this (in order).
                self._backlog.extend(backlog[place:])
                return
            step()

    def upstream_lost(self, upstream: Any, events: list[Any], exc: Exception | None) -> None:
        if self._backlog is not None and upstream is self.upstream:
            self._backlog.append(partial(self.upstream_lost, upstream, events, exc))
            return
        super().upstream_lost(upstream, events, exc)

    def resume_writing(self) -> None:
        if self._backlog is None:
            super().resume_writing()
        else:
            self.writing_paused = False  # the upstream is read again once nothing is held

    def ended_late(self, exchange: RelayedExchange, outcome: str) -> None:
        """A response held by a fault went out: it ends now."""
        exchange.faulted = None
        super()._observe(exchange, "end", outcome)
        super()._after_response(exchange)
        self._unblock()
        self._answer_front()

    def send(self, data: bytes) -> None:
        """Bytes to the client."""
        self._send_client(data)

    def cut(self) -> None:
        """Cut the client's connection (and the upstream's): the fault's disconnect."""
        self.last_request = True
        if self.upstream is not None:
            self.upstream.close(abort=True)
            self.upstream = None
        if self.transport is not None and not self.closed:
            self.transport.abort()


class HookedClientSide(FaultedClientSide):
    """A ``FaultedClientSide`` while a fault is under way on it: a response held by one
    ends (for the trace, and for the connection) once what is held went out, and
    mcpsniff's answers go out as soon as their turn comes. Once nothing is under
    way it is a ``FaultedClientSide`` again, with no method of its own in the way.
    """

    __slots__ = ()

    def _observe(self, exchange: RelayedExchange, kind: str, arg: Any) -> None:
        faulted = exchange.faulted
        if kind == "end" and faulted is not None and faulted.busy:
            faulted.deferred_end = arg  # once what is held went out
            self._block()
            return
        super()._observe(exchange, kind, arg)

    def _after_response(self, exchange: RelayedExchange | None) -> None:
        faulted = exchange.faulted if exchange is not None else None
        if faulted is not None:
            if faulted.busy:
                return
            # Each refers to the other: parted, both go as soon as they are done
            # with, not at the next garbage collection.
            exchange.faulted = None  # type: ignore[union-attr]
        super()._after_response(exchange)
        self._answer_front()
        if self._backlog is None and not any(
            e.faulted is not None or e.fault_answer is not None or e.swallow for e in self.exchanges
        ):
            self.__class__ = FaultedClientSide
            self._hooked = False


def faulted_factory(
    relay: Relay, faults: list[Fault], *, verbatim: bool
) -> Callable[[], ClientSide]:
    """The protocol factory of a relay that injects ``faults``."""
    shared = ExchangeFaults(faults, verbatim=verbatim)
    return lambda: FaultedClientSide(relay, shared)
