"""A click option type for durations in seconds: finite, positive, and within reason.

``click.FloatRange`` lets NaN through (every comparison with NaN is false), and
a bare ``float`` takes ``-1``, ``nan`` and ``1e300``, which then reach
``time.sleep`` or ``asyncio.wait_for`` and end in a traceback or in a wait that
never ends. Options that are a number of seconds use :class:`Seconds` instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.ParamType):
    """A number of seconds ``s`` with ``0 < s <= maximum``; a one-line error otherwise."""

    name = "seconds"

    def __init__(self, maximum: float = 86_400.0) -> None:
        self.maximum = maximum

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or not 0 < seconds <= self.maximum:
            self.fail(
                f"{value!r} is not a number of seconds above 0 and at most {self.maximum:g}",
                param,
                ctx,
            )
        return seconds


def seconds_option(
    name: str, default: float, help: str, maximum: float = 86_400.0
) -> Callable[[F], F]:
    """An option ``name`` of :class:`Seconds` up to ``maximum``, its ``default`` shown in --help."""
    return click.option(
        name, type=Seconds(maximum=maximum), default=default, show_default=True, help=help
    )
