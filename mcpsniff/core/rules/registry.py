"""The rule registry: a rule is one function declared with its catalogue ids and its event.

::

    @rule("TOOL-BINARY-BASE64", on=RESULT, methods=("tools/call",))
    def binary_blocks(session, msg, result): ...

``on`` names what the function looks at: a request (``REQUEST``), the result
of a request (``RESULT``, called with the result object), an error reply
(``ERROR``), or a notification (``NOTIFICATION``); ``methods`` limits it to
those methods (None: every method). Severity and versions stay in the
catalogue: the function only reports, and ``Session.report`` drops what does
not apply to the version in force.

``Session`` asks ``handlers(on, method)`` for the functions to call; the
lookup is one dict access per message (the common method with no rule of its
own gets an empty tuple), so registering rules costs nothing on the messages
they do not concern.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

REQUEST = "request"
RESULT = "result"
ERROR = "error"
NOTIFICATION = "notification"
EVENTS = (REQUEST, RESULT, ERROR, NOTIFICATION)

Handler = Callable[..., None]


@dataclass(frozen=True, slots=True)
class Registered:
    """One registered rule function."""

    ids: tuple[str, ...]
    on: str
    methods: frozenset[str] | None
    fn: Handler


#: Every registration, in the order the modules declared them.
REGISTERED: list[Registered] = []
_by_method: dict[str, dict[str, list[Handler]]] = {event: {} for event in EVENTS}
_any_method: dict[str, list[Handler]] = {event: [] for event in EVENTS}
#: on -> method -> handlers, filled as methods are seen (``handlers``); the session
#: reads it directly on the hot path.
TABLES: dict[str, dict[str, tuple[Handler, ...]]] = {event: {} for event in EVENTS}


def rule(*ids: str, on: str, methods: Iterable[str] | None = None) -> Callable[[Handler], Handler]:
    """Register the decorated function for catalogue ``ids``, on event ``on``."""
    if on not in EVENTS:
        raise ValueError(f"unknown rule event {on!r}; one of {', '.join(EVENTS)}")
    if not ids:
        raise ValueError("a rule needs at least one catalogue id")
    chosen = None if methods is None else frozenset(methods)

    def register(fn: Handler) -> Handler:
        REGISTERED.append(Registered(tuple(ids), on, chosen, fn))
        if chosen is None:
            _any_method[on].append(fn)
        else:
            for method in chosen:
                _by_method[on].setdefault(method, []).append(fn)
        for table in TABLES.values():
            table.clear()
        return fn

    return register


def handlers(on: str, method: str) -> tuple[Handler, ...]:
    """The functions registered for ``on`` and ``method``, in registration order."""
    table = TABLES[on]
    found = table.get(method)
    if found is None:
        found = tuple(_any_method[on] + _by_method[on].get(method, []))
        if len(table) < 4096:  # methods come from traffic: bound the table
            table[method] = found
    return found


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
        }
        for entry in REGISTERED
    ]
