"""Frozen dataclasses made as cheaply as mutable ones: ``fast_init`` and ``maker``.

Observations and the HTTP layer's events are small frozen dataclasses
(docs/architecture.md: typed events in, nothing changes them once made). A
frozen dataclass's generated ``__init__`` must get past the class's own
``__setattr__``, which refuses every assignment, so it stores each field
through ``object.__setattr__``: four times the cost of a plain slotted
class's ``__init__``. The analysis makes one event and one frame per SSE
event and one observation per stdio chunk, enough for that to show
(``benchmarks/ab_same_process.py --only http``, ``--only decode``).

A slotted class's fields are member descriptors, and a descriptor's
``__set__`` stores a value with no detour through ``__setattr__``.
``fast_init`` gives the class an ``__init__`` that calls them: the same
parameters in the same order, the same defaults. The instance stays frozen
(an assignment still raises ``FrozenInstanceError``); equality, ``repr``,
``replace`` and ``fields`` are the dataclass's own. ``maker`` goes one step
further for the hottest decoder loop: a function that builds an instance
without calling the class at all.
"""

from __future__ import annotations

from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of a frozen, slotted dataclass by one of slot stores.

    Use it above ``@dataclass(frozen=True, slots=True)``. Fields with a
    default factory or ``init=False`` are refused (no event has one), as is a
    class that is not frozen and slotted, which needs no such help.
    """
    namespace, parameters, stores = _slot_stores(cls, "self")
    # The same technique as the dataclasses module: the source of the method, compiled once.
    body = "".join(stores) or "    pass\n"
    source = f"def __init__(self, {', '.join(parameters)}):\n{body}"
    exec(source, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[misc]
    return cls


def maker(cls: type[T]) -> Any:
    """A function of the same parameters as ``cls`` that returns a new instance.

    It skips the class call itself (``type.__call__``, ``__new__``, then
    ``__init__``): ``object.__new__`` and the slot stores, nothing else. For a
    decoder that makes one instance per chunk read (``observation_codec``).
    """
    names, parameters, stores = _slot_stores(cls, "o")
    names.update(_new=object.__new__, _cls=cls)
    # Made inside a factory, so that what it calls are the closure's cells (as
    # fast as locals), not globals looked up in a dict on every call.
    body = "".join(f"    {line}" for line in ["    o = _new(_cls)\n", *stores, "    return o\n"])
    source = (
        f"def factory({', '.join(names)}):\n"
        f"    def make({', '.join(parameters)}):\n{body}"
        "    return make\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    make = namespace["factory"](**names)
    make.__qualname__ = f"maker({cls.__qualname__})"
    return make


def _slot_stores(cls: type, target: str) -> tuple[dict[str, Any], list[str], list[str]]:
    """The namespace, the parameters and the lines storing each field of ``cls`` in ``target``."""
    params = getattr(cls, "__dataclass_params__", None)
    if not is_dataclass(cls) or params is None or not params.frozen:
        raise TypeError(f"{cls.__name__}: only for frozen dataclasses")
    if "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: only for dataclasses with slots=True")
    namespace: dict[str, Any] = {}
    parameters: list[str] = []
    stores: list[str] = []
    for field in fields(cls):
        if not field.init or field.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{field.name}: no default factory, no init=False")
        namespace[f"_set_{field.name}"] = cls.__dict__[field.name].__set__
        if field.default is MISSING:
            parameters.append(field.name)
        else:
            namespace[f"_default_{field.name}"] = field.default
            parameters.append(f"{field.name}=_default_{field.name}")
        stores.append(f"    _set_{field.name}({target}, {field.name})\n")
    return namespace, parameters, stores
