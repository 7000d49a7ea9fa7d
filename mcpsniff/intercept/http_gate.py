"""The HTTP relay under ``--guard enforce``: each POST held to its end, then forwarded or answered.

Only with ``--guard enforce``; without it the relay forwards every request
as its bytes come (``http_wire``). Here a POST's head and body are held until
the body ends, then its body goes to the session's gate
(``mcpsniff/guard/enforce.py``, the decision the stdio relay shares): a
``tools/call`` the gate refuses is answered by mcpsniff, with HTTP 200 and a
JSON-RPC error (``application/json``, ``X-Mcpsniff: guard-refused``; 202 and
no body when it was sent as a notification), and its bytes never reach the
server; anything else is forwarded byte for byte, as
it came. A body over ``MAX_JUDGED`` is forwarded unjudged as soon as it is
that long, as a longer stdio line is.

The trace records the request as the client sent it, the answer's head,
the event ``guard-answered`` (tool, reason, id), then the answer's body: the
exchange says that mcpsniff answered, and the core pairs the request with
that reply, so ``check`` blames neither peer.

The gate of a session (its ``Mcp-Session-Id``; none: one shared gate) learns
the server's name and tools from the replies to the ``initialize`` and
``tools/list`` requests it forwarded: a JSON body, or the events of an SSE
stream, decoded when compressed with gzip or deflate (bounded, as the held
request is). A request body compressed otherwise is refused unread, with the
id ``null`` (JSON-RPC 2.0 §5): the gate cannot tell what it calls.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcpsniff.core.framing import SseParser
from mcpsniff.guard.enforce import (
    MAX_JUDGED,
    Answer,
    Expected,
    Gates,
    Verdict,
    refused_unread,
)
from mcpsniff.http1.events import Head, RequestHead, ResponseHead
from mcpsniff.http1.fields import wants_close

if TYPE_CHECKING:
    from mcpsniff.capture.remote_exchange import RemoteExchange


#: Most bytes every connection together holds for judging: past it a request
#: still held is answered 503 and not forwarded (invariant 6: a peer cannot
#: take the relay's memory by sending many big requests slowly).
HELD_BUDGET = 256 << 20


@dataclass(slots=True, eq=False)
class HeldRequest:
    """A POST held back until its end: the bytes to forward, and the body to judge."""

    #: The gate whose budget it counts against.
    gate: HttpGate
    #: The head and the body with their framing, as they would be forwarded.
    raw: list[bytes]
    #: The body's content (de-chunked), for the gate.
    payload: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, raw: bytes, payload: bytes) -> bool:
        """Hold one more piece; False once the whole is too long to be judged."""
        if raw:
            self.raw.append(raw)
            self.size += len(raw)
            self.gate.held += len(raw)
        if payload:
            self.payload.append(payload)
        return self.size <= MAX_JUDGED

    @property
    def over_budget(self) -> bool:
        """Every connection together holds more than the gate's budget."""
        return self.gate.held > self.gate.budget

    def forwarded(self) -> bytes:
        """Everything held, to forward as it came (and no longer held)."""
        raw = self.raw
        self.drop()
        return raw[0] if len(raw) == 1 else b"".join(raw)

    def drop(self) -> None:
        """No longer held: judged, forwarded or cut off."""
        self.gate.held -= self.size
        self.size = 0


class HttpGate:
    """The HTTP relay's side of the gate: holds, judges, answers, and reads replies."""

    def __init__(self, gates: Gates, budget: int = HELD_BUDGET) -> None:
        self.gates = gates
        self.budget = budget
        #: Bytes every connection's held requests hold now.
        self.held = 0

    def hold(self, head: RequestHead, forwarded: bytes) -> HeldRequest | None:
        """A request to hold until its end (a POST), or None to forward as it comes."""
        if head.method != "POST":
            return None
        held = HeldRequest(self, [])
        held.add(forwarded, b"")
        return held

    def judge(self, head: RequestHead, held: HeldRequest) -> Verdict:
        """The gate's decision on a held request, now whole."""
        payload = held.payload
        body = payload[0] if len(payload) == 1 else b"".join(payload)
        held.drop()
        names = head.names
        if "content-encoding" in names:
            encoding = _value(head, "content-encoding").lower()
            if encoding not in ("", "identity"):
                decoded, problem = bounded_decode(body, encoding)
                if decoded is None:
                    return Verdict(refused_unread(problem or encoding))
                body = decoded
        session = _value(head, "mcp-session-id") if "mcp-session-id" in names else ""
        return self.gates.gate(session).judge(body)

    def answer(self, head: RequestHead, remote: RemoteExchange, answer: Answer) -> bytes:
        """The response to write for a refused request; its head, event and body noted."""
        body = answer.body
        # Nothing to answer (refused notifications): 202, as a server acknowledges them.
        status, phrase = (200, b"OK") if body else (202, b"Accepted")
        fields = [("Content-Type", "application/json")] if body else []
        fields += [("X-Mcpsniff", "guard-refused"), ("Content-Length", str(len(body)))]
        if wants_close(head.version, head.headers, head.names):
            fields.append(("Connection", "close"))
        elif head.version == "HTTP/1.0":
            fields.append(("Connection", "keep-alive"))
        remote.response(status, fields)
        for refusal in answer.refusals:
            remote.guard_answered(refusal.tool, refusal.reason, refusal.request_id)
        if body:
            remote.whole_body(body)
        lines = b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in fields)
        return b"HTTP/1.1 %d %s\r\n" % (status, phrase) + lines + b"\r\n" + body

    def reader(
        self, request: RequestHead, response: ResponseHead, expects: dict[bytes, Expected]
    ) -> ReplyReader | None:
        """What reads the replies ``expects`` waits for in this response (None: nothing to)."""
        if response.status != 200:
            return None
        session = _value(response, "mcp-session-id") or (
            _value(request, "mcp-session-id") if "mcp-session-id" in request.names else ""
        )
        content_type = _value(response, "content-type").split(";")[0].strip().lower()
        encoding = _value(response, "content-encoding").strip().lower()
        decoder = None
        if encoding not in ("", "identity"):
            if encoding not in _ZLIB:
                return None  # unread: the calls it would allow are refused as unlisted
            decoder = BoundedDecoder()
        parser = SseParser() if content_type == "text/event-stream" else None
        return ReplyReader(self, session, expects, decoder, parser)


class ReplyReader:
    """Reads one response for the replies its request expects, and teaches the gate.

    What it keeps (a JSON body, an SSE event still arriving) counts against the
    gate's budget until it is done: past the budget, or ``MAX_JUDGED``, it stops
    reading, and the gate learns nothing from this response.
    """

    __slots__ = ("body", "charged", "decoder", "expects", "gate", "parser", "session")

    def __init__(
        self,
        gate: HttpGate,
        session: str,
        expects: dict[bytes, Expected],
        decoder: BoundedDecoder | None,
        parser: SseParser | None,
    ) -> None:
        self.gate = gate
        self.session = session
        self.expects = dict(expects)
        self.decoder = decoder
        self.parser = parser
        self.body = bytearray()
        #: Content bytes read so far, counted in the gate's ``held``.
        self.charged = 0

    def feed(self, chunk: bytes) -> None:
        """A piece of the response body, as forwarded."""
        if not self.expects:
            return
        if self.decoder is not None:
            chunk = self.decoder.decode(chunk)
        self.charged += len(chunk)
        self.gate.held += len(chunk)
        if self.charged > MAX_JUDGED or self.gate.held > self.gate.budget:
            self.expects.clear()  # no more reading: nothing learned from it
            self.done()
            return
        if self.parser is None:
            self.body += chunk
            return
        for event in self.parser.feed(chunk):
            if event.data:
                self._reply(event.data.encode("utf-8", "surrogatepass"))
        if not self.expects:
            self.done()  # every reply is in: the rest of the stream passes unread

    def end(self, whole: bool) -> None:
        """The response ended (``whole``: not cut off): a JSON body is read whole now."""
        if whole and self.parser is None and self.body and self.expects:
            self._reply(bytes(self.body))
        self.done()

    def done(self) -> None:
        """Nothing more is read: what was kept is let go of (and uncounted)."""
        self.gate.held -= self.charged
        self.charged = 0
        self.body = bytearray()
        self.parser = None

    def _reply(self, data: bytes) -> None:
        self.gate.gates.gate(self.session).read_replies(data, self.expects)


#: The content codings read with zlib: gzip (its header detected), deflate (zlib-wrapped).
_ZLIB = frozenset({"gzip", "x-gzip", "deflate"})


class BoundedDecoder:
    """gzip or deflate, decoded piece by piece into at most ``MAX_JUDGED`` bytes."""

    __slots__ = ("_zlib", "broken", "made")

    def __init__(self) -> None:
        # 32 + MAX_WBITS: a gzip or a zlib header, whichever the body has.
        self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)
        self.made = 0
        #: Not decodable, or over the bound: nothing more comes out.
        self.broken = False

    def decode(self, chunk: bytes) -> bytes:
        """What ``chunk`` decodes to, or b"" once broken or over the bound."""
        if self.broken:
            return b""
        room = MAX_JUDGED + 1 - self.made
        try:
            out = self._zlib.decompress(chunk, room)
        except zlib.error:
            self.broken = True
            return b""
        self.made += len(out)
        if self.made > MAX_JUDGED or self._zlib.unconsumed_tail:
            self.broken = True
        return out


def bounded_decode(body: bytes, encoding: str) -> tuple[bytes | None, str | None]:
    """A compressed request body decoded, or (None, why) when it cannot be (within the bound)."""
    if encoding not in _ZLIB:
        return None, f"content-encoding {encoding[:40]!r}"
    decoder = BoundedDecoder()
    out = decoder.decode(body)
    if decoder.broken:
        return None, f"{encoding} body undecodable or over {MAX_JUDGED} bytes decoded"
    return out, None


def _value(head: Head, name: str) -> str:
    """The first value of field ``name`` (lower case), or ""."""
    try:
        return head.headers[head.names.index(name)][1].strip()
    except ValueError:
        return ""
