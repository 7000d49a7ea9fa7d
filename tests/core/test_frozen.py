"""``fast_init`` and ``maker``: frozen dataclasses built by slot stores, still frozen."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field, replace

import pytest

from mcpsniff.core.frozen import fast_init, maker


@fast_init
@dataclass(frozen=True, slots=True)
class Seen:
    exchange: int
    t: float
    reason: str | None = None


def test_the_fields_are_set_by_position_keyword_and_default() -> None:
    assert Seen(1, 2.5) == Seen(exchange=1, t=2.5, reason=None)
    assert Seen(1, 2.5, "why").reason == "why"
    assert repr(Seen(3, 1.0)) == "Seen(exchange=3, t=1.0, reason=None)"
    assert replace(Seen(1, 2.0), t=4.0) == Seen(1, 4.0)


def test_it_stays_frozen_and_refuses_wrong_arguments() -> None:
    seen = Seen(1, 2.0)
    with pytest.raises(FrozenInstanceError):
        seen.t = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        Seen(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Seen(1, 2.0, "x", "extra")  # type: ignore[call-arg]
    assert Seen.__init__.__qualname__ == "Seen.__init__"


def test_maker_builds_equal_instances_without_the_class_call() -> None:
    make = maker(Seen)
    made = make(7, 1.5)
    assert type(made) is Seen and made == Seen(7, 1.5) and make(7, 1.5, "r").reason == "r"
    with pytest.raises(FrozenInstanceError):
        made.exchange = 8  # type: ignore[misc]


def test_classes_it_cannot_serve_are_refused() -> None:
    @dataclass(slots=True)
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    for cls in (Mutable, NoSlots, Factory):
        with pytest.raises(TypeError):
            fast_init(cls)
    with pytest.raises(TypeError):
        maker(Mutable)
