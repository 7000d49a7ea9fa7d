"""Busy polling and the event loop of the HTTP relay (``mcpsniff/relay/event_loop.py``)."""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpsniff.relay import event_loop
from mcpsniff.relay.event_loop import Spinner
from mcpsniff.relay.http import HttpOptions, HttpRelay


def test_run_uses_uvloop_when_installed() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def loop_type() -> type:
        return type(asyncio.get_running_loop())

    assert event_loop.run(loop_type()) is uvloop.Loop


@pytest.mark.parametrize("factory", ["asyncio", "uvloop"])
def test_spinner_polls_for_its_time_then_stops(factory: str) -> None:
    if factory == "uvloop":
        new_loop = pytest.importorskip("uvloop").new_event_loop
    else:
        new_loop = asyncio.new_event_loop

    async def spin() -> tuple[int, float, bool, int]:
        spinner = Spinner(asyncio.get_running_loop(), seconds=0.02)
        await asyncio.sleep(0.01)
        idle_turns = spinner.turns
        started = time.perf_counter()
        spinner.kick()
        while spinner.spinning:
            await asyncio.sleep(0)
        return idle_turns, time.perf_counter() - started, spinner.spinning, spinner.turns

    with asyncio.Runner(loop_factory=new_loop) as runner:
        idle_turns, spun, spinning, turns = runner.run(spin())
    assert idle_turns == 0  # nothing polls unless kicked
    assert spun >= 0.02 and not spinning
    assert turns > 10  # it kept the loop turning, many times over


def test_relay_polls_only_for_a_client_talking_alone() -> None:
    async def kicks() -> list[bool]:
        relay = HttpRelay(HttpOptions(upstream="http://127.0.0.1:9/mcp"), None)
        relay.spinner = Spinner(asyncio.get_running_loop(), seconds=1.0)
        alone, other = object(), object()
        seen = []
        # two clients taking turns: no polling; then one client twice in a row
        for connection in (alone, other, alone, other, other):
            relay.forwarded(connection)  # type: ignore[arg-type]
            seen.append(relay.spinner.spinning)
        relay.spinner.until = 0.0
        return seen

    assert asyncio.run(kicks()) == [False, False, False, False, True]


def test_no_busy_poll_means_no_spinner() -> None:
    async def spinner_of(busy_poll: bool) -> Spinner | None:
        options = HttpOptions(upstream="http://127.0.0.1:9/mcp", port=0, busy_poll=busy_poll)
        relay = HttpRelay(options, None)
        await relay.start()
        try:
            return relay.spinner
        finally:
            await relay.stop()

    assert asyncio.run(spinner_of(False)) is None
    assert isinstance(asyncio.run(spinner_of(True)), Spinner)
