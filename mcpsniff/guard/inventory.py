"""One pass over a trace: each session's server, the definitions it offered, its slow requests.

The trace's frames are parsed again here (the reader hands over the JSON it
already parsed for embedded frames) and requests paired with their replies by
session, direction and id, which is all the guard needs: it reads what a
server offered, not whether the exchange was correct (that is ``check``'s).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcpsniff.core.guard.fingerprint import LISTS, Definition, definitions
from mcpsniff.core.model import UNPARSED, EventRecord, FrameRecord
from mcpsniff.trace.codec import TraceError
from mcpsniff.trace.reader import TraceReader

#: At most this many requests are waiting for a reply per session (a hostile
#: trace may never answer).
MAX_PENDING = 65_536
#: The slowest requests kept per session.
SLOWEST_KEPT = 20


class InventoryError(Exception):
    """The trace cannot be read: a one-line reason."""


@dataclass(frozen=True, slots=True)
class Timed:
    """One answered request and how long its answer took."""

    seconds: float
    method: str
    target: str | None
    request_seq: int
    reply_seq: int


@dataclass
class SessionOffer:
    """What one session's server offered."""

    trace: str
    session: str
    #: Who the server is: ``stdio:LABEL`` or ``http:URL``, and ``[serverInfo.name]``.
    identity: str
    started: float | None = None
    #: The last complete list of each kind, ``kind:name`` -> definition.
    offers: dict[str, dict[str, Definition]] = field(default_factory=dict)
    #: The first complete list of each kind (drift within the session comes after it).
    first_offers: dict[str, dict[str, Definition]] = field(default_factory=dict)
    #: The seq of the reply that last set each kind's offer.
    list_seqs: dict[str, int] = field(default_factory=dict)
    #: Paginated pages being collected, by method.
    pages: dict[str, dict[str, Definition]] = field(default_factory=dict)
    server_name: str | None = None
    server_version: str | None = None
    #: The slowest answered requests, slowest first once ``finish``ed.
    slowest: list[Timed] = field(default_factory=list)
    requests: int = 0
    #: How many answered requests took longer than ``read_inventory``'s ``slower_than``.
    slow: int = 0

    def definitions(self) -> dict[str, Definition]:
        """Every definition of every kind, by ``kind:name``."""
        merged: dict[str, Definition] = {}
        for offer in self.offers.values():
            merged.update(offer)
        return merged

    def first_definitions(self) -> dict[str, Definition]:
        """Every definition of every kind as first listed in the session."""
        merged: dict[str, Definition] = {}
        for offer in self.first_offers.values():
            merged.update(offer)
        return merged

    def tools(self) -> list[Definition]:
        """The listed tools, in name order."""
        return sorted(self.offers.get("tool", {}).values(), key=lambda d: d.name)

    @property
    def listed(self) -> bool:
        """Whether the session saw any complete list result."""
        return bool(self.list_seqs)


@dataclass
class Inventory:
    """What every session of some traces offered, in the order they started."""

    sessions: list[SessionOffer] = field(default_factory=list)

    def by_identity(self) -> dict[str, list[SessionOffer]]:
        """The sessions of each server, in order, only those that listed something."""
        grouped: dict[str, list[SessionOffer]] = {}
        for offer in self.sessions:
            if offer.listed:
                grouped.setdefault(offer.identity, []).append(offer)
        return grouped


def read_inventory(
    paths: Iterable[Path],
    warn: Callable[[str], None] | None = None,
    slower_than: float | None = None,
) -> Inventory:
    """The inventory of ``paths``, read in order; ``InventoryError`` when one cannot be read.

    ``slower_than``: count the requests answered after more than these seconds.
    """
    inventory = Inventory()
    for path in paths:
        inventory.sessions.extend(_read_one(path, warn, slower_than))
    return inventory


def trace_label(header: dict[str, Any]) -> str:
    """Who the server of a trace is, from its header: ``stdio:LABEL`` or ``http:URL``."""
    meta = header.get("meta")
    meta = meta if type(meta) is dict else {}
    upstream = meta.get("upstream")
    if type(upstream) is str and upstream:
        return f"http:{upstream}"
    label = meta.get("label")
    if type(label) is str and label:
        return f"stdio:{label}"
    command = meta.get("command") or meta.get("server_command")
    if type(command) is list and command and all(type(part) is str for part in command):
        return "stdio:" + " ".join(command)
    source = meta.get("source")
    return f"trace:{source}" if type(source) is str and source else "trace:unknown"


def _read_one(
    path: Path, warn: Callable[[str], None] | None, slower_than: float | None
) -> list[SessionOffer]:
    try:
        reader = TraceReader(path, on_skip=warn or (lambda _text: None))
    except TraceError as exc:
        raise InventoryError(str(exc)) from None
    try:
        with reader:
            builder = InventoryBuilder(path, reader.header, slower_than=slower_than)
            for record in reader.inputs():
                builder.feed(record)
    except TraceError as exc:
        raise InventoryError(str(exc)) from None
    except OSError as exc:
        raise InventoryError(f"{path}: read failed: {exc.strerror or exc}") from None
    return builder.finish()


#: The requests the guard pairs when it is not timing every request.
_LISTED = frozenset({*LISTS, "initialize"})


class InventoryBuilder:
    """Builds the sessions' offers from a trace's input records, fed one by one.

    ``check`` feeds it the records its re-analysis reads (one pass over the
    trace); unless ``timed`` (or ``slower_than``), only the list requests and
    ``initialize`` are paired, which costs a dict lookup per other frame.
    """

    def __init__(
        self,
        path: Path,
        header: dict[str, Any],
        *,
        slower_than: float | None = None,
        timed: bool = False,
    ) -> None:
        self.path = str(path)
        self.label = trace_label(header)
        self.slower_than = slower_than
        self.methods: frozenset[str] | None = None if timed or slower_than is not None else _LISTED
        self.sessions: dict[str, _Session] = {}

    def feed(self, record: FrameRecord | EventRecord) -> None:
        """Take one input record of the trace."""
        state = self.sessions.get(record.session)
        if state is None:
            state = self.sessions[record.session] = _Session(
                SessionOffer(self.path, record.session, self.label, record.t),
                self.slower_than,
                self.methods,
            )
        if type(record) is FrameRecord:
            state.frame(record)
        elif type(record) is EventRecord:
            state.event(record)

    def finish(self) -> list[SessionOffer]:
        """The sessions' offers, in the order they started."""
        found = []
        for state in self.sessions.values():
            offer = state.offer
            if offer.server_name:
                offer.identity = f"{offer.identity} [{offer.server_name}]"
            offer.slowest = sorted(
                (timed for _, _, timed in state.slowest), key=lambda t: -t.seconds
            )
            found.append(offer)
        return found


class _Session:
    """The pairing state of one session while its trace is read."""

    def __init__(
        self, offer: SessionOffer, slower_than: float | None, methods: frozenset[str] | None
    ) -> None:
        self.offer = offer
        self.slower_than = slower_than
        self.methods = methods
        self.pending: dict[tuple[str, bytes], tuple[str, int, float, Any]] = {}
        self.slowest: list[tuple[float, int, Timed]] = []

    def event(self, record: EventRecord) -> None:
        if record.event == "session-start":
            command = record.data.get("command")
            if type(command) is list and command and self.offer.identity.startswith("trace:"):
                self.offer.identity = "stdio:" + " ".join(str(part) for part in command)

    def frame(self, record: FrameRecord) -> None:
        value = record.value
        if self.methods is not None and not self.pending and record.direction == "s2c":
            return  # nothing of interest is waiting for a reply: skip without parsing
        if value is UNPARSED:
            try:
                value = orjson.loads(record.raw)
            except orjson.JSONDecodeError:
                return
        for message in _messages(value):
            self.message(record, message)

    def message(self, record: FrameRecord, message: dict[str, Any]) -> None:
        if "id" not in message:
            return
        try:
            key = orjson.dumps(message["id"])
        except TypeError:
            return
        method = message.get("method")
        if type(method) is str:
            if self.methods is not None and method not in self.methods:
                return
            if len(self.pending) < MAX_PENDING:
                params = message.get("params")
                self.pending[(record.direction, key)] = (method, record.seq, record.t, params)
                self.offer.requests += 1
            return
        back = "c2s" if record.direction == "s2c" else "s2c"
        request = self.pending.pop((back, key), None)
        if request is None:
            return
        method, seq, sent, params = request
        self.timed(Timed(record.t - sent, method, _target(params), seq, record.seq))
        result = message.get("result")
        if type(result) is not dict:
            return
        if method == "initialize" or "serverInfo" in result:
            info = result.get("serverInfo")
            if type(info) is dict and type(info.get("name")) is str:
                self.offer.server_name = info["name"][:200]
                version = info.get("version")
                self.offer.server_version = version[:100] if type(version) is str else None
        if method in LISTS:
            self.listing(method, params, result, record.seq)

    def listing(self, method: str, params: Any, result: dict[str, Any], seq: int) -> None:
        kind = LISTS[method][0]
        paged = type(params) is dict and "cursor" in params
        page = {d.key: d for d in definitions(method, result)}
        if paged:
            page = {**self.offer.pages.get(method, {}), **page}
        if type(result.get("nextCursor")) is str:
            self.offer.pages[method] = page
            return
        self.offer.pages.pop(method, None)
        self.offer.offers[kind] = page
        self.offer.first_offers.setdefault(kind, page)
        self.offer.list_seqs[kind] = seq

    def timed(self, timed: Timed) -> None:
        if self.slower_than is not None and timed.seconds > self.slower_than:
            self.offer.slow += 1
        entry = (timed.seconds, timed.request_seq, timed)
        if len(self.slowest) < SLOWEST_KEPT:
            heapq.heappush(self.slowest, entry)
        elif entry[:2] > self.slowest[0][:2]:
            heapq.heapreplace(self.slowest, entry)


def _messages(value: Any) -> Iterator[dict[str, Any]]:
    if type(value) is dict:
        yield value
    elif type(value) is list:
        for item in value[:10_000]:
            if type(item) is dict:
                yield item


def _target(params: Any) -> str | None:
    if type(params) is not dict:
        return None
    for key in ("name", "uri"):
        value = params.get(key)
        if type(value) is str:
            return value[:200]
    return None
