"""The cycle collector is paused for a bulk read, and runs again after the last one."""

from __future__ import annotations

import gc
import threading

import pytest

from mcpsniff.ui.collector import collector_paused


def test_paused_inside_and_running_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_pauses_end_with_the_last() -> None:
    entered, leave = threading.Event(), threading.Event()
    states: list[bool] = []

    def other() -> None:
        with collector_paused():
            entered.set()
            leave.wait(10)
        states.append(gc.isenabled())

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(10)
    # This block ended first: the other still reads, so the collector stays off.
    assert not gc.isenabled()
    leave.set()
    thread.join(10)
    assert states == [True]
    assert gc.isenabled()


def test_an_error_inside_still_restores_the_collector() -> None:
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_the_program_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cycles_made_while_paused_are_collected_after() -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self

    with collector_paused():
        import weakref

        ref = weakref.ref(Node())
        assert ref() is not None  # a cycle: only the collector frees it
    gc.collect()
    assert ref() is None
