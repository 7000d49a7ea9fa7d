"""The rule registry: a rule is one function declared with its catalogue ids and its event.

::

    @rule("TOOL-BINARY-BASE64", on=RESULT, methods=("tools/call",))
    def binary_blocks(session, msg, result): ...

``on`` names what the function looks at, and ``methods`` (or ``keys``, the same
thing for the events that are not messages) limits it to some dispatch keys
(None: every key). The events and what their handlers are called with:

* ``MESSAGE``: every parsed JSON-RPC object whose envelope is not the plain one
  of its kind (``core/session/classification.py``: exactly the members the kind needs, well
  typed, ``"jsonrpc": "2.0"``), ``(session, msg)``; key ``""``.
* ``REQUEST``, ``NOTIFICATION``: ``(session, msg)``; key: the method.
* ``RESPONSE``: every reply (result or error) once correlation has paired it
  (``msg.request`` may be None), ``(session, msg)``; key: the request's method
  (``""`` when unpaired).
* ``REPLY``: a paired reply that is the method's own answer (not the
  CreateTaskResult of a task-augmented request), ``(session, msg)``; key: method.
* ``RESULT``: the result object of such a reply, ``(session, msg, result)``;
  ``ERROR``: such an error reply, ``(session, msg)``; key: the method.
* ``TASK_CREATED``: the CreateTaskResult answering a task-augmented request
  (2025-11-25), or a stateless result with ``resultType: "task"`` (the tasks
  extension), ``(session, msg, result)``; key: the method.
* ``PAIRING``: what correlation found wrong or special about a message, key: the
  outcome (``OUTCOMES``), ``(session, msg, *details)``.
* ``FRAME``: what a frame turned out to be, key: the shape (``SHAPES``),
  ``(session, frame, *details)``. Handlers run in order until one returns True
  (it *claims* the frame: a root finding that makes the next ones redundant).
* ``EVENT``: a transport event record, key: the event name, ``(session, record)``.

Severity and versions stay in the catalogue: the function only reports, and
``Session.report`` drops what does not apply to the version in force. Handlers
run in registration order (``rules/__init__.py`` imports the modules in the
order their checks must run: a root finding before its dependents).

The session (core/session/dispatch.py) reads ``dispatch_table(on)[key]``
directly and falls back to ``handlers(on, key)``, which builds the tuple once
per key: one dict access per message, so registering rules costs nothing on
the messages they do not concern.

``modern=True`` marks a rule that says nothing in a session of the handshake
era with a version before 2026-07-28 (``LEGACY``): it returns at once there,
because it checks ``era == STATELESS`` or ``version == 2026-07-28`` first and
changes nothing before. The session then reads the legacy tables
(``dispatch_table(on, legacy=True)``), which leave it out, and saves the call
on every message of such a session (``check`` is benchmarked:
benchmarks/bench_check.py). tests/core/rules/test_registry.py holds each
marked rule to that: played in a legacy session, it neither reports nor
changes the session's state.

``armed_by=KEY`` (REQUEST rules) marks a rule that does nothing until another
rule of the session has recorded something under ``KEY`` in
``state.rule_state`` (MOD-UNSUPPORTED-VERSION's retry check: only after a
-32022 refusal). The tables above leave it out; the rule that records the key
calls ``SessionState.arm(KEY)``, and from then on the session asks
``handlers(..., armed=state.armed)``, whose tables hold it. So the usual
session never calls it. tests/core/rules/test_registry.py plays every proof
with every armed rule in every table as well: the same findings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MESSAGE = "message"
REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
REPLY = "reply"
RESULT = "result"
ERROR = "error"
TASK_CREATED = "task-created"
PAIRING = "pairing"
FRAME = "frame"
EVENT = "event"
EVENTS = (
    MESSAGE,
    REQUEST,
    NOTIFICATION,
    RESPONSE,
    REPLY,
    RESULT,
    ERROR,
    TASK_CREATED,
    PAIRING,
    FRAME,
    EVENT,
)

#: PAIRING keys: what correlation decided about a message (see ``Session``).
OUTCOMES = (
    "reuse-in-flight",  # a request reusing the id of one in flight: (previous Pending, print)
    "reuse-after-completion",  # a request reusing a used id: (key, print)
    "id-type-mismatch",  # a reply whose id has another JSON type: (request Pending,)
    "id-precision",  # a reply whose integer id lost digits: (request Pending,)
    "duplicate-response",  # a second reply: (Answered or None,)
    "orphan",  # a reply with an id nobody sent: ()
    "null-id",  # a reply with a null or absent id, linked to nothing: ()
    "bad-input-reply",  # a null-id -32700/-32600 linked to a bad frame: (culprit seq, kind)
    "orphan-bad-input-reply",  # the same with a non-null id: (culprit seq, kind)
    "parse-error-for-request",  # -32700 paired with a request that parsed: (request Pending,)
    "late-initialize",  # initialize's result after the client cancelled it: ()
)
#: FRAME keys: what a frame turned out to be.
SHAPES = (
    "blank",  # an empty line on a line-framed stream: (offset,)
    "unparseable",  # not JSON: (offset,)
    "not-object",  # JSON that is neither an object nor an array: (value,)
    "not-object-element",  # a batch element that is not an object: (value, index)
    "batch",  # an array, before its elements: (items,)
    "empty-batch",  # `[]` sent as a request: (output position before the batch rules,)
    "empty-batch-reply",  # `[]` answering an empty batch: (culprit seq,)
    "notification-batch-reply",  # `[]` answering a batch of notifications: (batch seq,)
    "batch-done",  # an array after its elements: (msgs,)
    "batch-reply",  # an array of replies matched to its batch: (BatchInfo, msgs, missing, extra)
    "parsed",  # any frame after its messages, stdio or HTTP: (messages,)
)

Handler = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Registered:
    """One registered rule function."""

    ids: tuple[str, ...]
    on: str
    methods: frozenset[str] | None
    fn: Handler
    order: int
    #: Silent in a legacy session (see the module docstring).
    modern: bool = False
    #: The ``rule_state`` key that arms it (see the module docstring), or None.
    armed_by: str | None = None
    #: What a legacy session's tables hold in ``fn``'s place (see ``rule``), or None.
    legacy_fn: Handler | None = None


#: Every registration, in the order the modules declared them.
REGISTERED: list[Registered] = []
#: on -> key -> handlers, filled as keys are seen (``handlers``); the session
#: reads it directly on the hot path.
TABLES: dict[str, dict[str, tuple[Handler, ...]]] = {event: {} for event in EVENTS}
#: The same without the ``modern`` rules, for a legacy session.
LEGACY_TABLES: dict[str, dict[str, tuple[Handler, ...]]] = {event: {} for event in EVENTS}
#: (on, legacy, armed keys) -> key -> handlers, for a session some rule armed.
ARMED_TABLES: dict[tuple[str, bool, frozenset[str]], dict[str, tuple[Handler, ...]]] = {}


def rule(
    *ids: str,
    on: str,
    methods: Iterable[str] | None = None,
    keys: Iterable[str] | None = None,
    modern: bool = False,
    armed_by: str | None = None,
    legacy_fn: Handler | None = None,
) -> Callable[[Handler], Handler]:
    """Register the decorated function for catalogue ``ids``, on event ``on``.

    ``methods`` (message events) or ``keys`` (the others) limit it to those
    dispatch keys; neither: every key. ``modern``: the rule is silent in a
    legacy session, which does not call it. ``armed_by``: a REQUEST rule
    called only in a session whose ``state.armed`` holds that key.
    ``legacy_fn``: the legacy tables hold it in the rule's place, the rule less
    a guard that is always false in a legacy session (methods.py's
    ``_result_rule``: the ``input_required`` test, 2026-07-28 only), so that
    such a session saves a call a message.
    """
    if on not in EVENTS:
        raise ValueError(f"unknown rule event {on!r}; one of {', '.join(EVENTS)}")
    if not ids:
        raise ValueError("a rule needs at least one catalogue id")
    if methods is not None and keys is not None:
        raise ValueError("give methods or keys, not both")
    if armed_by is not None and on != REQUEST:
        # The session asks for armed tables on the REQUEST path only.
        raise ValueError("only a REQUEST rule can be armed_by a rule-state key")
    chosen_keys = methods if methods is not None else keys
    if isinstance(chosen_keys, str):
        raise ValueError("methods/keys is a collection of names, not one string")
    chosen = None if chosen_keys is None else frozenset(chosen_keys)
    if on == PAIRING and chosen is not None and chosen - set(OUTCOMES):
        raise ValueError(f"unknown pairing outcome(s) {sorted(chosen - set(OUTCOMES))}")
    if on == FRAME and chosen is not None and chosen - set(SHAPES):
        raise ValueError(f"unknown frame shape(s) {sorted(chosen - set(SHAPES))}")

    def register(fn: Handler) -> Handler:
        REGISTERED.append(
            Registered(tuple(ids), on, chosen, fn, len(REGISTERED), modern, armed_by, legacy_fn)
        )
        clear_tables()
        return fn

    return register


def clear_tables() -> None:
    """Forget every table built so far (a registration, or a test changing ``REGISTERED``)."""
    for tables in (TABLES, LEGACY_TABLES):
        for table in tables.values():
            table.clear()
    ARMED_TABLES.clear()


def handlers(
    on: str, key: str, *, legacy: bool = False, armed: frozenset[str] = frozenset()
) -> tuple[Handler, ...]:
    """The functions registered for ``on`` and ``key``, in registration order.

    ``legacy``: without the ``modern`` rules (a legacy session's). ``armed``:
    the rule-state keys some rule armed (``SessionState.armed``); a rule
    ``armed_by`` another key is left out.
    """
    if armed:
        variant = (on, legacy, armed)
        table = ARMED_TABLES.get(variant)
        if table is None:
            table = {}
            if len(ARMED_TABLES) < 64:  # armed keys are the rules' own names
                ARMED_TABLES[variant] = table
    else:
        table = (LEGACY_TABLES if legacy else TABLES)[on]
    found = table.get(key)
    if found is None:
        found = tuple(
            entry.legacy_fn if legacy and entry.legacy_fn is not None else entry.fn
            for entry in REGISTERED
            if entry.on == on
            and (entry.methods is None or key in entry.methods)
            and not (legacy and entry.modern)
            and (entry.armed_by is None or entry.armed_by in armed)
        )
        if len(table) < 4096:  # methods come from traffic: bound the table
            table[key] = found
    return found


def dispatch_table(on: str, *, legacy: bool = False) -> dict[str, tuple[Handler, ...]]:
    """The table of ``on``'s handlers by key, as ``handlers`` fills it.

    The session keeps it and reads it directly on the hot path (one dict
    access per message), calling ``handlers`` for a key not in it yet. It is
    the same dict for the life of the process (a registration clears it).
    ``legacy``: the table without the ``modern`` rules. Neither holds an
    ``armed_by`` rule (``handlers(..., armed=...)`` has those).
    """
    return (LEGACY_TABLES if legacy else TABLES)[on]


def rule_ids() -> tuple[str, ...]:
    """Every catalogue id a registered function may report, in registration order."""
    return tuple(dict.fromkeys(i for entry in REGISTERED for i in entry.ids))


def describe() -> list[dict[str, Any]]:
    """The registry as data (for tests and ``mcpsniff rules``)."""
    return [
        {
            "ids": list(entry.ids),
            "on": entry.on,
            "methods": None if entry.methods is None else sorted(entry.methods),
            "function": f"{entry.fn.__module__}.{entry.fn.__qualname__}",
            "modern": entry.modern,
            "armed_by": entry.armed_by,
        }
        for entry in REGISTERED
    ]
