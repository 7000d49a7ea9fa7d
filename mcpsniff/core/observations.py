"""What a shell can see, as one typed vocabulary: the only things that cross to the analysis.

A shell (``mcpsniff stdio``, ``mcpsniff http``, the mitmproxy addon) forwards
bytes and emits these observations, each with the wall-clock time it saw the
thing happen; the analysis side replays them on an adapter (stdio:
``mcpsniff.core.stdio_adapter``; HTTP: ``mcpsniff.core.http.adapter``) and
the ``Session``. They travel between processes with ``observation_codec``
(no pickle).

A stdio shell sees two byte streams (``StreamData``, ``StreamEnd``), the
child's stderr (``Stderr``) and what it did with the child (``StdioEvent``). An
HTTP shell sees exchanges, numbered by the shell (``exchange``), and tells
what it did to one itself with the adapter's own typed events
(``EndpointRewritten``, ``RequestCut``). Bytes a full
backlog dropped are never silent: ``StreamGap``, ``RequestGap``,
``ResponseGap`` and ``CaptureGap`` say how many, so that the trace accounts
for every byte forwarded. ``CaptureEnd`` ends every session: the one way a
trace ends.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, get_args

from mcpsniff.core.frozen import fast_init

#: Header pairs as text, or the bytes pairs mitmproxy holds (decoded on the analysis side).
Headers = tuple[tuple[str, str], ...] | tuple[tuple[bytes, bytes], ...]


class Event:
    """What the trace keeps as a transport event record: its ``name`` and ``data()``.

    The shells' own events here and the HTTP layer's (``mcpsniff.core.http.events``)
    are frozen, slotted dataclasses deriving from it, each a leaf (no event class
    derives from another). ``data()`` is every field but ``t`` (the record's own
    time), in the class's order, each under its own name or the one ``renamed``
    gives it; the members named in ``optional`` are left out while they are None
    (nothing known), or, a flag or a list, while False or empty. A class whose
    record adds or otherwise leaves out a member defines its own.
    """

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]
    name: ClassVar[str]
    #: Members the record leaves out while they are None (a flag or a list: False, empty).
    optional: ClassVar[tuple[str, ...]] = ()
    #: Field -> the record's name for it, where the two differ.
    renamed: ClassVar[dict[str, str]] = {}

    def data(self) -> dict[str, Any]:
        """The event record's ``data`` object."""
        # The first event of a class makes the class its own data(): plain
        # attribute reads, compiled once, as the dataclasses module makes
        # __init__. Later events call it directly, at the cost of a hand-written
        # one: the HTTP layer records an event for every SSE event.
        cls = type(self)
        made = _data_method(cls)
        cls.data = made  # type: ignore[method-assign]
        return made(self)


def _data_method(cls: type[Event]) -> Any:
    """``cls``'s ``data()``, made as source: its fields but ``t`` (``optional`` ones when set)."""
    members = [f for f in fields(cls) if f.name != "t"]
    names = [f.name for f in members]
    # The annotation is text where the module postpones annotations.
    flags = {f.name for f in members if f.type in ("bool", bool) or str(f.type).startswith("list")}
    unknown = {*cls.optional, *cls.renamed} - set(names)
    if unknown:
        raise TypeError(f"{cls.__name__}: optional or renamed names no field: {sorted(unknown)}")
    key = {name: cls.renamed.get(name, name) for name in names}
    # The members before the first optional one, as one dict display.
    first = next((i for i, name in enumerate(names) if name in cls.optional), len(names))
    shown = ", ".join(f"{key[name]!r}: self.{name}" for name in names[:first])
    lines = ["def data(self):\n", f"    data = {{{shown}}}\n"]
    for name in names[first:]:
        if name in cls.optional:
            test = f"self.{name}" if name in flags else f"self.{name} is not None"
            lines.append(f"    if {test}:\n")
            lines.append(f"        data[{key[name]!r}] = self.{name}\n")
        else:
            lines.append(f"    data[{key[name]!r}] = self.{name}\n")
    lines.append("    return data\n")
    namespace: dict[str, Any] = {}
    exec("".join(lines), namespace)
    made = namespace["data"]
    made.__qualname__ = f"{cls.__qualname__}.data"
    made.__module__ = cls.__module__
    made.__doc__ = Event.data.__doc__
    return made


@fast_init
@dataclass(frozen=True, slots=True)
class StreamData:
    """Bytes forwarded in ``direction`` of a byte stream (stdio: ``c2s`` or ``s2c``)."""

    direction: str
    t: float
    body: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class StreamEnd:
    """The byte stream in ``direction`` ended."""

    direction: str
    t: float


@fast_init
@dataclass(frozen=True, slots=True)
class StreamGap:
    """``lost`` bytes forwarded in ``direction`` never reached the analysis (a full backlog)."""

    direction: str
    t: float
    lost: int


@fast_init
@dataclass(frozen=True, slots=True)
class Stderr:
    """A piece of the stdio child's stderr, passed on; ``b""`` when it ended."""

    t: float
    body: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class RequestBegin:
    """A whole request went on: its head, and its body (or the rest of a streamed one).

    ``size``: the whole body's bytes as forwarded (streamed pieces included), so
    that pieces lost at its end are counted too.
    """

    exchange: int
    t: float
    method: str
    path: str
    headers: Headers
    host: str | None
    client: str | None
    size: int
    body: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class RequestBody:
    """A piece of a request body sent ahead of its ``RequestBegin`` (``offset``: bytes before)."""

    exchange: int
    t: float
    offset: int
    body: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class RequestGap:
    """``lost`` bytes at the end of a request body never reached the analysis."""

    exchange: int
    t: float
    lost: int


@fast_init
@dataclass(frozen=True, slots=True)
class ResponseBegin:
    """The response's status and headers went on."""

    exchange: int
    t: float
    status: int
    headers: Headers


@fast_init
@dataclass(frozen=True, slots=True)
class ResponseBody:
    """A piece of the response body went on (``whole``: the entire body, from a buffering shell)."""

    exchange: int
    t: float
    whole: bool
    body: bytes


@fast_init
@dataclass(frozen=True, slots=True)
class ResponseGap:
    """``lost`` bytes of the response body never reached the analysis (a full backlog)."""

    exchange: int
    t: float
    lost: int


@fast_init
@dataclass(frozen=True, slots=True)
class NoFirstEvent:
    """A session-less GET stream sent no event within the shell's hold limit."""

    exchange: int
    t: float


@fast_init
@dataclass(frozen=True, slots=True)
class ExchangeEnd:
    """The exchange is over (``whole``: False when it was cut short)."""

    exchange: int
    t: float
    outcome: str
    whole: bool


@fast_init
@dataclass(frozen=True, slots=True)
class Unreachable(Event):
    """The upstream could not be reached; the shell answered 502.

    The shell tells it with the URL it tried; the HTTP layer records it as it
    came, but for the URL, redacted (``HttpSettings.shown_url``).
    """

    name: ClassVar[str] = "upstream-unreachable"
    renamed: ClassVar[dict[str, str]] = {"reason": "error"}
    exchange: int
    t: float
    url: str
    reason: str


@fast_init
@dataclass(frozen=True, slots=True)
class StdioStart(Event):
    """``mcpsniff stdio`` began, to run ``command`` (as the trace stores it), as process ``pid``."""

    name: ClassVar[str] = "session-start"
    t: float
    command: list[str]
    pid: int

    def data(self) -> dict[str, Any]:
        return {"command": self.command, "transport": "stdio", "pid": self.pid}


@fast_init
@dataclass(frozen=True, slots=True)
class ChildSpawned(Event):
    """The stdio child runs as ``child_pid``, the program ``argv0`` resolved to."""

    name: ClassVar[str] = "spawned"
    t: float
    child_pid: int
    argv0: str


@fast_init
@dataclass(frozen=True, slots=True)
class SpawnFailed(Event):
    """The stdio child could not be started: ``error`` says why."""

    name: ClassVar[str] = "spawn-failed"
    t: float
    command: list[str]
    error: str


@fast_init
@dataclass(frozen=True, slots=True)
class SignalForwarded(Event):
    """mcpsniff received ``signal`` (its name, ``SIGTERM``) and passed it to the child's group."""

    name: ClassVar[str] = "signal"
    t: float
    signal: str


@fast_init
@dataclass(frozen=True, slots=True)
class ChildExited(Event):
    """The stdio child exited: its return code and the exit status mcpsniff passes on.

    ``signal`` names the signal that killed it (a negative return code), and
    ``forwarded_signals`` the signals mcpsniff had passed on before.
    """

    name: ClassVar[str] = "exit"
    optional: ClassVar[tuple[str, ...]] = ("signal", "forwarded_signals")
    t: float
    returncode: int
    status: int
    signal: str | None
    forwarded_signals: list[str]


@fast_init
@dataclass(frozen=True, slots=True)
class GuardAnswered(Event):
    """``--guard enforce`` answered a ``tools/call`` itself and did not forward it.

    ``tool`` is the refused tool, ``reason`` why, ``id`` the request's id: the
    trace says that mcpsniff answered, so no rule blames the server for it.
    """

    name: ClassVar[str] = "guard-answered"
    t: float
    tool: str
    reason: str
    id: Any


@fast_init
@dataclass(frozen=True, slots=True)
class FaultInjected(Event):
    """``--fault`` did something to the traffic on purpose (``mcpsniff/faults``).

    ``record`` is the fault record as the trace keeps it (``fault_version``,
    the action, the frames it marks, whether the message was delivered): it is
    versioned by the faults package, so the shell passes it on whole.
    """

    name: ClassVar[str] = "fault"
    t: float
    record: dict[str, Any]

    def data(self) -> dict[str, Any]:
        return self.record


#: What a stdio shell tells of its child and itself, each written as a
#: transport event of its ``name`` with its ``data()``.
StdioEvent = (
    StdioStart
    | ChildSpawned
    | SpawnFailed
    | SignalForwarded
    | ChildExited
    | GuardAnswered
    | FaultInjected
)
#: The classes of ``StdioEvent``.
STDIO_EVENTS: tuple[type, ...] = get_args(StdioEvent)


@fast_init
@dataclass(frozen=True, slots=True)
class CaptureGap:
    """Observations the shell dropped (a full backlog) since the last gap."""

    t: float
    lost_calls: int
    lost_bytes: int


@fast_init
@dataclass(frozen=True, slots=True)
class CaptureEnd:
    """The capture is over: every session ends here."""

    t: float


@fast_init
@dataclass(frozen=True, slots=True)
class EndpointRewritten(Event):
    """The shell rewrote a legacy endpoint event's URL to point at itself."""

    name: ClassVar[str] = "endpoint-rewrite"
    # "from" is a keyword: no field can be named so.
    renamed: ClassVar[dict[str, str]] = {"old": "from", "new": "to"}
    exchange: int
    t: float
    old: str
    new: str


@fast_init
@dataclass(frozen=True, slots=True)
class RequestCut(Event):
    """A request ended before its end; ``body_bytes`` of its body reached the upstream."""

    name: ClassVar[str] = "http-request-cut"
    exchange: int
    t: float
    body_bytes: int


@fast_init
@dataclass(frozen=True, slots=True)
class HttpGuardAnswered(Event):
    """``--guard enforce`` answered an exchange's ``tools/call`` itself (see ``GuardAnswered``).

    Sent after the answer's head, so that the event sits in the exchange's
    session, after its request and before the body mcpsniff wrote.
    """

    name: ClassVar[str] = "guard-answered"
    exchange: int
    t: float
    tool: str
    reason: str
    id: Any


@fast_init
@dataclass(frozen=True, slots=True)
class ExchangeFault(Event):
    """``--fault`` did something to an HTTP exchange on purpose (``intercept/http_faults.py``).

    Told to the exchange, so that its ``fault`` event lands in the exchange's
    session, before the frames it marks; ``record`` is the fault record as
    ``FaultInjected`` carries it.
    """

    name: ClassVar[str] = "fault"
    exchange: int
    t: float
    record: dict[str, Any]

    def data(self) -> dict[str, Any]:
        return self.record


@fast_init
@dataclass(frozen=True, slots=True)
class HttpRefused(Event):
    """What the relay refused or cut that belongs to no exchange (a bad head, a slow one)."""

    name: ClassVar[str] = "http-refused"
    optional: ClassVar[tuple[str, ...]] = ("client",)
    t: float
    kind: str
    reason: str
    #: The client's address (``host:port``), when known.
    client: str | None


#: Every observation, its classes in the order of the codec's tags (their
#: indexes in ``KINDS``): a new kind is appended, so that the others keep their numbers.
Observation = (
    RequestBegin
    | RequestBody
    | RequestGap
    | ResponseBegin
    | ResponseBody
    | ResponseGap
    | NoFirstEvent
    | EndpointRewritten
    | ExchangeEnd
    | Unreachable
    | StdioStart
    | CaptureGap
    | CaptureEnd
    | StreamData
    | StreamEnd
    | StreamGap
    | Stderr
    | RequestCut
    | HttpRefused
    # The rest of the stdio events (a union holds a class once, where it first stands).
    | StdioEvent
    | HttpGuardAnswered
    | ExchangeFault
)
#: Every observation class, in a fixed order (the codec's tags are these indexes).
KINDS: tuple[type, ...] = get_args(Observation)
