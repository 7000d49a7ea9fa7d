"""The HTTP relay's event loop: uvloop when installed, and busy polling while a request is alone.

Two things decide how much latency a relay in Python adds, and neither is
its Python code:

* The event loop's own work per wake-up (selector, transports, callbacks).
  uvloop does it in C: about 15 µs less per request here, in CPU and in
  latency, which is why it is used whenever it can be imported (it is a
  dependency on the platforms it supports; asyncio's loop is the fallback).
* Waking up. A process that blocks in ``epoll_wait`` gives its CPU back, and
  on a virtual machine an idle virtual CPU is descheduled by the hypervisor;
  waking it again costs tens of microseconds, per hop. A relay adds two hops
  to every request, so a lone request pays four wake-ups instead of two.
  HAProxy's ``busy-polling`` option exists for the same reason ("when
  running inside virtual machines, each time the process waits for an I/O
  using the poller, the processor goes back to sleep ... and it causes
  excessively high latencies"). Measured here: the sequential p50 through
  the relay dropped from about 2.0x to 1.6x the direct connection's.

``Spinner`` keeps the loop polling (zero-timeout polls, one per loop turn)
for ``SPIN_SECONDS`` after it is kicked, instead of sleeping. The relay kicks
it only while one client talks alone (two whole messages in a row forwarded
for the same connection): that is when latency is all there is to gain and
the CPU is free. With many clients the loop seldom sleeps anyway, and
spinning would take CPU from the peers on the same cores.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds of polling after a kick: about one round trip to a fast local server.
SPIN_SECONDS = 200e-6


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on uvloop when it is installed, else on asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


class Spinner:
    """Keeps an event loop polling instead of sleeping, for a moment after each kick."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seconds: float = SPIN_SECONDS) -> None:
        self.loop = loop
        self.seconds = seconds
        self.until = 0.0
        self.spinning = False
        #: Loop turns spent polling (for tests and curiosity).
        self.turns = 0

    def kick(self) -> None:
        """Poll for the next ``seconds`` (from now) rather than sleep."""
        self.until = time.perf_counter() + self.seconds
        if not self.spinning:
            self.spinning = True
            self.loop.call_soon(self._turn)

    def _turn(self) -> None:
        # A ready callback makes the loop poll with a zero timeout on its next turn
        # (asyncio and uvloop alike), so rescheduling this one is the whole trick.
        self.turns += 1
        if time.perf_counter() < self.until:
            self.loop.call_soon(self._turn)
        else:
            self.spinning = False
