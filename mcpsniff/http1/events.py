"""What the HTTP/1.1 parsers return: one event per head, body piece and message end.

A head (``RequestHead`` or ``ResponseHead``, both a ``Head``), ``Body`` pieces, ``End``; then
the next message. Every event carries the raw bytes it consumed (``raw``), so
that a relay forwards a message with its original framing; a ``Body`` also
carries its de-chunked ``payload`` for an observer. ``Malformed`` reports
framing that cannot be trusted: nothing after it is parsed.

Performance: plain slotted dataclasses, not frozen ones (a frozen dataclass
sets each field through ``object.__setattr__``, and the relay makes a ``Body``
for every piece of every body it forwards); nothing changes them once made.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, kw_only=True)
class Head:
    """What a request head and a response head both have: the header fields and their bytes.

    Never made itself: the parsers make a ``RequestHead`` or a ``ResponseHead``,
    given the start line's parts by position and these fields by name.
    """

    #: (name, value) as received: order, case and repeats kept.
    headers: list[tuple[str, str]]
    #: The raw field lines, parallel to ``headers`` (without their CRLF).
    lines: list[bytes]
    #: The whole head as received, up to and including the empty line.
    raw: bytes
    #: The field names in lower case, parallel to ``headers`` (RFC 9110 §5.1: any case).
    names: list[str]


@dataclass(slots=True)
class RequestHead(Head):
    """A request line and its header fields."""

    method: str
    target: str
    version: str


@dataclass(slots=True)
class ResponseHead(Head):
    """A status line and its header fields."""

    version: str
    status: int
    reason: str

    @property
    def interim(self) -> bool:
        """A 1xx response: the final response is still to come (RFC 9110 §15.2)."""
        return self.status < 200


@dataclass(slots=True)
class Body:
    """A piece of a message body."""

    #: The bytes as framed on the wire (chunk-size lines included): what to forward.
    raw: bytes
    #: The content they carry (de-chunked): what an observer sees.
    payload: bytes


@dataclass(slots=True)
class End:
    """The end of a message."""

    #: Bytes that end it on the wire: a chunked body's last chunk and trailer section.
    raw: bytes = b""


@dataclass(slots=True)
class Malformed:
    """Framing that cannot be trusted; nothing after it is parsed."""

    reason: str
    #: The head of the message whose framing is bad, when that head itself parsed.
    head: Head | None = None


Event = RequestHead | ResponseHead | Body | End | Malformed
