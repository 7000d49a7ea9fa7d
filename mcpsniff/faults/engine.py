"""Which fault applies to a message crossing the relay, and the trace record that says so.

The engine sees every message of both directions in the order the relay
reads them. It remembers the requests in flight (their method and tool), so
that ``when method == tools/call and direction == s2c`` matches the
*response* to a ``tools/call``, as the same filter does in ``show``. The
first fault whose filter matches, whose ``after`` is spent, whose ``times``
is not, and whose ``prob`` draw succeeds, is the one injected; one message
gets at most one fault. Each fault draws from its own generator seeded with
its ``seed`` (or a random seed, recorded in the trace so a run can be
reproduced), so the same seed over the same traffic gives the same faults.
"""

from __future__ import annotations

import base64
import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from mcpsniff.core.ids import IdKey, id_key
from mcpsniff.core.model import (
    C2S,
    ERROR,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    S2C,
    UNPARSEABLE,
    FrameRecord,
)
from mcpsniff.core.observations import FaultInjected
from mcpsniff.faults.spec import ANSWERS, DELAY, TOOL_ERROR, Fault
from mcpsniff.filter import MessageView
from mcpsniff.filter.fields import CHOICE_ALIASES
from mcpsniff.filter.syntax import And, Compare, Node, Not, Or, Present

#: The ``event`` name of a fault record in the trace.
FAULT_EVENT = FaultInjected.name
#: Version of a fault record's ``data`` (its ``fault_version`` member).
FAULT_RECORD_VERSION = 1
#: Requests in flight the engine remembers per direction (a peer that never
#: answers must not make it grow without bound).
PENDING_LIMIT = 10_000
#: Most bytes of an original message copied into its fault record.
ORIGINAL_LIMIT = 1 << 20
TOOLS_CALL = "tools/call"


@dataclass(frozen=True, slots=True)
class Message:
    """What the engine made of one message: enough for filters and for answering it."""

    direction: str
    raw: bytes
    kind: str
    method: str | None = None
    tool: str | None = None
    id: Any = None
    has_id: bool = False
    #: The parsed JSON value (``None`` when not JSON).
    value: Any = None


@dataclass(frozen=True, slots=True)
class Injection:
    """One decision: fault ``fault`` (number ``index`` of the run) applies to ``message``."""

    fault: Fault
    index: int
    message: Message
    #: How many times this fault has now been injected (1 for the first).
    count: int
    #: ``delay``: the delay drawn, in milliseconds.
    delay_ms: float = 0.0


@dataclass(slots=True)
class _FaultState:
    fault: Fault
    seed: int
    rng: random.Random
    matched: int = 0
    injected: int = 0


@dataclass(slots=True)
class FaultEngine:
    """Decides, message by message, which fault (if any) to inject."""

    faults: list[Fault]
    _states: list[_FaultState] = field(default_factory=list)
    #: direction of the request -> its id -> (method, tool)
    _pending: dict[str, dict[IdKey, tuple[str, str | None]]] = field(
        default_factory=lambda: {C2S: {}, S2C: {}}
    )
    _seq: int = 0
    #: direction of a message -> the requests in flight it may answer (``_pending``'s other)
    _asked: dict[str, dict[IdKey, tuple[str, str | None]]] = field(default_factory=dict)
    #: Byte strings one of which every message a fault can match must contain (in
    #: itself, or in the request it answers); None when some fault needs no such string.
    needles: tuple[bytes, ...] | None = None
    #: The directions whose messages must be read (decided once, from the filters):
    #: those a fault can match, and the other one where a filter names a method or tool
    #: (an answer has them from the request it answers). A relay need not hold, read or
    #: take over what goes otherwise: no fault can ever apply to it.
    watched: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        watched: set[str] = set()
        for fault in self.faults:
            seed = fault.seed if fault.seed is not None else random.SystemRandom().getrandbits(32)
            self._states.append(_FaultState(fault, seed, random.Random(seed)))
            watched |= watched_by(fault.when.tree) if fault.when is not None else BOTH
        self.watched = frozenset(watched)
        self._asked = {C2S: self._pending[S2C], S2C: self._pending[C2S]}
        found: set[bytes] = set()
        for fault in self.faults:
            some = needles_of(fault.when.tree) if fault.when is not None else None
            if some is None:
                break
            found |= some
        else:
            self.needles = tuple(found) if self.faults else None

    def could_match(self, block: bytes, direction: str) -> bool:
        """Whether any message of ``block`` may match a fault: False lets it pass unread.

        None going in a direction no fault watches can (``watched``).
        A fault whose filter requires a method or tool name can only match a
        request holding that name in its bytes (or a message answering such a
        request, which the engine then has in flight). JSON escapes could spell
        a name otherwise (``\\/``, ``\\u``): a block holding one is read.
        """
        if direction not in self.watched:
            return False
        needles = self.needles
        if needles is None:
            return True
        # ``partition``, neither ``in`` nor ``find``: ``bytes in bytes`` first tries its
        # operand as an int (a TypeError made and dropped), ``find`` parses its
        # arguments from a tuple; ``partition`` takes one, and finding nothing it
        # makes no new bytes (its middle part is then empty). Needles are JSON
        # strings, never empty.
        for needle in needles:
            if block.partition(needle)[1]:
                return True
        # An int operand of ``in`` is one byte looked for with memchr: 92 is a backslash.
        if 92 in block and (block.partition(b"\\/")[1] or block.partition(b"\\u")[1]):
            return True
        # It may answer a request in flight that a fault named. A truth test: no call.
        if self._asked[direction]:  # noqa: SIM103
            return True
        return False

    def inline_search(self, direction: str) -> tuple[bytes | None, dict[Any, Any]]:
        """``could_match`` for a caller to run inline (no call on its hot path).

        A block with no backslash, not holding the needle returned, while the dict
        returned (``asked``: the very dict, kept up to date) is empty, is one
        ``could_match`` clears; anything else is asked of ``could_match``. The
        needle is None when that is all there is to do (a fault with no name to
        search for, or more than one name); in a direction no fault watches, a
        backslash (``could_match`` clears everything there).
        """
        if direction not in self.watched:
            return b"\\", {}
        needles = self.needles
        if needles is None or len(needles) != 1:
            return None, {}
        return needles[0], self._asked[direction]

    def asked(self, direction: str) -> dict[IdKey, tuple[str, str | None]]:
        """The requests in flight a message going in ``direction`` may answer (kept up to date)."""
        return self._asked[direction]

    def seed_of(self, index: int) -> int:
        """The seed fault ``index`` draws from (its own, or the one chosen for it)."""
        return self._states[index].seed

    def read(self, direction: str, raw: bytes) -> Message:
        """Classify one message (a line without its terminator, or a body) and note requests."""
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return Message(direction, raw, UNPARSEABLE)
        if type(value) is not dict:
            return Message(
                direction, raw, "batch" if type(value) is list else "invalid", value=value
            )
        method = value.get("method")
        has_id = "id" in value
        ident = value.get("id")
        if isinstance(method, str):
            params = value.get("params")
            tool = None
            if method == TOOLS_CALL and isinstance(params, dict):
                name = params.get("name")
                tool = name if isinstance(name, str) else None
            if not has_id:
                return Message(direction, raw, NOTIFICATION, method, tool, value=value)
            pending = self._pending[direction]
            if len(pending) < PENDING_LIMIT and self._candidate(raw):
                pending[_key(ident)] = (method, tool)
            return Message(direction, raw, REQUEST, method, tool, ident, True, value)
        kind = ERROR if "error" in value else RESPONSE
        asked = self._pending[S2C if direction == C2S else C2S].pop(_key(ident), None)
        method, tool = asked if asked is not None else (None, None)
        return Message(direction, raw, kind, method, tool, ident, has_id, value)

    def _candidate(self, raw: bytes) -> bool:
        needles = self.needles
        find = raw.find
        return needles is None or find(b"\\") >= 0 or any(find(needle) >= 0 for needle in needles)

    def judge(self, message: Message) -> Injection | None:
        """The fault to inject into ``message``, or None; counts matches and injections."""
        view: MessageView | None = None
        for index, state in enumerate(self._states):
            fault = state.fault
            if fault.action in ANSWERS and message.kind != REQUEST:
                continue
            if fault.action == TOOL_ERROR and message.method != TOOLS_CALL:
                continue
            if fault.when is not None:
                if view is None:
                    view = self._view(message)
                if not fault.when.matches(view):
                    continue
            state.matched += 1
            if state.matched <= fault.after:
                continue
            if fault.times is not None and state.injected >= fault.times:
                continue
            if fault.prob < 1.0 and state.rng.random() >= fault.prob:
                continue
            state.injected += 1
            delay = 0.0
            if fault.action == DELAY:
                low, high = fault.delay_ms
                delay = low if high == low else state.rng.uniform(low, high)
            return Injection(fault, index, message, state.injected, delay)
        return None

    def _view(self, message: Message) -> MessageView:
        self._seq += 1
        frame = FrameRecord(self._seq, 0.0, "", message.direction, "", message.raw)
        frame.value = message.value
        error_code = None
        is_error = False
        value = message.value
        if message.kind == ERROR and isinstance(value, dict):
            error = value.get("error")
            error_code = error.get("code") if isinstance(error, dict) else None
        elif message.kind == RESPONSE and isinstance(value, dict):
            result = value.get("result")
            is_error = isinstance(result, dict) and result.get("isError") is True
        return MessageView(
            session="",
            seq=self._seq,
            t=None,
            kind=message.kind,
            direction=message.direction,
            method=message.method,
            tool=message.tool,
            has_id=message.has_id,
            id=message.id,
            error_code=error_code,
            is_error=is_error,
            frame=frame,
        )


#: Fields whose ``==`` value a matching message (or its request) holds as a JSON string.
NAME_FIELDS = frozenset({"mcp.method.name", "gen_ai.tool.name"})


def needles_of(node: Node) -> frozenset[bytes] | None:
    """Byte strings one of which a message matching ``node`` must hold; None if unknown."""
    if type(node) is Compare:
        if node.field in NAME_FIELDS and node.op == "==":
            return frozenset({orjson.dumps(node.value)})
        return None
    if type(node) is And:
        options = [found for item in node.items if (found := needles_of(item)) is not None]
        return min(options, key=len) if options else None
    if type(node) is Or:
        union: set[bytes] = set()
        for item in node.items:
            found = needles_of(item)
            if found is None:
                return None
            union |= found
        return frozenset(union)
    return None


BOTH = frozenset({C2S, S2C})
#: Fields whose value a message can take from the request it answers (or that count
#: the messages judged): a filter using one watches both directions.
_BORROWED = NAME_FIELDS | {"seq"}


def watched_by(node: Node) -> frozenset[str]:
    """The directions whose messages a fault filtered by ``node`` needs to see.

    Those it can match (only ``direction == D`` and ``direction != D`` narrow
    them, through ``and`` and ``or``; under ``not`` nothing is assumed), and
    both when it names a method or a tool (an answer takes them from its
    request, going the other way), counts messages (``seq``) or searches text.
    """
    if _borrows(node):
        return BOTH
    return _directions(node)


def _directions(node: Node) -> frozenset[str]:
    if type(node) is Compare:
        if node.field != "direction" or node.op not in ("==", "!="):
            return BOTH
        value = node.value.lower()
        named = frozenset({CHOICE_ALIASES.get(value, value)}) & BOTH
        return named if node.op == "==" else BOTH - named
    if type(node) is And:
        found = BOTH
        for item in node.items:
            found &= _directions(item)
        return found
    if type(node) is Or:
        union: frozenset[str] = frozenset()
        for item in node.items:
            union |= _directions(item)
        return union
    return BOTH


def _borrows(node: Node) -> bool:
    if type(node) is Compare or type(node) is Present:
        return node.field in _BORROWED
    if type(node) is And or type(node) is Or:
        return any(_borrows(item) for item in node.items)
    if type(node) is Not:
        return _borrows(node.item)
    return True  # free text: it searches what the view shows, the request's names too


def _key(ident: Any) -> IdKey:
    try:
        return id_key(ident)
    except Exception:
        return ("?", repr(ident)[:200])


def fault_record(
    engine: FaultEngine,
    injection: Injection,
    *,
    marks: dict[str, int | str],
    delivered: bool,
    **extra: Any,
) -> dict[str, Any]:
    """The ``data`` of the ``fault`` event recording ``injection``.

    ``marks`` says, per direction, how many of the next frames recorded in
    that direction are mcpsniff's doing rather than the sending peer's (an
    injected answer, a corrupted copy, a duplicate, a dropped message), or
    ``"rest"`` for every later one: ``check`` never blames a peer for them.
    """
    fault = injection.fault
    message = injection.message
    data: dict[str, Any] = {
        "fault_version": FAULT_RECORD_VERSION,
        "fault": injection.index,
        "spec": fault.text,
        "action": fault.action,
        "count": injection.count,
        "dir": message.direction,
        "kind": message.kind,
        "delivered": delivered,
        "marks": marks,
    }
    if message.method is not None:
        data["method"] = message.method
    if message.tool is not None:
        data["tool"] = message.tool
    if message.has_id:
        data["id"] = message.id
    if fault.prob < 1.0:
        data["seed"] = engine.seed_of(injection.index)
    if fault.action == DELAY:
        data["delay_ms"] = round(injection.delay_ms, 3)
    if fault.corruption:
        data["corruption"] = fault.corruption
    if fault.action in ANSWERS:
        data["code"] = fault.code
    data.update(extra)
    return data


def original_bytes(raw: bytes, *, verbatim: bool) -> dict[str, Any]:
    """The sending peer's bytes for a fault record that changed them.

    ``verbatim`` (the trace is not redacted): the bytes themselves, as
    ``original`` text or ``original_b64``. Otherwise only their length and
    SHA-256: the frame recorded next is redacted, and a copy here must not
    carry the secrets redaction took out of it.
    """
    cut = raw[:ORIGINAL_LIMIT]
    out: dict[str, Any] = {"original_len": len(raw)}
    if not verbatim:
        out["original_sha256"] = hashlib.sha256(raw).hexdigest()
        return out
    try:
        out["original"] = cut.decode("utf-8")
    except UnicodeDecodeError:
        out["original_b64"] = base64.b64encode(cut).decode("ascii")
    return out
