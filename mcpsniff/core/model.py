"""The records the analyzer produces and the trace stores.

Everything the core emits is one of four record types. They are plain
dataclasses so that the trace module can serialize them and the shells can
print them without knowing anything about JSON-RPC.

* ``FrameRecord``: one wire frame (a stdio line, an HTTP body, an SSE event's
  data), with its raw bytes. Frames are the *input* of the analyzer: replaying
  the frame and event records of a trace through a fresh analyzer reproduces
  every other record (docs/architecture.md, invariant 4, "one source of truth").
* ``EventRecord``: a transport event (session start and end, stdio stderr
  line, child exit, HTTP exchange metadata). Also analyzer input.
* ``MessageRecord``: one JSON-RPC message parsed from a frame (a batch yields
  one record for the array and one per element), with its correlation.
* ``FindingRecord``: a rule violation, pointing at the catalogue id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Direction = Literal["c2s", "s2c"]
C2S: Direction = "c2s"
S2C: Direction = "s2c"

#: The other side of a direction: responses travel opposite to their request.
OPPOSITE: dict[str, Direction] = {C2S: S2C, S2C: C2S}

#: Who sent a frame in each direction, for messages a human reads.
SENDER: dict[str, str] = {C2S: "client", S2C: "server"}

# Message kinds. A JSON-RPC 2.0 message is exactly one of these (JSON-RPC §4-§6).
REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
ERROR = "error"
BATCH = "batch"
INVALID = "invalid"
UNPARSEABLE = "unparseable"

KINDS = (REQUEST, NOTIFICATION, RESPONSE, ERROR, BATCH, INVALID, UNPARSEABLE)
#: The kinds that carry a method (JSON-RPC §4): what a sender sends unprompted.
CALLS = frozenset({REQUEST, NOTIFICATION})
#: The kinds that answer a request (JSON-RPC §5): a result or an error.
REPLIES = frozenset({RESPONSE, ERROR})

SEVERITIES = ("error", "warning", "info")
#: Rank for ``--fail-on``: a finding counts when its rank >= the threshold's.
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


class _Unparsed:
    """Marks a frame whose JSON value is not known (not parsed, or not JSON)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNPARSED"


UNPARSED: Any = _Unparsed()


@dataclass(slots=True)
class FrameRecord:
    """One frame exactly as it crossed the wire.

    ``raw`` includes the line terminator for stdio frames, so the frames of one
    direction concatenate back to the byte stream. ``value`` is the parsed JSON
    of ``raw`` once someone has parsed it (the analyzer, or the trace reader),
    so that it is parsed once only; it is never part of a record's identity.
    """

    seq: int
    t: float
    session: str
    direction: str
    transport: str
    raw: bytes
    meta: dict[str, Any] | None = None
    value: Any = field(default=UNPARSED, compare=False, repr=False)


@dataclass(slots=True)
class EventRecord:
    """A transport event: session start/end, stderr line, exit, HTTP metadata."""

    seq: int
    t: float
    session: str
    event: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class MessageRecord:
    """A JSON-RPC message parsed from frame ``frame``.

    ``index`` is the position inside a batch, ``None`` for a single message.
    ``has_id`` separates an absent id (a notification) from ``"id": null``
    (a request with a null id, JSON-RPC §4). For responses, ``answers`` is
    the frame seq of the request it answers and ``request_index`` that
    request's batch index; ``latency_ms`` is the time between the two.
    """

    frame: int
    session: str
    direction: str
    kind: str
    index: int | None = None
    id: Any = None
    has_id: bool = False
    method: str | None = None
    answers: int | None = None
    request_index: int | None = None
    latency_ms: float | None = None
    note: str | None = None
    size: int | None = None
    error_code: Any = None
    #: What a request acts on, for people reading a timeline: the tool or
    #: prompt name, the resource URI, or a log level.
    target: str | None = None
    # The analyzer's working view of the message, filled while the frame is
    # analyzed: never stored in a trace, compared or shown. Keeping it on the
    # record saves building a second object per message (the check path).
    #: The parsed JSON-RPC object.
    obj: Any = field(default=None, compare=False, repr=False)
    #: Its "params" member when that is an object.
    params: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    #: The frame it came in.
    source: FrameRecord | None = field(default=None, compare=False, repr=False)
    #: The frame's timestamp.
    sent_at: float = field(default=0.0, compare=False, repr=False)
    #: For a response, the pending request (``state.Pending``) it answers.
    request: Any = field(default=None, compare=False, repr=False)
    #: For a request, the key of its id (``ids.id_key``).
    key: Any = field(default=None, compare=False, repr=False)


@dataclass(slots=True)
class FindingRecord:
    """A violation of catalogue rule ``rule`` concerning the frames in ``seq``."""

    rule: str
    severity: str
    message: str
    session: str
    seq: list[int]
    data: dict[str, Any] = field(default_factory=dict)


Record = FrameRecord | EventRecord | MessageRecord | FindingRecord
