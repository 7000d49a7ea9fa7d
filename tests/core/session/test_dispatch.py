"""core/session/dispatch.py: a key's rules run in order; a FRAME rule may claim the frame."""

from __future__ import annotations

from typing import Any

import pytest

from mcpsniff.core.model import FrameRecord
from mcpsniff.core.rules import registry
from mcpsniff.core.session import Session
from mcpsniff.core.session.dispatch import frame_rules, pairing_rules


def test_frame_rules_stop_at_the_first_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def passes(session: Any, frame: Any, *details: Any) -> bool:
        calls.append("passes")
        return False

    def claims(session: Any, frame: Any, *details: Any) -> bool:
        calls.append(f"claims {details}")
        return True

    def never(session: Any, frame: Any, *details: Any) -> bool:
        calls.append("never")
        return False

    monkeypatch.setitem(registry.TABLES[registry.FRAME], "blank", (passes, claims, never))
    frame = FrameRecord(1, 0.0, "k", "c2s", "stdio", b"")
    assert frame_rules(Session("k"), "blank", frame, 7) is True
    assert calls == ["passes", "claims (7,)"]
    monkeypatch.setitem(registry.TABLES[registry.FRAME], "blank", (passes,))
    assert frame_rules(Session("k"), "blank", frame, 7) is False


def test_pairing_rules_all_run_with_the_details(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    monkeypatch.setitem(
        registry.TABLES[registry.PAIRING],
        "orphan",
        (lambda s, m, *d: seen.append(("a", m, d)), lambda s, m, *d: seen.append(("b", m, d))),
    )
    pairing_rules(Session("k"), "orphan", "msg", 1, 2)  # type: ignore[arg-type]
    assert seen == [("a", "msg", (1, 2)), ("b", "msg", (1, 2))]


def test_the_hot_path_reads_the_registry_s_own_tables() -> None:
    # A registration clears the registry's tables in place: the session must
    # hold those very dicts, or it would keep dispatching to stale tuples.
    from mcpsniff.core.session import dispatch

    for name in ("MESSAGE", "REQUEST", "NOTIFICATION", "RESPONSE", "REPLY", "RESULT"):
        table = getattr(dispatch, f"{name}_HANDLERS")
        assert table is registry.dispatch_table(getattr(registry, name)), name
    for on in (registry.FRAME, registry.PAIRING, registry.EVENT):
        assert getattr(dispatch, f"{on.upper()}_HANDLERS") is registry.dispatch_table(on)
