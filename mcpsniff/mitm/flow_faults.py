"""``--set mcpsniff_fault=SPEC``: the mitmproxy addon misbehaves on purpose, as ``mcpsniff http``.

The same specifications and engine as the relays (``mcpsniff.faults``), carried
out in mitmproxy's hooks: a POST body is judged in the ``request`` hook (held
by an awaited sleep, answered with ``flow.response``, damaged in place, sent
twice with ``replay.client``, or cut with ``flow.kill()``); a JSON response in
the ``response`` hook; an SSE response event by event as it streams
(``SseFaults``: left out, sent twice or damaged; a streamed event cannot be
held or cut, and such a fault is recorded as ``failed``). Each fault is told
to the analysis (``ExchangeFault``) before the frames it marks, as the relay
does (``mcpsniff.intercept.http_faults``): ``check`` never blames a peer for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mitmproxy import ctx, http

from mcpsniff.capture.remote_exchange import RemoteExchange, RemoteObserver
from mcpsniff.core.model import C2S, REQUEST, S2C
from mcpsniff.faults.damage import corrupt
from mcpsniff.faults.engine import Injection, original_bytes
from mcpsniff.faults.http import (
    ExchangeFaults,
    answer_fields,
    event_data,
    server_answer,
    split_events,
    with_data,
)
from mcpsniff.faults.spec import (
    ANSWERS,
    CORRUPT,
    DELAY,
    DISCONNECT,
    DROP,
    DUPLICATE,
)

#: ``flow.metadata`` key of a duplicate the addon sent itself: never judged again.
DUPLICATE_MARK = "mcpsniff_duplicate"
#: Seconds a dropped request is held, unanswered, before its flow is killed.
DROP_HOLD = 60.0
#: Most bytes of one SSE event judged; a longer one passes as it comes.
JUDGE_LIMIT = 256 << 10

#: A step of an observed stream: bytes to observe, or a fault to tell first.
Step = bytes | Callable[[], None]


class FlowFaults(ExchangeFaults):
    """The fault engine of one addon, and what it does to flows."""

    # ------------------------------------------------------------------ requests

    def request_body(self, flow: http.HTTPFlow, body: bytes) -> tuple[Injection | None, bytes]:
        """Judge a POST body before it is observed: the fault, and the body as sent on."""
        if not body or not self.engine.could_match(body, C2S):
            # The byte search first: it settles most bodies, and costs less than
            # reading the flow's method, metadata and headers (mitmproxy decodes those).
            return None, body
        if flow.request.method != "POST" or flow.metadata.get(DUPLICATE_MARK):
            return None, body
        if flow.request.headers.get("content-encoding"):
            return None, body
        injection = self.judge(C2S, body)
        if injection is not None and injection.fault.action == CORRUPT:
            damaged = b"".join(corrupt(injection.fault.corruption, body, b""))
            flow.request.content = damaged
            return injection, damaged
        return injection, body

    def request(
        self,
        flow: http.HTTPFlow,
        observer: RemoteObserver,
        exchange: RemoteExchange,
        injection: Injection,
        original: bytes,
    ) -> Awaitable[None] | None:
        """Carry ``injection`` out on a request (observed already); what to await, if anything."""
        action = injection.fault.action
        session = "mcp-session-id" in flow.request.headers

        def tell(marks: dict[str, int | str], *, delivered: bool, **extra: Any) -> None:
            self.tell(
                observer.sink,
                exchange.number,
                injection,
                marks,
                delivered=delivered,
                session_id=session,
                **extra,
            )

        if action == DELAY:
            return self._later(injection.delay_ms / 1000.0, lambda: tell({}, delivered=True))
        if action == DROP:
            tell({C2S: 1}, delivered=False)
            if injection.message.kind == REQUEST:
                # Lost on the way: no answer; the flow is killed after a while.
                return self._later(DROP_HOLD, flow.kill)
            flow.response = http.Response.make(202, b"", dict(answer_fields(202, "text/plain")))
            return None
        if action == DUPLICATE:
            tell({C2S: 2, S2C: 2}, delivered=True)
            copy = flow.copy()
            copy.metadata[DUPLICATE_MARK] = True
            ctx.master.commands.call("replay.client", [copy])
            return None
        if action in ANSWERS:
            reply = server_answer(injection)
            tell(reply.marks, delivered=False)
            fields = dict(answer_fields(reply.status, reply.content_type))
            flow.response = http.Response.make(reply.status, reply.body, fields)
            return None
        if action == CORRUPT:
            tell({C2S: 1}, delivered=True, **original_bytes(original, verbatim=self.verbatim))
            return None
        if action == DISCONNECT:
            tell({C2S: 1}, delivered=False)
            flow.kill()
            return None
        # kill and reorder are refused when the option is set.
        return None

    # ------------------------------------------------------------------ responses

    def json_response(
        self,
        flow: http.HTTPFlow,
        observer: RemoteObserver,
        exchange: RemoteExchange,
        body: bytes,
    ) -> tuple[bytes, Awaitable[None] | None]:
        """Judge a whole JSON response before it is observed: the body as sent on, and a wait."""
        if not self.engine.could_match(body, S2C):
            return body, None  # as in ``request_body``: the byte search first
        response = flow.response
        if (
            response is None
            or flow.metadata.get(DUPLICATE_MARK)
            or response.headers.get("content-encoding")
            or response.headers.get("x-mcpsniff") == "fault"
        ):
            return body, None
        injection = self.judge(S2C, body)
        if injection is None:
            return body, None
        action = injection.fault.action

        def tell(marks: dict[str, int | str], *, delivered: bool, **extra: Any) -> None:
            self.tell(
                observer.sink, exchange.number, injection, marks, delivered=delivered, **extra
            )

        if action == DELAY:
            return body, self._later(injection.delay_ms / 1000.0, lambda: tell({}, delivered=True))
        if action in (DROP, DISCONNECT):
            tell({S2C: 1}, delivered=False)
            flow.kill()
            return body, None
        if action == CORRUPT:
            damaged = b"".join(corrupt(injection.fault.corruption, body, b""))
            tell({S2C: 1}, delivered=True, **original_bytes(body, verbatim=self.verbatim))
            response.content = damaged
            return damaged, None
        tell({}, delivered=True, failed=f"{action} needs an SSE stream")
        return body, None

    def sse(
        self, flow: http.HTTPFlow, observer: RemoteObserver, exchange: RemoteExchange
    ) -> SseFaults | None:
        """What carries the faults out on a streamed SSE response, or None to pass it."""
        response = flow.response
        if flow.metadata.get(DUPLICATE_MARK) or response is None:
            return None
        if response.headers.get("content-encoding"):
            return None
        return SseFaults(self, observer, exchange)

    @staticmethod
    async def _sleep_then(seconds: float, then: Callable[[], None]) -> None:
        await asyncio.sleep(seconds)
        then()

    def _later(self, seconds: float, then: Callable[[], None]) -> Awaitable[None]:
        return asyncio.ensure_future(self._sleep_then(seconds, then))


class SseFaults:
    """A streamed SSE response, event by event: what goes on, and what is observed in order."""

    def __init__(
        self, faults: FlowFaults, observer: RemoteObserver, exchange: RemoteExchange
    ) -> None:
        self.faults = faults
        self.observer = observer
        self.exchange = exchange
        self.buffer = bytearray()
        self.passing = False

    def chunk(self, data: bytes) -> tuple[bytes, list[Step]]:
        """A chunk from the server: the bytes to send on, and the steps to observe."""
        if self.passing:
            return data, [data]
        self.buffer += data
        out: list[bytes] = []
        steps: list[Step] = []
        for block in split_events(self.buffer):
            self._event(block, out, steps)
        if len(self.buffer) > JUDGE_LIMIT:
            rest = bytes(self.buffer)
            self.buffer.clear()
            self.passing = True
            out.append(rest)
            steps.append(rest)
        return b"".join(out), steps

    def end(self) -> tuple[bytes, list[Step]]:
        """The stream ended: what is left goes as it is."""
        rest = bytes(self.buffer)
        self.buffer.clear()
        return rest, [rest] if rest else []

    def _event(self, block: bytes, out: list[bytes], steps: list[Step]) -> None:
        data = event_data(block)
        injection = self.faults.judge(S2C, data) if data else None
        if injection is None or data is None:
            out.append(block)
            steps.append(block)
            return
        action = injection.fault.action
        faults, observer, exchange = self.faults, self.observer, self.exchange

        def tell(marks: dict[str, int | str], delivered: bool, **extra: Any) -> Callable[[], None]:
            return lambda: faults.tell(
                observer.sink, exchange.number, injection, marks, delivered=delivered, **extra
            )

        if action == DROP:
            steps += [tell({S2C: 1}, False), block]
        elif action == DUPLICATE:
            out += [block, block]
            steps += [block, tell({S2C: 1}, True), block]
        elif action == CORRUPT:
            damaged = with_data(block, b"".join(corrupt(injection.fault.corruption, data, b"")))
            extra = original_bytes(data, verbatim=faults.verbatim)
            out.append(damaged)
            steps += [tell({S2C: 1}, True, **extra), damaged]
        else:
            # mitmproxy's stream callback cannot wait or cut: delivered as it came.
            out.append(block)
            why = f"{action} cannot be carried out on a stream mitmproxy passes through"
            steps += [tell({}, True, failed=why), block]
