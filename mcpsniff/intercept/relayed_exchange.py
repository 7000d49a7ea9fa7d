"""One request and its response as a client connection moves their bytes (``http_wire``).

Beside it, its ``RemoteExchange`` notes the same exchange for the analysis;
this one keeps what the connection needs: the request body held for the
observer, the response held while a legacy endpoint may be rewritten, and
where the exchange stands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.capture.remote_exchange import RemoteExchange, RemoteObserver
from mcpsniff.guard.enforce import Answer, Expected
from mcpsniff.http1.events import RequestHead, ResponseHead
from mcpsniff.http1.fields import field_tokens
from mcpsniff.intercept.http_gate import HeldRequest, ReplyReader

#: Request body bytes held before they are streamed on to the observer: a body
#: is never held whole here, whatever its size (the analysis side bounds it).
STREAM_AT = 256 << 10


@dataclass(slots=True, eq=False)
class RelayedExchange:
    """One request and its response, as this connection moves their bytes."""

    head: RequestHead
    t: float
    pieces: list[bytes] = field(default_factory=list)
    #: Bytes in ``pieces``.
    kept: int = 0
    #: What notes the exchange for the analysis, once its request is in.
    remote: RemoteExchange | None = None
    #: Observer calls made before ``remote`` existed (a response that came
    #: before the end of its request): replayed once it does.
    deferred: list[tuple[str, Any]] = field(default_factory=list)
    request_done: bool = False
    response_started: bool = False
    #: Why the upstream could not be reached (a 502 answers once the request is in).
    unreachable: str | None = None
    finished: bool = False
    #: Holding a session-less GET stream's bytes until its first event.
    holding: bool = False
    held: bytearray = field(default_factory=bytearray)
    #: The response is chunked (held bytes go out as a chunk).
    chunked: bool = False
    #: Held bytes went out re-chunked: the rest of the stream is re-chunked too.
    rechunk: bool = False
    #: The response said the upstream closes the connection after it.
    upstream_closes: bool = False
    #: Body bytes forwarded.
    body_bytes: int = 0
    #: The observer's number for it, reserved once its body started streaming.
    number: int | None = None
    #: Its head went upstream (or is on its way): its response is expected there.
    sent: bool = False
    #: ``--guard enforce``: the request held until its end, to be judged (``http_gate``).
    held_request: HeldRequest | None = None
    #: ``--guard enforce`` refused it: mcpsniff's answer, written in its turn.
    answer: Answer | None = None
    #: The replies the gate reads in its response, and what reads them.
    expects: dict[bytes, Expected] | None = None
    reader: ReplyReader | None = None

    #: ``--fault``: the request's bytes held until it is judged (None: not held).
    wire: list[bytes] | None = None
    #: ``--fault``: what carries out the faults on its response (``http_faults``).
    faulted: Any = None
    #: ``--fault``: the head of an SSE response forwarded as it came, whose pieces are
    #: screened by bytes; it is taken over (``faulted``) at the first that may match.
    screened: Any = None
    #: ``--fault``: the response mcpsniff answers in the server's place, sent in turn.
    fault_answer: bytes | None = None
    #: ``--fault``: a duplicate sent upstream; its response is recorded, never delivered.
    swallow: bool = False

    def keep(self, payload: bytes) -> bool:
        """Hold a piece of the request body for the observer; whether to stream it on now."""
        self.body_bytes += len(payload)
        self.pieces.append(payload)
        self.kept += len(payload)
        return self.kept >= STREAM_AT

    def take(self) -> bytes:
        """The body held so far (and hold nothing)."""
        pieces = self.pieces
        body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self.pieces = []
        self.kept = 0
        return body

    def stream_body(self, observer: RemoteObserver) -> None:
        """Send what is held of a big request body on to ``observer``, ahead of its end."""
        if self.number is None:
            self.number = observer.reserve()
        offset = self.body_bytes - self.kept
        observer.request_body(self.number, self.take(), offset)

    def begin(self, observer: RemoteObserver, client: str | None) -> RemoteExchange:
        """The request is in: ``observer`` notes it, with the body still held."""
        head = self.head
        return observer.begin(
            head.method,
            head.target,
            head.headers,
            self.take(),
            t=self.t,
            client=client,
            number=self.number,
            size=self.body_bytes,
        )

    def hold_stream(self, head: ResponseHead) -> bool:
        """Hold the response's bytes until its first event; False if they must pass as they are.

        A body with a Content-Length and no other framing cannot be held: a
        rewritten endpoint would change its length.
        """
        codings = field_tokens(head.headers, "transfer-encoding")
        if not codings and any(k.lower() == "content-length" for k, _ in head.headers):
            return False
        self.holding = True
        self.chunked = bool(codings) and codings[-1] == "chunked"
        return True

    def let_go(self) -> bytes:
        """Hold the response no longer: the bytes held until now."""
        held = bytes(self.held)
        self.held = bytearray()
        self.holding = False
        return held


@dataclass(slots=True, eq=False)
class Outgoing:
    """Request bytes for the upstream that ``--fault`` sends in their turn, once
    ``ready`` (``http_faults``: behind a delayed or split request)."""

    data: bytes
    ready: bool
    #: Told just before they go (or when the connection closed first).
    sent: Callable[[], None] | None = None
