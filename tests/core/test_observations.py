"""core/observations.py: the shells' events make the transport event records the trace keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, get_args

import pytest

from mcpsniff.core import observations
from mcpsniff.core.frozen import fast_init
from mcpsniff.core.http import events
from mcpsniff.core.observations import (
    KINDS,
    CaptureEnd,
    ChildExited,
    ChildSpawned,
    Event,
    ExchangeFault,
    GuardAnswered,
    HttpGuardAnswered,
    Observation,
    RequestBegin,
    RequestCut,
    SignalForwarded,
    SpawnFailed,
    StdioStart,
)


@pytest.mark.parametrize(
    ("event", "data"),
    [
        (ChildSpawned(1.0, 42, "/usr/bin/node"), {"child_pid": 42, "argv0": "/usr/bin/node"}),
        (
            SpawnFailed(1.0, ["srv", "-x"], "not found"),
            {"command": ["srv", "-x"], "error": "not found"},
        ),
        (SignalForwarded(1.0, "SIGTERM"), {"signal": "SIGTERM"}),
        (GuardAnswered(1.0, "rm", "hidden", 7), {"tool": "rm", "reason": "hidden", "id": 7}),
        (RequestCut(3, 1.0, 10), {"exchange": 3, "body_bytes": 10}),
        (
            HttpGuardAnswered(3, 1.0, "rm", "hidden", "a"),
            {"exchange": 3, "tool": "rm", "reason": "hidden", "id": "a"},
        ),
    ],
)
def test_an_events_data_is_its_fields_but_t_in_their_order(
    event: Event, data: dict[str, Any]
) -> None:
    assert list(event.data().items()) == list(data.items())
    assert event.data() is not event.data()  # a fresh object: the recorder may keep it


def _named(module: Any) -> list[type]:
    return [
        cls
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__module__ == module.__name__ and "name" in vars(cls)
    ]


def test_every_class_the_trace_names_is_an_event_and_no_other() -> None:
    named = _named(observations) + _named(events)
    assert len(named) == 20
    assert all(issubclass(cls, Event) for cls in named)
    # Leaves: a class's data() is made for its own fields (Event.data), never inherited.
    assert not any(cls.__subclasses__() for cls in named)
    unnamed = [cls for cls in KINDS if cls not in named]
    assert unnamed and not any(issubclass(cls, Event) for cls in unnamed)


def test_an_event_keeps_no_instance_dict() -> None:
    # Event adds no slot: the subclasses stay as small as their own fields.
    assert Event.__slots__ == ()
    assert not hasattr(RequestCut(1, 1.0, 2), "__dict__")


def test_optional_members_are_left_out_only_while_none_or_false_and_renamed_ones_renamed() -> None:
    @fast_init
    @dataclass(frozen=True, slots=True)
    class Probe(Event):
        name: ClassVar[str] = "probe"
        optional: ClassVar[tuple[str, ...]] = ("note", "flag")
        renamed: ClassVar[dict[str, str]] = {"size": "bytes", "flag": "set"}
        exchange: int
        t: float
        note: str | None
        size: int
        flag: bool

    assert list(Probe(1, 1.0, None, 0, False).data().items()) == [("exchange", 1), ("bytes", 0)]
    full = Probe(1, 1.0, "", 5, True)
    assert list(full.data().items()) == [("exchange", 1), ("note", ""), ("bytes", 5), ("set", True)]
    # Made on the first event, then the class's own: the next events call it directly.
    assert "data" in vars(Probe)
    assert Probe(2, 1.0, "x", 1, False).data() == {"exchange": 2, "note": "x", "bytes": 1}


def test_an_optional_or_renamed_name_that_is_no_field_is_refused() -> None:
    @fast_init
    @dataclass(frozen=True, slots=True)
    class Misnamed(Event):
        name: ClassVar[str] = "misnamed"
        optional: ClassVar[tuple[str, ...]] = ("missing",)
        renamed: ClassVar[dict[str, str]] = {"old": "from"}
        t: float

    with pytest.raises(
        TypeError, match="Misnamed: optional or renamed names no field: \\['missing', 'old'\\]"
    ):
        Misnamed(1.0).data()


def test_an_exit_says_its_signals_only_when_there_were_some() -> None:
    assert ChildExited(1.0, 0, 0, None, []).data() == {"returncode": 0, "status": 0}
    killed = ChildExited(1.0, -15, 143, "SIGTERM", ["SIGINT"]).data()
    assert list(killed.items()) == [
        ("returncode", -15),
        ("status", 143),
        ("signal", "SIGTERM"),
        ("forwarded_signals", ["SIGINT"]),
    ]


def test_the_codec_tags_follow_the_observation_union() -> None:
    # One list: the union's order is the tags' (appended kinds keep the others' numbers).
    assert get_args(Observation) == KINDS
    assert len(KINDS) == 27
    assert (KINDS.index(RequestBegin), KINDS.index(CaptureEnd)) == (0, 12)
    assert (KINDS.index(StdioStart), KINDS.index(ChildSpawned)) == (10, 19)
    assert KINDS.index(ExchangeFault) == 26
