"""The guard's options of ``check`` (and the relays' ``--guard``): parsed into a ``GuardPolicy``."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mcpsniff.cli.shared import fail
from mcpsniff.core.lazy_pattern import lazy

if TYPE_CHECKING:
    # The guard is imported when an option asks for it: ``check`` without
    # guard options starts without it (docs/performance.md, "Start-up").
    from mcpsniff.guard.enforce import EnforcePolicy
    from mcpsniff.guard.findings import GuardPolicy
    from mcpsniff.guard.lockfile import Lock

F = TypeVar("F", bound=Callable[..., Any])

_DURATION = lazy(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|min)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0}


class Duration(click.ParamType):
    """``2s``, ``500ms``, ``1.5`` (seconds) or ``1m``: above 0, at most a day."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        match = _DURATION.match(str(value))
        if match is None:
            self.fail(f"{value!r} is not a duration (like 2s, 500ms, 1.5 or 1m)", param, ctx)
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        if not math.isfinite(seconds) or not 0 < seconds <= 86_400:
            self.fail(f"{value!r} is not a duration above 0 and at most a day", param, ctx)
        return seconds


def _pins_option(dest: str, help: str) -> Callable[[F], F]:
    return click.option("--pins", dest, type=click.Path(dir_okay=False, path_type=Path), help=help)


def _forbid_option(dest: str, help: str) -> Callable[[F], F]:
    return click.option("--forbid-tool", dest, multiple=True, metavar="GLOB", help=help)


def _with(options: list[Callable[[F], F]], fn: F) -> F:
    """``fn`` with ``options``, listed in the order ``--help`` shows them."""
    for option in reversed(options):
        fn = option(fn)
    return fn


def _read_pins(command: str, pins: Path | None) -> Lock | None:
    """The lock file ``pins`` names (None for none); exit 2 when it cannot be read."""
    if pins is None:
        return None
    from mcpsniff.guard.lockfile import read_lock
    from mcpsniff.guard.stored import StoredError

    try:
        return read_lock(pins)
    except StoredError as exc:
        fail(command, str(exc))


def guard_check_options(fn: F) -> F:
    """``--pins``, ``--expect-tool``, ``--forbid-tool``, ``--max-duration``,
    ``--max-definition-tokens`` and ``--history``."""
    options = [
        _pins_option(
            "pins", "Report every difference from this lock file (mcpsniff pin writes it)."
        ),
        click.option(
            "--expect-tool",
            "expect_tools",
            multiple=True,
            metavar="NAME",
            help="Fail unless every server lists this tool (repeatable).",
        ),
        _forbid_option(
            "forbid_tools",
            "Fail when a server lists a tool matching this pattern, e.g. 'delete_*' (repeatable).",
        ),
        click.option(
            "--max-duration",
            type=Duration(),
            help="Fail when any single request took longer (2s, 500ms, 1m).",
        ),
        click.option(
            "--max-definition-tokens",
            type=click.IntRange(min=1),
            metavar="N",
            help="Fail when a server's definitions cost more than N tokens (needs "
            "mcpsniff[guard]).",
        ),
        click.option(
            "--history",
            is_flag=True,
            help="Report a server whose definitions differ from its previous session, in "
            "this trace or in the state folder's history (the relays keep it).",
        ),
    ]
    return _with(options, fn)


def guard_policy(
    command: str,
    pins: Path | None = None,
    expect_tools: tuple[str, ...] = (),
    forbid_tools: tuple[str, ...] = (),
    max_duration: float | None = None,
    max_definition_tokens: int | None = None,
    history: bool = False,
) -> GuardPolicy | None:
    """The policy the options ask for; None when they ask for nothing (exit 2 on a bad lock)."""
    if not (pins or expect_tools or forbid_tools or max_duration or max_definition_tokens):
        if not history:
            return None
    from mcpsniff.guard.findings import GuardPolicy

    return GuardPolicy(
        pins=_read_pins(command, pins),
        expect_tools=tuple(expect_tools),
        forbid_tools=tuple(forbid_tools),
        max_duration=max_duration,
        max_definition_tokens=max_definition_tokens,
        history=history,
    )


def guard_relay_options(fn: F) -> F:
    """``--guard off|enforce``, with the ``--pins`` and ``--forbid-tool`` it enforces."""
    options = [
        click.option(
            "--guard",
            "guard_mode",
            type=click.Choice(["off", "enforce"]),
            default="off",
            show_default=True,
            help="enforce: answer a tools/call to a forbidden tool, or to one whose "
            "definition differs from its pin, with a JSON-RPC error; never forward it "
            "(docs/guard.md).",
        ),
        _pins_option("guard_pins", "With --guard enforce: the lock file calls must match."),
        _forbid_option(
            "guard_forbid",
            "With --guard enforce: refuse calls to tools matching this (repeatable).",
        ),
    ]
    return _with(options, fn)


def enforce_policy(
    command: str, label: str, mode: str, pins: Path | None, forbid: tuple[str, ...]
) -> EnforcePolicy | None:
    """The ``--guard enforce`` policy; None when off (exit 2 on a bad lock or a lone option)."""
    if mode != "enforce":
        if pins is not None or forbid:
            fail(command, "--pins and --forbid-tool take effect with --guard enforce")
        return None
    if pins is None and not forbid:
        fail(command, "--guard enforce needs --pins FILE or --forbid-tool GLOB")
    from mcpsniff.guard.enforce import EnforcePolicy

    return EnforcePolicy(label, _read_pins(command, pins), tuple(forbid))
