"""Choosing the recorded exchange that answers an incoming client request."""

from __future__ import annotations

from typing import Any

from mcpsniff.replay.compare import match_key
from mcpsniff.replay.plan import Exchange

PARAMS = "params"
SEQUENTIAL = "sequential"
STRICT = "strict"
MODES = (PARAMS, SEQUENTIAL, STRICT)


class Matcher:
    """Hands out each recorded exchange at most once.

    ``params`` and ``strict`` take the first unused exchange with the same
    method and params (``_meta`` and the id ignored); ``sequential`` takes
    the first unused exchange of the same method, whatever its params.
    """

    def __init__(self, exchanges: list[Exchange], mode: str = PARAMS) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown match mode {mode!r}")
        self.exchanges = exchanges
        self.mode = mode

    def take(self, body: dict[str, Any]) -> Exchange | None:
        """The exchange for request ``body``, marked used; None when nothing fits."""
        exchange = self.peek(body)
        if exchange is not None:
            exchange.used = True
        return exchange

    def peek(self, body: dict[str, Any]) -> Exchange | None:
        """The exchange ``take`` would return, left unused."""
        method = body.get("method")
        key = match_key(body)
        for exchange in self.exchanges:
            if exchange.used or exchange.response is None:
                continue
            if exchange.method != method:
                continue
            if self.mode != SEQUENTIAL and exchange.key != key:
                continue
            return exchange
        return None

    def recorded_method(self, method: str) -> bool:
        """Whether the recording holds any request for ``method``."""
        return any(e.method == method for e in self.exchanges)
