"""Choosing the recorded exchange that answers an incoming client request.

Modes:

- ``auto`` (the default) matches what a user means. ``initialize`` and
  ``server/discover`` match by method alone: a different client, or the same
  client with other capabilities, still gets the recorded server. Requests
  that act on something (``tools/call`` and ``prompts/get`` by name,
  ``resources/read`` by URI, ``completion/complete`` by ref) match only a
  recorded request on the same target; then the arguments must be the same,
  or differ only at paths the user allows (``--allow``), in which case the
  nearest recorded call is served with a warning. Other methods match on
  their params. Listings, ``ping`` and the handshake may be served again once
  their recorded answers are used up; anything else is served once.
- ``strict``: ``auto``, and the replay exits 1 if a request went unmatched.
- ``params``: method and params exactly, each recorded answer once.
- ``sequential``: the next unused request of the same method, in recorded
  order, whatever its params, but never crossing a target (a ``get-sum``
  call is never answered with ``echo``'s result).

Whatever the mode, ``_meta`` and the id are ignored (progress tokens, client
info and protocol version change from run to run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcpsniff.replay.compare import Difference, PathPart, covered, diff, match_key
from mcpsniff.replay.plan import RecordedExchange

AUTO = "auto"
PARAMS = "params"
SEQUENTIAL = "sequential"
STRICT = "strict"
MODES = (AUTO, STRICT, PARAMS, SEQUENTIAL)

#: Matched by method alone: the client's identity and capabilities are its own business.
HANDSHAKE = frozenset({"initialize", "server/discover"})
#: The params member naming what a request acts on.
TARGETS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "completion/complete": "ref",
}
#: Answers that do not change by being asked again: served again once used up.
_REPEATABLE = frozenset(
    {"ping", "tools/list", "prompts/list", "resources/list", "resources/templates/list"} | HANDSHAKE
)


@dataclass(slots=True)
class Match:
    """The outcome of matching one request."""

    #: The exchange to serve, or None when nothing fits.
    exchange: RecordedExchange | None
    #: Where the request differs from the served (or nearest) recorded one.
    differences: list[Difference] = field(default_factory=list)
    #: When nothing fits: the recorded request closest to the one asked, to explain.
    nearest: RecordedExchange | None = None
    #: Served again after its first use (a listing or the handshake).
    repeated: bool = False


def request_view(body: dict[str, Any]) -> dict[str, Any]:
    """What is compared between requests: method and params without ``_meta``."""
    params = body.get("params")
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "_meta"} or None
    return {"method": body.get("method"), "params": params}


def target_value(body: dict[str, Any]) -> Any:
    """The value of the member a targeted request acts on (None if absent)."""
    member = TARGETS.get(body.get("method"))  # type: ignore[arg-type]
    params = body.get("params")
    if member is None or not isinstance(params, dict):
        return None
    return params.get(member)


def _same(a: Any, b: Any) -> bool:
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


class Matcher:
    """Hands out recorded exchanges to incoming requests (see the module docstring)."""

    def __init__(
        self,
        exchanges: list[RecordedExchange],
        mode: str = AUTO,
        allow: list[tuple[PathPart, ...]] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown match mode {mode!r}")
        self.exchanges = exchanges
        self.mode = mode
        self.allow = list(allow or [])
        #: The exchanges served so far (by identity): each matcher keeps its own, so
        #: every client of an HTTP replay can be served the whole recording.
        self._used: set[int] = set()

    def used(self, exchange: RecordedExchange) -> bool:
        """Whether ``exchange`` was served already."""
        return id(exchange) in self._used

    def take(self, body: dict[str, Any]) -> Match:
        """The match for request ``body``; its exchange is marked used."""
        match = self.find(body)
        if match.exchange is not None:
            self._used.add(id(match.exchange))
        return match

    def peek(self, body: dict[str, Any]) -> RecordedExchange | None:
        """The exchange ``take`` would serve, left unused."""
        return self.find(body).exchange

    def recorded_method(self, method: str) -> bool:
        """Whether the recording holds any request for ``method``."""
        return any(e.method == method for e in self.exchanges)

    def find(self, body: dict[str, Any]) -> Match:
        """The match for request ``body``, without side effects."""
        method = body.get("method")
        same_method = [e for e in self.exchanges if e.method == method]
        if method in TARGETS and self.mode != PARAMS:
            wanted = target_value(body)
            candidates = [e for e in same_method if _same(target_value(e.request.body), wanted)]
        else:
            candidates = same_method
        asked = request_view(body)
        if self.mode == SEQUENTIAL:
            for exchange in candidates:
                if not self.used(exchange):
                    return Match(exchange, diff(request_view(exchange.request.body), asked))
            return self._unmatched(asked, candidates or same_method)
        if self.mode != PARAMS and method in HANDSHAKE and candidates:
            unused = [e for e in candidates if not self.used(e)]
            exchange = unused[0] if unused else candidates[-1]
            return Match(
                exchange, diff(request_view(exchange.request.body), asked), repeated=not unused
            )
        key = match_key(body)
        for repeated in (False, True):
            if repeated and (self.mode == PARAMS or method not in _REPEATABLE):
                break
            pool = [e for e in candidates if self.used(e) == repeated]
            for exchange in pool:
                if exchange.key == key:
                    return Match(exchange, [], repeated=repeated)
            # Not the same bytes: the same once timestamps and ids are masked (``compare``),
            # or different only where the user allows.
            for exchange in pool if self.mode != PARAMS else []:
                differences = diff(request_view(exchange.request.body), asked)
                if all(covered(d.path, self.allow) for d in differences):
                    return Match(exchange, differences, repeated=repeated)
        return self._unmatched(asked, candidates or same_method)

    def _unmatched(self, asked: dict[str, Any], pool: list[RecordedExchange]) -> Match:
        """No match: the nearest recorded request, to explain what differs."""
        best: tuple[tuple[int, int], RecordedExchange, list[Difference]] | None = None
        for exchange in pool:
            differences = diff(request_view(exchange.request.body), asked)
            # Prefer an unused exchange, then the fewest differences, then the earliest.
            rank = (int(self.used(exchange)), len(differences))
            if best is None or rank < best[0]:
                best = (rank, exchange, differences)
        if best is None:
            return Match(None)
        return Match(None, best[2], nearest=best[1])
